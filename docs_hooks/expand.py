"""One page through the stages: read it, resolve its references, ask the run stage, render it.

``Builder`` is made once per build by ``project.make_builder`` and holds what
the stages share: the settings, the code index, the call graph (``callgraph``),
the links (``links``), the workers of the run stage (``workers``) and the
placeholders filled late (``stash.Late``). ``expand`` walks a page's segments:

- read: ``blocks.parse_page`` splits it into Markdown and trace blocks (once per text);
- resolve: ``entries`` turns entries and equations into data, ``Context.resolve``
  each code reference into a statement span (and a line of the review lock);
- run and render: each block kind's handler (``kinds``) asks the workers for what
  it shows and returns its HTML; ``sections`` writes the sections below each entry.

A static builder (``check``, ``relock``, ``impact``) stops after resolving: it
renders nothing and starts no process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.read.blocks import Block, Markdown, parse_page
from docs_hooks.render import html as R
from docs_hooks.render import sections
from docs_hooks.render.links import Links
from docs_hooks.render.stash import Late, stash_blocks, unstash
from docs_hooks.resolve.callgraph import CallGraph
from docs_hooks.resolve.codeindex import CodeIndex
from docs_hooks.resolve.context import Context
from docs_hooks.resolve.entries import EntryData, entry_symbols, read_entry, read_equation, split_at_headings
from docs_hooks.resolve.lock import LockEntry
from docs_hooks.run.math import MathRenderer
from docs_hooks.run.workers import Workers

Handler = Callable[[Context, Block], str]


@dataclass
class Expanded:
    markdown: str
    problems: list[TraceError]
    uses: list[LockEntry]  # every reference that resolved, for the lock
    unresolved: dict[tuple[str, str], int]  # (page, key) -> line, for references that did not
    entries: list[EntryData]
    # What MkDocs renders: ``markdown`` with the generated HTML kept out as placeholders, and that HTML
    # (see stash: the adapter puts it back into the page's HTML); ``markdown`` itself unless the builder
    # keeps the HTML out (Builder.keep_html_out).
    stashed: str = ""
    stash: list[str] = field(default_factory=list)


class Builder:
    """Expands pages against one code index. Build it once per site build (see project.make_builder)."""

    def __init__(self, settings: Settings, index: CodeIndex, math: MathRenderer | None = None):
        from docs_hooks.kinds import KINDS  # the kinds' modules use this one: imported when the first builder is made

        self.settings = settings
        self.index = index
        # This build's copy of the registry of block kinds (docs_hooks.kinds): how each renders, what
        # it resolves without running anything, what it starts early.
        self.handlers: dict[str, Handler] = {k: kind.render for k, kind in KINDS.items() if kind.render}
        self.references: dict[str, Handler] = {k: kind.references for k, kind in KINDS.items() if kind.references}
        self.inventory_kinds: dict[str, Handler] = dict(KINDS["inventory"].tables)  # 'of:' value -> handler
        self.prefetchers: list[Callable] = [kind.prefetch for kind in KINDS.values() if kind.prefetch]
        # What the evidence modules keep for one build (see shapes.state): dropped with the builder.
        self.run_state: dict = {
            "makers": list(dict.fromkeys(kind.requests for kind in KINDS.values() if kind.requests)),
            "recordings": None,
            "lock": threading.Lock(),
        }
        self.spec = None  # a spec.SpecIndex when the settings name a specification
        self.links = Links(settings, index)
        self.graph = CallGraph(index)
        self.workers = Workers(settings, index, math)
        self.late = Late(bool(settings.coverage_tests), self._table_formulas)  # HTML made late: see stash
        # The functions the site's scripts register a browser kernel for (set by the adapter from the site's
        # extra_javascript); None when unknown (the command line), and then no example is warned about.
        self.widget_kernels: set[str] | None = None
        self.static = False  # a static builder (check, relock, impact) resolves only: see the module's doc
        # Whether each Expanded also holds its Markdown with the generated HTML kept out (see stash): what
        # the MkDocs adapter renders. The command line reads the whole Markdown only.
        self.keep_html_out = False
        self.all_entries: dict[str, list[EntryData]] = {}
        self._expanded: dict[tuple[str, str], Expanded] = {}  # (page, text) -> result, once per build
        self._expanding: set[str] = set()
        self._parsed: dict[str, tuple] = {}  # page -> (its text, the parsed page)

    # ------------------------------------------------------------------ pages

    def expand(self, page: str, text: str) -> Expanded:
        """The page expanded; the same page text is expanded once per build."""
        key = (page, text)
        if key in self._expanded:
            return self._expanded[key]
        self.workers.raise_errors()
        self._expanding.add(page)
        try:
            result = self._expand(page, text)
        finally:
            self._expanding.discard(page)
        self._expanded[key] = result
        return result

    def site_entries(self) -> dict[str, list[EntryData]]:
        """The entries of every page of the site, for the site-wide tables (made when every page has been
        expanded: see site_table). A page MkDocs left out is read for its entries and equations only; a
        page being expanded right now is left out."""
        for file in self.settings.pages():
            rel = self.settings.rel(file)
            if rel not in self._expanding and rel not in self.all_entries:
                self._expand(rel, file.read_text(encoding="utf-8"), light=True)
        return {p: e for p, e in sorted(self.all_entries.items()) if p not in self._expanding}

    def remember_parse(self, page: str, text: str, parsed) -> None:
        """Keep a page parsed before the builder was made (see project.make_builder)."""
        self._parsed[page] = (text, parsed)

    def parse(self, page: str, text: str):
        """The page split into Markdown and blocks, parsed once for each text of it."""
        known = self._parsed.get(page)
        if known is None or known[0] != text:
            known = self._parsed[page] = (text, parse_page(text, page))
        return known[1]

    def _expand(self, page: str, text: str, light: bool = False) -> Expanded:
        """The page expanded; ``light`` reads only its entries and equations (for ``all_entries``)."""
        parsed = self.parse(page, text)
        ctx = Context(self, page, None, list(parsed.problems), [], {})
        out: list[str] = []
        entries: list[EntryData] = []

        def close_entry() -> None:
            if ctx.entry is not None:
                if not light:
                    out.append(self.entry_footer(ctx.entry, ctx))
                ctx.entry = None

        for seg in parsed.segments:
            if isinstance(seg, Markdown):
                for chunk, line, is_heading in split_at_headings(seg):
                    if is_heading:
                        close_entry()
                        ctx.broken_entry = False
                    if not light:
                        out.append(ctx.prose(chunk, line))
                continue
            if ctx.broken_entry and seg.kind != "entry":
                continue
            try:
                if seg.kind == "entry":
                    close_entry()
                    ctx.broken_entry = True
                    ctx.entry = read_entry(seg, page, self.index, self.spec, ctx.uses)
                    ctx.broken_entry = False
                    entries.append(ctx.entry)
                    if not self.static:
                        out.append(sections.entry_header(ctx.entry, self.graph))
                elif seg.kind == "equation":
                    out.append(self.equation(seg, ctx, parsed))
                elif not light:
                    out.append(self.block(seg, ctx))
            except TraceError as err:
                ctx.problems.append(err.at(page, seg.line))
                out.append(R.error_box(str(err.at(page, seg.line))))
        close_entry()
        self.all_entries[page] = entries
        if light:
            return Expanded("", ctx.problems, ctx.uses, ctx.unresolved, entries)
        if not self.keep_html_out:
            markdown = ctx.render_math("\n".join(out))
            return Expanded(markdown, ctx.problems, ctx.uses, ctx.unresolved, entries, markdown)
        stash: list[str] = []
        stashed = stash_blocks(ctx.render_math("\n".join(out), stash), stash)
        return Expanded(unstash(stashed, stash), ctx.problems, ctx.uses, ctx.unresolved, entries, stashed, stash)

    def equation(self, block: Block, ctx: Context, parsed) -> str:
        def symbols():  # the entry's symbol tables, read once per entry and only for a computing equation
            if ctx.entry.line not in ctx.symbols:
                ctx.symbols[ctx.entry.line] = entry_symbols(parsed, ctx.entry, block)
            return ctx.symbols[ctx.entry.line]

        eq = read_equation(block, ctx.entry, ctx.resolve, ctx.equation_ids, symbols)
        if self.static:
            return ""
        return sections.equation(eq, self.links, ctx.math_placeholder(eq.tex, True, block.field_line("tex")))

    def block(self, block: Block, ctx: Context) -> str:
        """Any other block: its static references (a static builder), else its HTML from its kind's handler."""
        if self.static:
            references = self.references.get(block.kind)
            if references is not None:
                references(ctx, block)
            return ""
        handler = self.handlers.get(block.kind)
        if handler is None:
            raise TraceError(f"block 'trace-{block.kind}' cannot be shown: this build has no handler for it")
        return ctx.inline_math(handler(ctx, block), block.line)

    def entry_footer(self, entry: EntryData, ctx: Context) -> str:
        """The sections below an entry (nothing for a static builder), after checking its status."""
        problem = sections.status_problem(entry, self.graph)
        if problem is not None:
            ctx.problems.append(problem)
        if self.static:
            return ""
        coverage = None
        resolved = [r for eq in entry.equations for r in eq.resolved]
        if self.settings.coverage_tests and resolved:
            coverage = self.late.defer(
                lambda: sections.coverage_row(self.workers.tests_running(resolved), self.links),
                sections.coverage_row_error,
                ("facts row", tuple((r.function.name, r.start, r.end) for r in resolved)),
            )
        return "\n".join(
            [
                sections.implementation(entry, self.links),
                sections.connection(entry, self.links, self.graph),
                sections.used(entry, self.links, self.graph, self.pdf_reference(entry.page, entry.spec), coverage),
                sections.implemented_in(entry, self.links, github=bool(self.settings.repo_url)),
            ]
        )

    def pdf_reference(self, page: str, labels: list[str]) -> str | None:
        """Where the specification states ``labels``, linked; None when no specification is configured."""
        if self.spec is None:
            return None
        return sections.spec_refs(self.spec, self.links, self.settings.spec_pdf or "spec.pdf", page, labels)

    # ------------------------------------------------------------------ HTML made late (see stash.Late)

    def _table_formulas(self, page: str, html: str, line: int) -> tuple[str, list[TraceError]]:
        """A site-wide table's formulas rendered (see stash.Late.site_table): its HTML and the problems."""
        ctx = Context(self, page, None, [], [], {})
        return ctx.render_math(ctx.inline_math(html, line)), ctx.problems

    def finish(self, page: str, text: str) -> tuple[str, list[TraceError]]:
        """The HTML of ``page`` with what was made late filled in (waiting for the coverage run if need
        be) and its links to source pages made relative, with the problems met."""
        self.workers.raise_errors()
        filled, problems = self.late.fill(page, text)
        return self.links.source_links(page, filled), problems

    # ------------------------------------------------------------------ run stage

    def prefetch(self, pages: dict[str, str]) -> None:
        """Start the slow work of every page now, in the background (see Workers.prefetch)."""
        parsed = {page: self.parse(page, text) for page, text in pages.items()}
        self.workers.prefetch(parsed, [lambda f=f: f(self, parsed) for f in self.prefetchers])

    def await_background(self) -> None:
        """Wait until the background work is done; raise what went wrong in it that was not a TraceError."""
        self.workers.wait()

    def close(self) -> None:
        """End every process this build started and drop their state (a replaced or finished build)."""
        self.workers.close()
