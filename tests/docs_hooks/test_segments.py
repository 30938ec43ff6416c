"""Tests of docs_hooks.render.segments: generated HTML kept apart from the Markdown, in Python-Markdown's htmlStash,
comes out of MkDocs exactly as Markdown would have passed it."""

from __future__ import annotations

import markdown
import pytest
from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor

from docs_hooks.render.segments import Html, heading_lines, pieces, stashed

from .conftest import REPO

# Shaped like KaTeX's output: nested spans, attributes, and text Markdown would otherwise read
# (underscores, asterisks, an ampersand).
FORMULA = (
    '<span class="katex"><span class="katex-mathml"><math><semantics><mrow><mi>x</mi></mrow>'
    '<annotation encoding="application/x-tex">x_i * y_j + a &amp; b</annotation></semantics></math></span>'
    '<span class="katex-html" aria-hidden="true"><span class="mord mathnormal">x</span></span></span>'
)
TABLE = (
    '<div class="trace-table-wrap" data-search-exclude><table class="trace-table"><thead><tr><th>A</th></tr>'
    "</thead><tbody><tr><td><code>a_b * c</code></td></tr></tbody></table></div>"
)
EXAMPLE = "\n".join(
    [
        '<div class="trace-example" id="example-rows">',
        '<p class="trace-example-head"><strong>Rows</strong></p>',
        '<div class="trace-example-inputs">',
        '<table class="trace-table"><tbody><tr><th>X</th><td>1.0</td></tr></tbody></table>',
        "</div>",
        '<script type="application/json" class="trace-example-data">{"rows":[1,2]}</script>',
        TABLE,
        "</div>",
    ]
)

# Each document holds {f} where a formula goes (inline) and {t}, {e} where generated blocks go.
DOCUMENTS = {
    "prose": "# Title\n\nThe mean {f} of a row, and {f} again.\n\n{f} starts this line\nand this one ends with {f}\n",
    "blocks": "Text before.\n\n{t}\n\nText between.\n\n{e}\n\n## After {{#after}}\n\n{t}\n",
    "lists and quotes": "- first {f}\n- {f} second\n\n> quoted {f}\n> more\n\n1. one\n2. {f}\n",
    "admonition": "!!! note\n\n    The scale {f} is usual,\n    {f} and so on.\n\nAfter.\n",
    "table cells": "| a | b |\n|---|---|\n| {f} | text |\n| `code` | {f} |\n",
    "emphasis and links": "*stress {f}* and [a link {f}](https://example.com) and **{f}**\n",
    "fences": "```python\n{t}\nx = 1\n```\n\n{t}\n",
    "block right after text": "A paragraph\n{t}\n\nAnother.\n",
    "block followed by text": "Before.\n\n{t}\nstraight after the block\n\nEnd.\n",
    "headings": "## The step {f}\n\nUnder it.\n\nSetext {f}\n----------\n\nText.\n",
}


def site_markdown(*more) -> markdown.Markdown:
    """Python-Markdown as the site's MkDocs configures it."""
    from mkdocs.config import load_config

    config = load_config(str(REPO / "mkdocs.yml"))
    extensions = [e for e in config.markdown_extensions if e != "docs_hooks.extension"]  # as the plugin does
    return markdown.Markdown(extensions=[*extensions, *more], extension_configs=config.mdx_configs)


class _Parts(Extension):
    """As docs_hooks.extension does it: the page replaced by its pieces, each piece of HTML in the htmlStash."""

    def __init__(self, parts):
        super().__init__()
        self.parts = parts

    def extendMarkdown(self, md):
        parts = self.parts

        class Swap(Preprocessor):
            def run(self, lines):
                return [*stashed(parts, self.md.htmlStash.store).split("\n"), "", ""]

        md.preprocessors.register(Swap(md), "parts", 28)


def fill(template: str, formula: str, table: str, example: str) -> str:
    return (
        template.replace("{f}", formula)
        .replace("{t}", table)
        .replace("{e}", example)
        .replace("{{", "{")
        .replace("}}", "}")
    )


