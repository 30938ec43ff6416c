"""Generated HTML kept out of the Markdown parser: a placeholder in the Markdown, the HTML put back after.

The pages the generator writes are mostly HTML it made itself: tables, worked
examples, KaTeX's output for every formula. Python-Markdown would read all of
it again, tag by tag, only to hand it on unchanged (a raw HTML block, or inline
HTML), and that reading is most of what MkDocs spends on these pages. So the
Markdown MkDocs renders holds a short HTML comment in place of each such piece,
which Markdown hands on as it is, and the MkDocs adapter puts the HTML back into
the page's HTML (``on_page_content``, before the search index and the theme see
it). The HTML of the page comes out the same.

Only what Markdown would pass on unchanged is kept out:

- a formula's HTML inside a line, except in a heading (the table of contents and the heading's
  anchor are made from the heading's text);
- a run of lines that starts a raw HTML block (a block-level tag at the start of a
  line, after a blank line), closes every block-level element it opens, and ends
  at a blank line; never inside a fenced code block, and never an element that
  asks Markdown to read its content (``markdown="1"``).

Some generated HTML cannot be made while its page is expanded: a site-wide
table reads every page's entries, and a table of the tests that ran each line
waits for the coverage run. ``Late`` keeps what makes it, behind a placeholder of
the same kind, and fills it in when every page has been expanded (the MkDocs
adapter does it in ``on_page_context``, before the search index and the theme
read the page; the command line after its last page).

This is the one placeholder mechanism of the generator's HTML: nothing is
written into an HTML file after MkDocs wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from docs_hooks.base.errors import TraceError
from docs_hooks.read.blocks import prose_lines

# A block of HTML becomes a comment on a line of its own (a raw HTML block, passed on as it is); HTML
# inside a line becomes an empty element Markdown takes for inline HTML, like the KaTeX span it stands for:
# a comment at the start of a line would end the paragraph there.
PLACEHOLDER = re.compile(r'<!--trace-html:(\d+)-->|<trace-html n="(\d+)"></trace-html>')
# Tags that open a raw HTML block in Python-Markdown (a subset of its block-level elements).
BLOCK_TAGS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "details",
        "dialog",
        "div",
        "dl",
        "fieldset",
        "figure",
        "footer",
        "form",
        "header",
        "hr",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "script",
        "section",
        "style",
        "table",
        "ul",
    }
)
_OPENING = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)[\s>/]")
# The block-level tags of a line, opening or closing (``<hr>`` opens nothing: it is void).
_TAG = re.compile(r"<(/?)(" + "|".join(sorted(BLOCK_TAGS - {"hr"})) + r")\b[^>]*?(/?)>", re.I)


def placeholder(stash: list[str], html: str, inline: bool = False) -> str:
    """Keep ``html`` in ``stash``; what stands for it in the Markdown (a block's, or one ``inline``)."""
    stash.append(html)
    n = len(stash) - 1
    return f'<trace-html n="{n}"></trace-html>' if inline else f"<!--trace-html:{n}-->"


def unstash(text: str, stash: list[str]) -> str:
    """``text`` with every placeholder replaced by its HTML (which may hold placeholders of its own)."""
    if not stash:
        return text

    def fill(m: re.Match) -> str:
        n = int(m.group(1) or m.group(2))
        return unstash(stash[n], stash) if n < len(stash) else m.group(0)

    return PLACEHOLDER.sub(fill, text)


def in_heading(text: str, start: int) -> bool:
    """Whether position ``start`` of Markdown ``text`` lies in a heading: ``# ...``, or a paragraph
    underlined with ``===`` or ``---`` (on the lines that follow it, up to a blank line)."""
    line_start = text.rfind("\n", 0, start) + 1
    if re.match(r" {0,3}#", text[line_start:start]):
        return True
    line_end = text.find("\n", start)
    if line_end < 0:
        return False
    while line_end >= 0:  # the paragraph's next lines, one at a time
        next_end = text.find("\n", line_end + 1)
        line = text[line_end + 1 : next_end if next_end >= 0 else len(text)]
        if re.fullmatch(r" {0,3}(=+|-+) *", line):
            return True
        if not line.strip() or _PARAGRAPH_ENDS.match(line):
            return False
        line_end = next_end
    return False


# A line that ends a paragraph by starting a block of its own (so no underline below it makes a heading).
_PARAGRAPH_ENDS = re.compile(r" {0,3}(#|`{3}|~{3}|>|[-*+] |\d+[.)] |<)")


def stash_blocks(text: str, stash: list[str]) -> str:
    """``text`` with each raw HTML block that Markdown would pass on unchanged replaced by a placeholder."""
    lines = text.split("\n")
    prose = {i for i, _ in prose_lines(lines)}  # outside fenced code
    out: list[str] = []
    i = 0
    while i < len(lines):
        starts = i in prose and lines[i][:1] == "<" and (i == 0 or not lines[i - 1].strip())
        end = _html_run(lines, i) if starts else None
        if end is None:
            out.append(lines[i])
            i += 1
        else:
            out.append(placeholder(stash, "\n".join(lines[i:end])))
            i = end
    return "\n".join(out)


def _html_run(lines: list[str], i: int) -> int | None:
    """The end (exclusive) of the raw HTML block starting at line ``i``, if it can be kept out; else None.

    The block is one or more block-level elements, each starting a line, each
    closed in lines that all start with a tag; it must end at a blank line (or
    the end of the text), as Markdown would end it.
    """
    open_tags: list[str] = []
    end = i
    while True:
        line = lines[end]
        if not open_tags:  # between elements: the next one must open a raw HTML block
            opening = _OPENING.match(line)
            if opening is None or opening.group(1).lower() not in BLOCK_TAGS:
                return None
        if not line.startswith("<") or re.search(r"\smarkdown\s*=", line):
            return None
        for closing, name, self_closing in _TAG.findall(line):
            name = name.lower()
            if self_closing:
                continue
            if not closing:
                open_tags.append(name)
            elif not open_tags or open_tags.pop() != name:
                return None
        end += 1
        if end == len(lines) or not lines[end].strip():
            return end if not open_tags else None


LATE = re.compile(r"<!--trace-late:(\d+)-->")


@dataclass
class _LateItem:
    make: Callable[[str], tuple[str, list[TraceError]]]  # page -> (its HTML, problems met making it)
    on_error: Callable[[TraceError], str]  # the HTML shown in its place when making it failed
    line: int | None  # the page line a problem with no place of its own is placed at
    once: bool  # made once per build (what the coverage run gives); else again for each page finished


class Late:
    """HTML made when every page has been expanded, behind ``<!--trace-late:N-->`` until then.

    The same key gets the same placeholder, so pages expanded again while
    serving add no new ones.
    """

    def __init__(self, coverage: bool = False, formulas=None):
        """``coverage``: whether a coverage run is set up (else what would wait for it is made at once);
        ``formulas(page, html, line)``: a site-wide table's HTML with its formulas rendered, and the problems."""
        self.coverage = coverage
        self.formulas = formulas or (lambda page, html, line: (html, []))
        self._items: list[_LateItem] = []
        self._numbers: dict[tuple, int] = {}
        self._made: dict[int, tuple[str, list] | TraceError] = {}

    def placeholder(self, key: tuple, make, on_error, line: int | None = None, once: bool = True) -> str:
        if key not in self._numbers:
            self._numbers[key] = len(self._items)
            self._items.append(_LateItem(make, on_error, line, once))
        return f"<!--trace-late:{self._numbers[key]}-->"

    # Speed device (bench/bench_docs.py --devices, cold build with no line map, machine loaded): waiting for
    # the coverage run at the first entry instead took 1.26x as long.
    def defer(self, make: Callable[[], str], on_error: Callable[[str], str], key: tuple) -> str:
        """HTML that needs the coverage run, as a placeholder filled when the page is finished.

        The coverage run is the slowest part of a cold build when the test run left
        no line map: deferring what it shows lets every page be expanded while the
        tests still run. Without a coverage run set up the HTML is made at once.
        ``on_error(message)`` is shown in its place when the run failed; ``key``
        names what the HTML is made from.
        """
        if not self.coverage:
            return make()
        return self.placeholder(key, lambda page: (make(), []), lambda err: on_error(err.message), line=1)

    def site_table(self, make: Callable[[], str], key: tuple, line: int) -> str:
        """A table made from every page of the site (the traceability matrix, say), made when the page is
        finished: every page has been expanded by then, so it reads the entries the pages really have. It
        is made again each time, so while serving it follows edits of the other pages."""
        from docs_hooks.render.html import error_box

        made = lambda page: self.formulas(page, make().rstrip("\n"), line)  # the placeholder ends its line
        return self.placeholder(key, made, lambda err: error_box(str(err)), line=line, once=False)

    def fill(self, page: str, text: str) -> tuple[str, list[TraceError]]:
        """``text`` of ``page`` with every placeholder filled (what one fills in may hold more), and the problems.

        A problem with no place is the page's own, at the item's line. One with a
        place (the coverage run's failure, at its setting) is one problem of the
        build: reported with the first page that meets it, and with that page
        again in each later build (``mkdocs serve`` keeps the builder while no code
        changes, and each build finishes every page once).
        """
        problems: dict[str, TraceError] = {}

        def one(m: re.Match) -> str:
            n = int(m.group(1))
            item = self._items[n]
            value = self._made.get(n) if item.once else None
            if value is None:
                try:
                    value = item.make(page)
                except TraceError as err:
                    value = err
                if item.once:
                    self._made[n] = value
            if isinstance(value, TraceError):
                if value.path is None:
                    value = value.at(page, item.line)
                    problems.setdefault(value.message, value)
                elif getattr(value, "reported_with", page) == page:
                    value.reported_with = page
                    problems.setdefault(value.message, value)
                return item.on_error(value)
            html, found = value
            for err in found:
                problems.setdefault(err.message, err)
            return html

        while LATE.search(text):
            text = LATE.sub(one, text)
        return text, list(problems.values())
