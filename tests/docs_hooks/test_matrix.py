"""Tests of docs_hooks.matrix: the traceability matrix and the folded lists of what no equation or page covers.

The tiny project of conftest.py: ``layer_norm_forward`` is called by two tests,
``layer_norm_backward`` by one, and reached by a third through
``model.backward_all``. No coverage run is configured, so the matrix counts
the tests that reach an equation's function through the call graph.
"""

from __future__ import annotations

import re

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import expand_site, make_build
from docs_hooks.render import matrix

from .conftest import page

LN_PAGE = page("""
    # Layer norm

    ```trace-entry
    id: ln-forward
    title: Layer norm forward
    function: ops.layer_norm_forward
    status: implemented
    ```

    ```trace-equation
    id: ln-mean
    title: Mean of one row
    tex: \\mu = \\frac{1}{d} \\sum_i X_i
    code: mu = X.mean(axis=-1, keepdims=True)
    ```

    ```trace-equation
    id: ln-var
    title: Variance of one row
    tex: \\sigma^2 = \\frac{1}{d} \\sum_i (X_i - \\mu)^2
    code: var = ((X - mu) ** 2).mean(
    ```

    ```trace-entry
    id: ln-backward
    title: Layer norm backward
    function: ops.layer_norm_backward
    status: implemented
    ```

    ```trace-equation
    id: ln-dx
    title: Gradient on the input
    tex: dX = s (d\\hat{X} - \\overline{d\\hat{X}})
    code: dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)
    ```
    """)

MATRIX_PAGE = page("""
    # Matrix

    ```trace-inventory
    of: matrix
    ```

    ```trace-inventory
    of: uncovered
    ```

    ```trace-inventory
    of: undocumented
    ```
    """)


def site(make_project):
    root = make_project({"docs/ln.md": LN_PAGE, "docs/matrix.md": MATRIX_PAGE})
    settings = load_settings(root)
    builder = make_build(settings)
    result = expand_site(settings, builder)
    assert result.problems == []
    return builder, result.pages["docs/matrix.md"].markdown


def body_rows(html: str, table_class: str) -> list[list[str]]:
    table = re.search(rf'<table class="[^"]*{table_class}[^"]*">.*?</table>', html).group(0)
    return [
        re.findall(r"<td[^>]*>(.*?)</td>(?=<td|$)", row)
        for row in re.findall(r"<tbody>(.*)</tbody>", table)[0]
        .removeprefix("<tr>")
        .removesuffix("</tr>")
        .split("</tr><tr>")
    ]


def test_one_row_per_equation_with_its_page_functions_and_direct_tests(make_project):
    builder, _ = site(make_project)
    project, links = builder.project, builder.links
    facts = matrix.Site(builder.site_entries(), project.index, project.graph, links, None, "spec.pdf", None)

    rows = [
        (r.page, r.page_title, r.entry.id, r.eq.id, [f.name for f in r.functions], r.direct)
        for r in matrix.matrix_rows(facts)
    ]

    forward_tests = ["tests.test_ops.test_rows_have_zero_mean", "tests.test_ops.test_backward_returns_three_gradients"]
    assert rows == [
        ("docs/ln.md", "Layer norm", "ln-forward", "ln-mean", ["ops.layer_norm_forward"], forward_tests),
        ("docs/ln.md", "Layer norm", "ln-forward", "ln-var", ["ops.layer_norm_forward"], forward_tests),
        (
            "docs/ln.md",
            "Layer norm",
            "ln-backward",
            "ln-dx",
            ["ops.layer_norm_backward"],
            ["tests.test_ops.test_backward_returns_three_gradients"],
        ),
    ]


