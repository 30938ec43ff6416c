"""One page through the stages: its blocks resolved into a plan, then the plan rendered from the results.

``plan_page`` walks a read page (``read.blocks.Page``) in order: prose (its
inline references resolved), entries and their equations (``resolve.entries``),
and every other block through its kind's ``resolve``. A block that fails is
kept as the error box it will show; the page's problems and its references
for the lock are gathered on the way. ``check``, ``relock`` and ``impact`` stop
there.

``render_page`` turns the plan into the page's pieces (``render.segments``):
each part's HTML (a kind's ``render``, the sections below each entry), the
page's formulas typeset in one batch, and its links to source pages made
relative to the page. It reads nothing but the plan, the run's results and
the links.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from docs_hooks.base.errors import TraceError
from docs_hooks.base.reads import Trace
from docs_hooks.kinds.base import AnyKind, Project, Rendered, Scope
from docs_hooks.read.blocks import INLINE_REF, Block, Markdown, Page, prose_lines
from docs_hooks.read.formulas import CODE_SPAN, INLINE_MATH, LONE_DOLLAR, split_formulas
from docs_hooks.render import html as R
from docs_hooks.render import sections
from docs_hooks.render.links import Links
from docs_hooks.render.segments import Html, Line, Piece, heading_lines, pieces
from docs_hooks.resolve.anchors import Resolved
from docs_hooks.resolve.callgraph import CallGraph
from docs_hooks.resolve.entries import (
    EntryData,
    EquationData,
    entry_symbols,
    read_entry,
    read_equation,
    split_at_headings,
    status_problem,
)
from docs_hooks.resolve.refs import References
from docs_hooks.run.recording import Recording
from docs_hooks.run.request import Request
from docs_hooks.run.results import COVERAGE, Formula, Need, Results

INLINE_CODE = re.compile(r"(`+[^`]*`+)")

# ============================================================================ the plan


@dataclass
class Prose:
    text: str
    line: int
    inline: list[Resolved | None]  # each [[reference]] of the text, in order: its span, or None when it failed


@dataclass
class EntryHead:
    entry: EntryData


@dataclass
class Equation:
    eq: EquationData
    tex_line: int


@dataclass
class BlockPart:
    kind: AnyKind
    block: Block
    plan: Any


@dataclass
class EntryFoot:
    entry: EntryData


@dataclass
class Failed:
    message: str  # the error shown in the block's place


Part = Prose | EntryHead | Equation | BlockPart | EntryFoot | Failed


@dataclass
class PagePlan:
    page: str
    project: Project
    parts: list[Part]
    problems: list[TraceError]
    refs: References  # the page's references: what resolved (for the lock) and what did not
    entries: list[EntryData] = field(default_factory=list)
    # What resolving the page read of the code, under a build that keeps traces (``base.reads``): a later build
    # whose answers are the same would resolve the page to the same plan.
    read: Trace | None = None

    @property
    def reads_site(self) -> bool:
        """Whether the page shows what other pages hold (a site-wide table, a source page's citations)."""
        return any(isinstance(p, BlockPart) and getattr(p.plan, "reads_site", False) for p in self.parts)


def plan_page(page: Page, project: Project, kinds: dict[str, AnyKind]) -> PagePlan:
    """The page resolved: every reference to one statement span, every block to its kind's plan."""
    refs = References(project.index, page.path)
    plan = PagePlan(page.path, project, [], list(page.problems), refs)
    parts = plan.parts
    entry: EntryData | None = None
    broken = False  # the open entry failed: its blocks are skipped without more messages
    equation_ids: dict[str, int] = {}
    symbols: dict[int, dict | None] = {}  # entry line -> its trace-symbols names, read once per entry

    def close() -> None:
        nonlocal entry
        if entry is not None:
            parts.append(EntryFoot(entry))
            entry = None

    for seg in page.segments:
        if isinstance(seg, Markdown):
            for chunk, line, is_heading in split_at_headings(seg):
                if is_heading:
                    close()
                    broken = False
                parts.append(_prose(chunk, line, entry, refs, plan.problems))
            continue
        if broken and seg.kind != "entry":
            continue
        try:
            if seg.kind == "entry":
                close()
                broken = True
                entry = read_entry(seg, page.path, project.index, project.spec, refs.uses)
                broken = False
                plan.entries.append(entry)
                parts.append(EntryHead(entry))
            elif seg.kind == "equation":
                current = entry

                def entry_symbol_names(current=current, block=seg):
                    if current is None:
                        return None
                    if current.line not in symbols:
                        symbols[current.line] = entry_symbols(page, current, block)
                    return symbols[current.line]

                scope = [f.name for f in entry.functions] if entry else None
                eq = read_equation(
                    seg,
                    entry,
                    lambda text, line, where, scope=scope: refs.resolve(text, line, where, scope),
                    equation_ids,
                    entry_symbol_names,
                )
                parts.append(Equation(eq, seg.field_line("tex")))
            else:
                kind = kinds.get(seg.kind)
                if kind is None:
                    raise TraceError(f"block 'trace-{seg.kind}' cannot be shown: this build has no kind for it")
                parts.append(BlockPart(kind, seg, kind.resolve(seg, Scope(project, page.path, entry, refs))))
        except TraceError as err:
            placed = err.at(page.path, seg.line)
            plan.problems.append(placed)
            parts.append(Failed(str(placed)))
    close()
    plan.problems.extend(refs.problems)
    return plan


def _prose(text: str, first_line: int, entry: EntryData | None, refs: References, problems: list) -> Prose:
    """Authored Markdown: each ``[[module.function: text]]`` resolved, and each '$' that opens no formula
    closed on its line reported."""
    scope = [f.name for f in entry.functions] if entry else None
    inline: list[Resolved | None] = []
    lines = text.split("\n")
    for i, line in prose_lines(lines):
        if "$" in line:
            for j, part in enumerate(CODE_SPAN.split(line)):
                if j % 2 == 0 and LONE_DOLLAR.search(INLINE_MATH.sub("\x00", part)):
                    problems.append(
                        TraceError(
                            "a '$' that opens no formula closed on this line; write inline math as $...$ on one "
                            "line (escape a literal dollar as \\$)",
                            refs.page,
                            first_line + i,
                        )
                    )
        if "[[" not in line:
            continue
        for j, part in enumerate(INLINE_CODE.split(line)):
            if j % 2 == 0:  # inline code is left alone
                for m in INLINE_REF.finditer(part):
                    inline.append(refs.resolve(m.group("ref"), first_line + i, "inline", scope))
    return Prose(text, first_line, inline)


def status_problems(plan: PagePlan, graph: CallGraph) -> list[TraceError]:
    """What the entries' statuses claim, against the call graph (an implemented function some test calls)."""
    return [p for p in (status_problem(entry, graph) for entry in plan.entries) if p is not None]


# ============================================================================ what the plan asks of the run stage


def page_needs(
    plan: PagePlan, done: Mapping[Request, Recording | TraceError], formulas: Iterable[tuple[str, bool]] = ()
) -> list[Need]:
    """What rendering ``plan`` will ask the run stage for, as far as ``done`` (what was recorded so far) tells:
    each block's needs, line coverage for entries with lines, and the page's ``formulas`` (read from the page)."""
    needs: list[Need] = [Formula(tex, display) for tex, display in formulas]
    coverage = bool(plan.project.settings.coverage_tests)
    for part in plan.parts:
        if isinstance(part, BlockPart):
            try:
                needs.extend(part.kind.needs(part.plan, done))
            except TraceError:
                continue  # rendering the block reports it where it is written
        elif isinstance(part, EntryFoot) and coverage and any(eq.resolved for eq in part.entry.equations):
            needs.append(COVERAGE)
    return needs


# ============================================================================ rendering


@dataclass
class RenderedPage:
    parts: list[Piece]  # Markdown text and the generated HTML kept apart from it (see render.segments)
    problems: list[TraceError]


class _Writer:
    """The page's lines as they are rendered, each formula left as a Formula until the page's batch is typeset.

    What is typeset: the formulas of authored prose (outside fenced code) and of a block kind's HTML; the
    sections the build writes around entries and equations carry none of their own."""

    def __init__(self) -> None:
        self.lines: list[list[Piece | Formula]] = []
        self.formula_lines: list[int] = []  # the page line of each formula, for messages

    def text(self, text: str, line: int | None = None) -> None:
        """Lines written as they are (``line`` None), or with their formulas (prose: ``line`` is its first)."""
        rows = text.split("\n")
        if line is None:
            self.lines.extend([row] for row in rows)
            return
        typeset = {i for i, _ in prose_lines(rows)}
        for i, row in enumerate(rows):
            self._row(row, line + i if i in typeset and "$" in row else None)

    def html(self, html: str, line: int) -> None:
        """A block kind's HTML, with its formulas (messages about them name the block's line)."""
        for row in html.split("\n"):
            self._row(row, line if "$" in row else None)

    def _row(self, row: str, line: int | None) -> None:
        if line is None:
            self.lines.append([row])
            return
        out: list[Piece | Formula] = []
        for piece, is_tex in split_formulas(row):
            if is_tex:
                out.append(Formula(piece))
                self.formula_lines.append(line)
            else:
                out.append(piece)
        self.lines.append(out or [""])

    def display(self, tex: str, line: int) -> None:
        self.lines.append([Formula(tex.strip(), True)])
        self.formula_lines.append(line)


# How a build renders one block of a page: the part's place in the plan, the part, and what renders it anew (a
# build that keeps what blocks read may give a rendering of an earlier build instead, see kept.TracedPages).
BlockRenderer = Callable[[int, BlockPart, Callable[[], Rendered]], Rendered]


def render_page(plan: PagePlan, results: Results, links: Links, blocks: BlockRenderer | None = None) -> RenderedPage:
    """The page's pieces: every part rendered, the formulas typeset, links to source pages made relative.
    ``blocks``: how each block is rendered (by default, by its kind)."""
    w = _Writer()
    graph = results.graph if plan.entries else plan.project.graph
    problems: list[TraceError] = status_problems(plan, graph)
    for i, part in enumerate(plan.parts):
        if isinstance(part, Prose):
            w.text(_linked_prose(part, iter(part.inline), links), part.line)
        elif isinstance(part, EntryHead):
            w.text(sections.entry_header(part.entry, graph))
        elif isinstance(part, Equation):
            head, tail = sections.equation_parts(part.eq, links)
            w.text(head)
            w.display(part.eq.tex, part.tex_line)
            w.text(tail)
        elif isinstance(part, BlockPart):
            try:
                made = functools.partial(part.kind.render, part.plan, results, links)
                rendered = made() if blocks is None else blocks(i, part, made)
            except TraceError as err:
                placed = err.at(plan.page, part.block.line)
                problems.append(placed)
                rendered = Rendered(R.error_box(str(placed)))
            problems.extend(p.at(plan.page, part.block.line) for p in rendered.problems)
            w.html(rendered.html, part.block.line)
        elif isinstance(part, EntryFoot):
            html, found = _entry_footer(part.entry, plan, results, links)
            problems.extend(found)
            w.text(html)
        else:
            w.text(R.error_box(part.message))
    lines, math_problems = _typeset(w, results, plan.page)
    problems.extend(math_problems)
    here = links.page_url(plan.page)
    parts = [_relative(p, here, links) for p in pieces(lines)]
    return RenderedPage(parts, problems)


def page_listings(plan: PagePlan, links: Links) -> list[str]:
    """The code listings the page's rendering writes as fences of its Markdown (an entry's functions, an excerpt's
    statements), made from its plan alone, nothing run: what ``python -m docs_hooks record`` has highlighted for
    the next build (see fences.highlight_ahead)."""
    out: list[str] = []
    for part in plan.parts:
        if isinstance(part, EntryFoot):
            out += sections.implementation_listings(part.entry, links)
        elif isinstance(part, BlockPart) and hasattr(part.kind, "listings"):
            out += part.kind.listings(part.plan, links)
    return out


def _linked_prose(part: Prose, inline, links: Links) -> str:
    """The prose with each ``[[reference]]`` a linked ``file.py:L`` (or the reference marked as broken)."""
    if not part.inline:
        return part.text
    lines = part.text.split("\n")
    for i, line in prose_lines(lines):
        if "[[" not in line:
            continue
        pieces_ = INLINE_CODE.split(line)
        for j in range(0, len(pieces_), 2):
            pieces_[j] = INLINE_REF.sub(lambda m: _inline_link(m.group("ref"), next(inline, None), links), pieces_[j])
        lines[i] = "".join(pieces_)
    return "\n".join(lines)


def _inline_link(text: str, resolved: Resolved | None, links: Links) -> str:
    if resolved is None:
        return f'<span class="trace-error">[[{R.esc(text)}]]</span>'
    return links.line_link(resolved.function, resolved.start, resolved.end)


def _entry_footer(entry: EntryData, plan: PagePlan, results: Results, links: Links) -> tuple[str, list[TraceError]]:
    """The sections below an entry: its listing, the code and math, where it is used, where it is implemented."""
    project, problems = plan.project, []
    coverage = None
    resolved = [r for eq in entry.equations for r in eq.resolved]
    if project.settings.coverage_tests and resolved:
        try:
            coverage = sections.coverage_row(results.tests_running(resolved), links)
        except TraceError as err:
            problems.append(err.at(plan.page, 1))
            coverage = sections.coverage_row_error(err.message)
    pdf = None
    if results.spec is not None:
        pdf = sections.spec_refs(results.spec, links, project.settings.spec_pdf or "spec.pdf", plan.page, entry.spec)
    html = "\n".join(
        [
            sections.implementation(entry, links),
            sections.connection(entry, links, results.graph),
            sections.used(entry, links, results.graph, pdf, coverage),
            sections.implemented_in(entry, links, github=bool(project.settings.repo_url)),
        ]
    )
    return html, problems


def _typeset(w: _Writer, results: Results, page: str) -> tuple[list[Line], list[TraceError]]:
    """Every formula of the page rendered in one batch; an inline one kept apart as Html (in a heading it
    stays in the Markdown, which makes the heading's text and anchor from it)."""
    formulas = [p for line in w.lines for p in line if isinstance(p, Formula)]
    rendered = results.formulas(formulas)
    problems: list[TraceError] = []
    cannot = results.math_problem()
    if formulas and cannot is not None:
        problems.append(cannot.at(page, w.formula_lines[0]))
    texts = ["".join("\x02" if isinstance(p, Formula) else _text(p) for p in line) for line in w.lines]
    headings = heading_lines(texts)
    out: list[Line] = []
    n = 0
    for i, line in enumerate(w.lines):
        row: Line = []
        for p in line:
            if not isinstance(p, Formula):
                row.append(p)
                continue
            made, error = rendered[n]
            if error is not None or made is None:
                if error:
                    problems.append(
                        TraceError(f"KaTeX cannot render {p.tex!r}: {error}; fix the TeX", page, w.formula_lines[n])
                    )
                made = f'<code class="trace-error">{R.esc(p.tex)}</code>'
            html = made
            n += 1
            if p.display:
                row.append(f'<div class="trace-math">{html}</div>')
            elif i in headings:
                row.append(html)
            else:
                row.append(Html(html))
        out.append(row)
    return out, problems


def _text(piece: Piece) -> str:
    """A piece of a line as Markdown reads it: a piece of HTML inside the line stands for an inline element."""
    return "<span>" if isinstance(piece, Html) else piece


def _relative(piece: Piece, url: str, links: Links) -> Piece:
    """A piece with its links to source pages made relative to its page, at ``url`` (see render.sources)."""
    if isinstance(piece, Html):
        return Html(links.source_links_at(url, piece.html), piece.block)
    return links.source_links_at(url, piece)
