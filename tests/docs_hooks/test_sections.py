"""The sections written below each entry: its status, where it is used, the code-and-math table; and golden
files for the generated sections of one small page.

The page below (two entries of the tiny layer norm in conftest.py) is expanded
and compared, byte for byte, with ``golden/layer_norm_page.md``: Actual
implementation, Code and math connection, Where is it used?, Implemented in.
When a change to the generator is intended, regenerate the file with the command
the failure names, and review its diff like code.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.render import html as R
from docs_hooks.render import sections
from docs_hooks.resolve.callgraph import CallGraph
from docs_hooks.resolve.entries import EntryData
from docs_hooks.run import math as trace_math

from .conftest import BWD_ENTRY, connection_rows, expand_page, page, page_problems

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = "UPDATE_GOLDEN=1 .venv/bin/pytest tests/docs_hooks/test_sections.py -p no:cacheprovider"

PAGE = page("""
    # Layer norm

    Each row is normalised, then scaled and shifted.

    ```trace-entry
    title: Layer norm forward
    function: ops.layer_norm_forward
    status: implemented
    note: Every block normalises twice.
    ```

    The model calls it from a method: [[model.Block.norm: return layer_norm_forward(]].

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

    ```trace-equation
    id: ln-out
    title: Scale & shift <per feature>
    tex: y = \\gamma \\hat{x} + \\beta
    code:
      - Xhat = (X - mu) * s
      - return gamma * Xhat + beta
    ```

    ```trace-entry
    title: Layer norm backward
    function: ops.layer_norm_backward
    status: implemented
    ```

    ```trace-equation
    id: ln-dx
    title: Gradient on the input
    tex: dX = s (d\\hat{X} - \\overline{d\\hat{X}} - \\hat{X} \\overline{d\\hat{X} \\hat{X}})
    code: dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)
    ```

    ```trace-excerpt
    code: "ops.layer_norm_backward: for row in range(dY.shape[0]):"
    context: 1
    ```

    ## Notes

    Nothing generated after this heading.
    """)


@pytest.fixture
def plain_math(monkeypatch):
    """TeX shown as escaped text, so the golden file holds our HTML and not KaTeX's."""

    def render_many(self, items):
        return [(f'<span class="math">{R.esc(tex)}</span>', None) for tex, _display in items]

    monkeypatch.setattr(trace_math.MathRenderer, "render_many", render_many)


def readable(text: str) -> list[str]:
    """Lines for a diff: one table row, cell or tag run per line."""
    return re.sub(r"(<tr>|<td>|<th>|<br>)", r"\n\1", text).splitlines(keepends=True)


def assert_golden(name: str, actual: str, root: Path) -> None:
    actual = actual.replace(str(root), "<project>")  # nothing volatile is expected; guard anyway
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"golden file {path} is missing; create it with:\n    {REGENERATE}"
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(readable(expected), readable(actual), f"golden/{name}", "expanded now", n=2)
        )
        pytest.fail(
            f"the expanded page differs from tests/docs_hooks/golden/{name}.\n"
            f"If the change is intended, regenerate the golden file with:\n    {REGENERATE}\n"
            f"and review its diff. Differences (split at table rows and cells):\n{diff}",
            pytrace=False,
        )


def test_generated_sections_match_the_golden_file(make_project, plain_math):
    root = make_project({"docs/page.md": PAGE})

    expanded = expand_page(root)

    assert [str(p) for p in expanded.problems] == []
    assert_golden("layer_norm_page.md", expanded.markdown, root)


def test_generated_sections_come_in_order_for_each_entry(make_project, plain_math):
    root = make_project({"docs/page.md": PAGE})

    headings = re.findall(r"^#{2,3} (.*?) \{#", expand_page(root).markdown, re.M)

    sections = ["Actual implementation", "Code and math connection", "Where is it used?", "Implemented in"]
    assert headings == ["Layer norm forward", *sections, "Layer norm backward", *sections]


def test_the_golden_file_has_no_volatile_parts():
    text = (GOLDEN / "layer_norm_page.md").read_text(encoding="utf-8")

    assert "/tmp" not in text and "<project>" not in text
    assert set(re.findall(r"/blob/([^/]+)/", text)) == {"abc123"}  # the ref set in the fixture's settings


