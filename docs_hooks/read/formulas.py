"""The formulas a page holds, found as it is read: ``$...$`` in prose and in block fields, and each equation's TeX.

They are known before anything is resolved, so the run stage can render every
formula of the site with KaTeX in one batch while the pages are still being
resolved; the render stage then typesets each page from the results.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from docs_hooks.read.blocks import Markdown, Page, prose_lines

# $...$ in prose: no space just inside the dollars, no digit right after (so "$5 and $6" stays text).
INLINE_MATH = re.compile(r"(?<![\\$\w])\$(?=\S)(?P<tex>[^$\n]+?)(?<=\S)\$(?![\w$])")
# Code is never typeset: a span of backticks in Markdown, or a <code> element in generated HTML.
CODE_SPAN = re.compile(r"(`+[^`]*`+|<code>.*?</code>)")
# A '$' that is not escaped: left over after the formulas of a line, it opens one that does not close there.
LONE_DOLLAR = re.compile(r"(?<!\\)\$")


def split_formulas(text: str) -> Iterator[tuple[str, bool]]:
    """``text`` as (piece, is TeX) pairs, in order: the TeX of each ``$...$`` outside code, and what lies between."""
    parts = CODE_SPAN.split(text)
    for j, part in enumerate(parts):
        if j % 2:  # code: as it is
            yield part, False
            continue
        pos = 0
        for m in INLINE_MATH.finditer(part):
            if m.start() > pos:
                yield part[pos : m.start()], False
            yield m.group("tex").strip(), True
            pos = m.end()
        if pos < len(part):
            yield part[pos:], False


def inline_formulas(text: str) -> list[str]:
    """The TeX of every ``$...$`` in ``text`` outside code."""
    return [piece for piece, tex in split_formulas(text) if tex]


def symbol_math(symbol: str) -> str:
    """A ``trace-symbols`` row's symbol as inline math: its TeX between dollars (written with or without them)."""
    tex = symbol.strip()
    if len(tex) > 1 and tex.startswith("$") and tex.endswith("$"):
        tex = tex[1:-1].strip()
    return f"${tex}$"


def page_formulas(page: Page) -> list[tuple[str, bool]]:
    """Every formula written in a parsed page, in prose and in block fields (a ``trace-symbols`` row's symbol is
    TeX without dollars too): (TeX, shown as a block)."""
    found: list[tuple[str, bool]] = []
    for seg in page.segments:
        if isinstance(seg, Markdown):
            for _, line in prose_lines(seg.text.split("\n")):
                if "$" in line:
                    found += [(tex, False) for tex in inline_formulas(line)]
        elif seg.kind == "equation" and isinstance(seg.data.get("tex"), str):
            found.append((seg.data["tex"].strip(), True))
        else:
            if seg.kind == "symbols" and isinstance(seg.data.get("rows"), list):  # a symbol is TeX, dollars or not
                for row in seg.data["rows"]:
                    if isinstance(row, dict) and row.get("symbol") is not None:
                        found += [(tex, False) for tex in inline_formulas(symbol_math(str(row["symbol"])))]
            for text in _strings({k: v for k, v in seg.data.items() if k != "__lines__"}):
                if "$" in text:
                    found += [(tex, False) for tex in inline_formulas(text)]
    return found


def _strings(value) -> Iterator[str]:
    """Every string inside a block's data."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
