"""Tests of docs_hooks.core.page: one page through the stages. Its prose (inline references and formulas), its
entries and the blocks inside them resolved into a plan; the plan rendered, its formulas typeset in one batch."""

from __future__ import annotations

import re

from .conftest import FWD_ENTRY, expand_page, page, page_problems


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


def test_inline_code_and_code_fences_are_left_alone(make_project):
    text = page("""
        Write `[[ops.layer_norm_forward: mu = X.sum()]]` to reference a statement.

        ````markdown
        See [[ops.nowhere: x]].
        ````
        """)
    root = make_project({"docs/page.md": text})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert expanded.markdown == text


def test_inline_math_that_does_not_close_on_its_line_is_an_error(make_project):
    root = make_project({"docs/page.md": "The mean $\\mu =\n\\frac{1}{d}$ of a row.\n"})

    assert page_problems(root) == [
        "docs/page.md:1: a '$' that opens no formula closed on this line; write inline math as $...$ on one line "
        "(escape a literal dollar as \\$)",
        "docs/page.md:2: a '$' that opens no formula closed on this line; write inline math as $...$ on one line "
        "(escape a literal dollar as \\$)",
    ]


def test_a_formula_katex_cannot_render_fails_with_page_and_line(make_project):
    root = make_project(
        {
            "docs/page.md": FWD_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-mean
        title: Mean
        tex: \\frac{1}{d
        code: mu = X.mean(axis=-1, keepdims=True)
        ```

        Inline math that is fine, $\\mu_t$, and some that is not, $\\sqrt{$.
        """)
        }
    )

    messages = page_problems(root)

    assert len(messages) == 2
    assert messages[0].startswith("docs/page.md:10: KaTeX cannot render '\\\\frac{1}{d': ")
    assert messages[1].startswith("docs/page.md:14: KaTeX cannot render '\\\\sqrt{': ")
    assert all(m.endswith("; fix the TeX") for m in messages)


def test_math_is_rendered_to_html_at_build_time(make_project):
    root = make_project({"docs/page.md": "The mean $\\mu_t$ of a row.\n"})

    markdown = expand_page(root).markdown

    assert '<span class="katex">' in markdown and "$" not in markdown


DERIVED = """\
```trace-entry
title: Worked out by hand
function: ops.layer_norm_backward
status: derived
```
"""

EXCERPT = "```trace-excerpt\ncode: 'ops.layer_norm_forward: s = 1.0'\ncontext: 2\n```\n"


def test_the_listings_of_a_plan_are_the_fences_its_rendering_writes_and_no_others(make_project):
    from docs_hooks.base.settings import load_settings
    from docs_hooks.core.page import page_listings
    from docs_hooks.core.site import expand_site, make_build

    text = "# Layer norm\n\n" + FWD_ENTRY + "\n" + EXCERPT + "\n" + DERIVED + "\n" + EXCERPT.replace("2", "0")
    root = make_project({"docs/page.md": text})
    settings = load_settings(root)
    build = make_build(settings, coverage=False)
    try:
        markdown = expand_site(settings, build).pages["docs/page.md"].markdown
        listings = page_listings(build.plan("docs/page.md", text), build.links)
    finally:
        build.close()

    # The forward entry's function and two excerpts (a derivation shows no code of its own), each a fence below a
    # head whose links the page makes relative: the fences are the page's, to the byte.
    fences = [listing.split("</div>\n\n", 1)[1] for listing in listings]
    assert len(fences) == 3 and all(fence.startswith("``` python linenums=") for fence in fences)
    assert all(fence in markdown for fence in fences)
    assert len(re.findall(r"^``` python", markdown, re.M)) == 3  # and the page writes no other
