"""render.search: the search plugin reads each page without its spans, and indexes exactly what it did before."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from material.plugins.search.plugin import Parser

from docs_hooks.render.search import IndexedPages, heading_parts, part_key, without_spans

from .conftest import run_cli
from .test_cli import MKDOCS_YML as CLI_MKDOCS_YML


def sections(html: str) -> list[tuple[str, str | None, str, str, bool]] | str:
    """What Material's search index makes of ``html``: each section's heading tag, id, title and text, and
    whether it is left out; or the error the search plugin stops with (it does on some nestings)."""
    parser = Parser()
    try:
        parser.feed(html)
        parser.close()
    except ValueError as err:
        return f"ValueError: {err}"
    return [(s.el.tag, s.id, "".join(s.title).strip(), "".join(s.text).strip(), s.is_excluded()) for s in parser.data]


# ------------------------------------------------------------------ any HTML, both ways

TEXT = st.text(alphabet=" \n\t\xa0ab.&;", max_size=5).map(lambda t: t.replace("&", "&amp;"))
ATTRS = st.sampled_from(
    ["", "", ' class="mord"', ' class="mord"', " data-search-exclude", ' class="linenodiv"', ' aria-hidden="true"']
)
CONTAINERS = ["span", "span", "span", "p", "code", "pre", "div", "li", "sub", "a", "math", "strong", "h2", "h3"]


@st.composite
def fragments(draw, depth: int = 0) -> str:
    """A well-formed piece of HTML: text, void tags and nested elements, spans most of all."""
    parts = []
    for _ in range(draw(st.integers(1 if depth == 0 else 0, 4 if depth < 4 else 0))):
        kind = draw(st.sampled_from(["text", "text", "element", "element", "void"]))
        if kind == "text":
            parts.append(draw(TEXT))
        elif kind == "void":
            parts.append(draw(st.sampled_from(["<br>", "<wbr>", '<img alt="x">', '<path d="M0"/>', "<!-- c -->"])))
        else:
            tag = draw(st.sampled_from(CONTAINERS))
            attrs = draw(ATTRS)
            if tag in ("h2", "h3"):
                attrs += draw(st.sampled_from(["", f' id="s{len(parts)}{depth}"']))
            parts.append(f"<{tag}{attrs}>{draw(fragments(depth + 1))}</{tag}>")
    return "".join(parts)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=st.sampled_from(["", '<h1 id="top">Title</h1>', "<p>intro</p>", "<p></p>\n"]), body=fragments())
# An excluded span holding the end of an element of the name of an excluded one around it: the search plugin
# ends the outer exclusion there (and then stops on the outer end tag).
@example(head="", body="<code data-search-exclude><span data-search-exclude><code></code></span></code>")
# A run of whitespace between two spans: the search plugin makes it one space.
@example(head="<p>intro</p>", body="<p>x<span>b</span>  \n  <span>c</span></p>")
@example(head="<p>intro</p>", body="<p data-search-exclude><span data-search-exclude><p></p></span></p>")
def test_any_well_formed_page_is_indexed_the_same_without_its_spans(head, body):
    light = indexed_the_same(head + body)
    assert light is None or "<span" not in light


def indexed_the_same(html: str) -> str | None:
    """``without_spans(html)``, after asserting that the search plugin makes the same of it as of ``html``."""
    light = without_spans(html)
    event("left as it is" if light is None else "spans taken out")
    if light is not None:
        assert sections(light) == sections(html), (html, light)
    return light


@st.composite
def nearly_well_formed(draw) -> str:
    """A well-formed piece of HTML with one or two of its tags dropped, repeated or moved."""
    tokens = [t for t in re.split(r"(<[^>]*>)", draw(fragments())) if t]
    for _ in range(draw(st.integers(1, 2))):
        if not tokens:
            break
        i, j = draw(st.integers(0, len(tokens) - 1)), draw(st.integers(0, len(tokens)))
        how = draw(st.sampled_from(["drop", "repeat", "move"]))
        token = tokens.pop(i) if how != "repeat" else tokens[i]
        if how != "drop":
            tokens.insert(min(j, len(tokens)), token)
    return "".join(tokens)


@settings(max_examples=1000, deadline=None)
@given(head=st.sampled_from(['<h1 id="top">Title</h1>', "<p>intro</p>"]), body=nearly_well_formed())
def test_a_page_whose_tags_do_not_nest_is_indexed_the_same_or_left_as_it_is(head, body):
    indexed_the_same(head + body)


SOUP = st.lists(
    st.one_of(
        TEXT,
        st.builds("<{}{}>".format, st.sampled_from(["span", "span", "span", "p", "pre", "code", "h2", "div"]), ATTRS),
        st.builds("</{}>".format, st.sampled_from(["span", "span", "p", "pre", "code", "h2", "div"])),
        st.sampled_from(["<br>", '<h2 id="x">', "</h2>"]),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(head=st.sampled_from(['<h1 id="top">Title</h1>', "<p>intro</p>"]), body=SOUP)
def test_tags_in_any_order_are_indexed_the_same_or_left_as_they_are(head, body):
    indexed_the_same(head + body)


def test_a_formula_and_a_listing_as_katex_and_pygments_write_them_lose_every_span_and_index_the_same():
    formula = (
        '<p>The mean <span class="katex"><span class="katex-mathml" data-search-exclude><math><semantics><mrow>'
        '<mi>μ</mi></mrow><annotation encoding="application/x-tex">\\mu</annotation></semantics></math></span>'
        '<span class="katex-html" aria-hidden="true"><span class="base"><span class="strut" style="height:0.6em;">'
        '</span><span class="mord mathnormal">μ</span><span class="mspace"> </span></span></span></span> is taken.</p>'
    )
    listing = (
        '<div class="highlight"><pre><span></span><code><span class="k">def</span> <span class="nf">f</span>'
        '<span class="p">(</span><span class="n">x</span><span class="p">):</span>\n    <span class="k">return</span>'
        ' <span class="n">x</span>\n</code></pre></div>'
    )
    html = '<h1 id="page">Page</h1>\n' + formula + '\n<h2 id="code">Code</h2>\n' + listing

    light = without_spans(html)

    assert light is not None and "<span" not in light and "<math>" not in light
    assert sections(light) == sections(html)
    assert sections(html)[1][3] == "<pre><code>def f(x):\n    return x\n</code></pre>"  # whitespace kept


@pytest.mark.parametrize(
    "html, why",
    [
        ('<p>a</p><span class="x"><h2 id="h">b</h2></span>', "a heading inside a span"),
        ("<p>a <span>b</p></span>", "elements that do not nest"),
        ("<p>a <span>b</span>", "an element left open"),
        ("<p>a <span>b</span></p></div>", "an end tag with nothing open"),
        ("<p>a <span data-search-exclude>b <span>c</span> d</span></p>", "a span inside an excluded span"),
        ('<p data-search-exclude="yes">a <span>b</span></p>', "an attribute the search plugin rewrites"),
        ("<span>a</span><p>b</p>", "a page that starts with a span"),
        ("<p>a < b <span>c</span></p>", "a '<' that starts no tag"),
        ("<p>no spans at all</p>", "nothing to take out"),
    ],
)
def test_a_page_it_cannot_take_spans_out_of_exactly_is_left_as_it_is(html, why):
    assert without_spans(html) is None, why


# ------------------------------------------------------------------ a real build, both ways

# The small site of the command line's tests, with Material's theme (and its search plugin) and a page of prose.
MKDOCS_YML = CLI_MKDOCS_YML.replace("name: mkdocs", "name: material").replace(
    "  - Layer norm: page.md\n", "  - Layer norm: page.md\n  - Prose: prose.md\n"
)

PAGE = """\
# Layer norm

