"""Tests of docs_hooks.sources: each module as a page of the site with an anchor per line, links to it written
once and made relative to the page that shows them, and each cited line linking back to what cites it."""

from __future__ import annotations

import re

import pytest

from docs_hooks.render import sources
from docs_hooks.render.sources import Citation

CODE = "def f(x):\n    mu = x\n    return mu\n\n\ndef g(y):\n    return y\n"


def cites_by_line(html: str) -> dict[int, str]:
    """Line number -> the links of its citations cell ('' when nothing cites it)."""
    rows = re.findall(r'<tr id="L(\d+)"[^>]*>.*?<td class="trace-src-cites">(.*?)</td></tr>|<tr id="L(\d+)"', html)
    return {int(a or b): cites for a, cites, b in rows}


def test_a_link_to_a_span_names_the_file_and_its_lines():
    assert sources.target("src/ops.py") == "docs-hooks-source:src/ops.py"
    assert sources.target("src/ops.py", 8) == "docs-hooks-source:src/ops.py#L8"
    assert sources.target("src/ops.py", 8, 8) == "docs-hooks-source:src/ops.py#L8"
    assert sources.target("src/ops.py", 9, 12) == "docs-hooks-source:src/ops.py#L9-L12"
    assert sources.page_uri("src/ops.py") == "source/src/ops.py.md"


def test_links_are_made_relative_to_the_page_and_a_file_without_a_page_links_elsewhere_or_loses_its_link():
    html = (
        '<a href="docs-hooks-source:src/ops.py#L9-L12">a</a> <a href="docs-hooks-source:src/gone.py#L3">b</a> '
        '<a href="docs-hooks-source:src/ops.py">c</a> <a href="docs-hooks-source:tests/t.py#L4-L6" title="t">d</a>'
    )
    where = {"src/gone.py": None, "tests/t.py": "https://example.com/blob/abc/tests/t.py"}

    out = sources.relative_links(html, "guide/layer-norm/", lambda path: where.get(path, f"source/{path}/"))

    assert out == (
        '<a href="../../source/src/ops.py/#L9">a</a> <a>b</a> <a href="../../source/src/ops.py/">c</a> '
        '<a href="https://example.com/blob/abc/tests/t.py#L4-L6" title="t">d</a>'
    )
    assert sources.relative_links("no source links", "guide/", lambda path: 1 / 0) == "no source links"  # not asked


def test_a_cited_statement_marks_each_of_its_lines_and_a_cited_function_its_first_line():
    cited = [
        Citation("src/ops.py", 2, 3, "docs/page.md", "eq-ln-mean", "Mean <of a row>"),
        Citation("src/ops.py", 1, 7, "docs/page.md", "fwd", "Forward"),
    ]

    html = sources.render_page("src/ops.py", CODE, cited, "source/src/ops.py/", lambda page: "page/")

    assert cites_by_line(html) == {
        1: '<a href="../../../page/#fwd">Forward</a>',
        2: '<a href="../../../page/#eq-ln-mean">Mean &lt;of a row&gt;</a>',
        3: '<a href="../../../page/#eq-ln-mean">Mean &lt;of a row&gt;</a>',
        4: "",
        5: "",
        6: "",
        7: "",
        8: "",
    }
    assert html.startswith("<p>2 entries and equations cite lines of this file; each cited line lists them.</p>\n")
    assert '<tr id="L2" class="trace-src-cited"><td class="trace-src-n"><a href="#L2">2</a></td>' in html


def test_a_file_nothing_cites_says_so_and_links_to_the_repository_when_there_is_one():
    html = sources.render_page(
        "src/ops.py",
        "x = 1\n",
        [],
        "source/src/ops.py/",
        lambda page: "page/",
        "https://example.com/repo/blob/abc123/src/ops.py",
    )

    assert html.startswith(
        '<p><a href="https://example.com/repo/blob/abc123/src/ops.py">On the repository host</a></p>\n'
        "<p>No entry or equation cites this file.</p>\n"
    )
    assert 'class="trace-src-cited"' not in html


def test_a_source_page_is_titled_by_its_file_left_out_of_search_and_shows_the_file_with_its_block():
    assert sources.page_markdown("src/ops.py") == (
        "---\ntitle: ops.py\nhide:\n  - navigation\n  - toc\nsearch:\n  exclude: true\n---\n\n"
        "# `src/ops.py`\n\n```trace-source\nfile: src/ops.py\n```\n"
    )


def test_a_relative_path_is_the_one_posixpath_gives_for_any_two_paths():
    """Every path of up to four segments (inside the site, above it, absolute, with '.' and '..') against every
    other: relative_path answers as posixpath.relpath does, or raises as it does (an empty path)."""
    import itertools
    import posixpath

    segments = ["a", "b", "a.md", ".", "..", ""]
    paths = sorted({"/".join(p) for n in range(4) for p in itertools.product(segments, repeat=n)})
    paths += ["/site/a/", "/a", "source/src/ops.py/", "layer-norm/", "../up/"]
    checked = 0
    for path, start in itertools.product(paths, repeat=2):
        try:
            expected = posixpath.relpath(path, start)
        except ValueError:
            with pytest.raises(ValueError):
                sources.relative_path(path, start)
            continue
        assert sources.relative_path(path, start) == expected, (path, start)
        checked += 1
    assert checked > 10_000
