"""Tests of docs_hooks.render.html. Escaping, property-based: whatever the code says, the reader sees exactly that.

Code text goes into HTML table cells (``render.table`` + ``render.code``) and into
fenced listings (``render.listing``). Both are read back after rendering, with
``html.parser`` and with Python-Markdown configured like the site's mkdocs.yml.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import markdown
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from docs_hooks.render import html as R

# The Markdown extensions of mkdocs.yml, configured the same way.
EXTENSIONS = [
    "attr_list",
    "md_in_html",
    "admonition",
    "tables",
    "toc",
    "pymdownx.superfences",
    "pymdownx.highlight",
    "pymdownx.arithmatex",
]
EXTENSION_CONFIGS = {
    "toc": {"permalink": True},
    "pymdownx.highlight": {"anchor_linenums": True, "line_spans": "__span"},
    "pymdownx.arithmatex": {"generic": True},
}

PROPERTY = settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# Printable text (str.isprintable): no control characters, no line or paragraph
# separators; the space is the only blank. Plus the characters that matter to HTML
# and Markdown, drawn often.
SPECIAL = "|<>&`*_$\\[]{}#!\"'~:-=()"
printable = st.characters(
    blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"), whitelist_characters=" "
)
code_text = st.text(st.one_of(printable, st.sampled_from(SPECIAL)), max_size=60)


def to_html(text: str) -> str:
    return markdown.Markdown(extensions=EXTENSIONS, extension_configs=EXTENSION_CONFIGS).convert(text)


class Cells(HTMLParser):
    """The text of every <td>, and of every <th>, character references resolved."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.cells: list[str] = []
        self.headers: list[str] = []
        self._into: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("td", "th"):
            self._into = self.cells if tag == "td" else self.headers
            self._into.append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._into = None

    def handle_data(self, data):
        if self._into is not None:
            self._into[-1] += data


def read_cells(page: str) -> tuple[list[str], list[str]]:
    parser = Cells()
    parser.feed(page)
    parser.close()
    return parser.headers, parser.cells


class Listing(HTMLParser):
    """The code text and the line numbers of a Pygments table listing."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.code = ""
        self.numbers = ""
        self._where: list[str] = []  # class of each open td

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self._where.append(dict(attrs).get("class", ""))

    def handle_endtag(self, tag):
        if tag == "td" and self._where:
            self._where.pop()

    def handle_data(self, data):
        if self._where and self._where[-1] == "code":
            self.code += data
        elif self._where and self._where[-1] == "linenos":
            self.numbers += data


def read_listing(page: str) -> tuple[str, list[int]]:
    parser = Listing()
    parser.feed(page)
    parser.close()
    return parser.code, [int(n) for n in parser.numbers.split()]


# ------------------------------------------------------------------ table cells


@PROPERTY
@given(code_text, code_text)
@example("a | b", "x = y[0] | z")
@example("<b>&amp;</b>", "`*not emphasis*` and ``two``")
@example("$x$ and $$y$$", "\\(a\\) <!-- c -->")
def test_code_in_a_table_cell_reads_back_exactly(header, text):
    table = R.table([header, "Code"], [["row", R.code(text)]])

    for rendered in (table, to_html(table)):
        assert read_cells(rendered) == ([header, "Code"], ["row", text])


@PROPERTY
@given(code_text)
def test_code_in_a_table_cell_is_one_code_element(text):
    rendered = to_html(R.table(["Code"], [[R.code(text)]]))

    assert len(re.findall(r"<code>", rendered)) == 1
    assert "<em>" not in rendered and "<strong>" not in rendered


def test_a_line_break_in_a_cell_is_a_br():
    assert R.code("a\nb") == "<code>a<br>b</code>"


# ------------------------------------------------------------------ listings

# Lines of printable text. Pygments drops blank lines at either end of a block
# (see test_listing_keeps_a_leading_blank_line below), so the property draws
# listings whose first and last lines hold something.
line_text = st.text(st.one_of(printable, st.sampled_from(SPECIAL)), max_size=40)
nonblank_line = line_text.filter(lambda s: s.strip() != "")
listing_lines = st.builds(
    lambda first, more, middle, last: [first, *middle, last] if more else [first],
    nonblank_line,
    st.booleans(),
    st.lists(line_text, max_size=6),
    nonblank_line,
)


@PROPERTY
@given(listing_lines, st.integers(min_value=1, max_value=100_000))
@example(["x = '```'", "y = 1"], 42)
@example(["s = '````' + '~~~'", "```"], 7)
@example(["a = b | c  # <tag> & `code` *em*"], 1)
@example(["0", " ", "0"], 1)
def test_listing_reads_back_with_its_real_line_numbers(lines, first_line):
    rendered = to_html(R.listing(lines, first_line))

    code, numbers = read_listing(rendered)
    # Python-Markdown blanks lines that hold only spaces (an invisible difference); all else is exact.
    shown = [line if line.strip() else "" for line in lines]
    assert code.rstrip("\n") == "\n".join(shown)
    assert numbers == list(range(first_line, first_line + len(lines)))


def test_listing_highlights_the_referenced_lines():
    rendered = to_html(R.listing(["a = 1", "b = 2", "c = 3"], 10, highlight=[11]))

    assert re.findall(r'<span class="hll">(.*?)</span>\n', rendered) != []
    marked = re.search(r'<span class="hll">(.*?)\n</span>', rendered, re.S).group(1)
    assert html.unescape(re.sub(r"<[^>]+>", "", marked)) == "b = 2"


def test_listing_head_is_kept_above_the_code():
    out = R.listing(["x = 1"], 3, head_html="<code>ops.py</code>")

    assert out == '<div class="trace-listing-head"><code>ops.py</code></div>\n\n``` python linenums="3"\nx = 1\n```\n'


def test_listing_starts_at_the_first_line_with_code():
    """Pygments drops leading blank lines, so the listing leaves them out and starts one number later."""
    code, numbers = read_listing(to_html(R.listing(["", "x = 1", ""], 10)))

    assert numbers == [11]
    assert code.splitlines() == ["x = 1"]