def test_the_matrix_row_shows_counts_and_folds_the_test_names(make_project):
    _, html = site(make_project)

    assert (
        '<th data-sort-type="text">Equation</th><th data-sort-type="text">Page</th>'
        '<th data-sort-type="text">Status</th><th data-sort-type="text">Role</th>'
        '<th data-sort-type="text">Code</th><th data-sort-type="number">Direct tests</th>'
        '<th data-sort-type="number">Tests that reach it</th></tr>'
    ) in html  # no spec configured: no column
    mean, var, backward = body_rows(html, "trace-matrix")
    assert mean == [
        '<a href="../ln/#eq-ln-mean">Mean of one row</a>',
        '<a href="../ln/#ln-forward" title="Layer norm forward">Layer norm</a>',
        '<span class="trace-badge trace-badge--implemented">Implemented</span>',
        "Computes it",
        '<code>layer_norm_forward</code> <a href="../source/src/ops.py/#L8" title="ops.layer_norm_forward">'
        "<code>ops.py:8</code></a>",
        "2",
        '<details class="trace-fold" data-tests="0"><summary>2</summary></details>',
    ]
    # the backward is called by one test and reached by one more through model.backward_all
    assert backward[5] == "1"
    assert backward[6] == '<details class="trace-fold" data-tests="1"><summary>2</summary></details>'
    assert 'data-sort="2"' in html and 'data-sort="1"' in html  # what the script sorts the count columns by


def test_the_names_of_a_list_several_rows_share_are_written_once(make_project):
    _, html = site(make_project)

    mean, var, backward = body_rows(html, "trace-matrix")
    assert var[6] == mean[6]  # every line of the forward runs in the same tests: one list
    assert (
        "</tbody></table>"
        '<template data-tests="0"><p class="trace-matrix-tests">Call <code>layer_norm_forward</code> and reach '
        "it: test_rows_have_zero_mean, test_backward_returns_three_gradients</p></template>"
        '<template data-tests="1"><p class="trace-matrix-tests">Call <code>layer_norm_backward</code> and reach '
        "it: test_backward_returns_three_gradients</p>"
        '<p class="trace-matrix-tests">Reach it through other functions: test_backward_through_model</p>'
        "</template></div>"
    ) in html


def test_lines_and_functions_nobody_covers_are_folded_by_module(make_project):
    _, html = site(make_project)

    uncovered = html[html.index('data-trace-groups="uncovered"') :]
    uncovered = uncovered[: uncovered.index("</div>\n") + 6]
    # one box for ops.py: two functions, their lines no equation references
    assert uncovered.count("<details") == 1
    assert "<summary><code>ops.py</code>: 2 functions, " in uncovered
    assert [r[0] for r in body_rows(uncovered, "trace-table")] == [
        '<a href="../ln/#ln-backward"><code>ops.layer_norm_backward</code></a>',
        '<a href="../ln/#ln-forward"><code>ops.layer_norm_forward</code></a>',
    ]
    undocumented = html[html.index('data-trace-groups="undocumented"') :]
    summaries = re.findall(r"<summary>(.*?)</summary>", undocumented)
    assert summaries == ["<code>model.py</code>: 6 functions"]


def test_the_matrix_counts_the_tests_a_run_saw_call_a_function_as_its_entry_does(make_project):
    """The site-wide tables read the call graph merged with what the runs saw, as the entry pages do."""
    from .test_observed import NET, NET_TESTS

    root = make_project(
        {
            "src/net.py": NET,
            "tests/test_net.py": NET_TESTS,
            "pyproject.toml": '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\n'
            'coverage_tests = ["tests/test_net.py"]\n',
            "docs/net.md": "# Scale\n\n"
            + page("""
            ```trace-entry
            title: Scale
            function: net.Scale.forward
            status: implemented
            ```

            ```trace-equation
            id: scale
            title: Scaled
            tex: y = k x
            code: return x * self.k
            ```

            ```trace-inventory
            of: matrix
            ```
            """),
        }
    )
    settings = load_settings(root)
    build = make_build(settings)
    try:
        markdown = expand_site(settings, build).pages["docs/net.md"].markdown
    finally:
        build.close()

    table = markdown[markdown.index('<table class="trace-table trace-matrix">') :]
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*Scaled(?:(?!</tr>).)*</tr>", table, re.S).group(0)
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    # Direct tests: test_made_by_a_factory, which calls the layer a helper made (only the run can tell);
    # tests that run its lines: that one and test_net, through the network's list of layers
    assert cells[0] == "Scaled" and cells[5:7] == ["1", "2"]