The mean $\\mu = \\frac{1}{d}\\sum_i x_i$ and the variance, with a space: $a \\; b$.

```trace-entry
title: Forward
function: ops.layer_norm_forward
status: implemented
```

Each entry becomes $\\hat x_i = \\frac{x_i - \\mu}{\\sqrt{\\sigma^2 + \\epsilon}}$.

## Hand-written

<p>Raw HTML: <span class="note">a <em>note</em></span> and <span data-search-exclude>left out</span>.</p>

```python
def f(x):
    return x  # a comment
```
"""

BUILD = """
import sys
from docs_hooks import search_reader
from docs_hooks.plugin_search import SearchReading
from docs_hooks.render import search

light = []
real = search.without_spans
search.without_spans = search_reader.without_spans = lambda html: light.append(real(html) is not None) or real(html)
if sys.argv[1] == "off":
    SearchReading.wrap = lambda self, config: None
from mkdocs.__main__ import cli
try:
    cli(["build", "--strict", "-q", "-d", sys.argv[2], "-f", sys.argv[3]])
finally:
    print("lightened", sum(light), "of", len(light))
"""


def build(
    root: Path, how: str, config: str = "mkdocs.yml", script: str = BUILD, site: Path | None = None
) -> tuple[Path, str]:
    """The site built by ``script`` (``how``, the site's folder and ``config`` its arguments), and what it printed."""
    site = site or root / f"site-{how}"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script, how, str(site), config],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return site, result.stdout