def lines_of(text: str, formula: str = FORMULA) -> list:
    """``text`` as the page's lines, each formula (marked \x00) an inline piece of HTML, or in a heading, text."""
    rows = text.split("\n")
    headings = heading_lines([row.replace("\x00", "\x02") for row in rows])
    out = []
    for i, row in enumerate(rows):
        line: list = []
        for j, part in enumerate(row.split("\x00")):
            if j:
                line.append(formula if i in headings else Html(formula))
            line.append(part)
        out.append(line)
    return out


def through_markdown(parts) -> str:
    return site_markdown(_Parts(parts)).convert("(the page)")


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_the_page_comes_out_as_markdown_renders_it_with_the_html_inline(name):
    template = DOCUMENTS[name]
    full = site_markdown().convert(fill(template, FORMULA, TABLE, EXAMPLE))

    parts = pieces(lines_of(fill(template, "\x00", TABLE, EXAMPLE)))

    assert through_markdown(parts) == full
    assert any(isinstance(p, Html) for p in parts) is (name not in NOTHING_KEPT_APART)


NOTHING_KEPT_APART = {"block right after text", "block followed by text", "headings"}  # see the documents


def test_a_formula_s_tex_comes_out_as_katex_wrote_it_where_markdown_would_read_its_backslashes():
    formula = FORMULA.replace("x_i * y_j + a", "a \\\\ b \\{c\\}")  # TeX: a \\ b \{c\}

    html = through_markdown(["The sum ", Html(formula), " here.\n"])

    assert formula in html
    assert formula not in site_markdown().convert("The sum " + formula + " here.\n")  # Markdown alone: 'a \ b {c}'


def test_the_blocks_are_really_kept_apart():
    text = fill(DOCUMENTS["blocks"], FORMULA, TABLE, EXAMPLE)

    parts = pieces(lines_of(text))

    assert [p.html for p in parts if isinstance(p, Html)] == [TABLE, EXAMPLE, TABLE]
    assert all("<table" not in p for p in parts if isinstance(p, str))
    assert "".join(p.html if isinstance(p, Html) else p for p in parts) == text


@pytest.mark.parametrize(
    "name, text",
    [
        ("inside a fenced code block", "```html\n\n<div>in code</div>\n\n```\n"),
        ("asking Markdown to read its content", '\n<div markdown="1">\n*read*\n</div>\n'),
        ("asking it in capitals, which md_in_html reads too", '\n<div MARKDOWN="1">*read*</div>\n'),
        ("right after a line of text", "Text\n<div>x</div>\n"),
        ("followed by text on the next line", "\n<div>x</div>\ntext\n"),
        ("left open", "\n<div>x\n"),
        ("closed in the wrong order", "\n<div><table></div></table>\n"),
        ("closed in the wrong order, in capitals", "\n<Div><TABLE></DIV></table>\n"),
        ("an inline tag", "\n<a href='x'>link</a>\n"),
        ("a tag Markdown does not take for a block", "\n<svg><rect/></svg>\n"),
    ],
)
def test_a_block_markdown_would_read_or_change_stays_in_the_markdown(name, text):
    assert pieces([[row] for row in text.split("\n")]) == [text]


def test_a_block_s_tag_names_are_read_in_any_case_as_html_reads_them():
    text = "<DIV class='Owner'><Table><TR><td>A</td></TR></Table></DIV>\n\nText.\n"

    assert pieces([[row] for row in text.split("\n")]) == [Html(text.split("\n")[0], block=True), "\n\nText.\n"]


def test_a_run_of_several_closed_blocks_is_kept_apart_whole():
    text = "<p class='owner'>Owner</p>\n" + TABLE + "\n\nText.\n"

    assert pieces([[row] for row in text.split("\n")]) == [
        Html("<p class='owner'>Owner</p>\n" + TABLE, block=True),
        "\n\nText.\n",
    ]


