"""A rendered page as Markdown with the generated HTML kept apart, for Python-Markdown's ``htmlStash``.

The pages the generator writes are mostly HTML it made itself: tables, worked
examples, KaTeX's output for every formula. Python-Markdown would read all of
it again, tag by tag, only to hand it on unchanged, and could change it (a
``_`` in a formula's TeX annotation is emphasis to it). So a rendered page is a
list of pieces: Markdown text, and ``Html`` pieces that the front end stores in
Python-Markdown's own ``htmlStash`` (``docs_hooks.extension``), which puts them
back, as they are, when the page is converted. That is the generator's one
placeholder mechanism, under every front end; the HTML of the page comes out
the same as if the HTML had been written into the Markdown.

What is kept apart:

- a formula's HTML inside a line, except in a heading (the table of contents and
  the heading's anchor are made from the heading's text);
- a run of lines that starts a raw HTML block (a block-level tag at the start of
  a line, after a blank line), closes every block-level element it opens, and
  ends at a blank line; never inside a fenced code block, and never an element
  that asks Markdown to read its content (``markdown="1"``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from docs_hooks.read.blocks import prose_lines


class Html(NamedTuple):
    """Generated HTML that Python-Markdown must not read: a whole block of lines, or a piece inside a line."""

    html: str
    block: bool = False


Piece = str | Html
Line = list[Piece]  # one line of the page: text, with formulas' HTML inside it

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
# Matched against the line lowercased, as HTML reads tag and attribute names (twice as fast as ignoring case).
_TAG = re.compile(r"<(/?)(" + "|".join(sorted(BLOCK_TAGS - {"hr"})) + r")\b[^>]*?(/?)>")
# md_in_html's attribute: Markdown reads what is inside such an element.
_MARKDOWN_ATTR = re.compile(r"\smarkdown\s*=")
# A line that ends a paragraph by starting a block of its own (so no underline below it makes a heading).
_PARAGRAPH_ENDS = re.compile(r" {0,3}(#|`{3}|~{3}|>|[-*+] |\d+[.)] |<)")


def flat(line: Line) -> str:
    """A line's text with the HTML inside it written out."""
    return "".join(p.html if isinstance(p, Html) else p for p in line)


def _text(line: Line) -> str:
    """A line's text as Markdown reads it: each piece of HTML inside it stands for an inline element."""
    return "".join("<span>" if isinstance(p, Html) else p for p in line)


def heading_lines(texts: list[str]) -> set[int]:
    """The lines of Markdown ``texts`` that lie in a heading: ``# ...``, or a paragraph underlined with
    ``===`` or ``---`` (on the lines that follow it, up to a blank line)."""
    found = set()
    underlined = False  # whether the lines from here on, up to a break, end in an underline
    for i in range(len(texts) - 1, -1, -1):
        if re.match(r" {0,3}#", texts[i]) or underlined:
            found.add(i)
        if re.fullmatch(r" {0,3}(=+|-+) *", texts[i]):
            underlined = True
        elif not texts[i].strip() or _PARAGRAPH_ENDS.match(texts[i]):
            underlined = False
    return found


def pieces(lines: list[Line]) -> list[Piece]:
    """The page's lines as pieces: Markdown text, and each raw HTML block Markdown would pass on unchanged
    as one ``Html`` block (formulas inside a kept block are part of it)."""
    texts = [_text(line) for line in lines]
    prose = {i for i, _ in prose_lines(texts)}  # outside fenced code
    out: list[Piece] = []
    i = 0
    while i < len(lines):
        starts = i in prose and texts[i][:1] == "<" and (i == 0 or not texts[i - 1].strip())
        end = _html_run(texts, i) if starts else None
        if end is None:
            out.extend(lines[i])
            out.append("\n")
            i += 1
        else:
            out.append(Html("\n".join(flat(line) for line in lines[i:end]), block=True))
            out.append("\n")
            i = end
    if out and out[-1] == "\n":
        out.pop()
    return _merged(out)


def _merged(parts: list[Piece]) -> list[Piece]:
    """Adjacent texts joined: fewer, longer pieces."""
    out: list[Piece] = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        elif p != "":
            out.append(p)
    return out


def _html_run(texts: list[str], i: int) -> int | None:
    """The end (exclusive) of the raw HTML block starting at line ``i``, if it can be kept apart; else None.

    The block is one or more block-level elements, each starting a line, each
    closed in lines that all start with a tag; it must end at a blank line (or
    the end of the text), as Markdown would end it.
    """
    open_tags: list[str] = []
    end = i
    while True:
        line = texts[end]
        if not open_tags:  # between elements: the next one must open a raw HTML block
            opening = _OPENING.match(line)
            if opening is None or opening.group(1).lower() not in BLOCK_TAGS:
                return None
        lowered = line.lower()
        if not line.startswith("<") or ("markdown" in lowered and _MARKDOWN_ATTR.search(lowered)):
            return None
        for closing, name, self_closing in _TAG.findall(lowered):
            if self_closing:
                continue
            if not closing:
                open_tags.append(name)
            elif not open_tags or open_tags.pop() != name:
                return None
        end += 1
        if end == len(texts) or not texts[end].strip():
            return end if not open_tags else None


def markdown(parts: list[Piece]) -> str:
    """The page as one Markdown text, the generated HTML written into it (what the command line shows)."""
    return "".join(p.html if isinstance(p, Html) else p for p in parts)


def stashed(parts: list[Piece], store) -> str:
    """The page as Markdown for Python-Markdown, each piece of HTML replaced by ``store(html)`` (its htmlStash).

    A block ends with a newline, as Python-Markdown stores a raw HTML block it finds itself: the page then
    comes out as if the HTML had been written into the Markdown, to the byte."""
    return "".join(store(p.html + "\n" if p.block else p.html) if isinstance(p, Html) else p for p in parts)