def test_a_material_site_built_with_the_spans_taken_out_has_the_same_search_index_and_the_same_pages(make_project):
    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": PAGE, "docs/prose.md": "# Prose\n\nJust text.\n"})
    assert run_cli(root, "relock") == 0

    (on, said), (off, _) = build(root, "on"), build(root, "off")

    # The parts of the page with formulas and code were lightened (it is read a part at a time: see
    # search_reader.Sections); the page of prose has no span; a source page, which the search plugin leaves out
    # of its index, is handed as it is.
    assert (on / "source/src/ops.py/index.html").is_file()
    lightened, handed = map(int, re.search(r"lightened (\d+) of (\d+)", said).groups())
    assert 0 < lightened < handed, said
    shown = (on / "page/index.html").read_text(encoding="utf-8")
    assert shown.count('class="katex-html"') == 3 and '<span class="note">a <em>note</em></span>' in shown
    index = (on / "search/search_index.json").read_bytes()
    assert index == (off / "search/search_index.json").read_bytes()
    docs = json.loads(index)["docs"]
    assert any("Raw HTML: a note and ." in d["text"] for d in docs), docs  # the excluded span stays out
    for page in sorted(off.rglob("*.html")):
        assert (on / page.relative_to(off)).read_bytes() == page.read_bytes(), page


def test_entries_are_kept_only_as_json_gives_them_back_and_a_damaged_row_is_a_miss(tmp_path):
    indexed = IndexedPages(tmp_path)
    page = [{"location": "a/", "title": "A", "text": "<p>x</p>", "tags": ["t"], "boost": 2.5}]
    indexed.add("page", page)
    indexed.add("tuple", [{"location": "b/", "title": "B", "text": "", "boost": (1, 2)}])  # JSON: a list
    indexed.add("nan", [{"location": "c/", "title": "C", "text": "", "boost": float("nan")}])
    indexed.add("object", [{"location": "d/", "title": "D", "text": "", "boost": object()}])
    indexed.flush()
    indexed.close()

    again = IndexedPages(tmp_path)
    assert again.get("page") == page
    assert [again.get(k) for k in ("tuple", "nan", "object", "never")] == [None] * 4
    again.store.put_many({"page": b'[{"location": 1}]', "other": b"not json"})
    assert again.get("page") is None and again.get("other") is None
    again.close()


def test_a_page_is_cut_before_each_heading_that_starts_a_line_with_an_id_and_the_parts_join_to_it():
    html = (
        '<p>Intro</p>\n<h2 id="a">A</h2>\n<p>x</p>\n<h3 id="b" class="c">B</h3>\n'
        '<h2 title="id">no id</h2>\n<p>text <h2 id="mid">inside a line</h2></p>\n  <h2 id="indented">I</h2>\n'
        '<h7 id="no">not a heading</h7>'
    )
    parts = heading_parts(html)
    assert "".join(parts) == html
    assert [p.split(">", 1)[0] for p in parts] == ["<p", '<h2 id="a"', '<h3 id="b" class="c"']
    assert heading_parts('<h1 id="t">T</h1>') == ['<h1 id="t">T</h1>']  # nothing before the first: no part
    assert heading_parts("") == []


def test_a_part_is_keyed_by_its_html_its_place_and_the_reader():
    keys = {part_key(a, h, r) for a in (False, True) for h in ("<p>a</p>", "<p>b</p>") for r in ("9.1", "9.2")}
    assert len(keys) == 8
    assert part_key(True, "<p>a</p>", "9.1") == part_key(True, "<p>a</p>", "9.1")