@pytest.mark.parametrize(
    "text, inside",
    [
        ("## The step X\n", True),
        ("   # Indented X\n", True),
        ("Setext X\n===\n", True),
        ("Setext X\n---\n", True),
        ("A setext X\nheading over two lines\n===\n", True),
        ("Prose X\n\nSetext\n===\n", False),
        ("Prose X\n- a list\n---\n", False),
        ("Prose X here\n\n---\n", False),
        ("Prose X # not a heading\n", False),
        ("| X | b |\n|---|---|\n", False),
    ],
)
def test_a_formula_in_a_heading_stays_in_the_markdown(text, inside):
    # The table of contents and the heading's anchor are made from the heading's text.
    rows = text.split("\n")
    line = next(i for i, row in enumerate(rows) if "X" in row)
    assert (line in heading_lines(rows)) is inside


def test_inline_html_over_several_lines_comes_out_whole_where_markdown_would_break_it():
    # KaTeX draws a square root with an SVG path written over several lines; inside an admonition
    # Markdown read those lines as text (it closed the admonition early and escaped the SVG's '/>').
    svg = '<span class="katex"><svg><path d="M95,702\nc-2.7,0,-7.17\nz"/></svg></span>'
    page = "!!! note\n\n    The scale \x00 is usual.\n\nAfter.\n"

    html = through_markdown(pieces(lines_of(page, svg)))

    assert svg in html
    assert html.index("The scale") < html.index("</div>") < html.index("After.")
    assert svg not in site_markdown().convert(page.replace("\x00", svg))  # what Markdown alone made of it


def test_a_mkdocs_build_puts_every_piece_back_and_a_heading_keeps_its_formula(make_project):
    from .conftest import run_cli
    from .test_cli import MKDOCS_YML, mkdocs_build

    page = (
        "# Layer norm\n\n## The mean $\\mu$ {#mean}\n\n$\\mu$ is the mean of the row.\n\n"
        "```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n\n"
        "```trace-equation\nid: mean\ntitle: The mean\ntex: \\mu = \\frac{1}{D} \\sum_j x_j\n"
        "code: mu = X.mean(axis=-1, keepdims=True)\n```\n"
    )
    root = make_project(
        {"mkdocs.yml": MKDOCS_YML.replace("  - md_in_html\n", "  - md_in_html\n  - toc\n"), "docs/page.md": page}
    )
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    html = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert "wzxhzdk" not in html and "trace-html" not in html
    assert html.count('<span class="katex">') == 3  # the heading's, the line's, the equation's
    assert '<div class="trace-math"><span class="katex-display">' in html
    assert '<p><span class="katex">' in html  # the formula that starts a line stays in its paragraph
    heading = html[html.index('id="mean"') :]
    assert heading.index('<span class="katex">') < heading.index("</h2>")


def test_a_rebuild_in_the_same_process_as_mkdocs_serve_does_it_puts_the_html_back_again(make_project, tmp_path):
    import logging

    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from .conftest import run_cli
    from .test_cli import MKDOCS_YML

    page = (
        "# Layer norm\n\n$\\mu$ is the mean of the row.\n\n"
        "```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n"
    )
    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": page})
    assert run_cli(root, "relock") == 0
    logging.getLogger("mkdocs").setLevel(logging.ERROR)

    def build_once() -> str:  # as mkdocs serve rebuilds: the configuration loaded again, the hooks module kept
        build(load_config(config_file=str(root / "mkdocs.yml"), site_dir=str(tmp_path / "site")))
        return (tmp_path / "site" / "page" / "index.html").read_text(encoding="utf-8")

    first = build_once()
    (root / "docs/page.md").write_text(page.replace("of the row.", "of the row, edited."), encoding="utf-8")
    second = build_once()

    for html in (first, second):
        assert "wzxhzdk" not in html and "trace-html" not in html
        assert html.count('<span class="katex">') == 1 and 'class="trace-table' in html
    assert "of the row, edited." in second
    assert second.replace("of the row, edited.", "of the row.") == first
