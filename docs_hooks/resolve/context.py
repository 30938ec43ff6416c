"""What a block kind's handler gets: the build, the page and the entry it sits in, and the page's
running lists (problems, references for the lock, formulas waiting for KaTeX).

``resolve`` is the resolve stage for one reference; ``inline_math`` and
``render_math`` collect a page's formulas and render them in one KaTeX batch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docs_hooks.base.errors import TraceError
from docs_hooks.read.blocks import INLINE_REF, Markdown, Page, prose_lines
from docs_hooks.render import html as R
from docs_hooks.render.stash import in_heading, placeholder
from docs_hooks.resolve.anchors import Resolved, parse_ref, resolve
from docs_hooks.resolve.entries import EntryData
from docs_hooks.resolve.lock import LockEntry
from docs_hooks.run.math import INLINE_MATH

if TYPE_CHECKING:
    from docs_hooks.expand import Builder

CODE_SPAN = re.compile(r"(`+[^`]*`+|<code>.*?</code>)")
FORMULA = re.compile("\x02trace-math-(\\d+)\x03")  # a formula of the page, until its batch is rendered


@dataclass
class Context:
    builder: Builder
    page: str
    entry: EntryData | None
    problems: list[TraceError]
    uses: list[LockEntry]
    unresolved: dict[tuple[str, str], int]
    math: list[tuple[str, bool, int]] = field(default_factory=list)  # (tex, display, line)
    broken_entry: bool = False  # the open entry failed; its blocks are skipped without more messages
    equation_ids: dict[str, int] = field(default_factory=dict)  # id -> line of its first use
    symbols: dict[int, dict | None] = field(default_factory=dict)  # entry's line -> its symbols' names in code

    def math_placeholder(self, tex: str, display: bool, line: int) -> str:
        self.math.append((tex.strip(), display, line))
        return f"\x02trace-math-{len(self.math) - 1}\x03"

    def inline_math(self, text: str, line: int, prose: bool = False) -> str:
        """Replace $...$ outside code with placeholders for KaTeX.

        In prose (``prose=True``, one source line) a ``$`` left over means a
        formula that does not close on its line: an error, not raw TeX on the page.
        """
        parts = CODE_SPAN.split(text)
        for j in range(0, len(parts), 2):
            parts[j] = INLINE_MATH.sub(lambda m: self.math_placeholder(m.group("tex"), False, line), parts[j])
            if prose and re.search(r"(?<!\\)\$", parts[j]):
                self.problems.append(
                    TraceError(
                        "a '$' that opens no formula closed on this line; write inline math as $...$ on one line "
                        "(escape a literal dollar as \\$)",
                        self.page,
                        line,
                    )
                )
        return "".join(parts)

    def resolve(self, text: str, line: int, where: str) -> Resolved | None:
        """Resolve one reference; record it for the lock, or record the problem."""
        key = f"{where} | {text.strip()}"
        try:
            ref = parse_ref(text)
            scope = [f.name for f in self.entry.functions] if self.entry else None
            resolved = resolve(self.builder.index, ref, scope)
        except TraceError as err:
            self.problems.append(TraceError(f"reference '{text.strip()}': {err.message}", self.page, line))
            self.unresolved[(self.page, key)] = line
            return None
        locked = resolved.locked
        self.uses.append(LockEntry(self.page, key, locked.text, locked.digest, line))
        return resolved

    def prose(self, text: str, first_line: int) -> str:
        """Authored Markdown: its formulas collected, and each ``[[module.function: text]]`` a linked ``file.py:L``."""
        lines = text.split("\n")
        for i, line in prose_lines(lines):
            if "$" in line:
                line = lines[i] = self.inline_math(line, first_line + i, prose=True)
            if "[[" not in line:
                continue
            parts = re.split(r"(`+[^`]*`+)", line)  # leave inline code alone
            for j in range(0, len(parts), 2):
                parts[j] = INLINE_REF.sub(lambda m: self._inline_ref(m.group("ref"), first_line + i), parts[j])  # noqa: B023 (sub calls it at once)
            lines[i] = "".join(parts)
        return "\n".join(lines)

    def _inline_ref(self, text: str, line: int) -> str:
        resolved = self.resolve(text, line, "inline")
        if resolved is None:
            return f'<span class="trace-error">[[{R.esc(text)}]]</span>'
        return self.builder.links.line_link(resolved.function, resolved.start, resolved.end)

    def render_math(self, markdown: str, stash: list[str] | None = None) -> str:
        """Every formula collected so far to KaTeX HTML, in one batch; with ``stash``, the HTML of each formula
        outside a heading goes there, and a placeholder into the Markdown (see stash)."""
        if not self.math or self.builder.static:
            return markdown
        try:
            results = self.builder.workers.math.render_many([(tex, display) for tex, display, _ in self.math])
        except TraceError as err:
            self.problems.append(err.at(self.page, self.math[0][2]))
            results = [(None, "")] * len(self.math)
        html = []
        for (tex, display, line), (out, error) in zip(self.math, results):
            if error is not None:
                if error:
                    self.problems.append(
                        TraceError(f"KaTeX cannot render {tex!r}: {error}; fix the TeX", self.page, line)
                    )
                out = f'<code class="trace-error">{R.esc(tex)}</code>'
            html.append(f'<div class="trace-math">{out}</div>' if display else out)
        if stash is None:
            return FORMULA.sub(lambda m: html[int(m.group(1))], markdown)

        def keep(m: re.Match) -> str:  # a formula shown as a block stays HTML: stash_blocks keeps it out with its block
            n = int(m.group(1))
            if self.math[n][1] or in_heading(markdown, m.start()):
                return html[n]
            return placeholder(stash, html[n], inline=True)

        return FORMULA.sub(keep, markdown)


def page_formulas(page: Page) -> list[tuple[str, bool]]:
    """Every formula written in a parsed page, in prose and in block fields: (TeX, shown as a block)."""
    scratch = Context(None, "", None, [], [], {})  # collects formulas only: needs no build
    for seg in page.segments:
        if isinstance(seg, Markdown):
            for _, line in prose_lines(seg.text.split("\n")):
                if "$" in line:
                    scratch.inline_math(line, 0)
        elif seg.kind == "equation" and isinstance(seg.data.get("tex"), str):
            scratch.math_placeholder(seg.data["tex"], True, 0)
        else:
            for text in _strings({k: v for k, v in seg.data.items() if k != "__lines__"}):
                if "$" in text:
                    scratch.inline_math(text, 0)
    return [(tex, display) for tex, display, _ in scratch.math]


def _strings(value):
    """Every string inside a block's data."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