def test_implemented_entry_without_a_test_is_an_error(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        ```trace-entry
        title: Build the model
        function: model.build
        status: implemented
        ```
        """)
        }
    )

    assert page_problems(root) == [
        "docs/page.md:1: entry 'Build the model' is marked implemented, but no test calls model.build; "
        "add a test or change its status"
    ]


def test_where_is_it_used_lists_callers_direct_tests_and_tests_through_others(make_project):
    root = make_project({"docs/page.md": BWD_ENTRY})

    assert connection_rows(expand_page(root).markdown, "Where is it used?") == [
        "Source | ops.py, lines 18-27, layer_norm_backward",
        "Called by | model.backward_all",
        "Tested by | tests.test_ops.test_backward_returns_three_gradients",
        # folded: the count shows, the names (by test file) open on a click
        "Reached by tests through other functions | 1 testtests/test_model.py: test_backward_through_model",
        "Status | Implemented",
    ]


def test_reached_tests_are_folded_under_their_count_and_the_direct_tests_stay_visible(make_project):
    root = make_project({"docs/page.md": BWD_ENTRY})

    markdown = expand_page(root).markdown

    assert (
        '<tr><td>Tested by</td><td><a href="https://example.com/repo/blob/abc123/tests/test_ops.py#L12-L15">'
        "<code>tests.test_ops.test_backward_returns_three_gradients</code></a></td></tr>"
    ) in markdown
    assert (
        '<tr><td>Reached by tests through other functions</td><td><details class="trace-fold">'
        "<summary>1 test</summary>"
        '<a href="https://example.com/repo/blob/abc123/tests/test_model.py"><code>tests/test_model.py</code></a>: '
        "<code>test_backward_through_model</code></details></td></tr>"
    ) in markdown
    assert (
        '<p class="trace-facts-note">"Tested by" lists the tests that call it; "Reached by", those that call '
        "it only through other functions.</p>"
    ) in markdown


def test_a_derivation_connects_only_the_lines_it_explains(make_project):
    derivation = page("""
        ```trace-entry
        title: Deriving the gradient
        function: ops.layer_norm_backward
        status: derived
        ```

        ```trace-equation
        id: d-dx
        title: The gradient on the input
        tex: dX = s\\,(d\\hat{X} - \\overline{d\\hat{X}})
        code: dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)
        ```
        """)
    root = make_project({"docs/page.md": derivation})

    expanded = expand_page(root)

    assert expanded.problems == []
    # no "Calls it" or "Tests it" rows: the backward's own entry lists those
    assert connection_rows(expanded.markdown) == [
        "The gradient on the input | Computes it | ops.py:25-26 | dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)"
        "\n- Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))",
    ]


def entry_of(root, title: str, status: str, *names: str) -> tuple[EntryData, CallGraph]:
    """An entry of ``names`` (resolved data, as entries.read_entry makes it) and the project's call graph."""
    index = index_for(load_settings(root))
    functions = [index.function(name) for name in names]
    return EntryData("docs/page.md", "e", title, status, functions, [], 4), CallGraph(index)


def test_status_evidence_says_what_backs_each_status(make_project):
    root = make_project()

    assert sections.status_evidence(*entry_of(root, "F", "implemented", "ops.layer_norm_forward")) == (
        "ops.layer_norm_forward; exercised by 2 test(s)"
    )
    assert sections.status_evidence(*entry_of(root, "B", "derived", "ops.layer_norm_backward")) == (
        "worked out from ops.layer_norm_backward; not run by the model"
    )
    assert sections.status_evidence(*entry_of(root, "B", "illustrative", "model.build")) == (
        "illustrative: explains, computes nothing in the model"
    )


def test_callers_and_tests_seen_only_at_run_time_say_so_and_the_note_says_what_that_means(make_project):
    from docs_hooks.render.links import Links
    from docs_hooks.resolve.callgraph import ObservedCall, RunEvidence

    from .test_observed import NET, NET_TESTS, line_of

    root = make_project({"src/net.py": NET, "tests/test_net.py": NET_TESTS})
    settings = load_settings(root)
    index = index_for(settings)
    test = "tests.test_net.test_made_by_a_factory"
    seen = (
        ObservedCall("net.Net.forward_pass", "net.Scale.forward", line_of(NET, "x = layer.forward(x)"), None),
        ObservedCall(test, "net.Scale.forward", line_of(NET_TESTS, "assert layer.forward(1.0)"), test),
    )
    graph = CallGraph(index, RunEvidence(seen))
    entry = EntryData("docs/page.md", "scale", "Scale", "implemented", [index.function("net.Scale.forward")], [], 4)

    html = sections.used(entry, Links(settings, index), graph, None, None)

    assert connection_rows(html, "Where is it used?")[1:3] == [
        "Called by | net.Net.forward_pass (seen at run time)",
        f"Tested by | {test} (seen at run time)",
    ]
    assert (
        '<p class="trace-facts-note">A caller or test marked "seen at run time" calls it in no way the code index '
        "could follow; the build saw the call while the tests or the model run ran.</p>"
    ) in html
    assert "seen at run time" not in sections.used(entry, Links(settings, index), CallGraph(index), None, None)


def test_the_listing_names_a_method_of_a_package_module_inside_its_module(make_project):
    """The file says which module: the listing's head gives the class and method, the package prefix kept out of
    it and nothing dropped from it (``Dense.forward``, not ``layers.Dense.forward``)."""
    layers = "class Dense:\n    def forward(self, X):\n        return X * 2\n"
    root = make_project(
        {
            "src/pkg/__init__.py": "",
            "src/pkg/layers.py": layers,
            "docs/page.md": page("""
            ```trace-entry
            title: Dense
            function: pkg.layers.Dense.forward
            status: illustrative
            ```
            """),
        }
    )
    markdown = expand_page(root).markdown
    assert '<div class="trace-listing-head"><code>pkg/layers.py</code> <code>Dense.forward</code> ' in markdown
