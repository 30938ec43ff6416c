"""Tests of docs_hooks.entries: a page's trace-entry and trace-equation blocks read as data, each
reference resolved; the messages for equations that cannot be placed or resolved.
"""

from __future__ import annotations

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.read.blocks import Markdown, parse_page
from docs_hooks.resolve.callgraph import CallGraph
from docs_hooks.resolve.entries import EntryData, read_entry, split_at_headings, status_problem

from .conftest import FWD_ENTRY, expand_page, page, page_problems


def test_missing_statement_in_an_equation_points_at_its_code_field(make_project):
    root = make_project(
        {
            "docs/page.md": FWD_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-var
        title: Variance of a row
        tex: \\sigma^2 = \\frac{1}{d} \\sum_i (X_i - \\mu)^2
        code: var = X.var(axis=-1)
        ```
        """)
        }
    )

    assert page_problems(root) == [
        "docs/page.md:11: reference 'var = X.var(axis=-1)': no statement of ops.layer_norm_forward (ops.py:6-15) "
        "matches 'var = X.var(axis=-1)'; did you mean 'var = ((X - mu) ** 2).mean(' (ops.py:9)? "
        "Copy the statement's text from the code."
    ]


def test_equation_outside_an_entry(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)
        }
    )

    assert page_problems(root) == ["docs/page.md:1: trace-equation outside an entry; put a trace-entry block above it"]


def test_duplicate_equation_id_is_an_error(make_project):
    root = make_project(
        {
            "docs/page.md": FWD_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-mean
        title: Mean
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```

        ```trace-equation
        id: ln-mean
        title: Normalised row
        tex: \\hat{x}
        code: Xhat = (X - mu) * s
        ```
        """)
        }
    )

    messages = page_problems(root)

    assert len(messages) == 1 and messages[0].startswith("docs/page.md:15: ") and "ln-mean" in messages[0]


def test_an_entry_is_read_as_data_and_each_function_is_a_use_for_the_lock(make_project):
    index = index_for(load_settings(make_project()))
    text = "# Layer norm\n\n" + FWD_ENTRY.replace(
        "function: ops.layer_norm_forward", "function: [ops.layer_norm_forward, ops.layer_norm_backward]"
    )
    block = [seg for seg in parse_page(text, "docs/page.md").segments if not isinstance(seg, Markdown)][0]
    uses: list = []

    entry = read_entry(block, "docs/page.md", index, None, uses)

    assert (entry.page, entry.id, entry.title, entry.status, entry.line) == (
        "docs/page.md",
        "layer-norm-forward",
        "Layer norm forward",
        "implemented",
        3,
    )
    assert [f.name for f in entry.functions] == ["ops.layer_norm_forward", "ops.layer_norm_backward"]
    assert [(u.page, u.key, u.line) for u in uses] == [
        ("docs/page.md", "entry layer-norm-forward | ops.layer_norm_forward", 3),
        ("docs/page.md", "entry layer-norm-forward | ops.layer_norm_backward", 3),
    ]


def test_an_entry_that_cites_the_spec_without_one_configured_says_which_setting_to_set(make_project):
    root = make_project(
        {"docs/page.md": FWD_ENTRY.replace("status: implemented", "status: implemented\nspec: [eq:ln-mean]")}
    )

    assert page_problems(root) == [
        "docs/page.md:1: entry 'Layer norm forward' cites eq:ln-mean, but no specification is configured; "
        "set spec_source in [tool.docs_hooks]"
    ]


def test_equations_are_numbered_through_the_page_and_belong_to_the_entry_above_them(make_project):
    root = make_project(
        {
            "docs/page.md": FWD_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-mean
        title: Mean
        tex: \\mu = \\frac{1}{d} \\sum_i X_i
        code: mu = X.mean(axis=-1, keepdims=True)
        ```

        ```trace-equation
        id: ln-var
        title: Variance
        role: derived
        tex: \\sigma^2
        code: var = ((X - mu) ** 2).mean(
        ```
        """)
        }
    )

    (entry,) = expand_page(root).entries

    assert [(eq.id, eq.number, eq.role, [r.label for r in eq.resolved]) for eq in entry.equations] == [
        ("ln-mean", 1, "computes", ["ops.py:8"]),
        ("ln-var", 2, "derived", ["ops.py:9-12"]),
    ]


def test_markdown_is_split_before_each_heading_of_level_one_or_two_outside_code_fences():
    text = "Intro\n# A\ntext\n```\n# not a heading\n```\n### C is inside B\n## B\nend"

    chunks = split_at_headings(Markdown(text, 5))

    assert chunks == [
        ("Intro", 5, False),
        ("# A\ntext\n```\n# not a heading\n```\n### C is inside B", 6, True),
        ("## B\nend", 12, True),
    ]


def entry_of(root, title: str, status: str, *names: str) -> tuple[EntryData, CallGraph]:
    """An entry of ``names`` (resolved data, as entries.read_entry makes it) and the project's call graph."""
    index = index_for(load_settings(root))
    functions = [index.function(name) for name in names]
    return EntryData("docs/page.md", "e", title, status, functions, [], 4), CallGraph(index)


def test_status_problem_names_the_entry_and_its_untested_functions_at_the_entrys_line(make_project):
    entry, graph = entry_of(make_project(), "Build and run", "implemented", "model.build", "model.Block.forward")

    problem = status_problem(entry, graph)

    assert str(problem) == (
        "docs/page.md:4: entry 'Build and run' is marked implemented, but no test calls "
        "model.build, model.Block.forward; add a test or change its status"
    )


def test_status_problem_accepts_a_tested_function_and_an_entry_that_claims_no_implementation(make_project):
    root = make_project()

    assert status_problem(*entry_of(root, "Forward", "implemented", "ops.layer_norm_forward")) is None
    assert status_problem(*entry_of(root, "Build", "derived", "model.build")) is None
    assert status_problem(*entry_of(root, "Build", "illustrative", "model.build")) is None
