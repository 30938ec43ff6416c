"""Tests of docs_hooks.expand: the Builder walks a page through the stages, once per text of the page."""

from __future__ import annotations

from docs_hooks.base.settings import load_settings
from docs_hooks.project import make_builder

from .conftest import expand_page, page, page_problems


def test_a_broken_entry_is_reported_once(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        ```trace-entry
        title: Layer norm forward
        function: ops.layer_norm_forwrd
        status: implemented
        ```

        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)
        }
    )

    messages = page_problems(root)

    assert not [m for m in messages if "outside an entry" in m], messages


def test_an_unchanged_page_is_expanded_once_and_a_site_wide_table_follows_the_other_pages(make_project):
    root = make_project(
        {
            "docs/page.md": "```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n",
            "docs/pages.md": "```trace-inventory\nof: pages\n```\n",
        }
    )
    builder = make_builder(load_settings(root))
    page, table = (root / "docs/page.md").read_text(), (root / "docs/pages.md").read_text()

    assert builder.expand("docs/page.md", page) is builder.expand("docs/page.md", page)
    first = builder.expand("docs/pages.md", table)
    assert builder.expand("docs/pages.md", table) is first  # the table is a placeholder until the page is finished
    assert "Forward" not in first.markdown
    html, problems = builder.finish("docs/pages.md", first.markdown)
    assert problems == [] and "Forward" in html

    builder.expand("docs/page.md", page.replace("Forward", "The forward pass"))  # an edit while serving
    html, problems = builder.finish("docs/pages.md", first.markdown)
    assert problems == [] and "The forward pass" in html and "Forward" not in html


def test_a_heading_of_level_one_or_two_closes_the_entry_above_it(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        ```trace-entry
        title: Layer norm forward
        function: ops.layer_norm_forward
        status: implemented
        ```

        ### Still the entry

        ## Notes

        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu
        code: "ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)"
        ```
        """)
        }
    )

    expanded = expand_page(root)

    assert [str(p) for p in expanded.problems] == [
        "docs/page.md:11: trace-equation outside an entry; put a trace-entry block above it"
    ]
    markdown = expanded.markdown
    assert markdown.index("### Still the entry") < markdown.index("### Where is it used?") < markdown.index("## Notes")
