"""Expand a page: trace blocks and inline references become Markdown and HTML.

This is the core's entry point for one page. It knows the code index (built
once per build) and returns the page's Markdown, every problem found (each with
page and line), and the references it made, for the review lock.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Callable

from . import render as R
from .anchors import Resolved, parse_ref, resolve
from .blocks import INLINE_REF, Block, Markdown, parse_page, prose_lines
from .codeindex import CodeIndex, Function
from .errors import TraceError
from .lock import LockEntry
from .math import INLINE_MATH, MathRenderer
from .settings import Settings
from .stash import in_heading, placeholder, stash_blocks, unstash

HEADING = re.compile(r"^(#{1,6})\s")
CODE_SPAN = re.compile(r"(`+[^`]*`+|<code>.*?</code>)")
PLACEHOLDER = re.compile("\x02trace-math-(\\d+)\x03")
COVERAGE_ROW = "Tests that run these equations' lines (line coverage)"
REACHED_SHOWN = 100  # tests listed as reaching a function through others (see Builder._reached_by_tests)


@dataclass
class EquationData:
    id: str
    number: int
    title: str
    tex: str
    resolved: list[Resolved]
    line: int


@dataclass
class EntryData:
    """One entry of a page: what the generated sections and the site-wide tables need."""

    page: str
    id: str
    title: str
    status: str
    functions: list[Function]
    spec: list[str]
    line: int
    note: str = ""
    equations: list[EquationData] = field(default_factory=list)


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


@dataclass
class Context:
    """What a block handler may use: the builder, the page and the entry it sits in."""

    builder: "Builder"
    page: str
    entry: EntryData | None
    problems: list[TraceError]
    uses: list[LockEntry]
    unresolved: dict[tuple[str, str], int]
    math: list[tuple[str, bool, int]] = field(default_factory=list)  # (tex, display, line)
    broken_entry: bool = False  # the open entry failed; its blocks are skipped without more messages
    equation_ids: dict[str, int] = field(default_factory=dict)  # id -> line of its first use

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
                self.problems.append(TraceError(
                    "a '$' that opens no formula closed on this line; write inline math as $...$ on one line "
                    "(escape a literal dollar as \\$)", self.page, line))
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


Handler = Callable[[Context, Block], str]


def recorder_path(settings: Settings) -> list:
    """Where recorded code imports from: the source root, the project root, the model run helper's folder."""
    path = [settings.source_root, settings.project_root]
    if settings.model_run is not None:
        path.append(settings.model_run.parent)
    return path


class Slots:
    """What numbered placeholders ``<!--trace-NAME:N-->`` stand for, filled in later (see Builder.finish).

    The same key gets the same placeholder, so pages expanded again and again
    while serving do not add new ones.
    """

    def __init__(self, name: str):
        self.name = name
        self.pattern = re.compile(rf"<!--trace-{name}:(\d+)-->")
        self._items: list = []
        self._numbers: dict[tuple, int] = {}

    def placeholder(self, key: tuple, item) -> str:
        if key not in self._numbers:
            self._numbers[key] = len(self._items)
            self._items.append(item)
        return f"<!--trace-{self.name}:{self._numbers[key]}-->"

    def __getitem__(self, n: int):
        return self._items[n]

    def __len__(self) -> int:
        return len(self._items)


class Builder:
    """Expands pages against one code index. Build it once per site build."""

    def __init__(self, settings: Settings, index: CodeIndex):
        self.settings = settings
        self.index = index
        from .kinds import KINDS  # the kinds' modules use this one: imported when the first builder is made

        # This build's copy of the registry of block kinds (docs_hooks.kinds): how each renders, what
        # it resolves without running anything, what it starts early.
        self.handlers: dict[str, Handler] = {k: kind.render for k, kind in KINDS.items() if kind.render}
        self.references: dict[str, Handler] = {k: kind.references for k, kind in KINDS.items() if kind.references}
        self.inventory_kinds: dict[str, Handler] = dict(KINDS["inventory"].tables)  # 'of:' value -> handler
        self.prefetchers: list[Callable] = [kind.prefetch for kind in KINDS.values() if kind.prefetch]
        # What the evidence modules keep for one build (see shapes.state): dropped with the builder.
        self.run_state: dict = {"makers": list(dict.fromkeys(kind.requests for kind in KINDS.values()
                                                             if kind.requests)),
                                "recordings": None, "lock": threading.Lock()}
        self.spec = None  # a spec.SpecIndex when the settings name a specification
        self.math = MathRenderer(settings.project_root, settings.cache_dir)
        self.page_urls: dict[str, str] = {}  # page path -> its URL inside the site (set by the adapter)
        # A static builder (check, relock, impact) only resolves: it reads the pages and resolves their
        # references against the index, renders nothing and starts no process.
        self.static = False
        # Whether each Expanded also holds its Markdown with the generated HTML kept out (see stash): what
        # the MkDocs adapter renders. The command line reads the whole Markdown only.
        self.keep_html_out = False
        self.all_entries: dict[str, list[EntryData]] = {}
        self._expanded: dict[tuple[str, str], Expanded] = {}  # (page, text) -> result, once per build
        self._expanding: set[str] = set()
        self._graph_memo: dict[tuple, list[str]] = {}
        self._parsed: dict[str, tuple] = {}  # page -> (its text, the parsed page)
        self._recorder = None
        self._coverage_run = None  # a coverage_map.Measurement, started by start_coverage()
        self._deferred = Slots("deferred")  # (make, on_error) of HTML that needs the coverage run (see defer)
        self._deferred_done: dict[int, str | TraceError] = {}
        self._site_tables = Slots("site")  # (make, line) of each site-wide table (see site_table)
        self._prefetch_threads: list = []
        self._prefetch_errors: list[BaseException] = []

    @property
    def recorder(self):
        """The one recorder of this build: runs tests and helpers, caches what they saw."""
        if self._recorder is None:
            self.make_recorder()
        return self._recorder

    def make_recorder(self, child: tuple | None = None) -> None:
        """The build's recorder, now; ``child`` is a recording process started earlier (record.start_child),
        which it uses for its first miss, or stops when it has none."""
        from .record import Recorder

        s = self.settings
        modules = {str(f.file): f.module for f in self.index.functions.values()}
        self._recorder = Recorder(s.project_root, recorder_path(s), modules, self.index.file_digests, s.cache_dir,
                                  child)

    def start_coverage(self) -> None:
        """Start measuring which test runs which line, in the background (a no-op when cached or not set up)."""
        s = self.settings
        if s.coverage_tests and self._coverage_run is None:
            from .coverage_map import Measurement

            self._coverage_run = Measurement(s.project_root, s.source_root, s.coverage_tests,
                                             self.index.file_digests, s.cache_dir)

    @property
    def coverage(self):
        """Which test ran which line (coverage.py), measured once per change of the code; None if not set up."""
        self.start_coverage()
        return self._coverage_run.result() if self._coverage_run is not None else None

    def defer(self, make: Callable[[], str], on_error: Callable[[str], str], key: tuple) -> str:
        """HTML that needs the coverage run, as a placeholder that ``finish`` fills.

        The coverage run is the slowest part of a cold build. Deferring what it
        shows lets the pages be expanded and rendered while the tests still run,
        and lets ``check`` (which reads no HTML) skip waiting for them. Without a
        coverage run configured the HTML is made at once. ``on_error(message)``
        is the HTML shown in its place when the coverage run failed. ``key``
        names what the HTML is made from (see Slots).
        """
        if not self.settings.coverage_tests:
            return make()
        return self._deferred.placeholder(key, (make, on_error))

    def site_table(self, make: Callable[[], str], key: tuple, line: int) -> str:
        """A table made from every page of the site (the traceability matrix, say), as a placeholder
        that ``fill_site_tables`` fills (``finish`` calls it; the MkDocs adapter calls it earlier, before
        the search index reads the page).

        When the pages are finished every page has been expanded, so the table
        reads the entries the pages really have, with no second reading of the
        pages for it; and the page that holds the table is expanded once, like
        any other (its Markdown no longer changes with the other pages). The
        table is made again at each ``finish``: while serving, it follows edits
        of the other pages. ``line`` is the block's, for the table's problems.
        """
        return self._site_tables.placeholder(key, (make, line))

    def can_finish(self, text: str) -> bool:
        """Whether ``finish`` would fill ``text`` now, without waiting: it holds no placeholder, or the
        coverage run has ended (or was read from the cache)."""
        return (self._coverage_run is None or self._coverage_run.done()
                or not (self._deferred.pattern.search(text) or self._site_tables.pattern.search(text)))

    def finish(self, page: str, text: str, coverage: bool = True) -> tuple[str, list[TraceError]]:
        """``text`` with every deferred placeholder filled (waiting for the coverage run if need be).

        The site-wide tables are filled first (they may hold what waits for the
        coverage run themselves); with ``coverage=False`` only they are, and
        what waits for the coverage run stays a placeholder, unwaited for.
        A placeholder that cannot be filled becomes an error box, and its problem
        is returned once per page, with the page's name. A bug in the background
        work that has shown already is raised here; ``await_background`` raises
        the rest when the build ends.
        """
        self._raise_prefetch_errors()
        text, found = self.fill_site_tables(page, text)
        if not coverage:
            return text, found
        problems: dict[str, TraceError] = {err.message: err for err in found}

        def fill(m: re.Match) -> str:
            n = int(m.group(1))
            if n not in self._deferred_done:
                try:
                    self._deferred_done[n] = self._deferred[n][0]()
                except TraceError as err:
                    self._deferred_done[n] = err
            value = self._deferred_done[n]
            if isinstance(value, TraceError):
                problems.setdefault(value.message, TraceError(value.message, page, 1))
                return self._deferred[n][1](value.message)
            return value

        filled = self._deferred.pattern.sub(fill, text)
        return filled, list(problems.values())

    def fill_site_tables(self, page: str, text: str) -> tuple[str, list[TraceError]]:
        """``text`` with its site-wide tables made (see site_table), and their problems."""
        if not self._site_tables.pattern.search(text):
            return text, []
        ctx = Context(self, page, None, [], [], {})

        def fill(m: re.Match) -> str:
            make, line = self._site_tables[int(m.group(1))]
            try:
                return ctx.inline_math(make().rstrip("\n"), line)  # the placeholder ends its line already
            except TraceError as err:
                ctx.problems.append(err.at(page, line))
                return R.error_box(str(err.at(page, line)))

        filled = self._site_tables.pattern.sub(fill, text)
        return self.render_math(filled, ctx), ctx.problems

    def tests_running(self, resolved_list) -> list[str]:
        """Tests that executed any of these statements, by line coverage (indexed tests only)."""
        if self.coverage is None:
            return []
        found: set[str] = set()
        for r in resolved_list:
            found.update(self.coverage.tests_running(r.function.repo_path, r.start, r.end))
        return sorted(t for t in found if t in self.index.functions and self.index.functions[t].is_test)

    # ------------------------------------------------------------------ helpers

    def url(self, fn: Function, start: int | None = None, end: int | None = None) -> str:
        return self.settings.github_url(fn.repo_path, start, end)

    def line_link(self, fn: Function, start: int, end: int) -> str:
        return R.link(R.code(R.span_label(fn.display_path, start, end)), self.url(fn, start, end), fn.name)

    # ------------------------------------------------------------------ prefetch

    def prefetch(self, pages: dict[str, str]) -> None:
        """Start the slow work of every page now, in the background: KaTeX and the recordings.

        Each runs in a child process of its own (as does the coverage run), so on
        a cold build they use every core at once instead of waiting in turn. The
        work goes page by page in the order of ``pages`` (the order the build
        asks for them), and the recorder and the renderer serve one caller at a
        time: a page being expanded waits only for what it uses, while MkDocs
        renders the pages before it. Problems are not reported here: the
        expansion meets them again and reports them with page and line.
        """
        import threading

        parsed = {page: self.parse(page, text) for page, text in pages.items()}
        recordings = [lambda f=f: f(self, parsed) for f in self.prefetchers]
        jobs = [lambda: self._prefetch_math(parsed), lambda: [job() for job in recordings]]

        def run(job):
            try:
                job()
            except TraceError:
                pass  # the page's own expansion reports it where it is written
            except BaseException as exc:  # a bug: raised again in the build's thread
                self._prefetch_errors.append(exc)

        self._prefetch_threads = [threading.Thread(target=run, args=(job,), daemon=True) for job in jobs]
        for thread in self._prefetch_threads:
            thread.start()

    def _prefetch_math(self, parsed: dict) -> None:
        """Every formula written in the pages (prose and block fields), rendered a page at a time."""

        def strings(value):
            if isinstance(value, str):
                yield value
            elif isinstance(value, dict):
                for v in value.values():
                    yield from strings(v)
            elif isinstance(value, list):
                for v in value:
                    yield from strings(v)

        if not self.math.available():
            return
        for page in parsed.values():
            scratch = Context(self, "", None, [], [], {})
            for seg in page.segments:
                if isinstance(seg, Markdown):
                    for _, line in prose_lines(seg.text.split("\n")):
                        if "$" in line:
                            scratch.inline_math(line, 0)
                elif seg.kind == "equation" and isinstance(seg.data.get("tex"), str):
                    scratch.math_placeholder(seg.data["tex"], True, 0)
                else:
                    for text in strings({k: v for k, v in seg.data.items() if k != "__lines__"}):
                        if "$" in text:
                            scratch.inline_math(text, 0)
            if scratch.math:
                self.math.render_many([(tex, display) for tex, display, _ in scratch.math])

    def await_background(self) -> None:
        """Wait until the background work is done; raise what went wrong in it that was not a TraceError.

        What was recorded is then in the recorder's store, for the next build.
        """
        threads, self._prefetch_threads = self._prefetch_threads, []
        for thread in threads:
            thread.join()
        if self._recorder is not None:
            self._recorder.flush()
        self._raise_prefetch_errors()

    def close(self) -> None:
        """End every process this build started (the recorder, KaTeX, the coverage run) and drop their state.

        A builder that is replaced (``mkdocs serve`` after a code change) or whose
        build is over is closed, so no worker outlives the build that made it.
        """
        for thread in self._prefetch_threads:
            thread.join()
        self._prefetch_threads = []
        if self._recorder is not None:
            self._recorder.close()
            self._recorder = None
        self.math.close()
        if self._coverage_run is not None:
            self._coverage_run.stop()
            self._coverage_run = None

    def _raise_prefetch_errors(self) -> None:
        if self._prefetch_errors:
            raise self._prefetch_errors.pop(0)

    # ------------------------------------------------------------------ pages

    def expand(self, page: str, text: str) -> Expanded:
        """The page expanded; the same page text is expanded once per build."""
        key = (page, text)
        if key in self._expanded:
            return self._expanded[key]
        self._raise_prefetch_errors()
        self._expanding.add(page)
        try:
            result = self._expand(page, text)
        finally:
            self._expanding.discard(page)
        self._expanded[key] = result
        return result

    def site_entries(self) -> dict[str, list[EntryData]]:
        """The entries of every page of the site.

        Site-wide tables (the traceability matrix) need them. They are made when
        the pages are finished (see site_table), when every page has been
        expanded; a page that has not been (one MkDocs leaves out, say) is read
        for its entries and equations only, which needs no recorded evidence. A
        page being expanded right now is left out.
        """
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
        numbers = {"eq": 0}

        def close_entry() -> None:
            if ctx.entry is not None:
                if self.static:
                    self.check_entry(ctx.entry, ctx)
                elif not light:
                    out.append(self.entry_footer(ctx.entry, ctx))
                ctx.entry = None

        for seg in parsed.segments:
            if isinstance(seg, Markdown):
                for chunk, line, is_heading in _split_at_headings(seg):
                    if is_heading:
                        close_entry()
                        ctx.broken_entry = False
                    if not light:
                        out.append(self.inline_refs(chunk, line, ctx))
                continue
            if ctx.broken_entry and seg.kind != "entry":
                continue
            try:
                if seg.kind == "entry":
                    close_entry()
                    ctx.broken_entry = True
                    ctx.entry = self.open_entry(seg, ctx)
                    ctx.broken_entry = False
                    entries.append(ctx.entry)
                    out.append(self.entry_header(ctx.entry))
                elif seg.kind == "equation":
                    out.append(self.equation(seg, ctx, numbers))
                elif light:
                    continue
                elif self.static:
                    references = self.references.get(seg.kind)
                    if references is not None:
                        references(ctx, seg)
                else:
                    handler = self.handlers.get(seg.kind)
                    if handler is None:
                        raise TraceError(f"block 'trace-{seg.kind}' cannot be shown: this build has no handler for it")
                    out.append(ctx.inline_math(handler(ctx, seg), seg.line))
            except TraceError as err:
                ctx.problems.append(err.at(page, seg.line))
                out.append(R.error_box(str(err.at(page, seg.line))))
        close_entry()
        self.all_entries[page] = entries
        if light:
            return Expanded("", ctx.problems, ctx.uses, ctx.unresolved, entries)
        if not self.keep_html_out:
            markdown = self.render_math("\n".join(out), ctx)
            return Expanded(markdown, ctx.problems, ctx.uses, ctx.unresolved, entries, markdown)
        stash: list[str] = []
        stashed = stash_blocks(self.render_math("\n".join(out), ctx, stash), stash)
        return Expanded(unstash(stashed, stash), ctx.problems, ctx.uses, ctx.unresolved, entries, stashed, stash)

    def render_math(self, markdown: str, ctx: Context, stash: list[str] | None = None) -> str:
        """Every formula of the page to KaTeX HTML, in one batch; with ``stash``, the HTML of each formula
        outside a heading goes there, and a placeholder into the Markdown (see stash)."""
        if not ctx.math or self.static:
            return markdown
        try:
            results = self.math.render_many([(tex, display) for tex, display, _ in ctx.math])
        except TraceError as err:
            ctx.problems.append(err.at(ctx.page, ctx.math[0][2]))
            results = [(None, "")] * len(ctx.math)
        html = []
        for (tex, display, line), (out, error) in zip(ctx.math, results):
            if error is not None:
                if error:
                    ctx.problems.append(TraceError(f"KaTeX cannot render {tex!r}: {error}; fix the TeX", ctx.page, line))
                out = f'<code class="trace-error">{R.esc(tex)}</code>'
            html.append(f'<div class="trace-math">{out}</div>' if display else out)
        if stash is None:
            return PLACEHOLDER.sub(lambda m: html[int(m.group(1))], markdown)
        # A formula shown as a block stays HTML: stash_blocks keeps it out of Markdown with its block.

        def keep(m: re.Match) -> str:
            n = int(m.group(1))
            if ctx.math[n][1] or in_heading(markdown, m.start()):
                return html[n]
            return placeholder(stash, html[n], inline=True)

        return PLACEHOLDER.sub(keep, markdown)

    def inline_refs(self, text: str, first_line: int, ctx: Context) -> str:
        """Replace ``[[module.function: text]]`` with a linked ``file.py:L``."""
        lines = text.split("\n")
        for i, line in prose_lines(lines):
            if "$" in line:
                line = lines[i] = ctx.inline_math(line, first_line + i, prose=True)
            if "[[" not in line:
                continue
            parts = re.split(r"(`+[^`]*`+)", line)  # leave inline code alone
            for j in range(0, len(parts), 2):
                parts[j] = INLINE_REF.sub(lambda m: self._inline(m.group("ref"), first_line + i, ctx), parts[j])
            lines[i] = "".join(parts)
        return "\n".join(lines)

    def _inline(self, text: str, line: int, ctx: Context) -> str:
        resolved = ctx.resolve(text, line, "inline")
        if resolved is None:
            return f"<span class=\"trace-error\">[[{R.esc(text)}]]</span>"
        fn = resolved.function
        return self.line_link(fn, resolved.start, resolved.end)

    # ------------------------------------------------------------------ entries

    def open_entry(self, block: Block, ctx: Context) -> EntryData:
        d = block.data
        functions = []
        for name in d["function"]:
            try:
                functions.append(self.index.function(name))
            except TraceError as err:
                raise TraceError(f"entry '{d['title']}': {err.message}") from None
        entry = EntryData(
            page=ctx.page,
            id=d.get("id") or R.slug(d["title"]),
            title=d["title"],
            status=d["status"],
            functions=functions,
            spec=list(d.get("spec", [])),
            line=block.line,
            note=d.get("note", ""),
        )
        if entry.spec:
            if self.spec is None:
                raise TraceError(f"entry '{entry.title}' cites {', '.join(entry.spec)}, "
                                 "but no specification is configured; set spec_source in [tool.docs_hooks]")
            for label in entry.spec:
                self.spec.lookup(label)  # an unknown label fails here, at the entry's line
        for fn in functions:
            ctx.uses.append(LockEntry(ctx.page, f"entry {entry.id} | {fn.name}", fn.whole.text, fn.whole.digest, block.line))
        return entry

    def entry_header(self, entry: EntryData) -> str:
        return R.heading(2, R.esc(entry.title), entry.id) + "\n" + R.badge(entry.status, self.status_evidence(entry)) + "\n"

    def status_evidence(self, entry: EntryData) -> str:
        names = ", ".join(f.name for f in entry.functions)
        tests = self.tested_by(entry.functions)
        if entry.status == "implemented":
            return f"{names}; exercised by {len(tests)} test(s)"
        if entry.status == "derived":
            return f"worked out from {names}; not run by the model"
        return "illustrative: explains, computes nothing in the model"

    def equation(self, block: Block, ctx: Context, numbers: dict) -> str:
        if ctx.entry is None:
            raise TraceError("trace-equation outside an entry; put a trace-entry block above it")
        d = block.data
        if d["id"] in ctx.equation_ids:
            raise TraceError(f"equation id '{d['id']}' is already used on this page (line {ctx.equation_ids[d['id']]}); "
                             "give each equation its own id", ctx.page, block.field_line("id"))
        ctx.equation_ids[d["id"]] = block.field_line("id")
        resolved = []
        line = block.field_line("code")
        for text in d["code"]:
            r = ctx.resolve(text, line, f"equation {d['id']}")
            if r is not None:
                resolved.append(r)
        numbers["eq"] += 1
        eq = EquationData(d["id"], numbers["eq"], d["title"], d["tex"], resolved, block.line)
        ctx.entry.equations.append(eq)
        refs = ", ".join(self.line_link(r.function, r.start, r.end) for r in resolved)
        out = R.heading(4, f"({eq.number}) {R.esc(eq.title)}", f"eq-{eq.id}")
        out += "\n" + ctx.math_placeholder(eq.tex, True, block.field_line("tex")) + "\n\n"
        if refs:
            out += f'<p class="trace-eq-code">Computed at {refs}</p>\n'
        return out

    def entry_footer(self, entry: EntryData, ctx: Context) -> str:
        parts = [
            self.section_implementation(entry),
            self.section_connection(entry),
            self.section_used(entry),
            self.section_implemented_in(entry),
        ]
        self.check_entry(entry, ctx)
        return "\n".join(parts)

    def check_entry(self, entry: EntryData, ctx: Context) -> None:
        """What an entry's status claims, against the call graph: an implemented function some test calls."""
        if entry.status == "implemented" and not self.tested_by(entry.functions):
            ctx.problems.append(TraceError(
                f"entry '{entry.title}' is marked implemented, but no test calls "
                f"{', '.join(f.name for f in entry.functions)}; add a test or change its status",
                ctx.page, entry.line))

    # ------------------------------------------------------------------ generated sections

    def section_implementation(self, entry: EntryData) -> str:
        out = [R.heading(3, "Actual implementation", f"{entry.id}-implementation")]
        if entry.status == "derived":
            links = ", ".join(self.function_link(f) for f in entry.functions)
            out.append(f"<p>The code has no function for these steps. They are worked out from {links}.</p>\n")
            return "\n".join(out)
        for fn in entry.functions:
            head = (f"{R.code(fn.display_path)} {R.code(fn.name.split('.', 1)[-1])} "
                    f"{R.link('GitHub', self.url(fn, fn.start, fn.end))}")
            out.append(R.listing(list(fn.source_lines), fn.start, head))
        return "\n".join(out)

    def function_link(self, fn: Function) -> str:
        return R.link(R.code(fn.name), self.url(fn, fn.start, fn.end))

    def computes_rows(self, entry: EntryData) -> list[tuple[EquationData, Resolved, int, str]]:
        rows = []
        for eq in entry.equations:
            for r in eq.resolved:
                for offset, text in enumerate(r.lines):
                    if text.strip():
                        rows.append((eq, r, r.start + offset, text.strip()))
        return rows

    def section_connection(self, entry: EntryData) -> str:
        rows = []
        for eq, r, line, text in self.computes_rows(entry):
            rows.append([self.eq_link(eq), "Computes it", self.line_link(r.function, line, line), R.code(text)])
        for role, site in self.call_rows(entry):
            fn = self.index.functions[site.caller]
            for offset, text in enumerate(site.statement.lines):
                n = site.statement.start + offset
                rows.append([R.esc(entry.title), role, self.line_link(fn, n, n), R.code(text.strip())])
        return R.heading(3, "Code and math connection", f"{entry.id}-code-and-math") + "\n" + R.table(
            ["Equation", "Role", "Lines", "Code"], rows) + "\n"

    def eq_link(self, eq: EquationData) -> str:
        return f'<a href="#eq-{R.esc(eq.id)}">{R.esc(eq.title)}</a>'

    def call_rows(self, entry: EntryData) -> list[tuple[str, object]]:
        rows = []
        for fn in entry.functions:
            for site in sorted(self.index.calls_to(fn.name), key=lambda s: (s.caller, s.line)):
                caller = self.index.functions[site.caller]
                if caller.name in {f.name for f in entry.functions}:
                    continue
                rows.append(("Tests it" if caller.is_test else "Calls it", site))
        rows.sort(key=lambda r: (r[0] == "Tests it", self.index.functions[r[1].caller].repo_path, r[1].line))
        return rows

    def callers(self, functions: list[Function]) -> list[str]:
        names = {f.name for f in functions}
        out = []
        for fn in functions:
            for site in self.index.calls_to(fn.name):
                if site.caller not in names and not self.index.functions[site.caller].is_test and site.caller not in out:
                    out.append(site.caller)
        return out

    def _memo(self, kind: str, functions: list[Function], compute) -> list[str]:
        """Call-graph answers, once per build for each set of functions (entries ask several times)."""
        key = (kind, tuple(f.name for f in functions))
        if key not in self._graph_memo:
            self._graph_memo[key] = compute()
        return list(self._graph_memo[key])

    def tested_by(self, functions: list[Function]) -> list[str]:
        return self._memo("tested_by", functions, lambda: self._tested_by(functions))

    def reached_by_tests(self, functions: list[Function]) -> list[str]:
        return self._memo("reached", functions, lambda: self._reached_by_tests(functions))

    def reached_shown(self, functions: list[Function]) -> tuple[list[str], bool]:
        """The tests a page lists as reaching ``functions`` through others, and whether there are more."""
        reached = self.reached_by_tests(functions)
        return reached[:REACHED_SHOWN], len(reached) > REACHED_SHOWN

    def _tested_by(self, functions: list[Function]) -> list[str]:
        """Tests that call one of ``functions`` directly."""
        out = []
        for fn in functions:
            for site in self.index.calls_to(fn.name):
                caller = self.index.functions[site.caller]
                if self.index.runs_as_test(caller) and caller.name not in out:
                    out.append(caller.name)
        return out

    def _reached_by_tests(self, functions: list[Function]) -> list[str]:
        """Tests that reach ``functions`` through other functions (static call graph).

        The search stops once it has found one more than ``REACHED_SHOWN``: a
        helper that everything calls is reached by most tests of a large code
        base, a list nobody reads, and finding them all would cost a walk of the
        whole call graph for every such entry. A longer list means "and more".
        """
        direct = set(self.tested_by(functions))
        seen = {f.name for f in functions}
        frontier = sorted(seen)  # a fixed order: which tests are found first must not change between builds
        found: list[str] = []
        while frontier and len(found) <= REACHED_SHOWN:
            name = frontier.pop()
            for site in self.index.calls_to(name):
                if site.caller in seen:
                    continue
                seen.add(site.caller)
                caller = self.index.functions[site.caller]
                if self.index.runs_as_test(caller):
                    if caller.name not in direct:
                        found.append(caller.name)
                else:  # code, or a helper of the tests (setUp, a fixture) that tests call
                    frontier.append(site.caller)
        return sorted(set(found))

    def section_used(self, entry: EntryData) -> str:
        out = [R.heading(3, "Where is it used?", f"{entry.id}-used")]
        if entry.note:
            out.append(f"<p>{R.esc(entry.note)}</p>\n")
        src = "<br>".join(
            f"{R.link(R.esc(f'{fn.display_path}, {R.lines_words(fn.start, fn.end)}'), self.url(fn, fn.start, fn.end))}, {R.code(fn.short_name)}"
            for fn in entry.functions
        )
        pdf = self.spec_refs(entry.page, entry.spec)
        called = ", ".join(self.function_link(self.index.functions[n]) for n in self.callers(entry.functions)) or "nothing in the source"
        tested = ", ".join(self.function_link(self.index.functions[n]) for n in self.tested_by(entry.functions)) or "no test calls it directly"
        shown, more = self.reached_shown(entry.functions)
        reached = ", ".join(self.function_link(self.index.functions[n]) for n in shown) + (", and more" if more else "")
        rows = [
            ["Source", src],
            ["PDF reference", pdf],
            ["Called by", called],
            ["Tested by", tested],
        ]
        if reached:
            rows.append(["Reached by tests through other functions", reached])
        resolved = [r for eq in entry.equations for r in eq.resolved]
        rows.append(self.defer(
            lambda: self._coverage_row(resolved),
            lambda message: f"<tr><td>{COVERAGE_ROW}</td><td>{R.error_text(message)}</td></tr>",
            ("facts row", tuple((r.function.name, r.start, r.end) for r in resolved))))
        rows.append(["Status", R.badge(entry.status, self.status_evidence(entry))])
        out.append(R.table(["", ""], rows, "trace-table trace-facts", searchable=False))
        return "\n".join(out) + "\n"

    def _coverage_row(self, resolved: list) -> str:
        """The facts row of the tests that ran the entry's lines; nothing when none did."""
        ran = self.tests_running(resolved)
        if not ran:
            return ""
        links = ", ".join(self.function_link(self.index.functions[t]) for t in ran)
        return f"<tr><td>{COVERAGE_ROW}</td><td>{links}</td></tr>"

    def spec_refs(self, page: str, labels: list[str]) -> str:
        """'Section 4.3, Eq. 30, 31, p. 7', linked to the PDF at that page."""
        from .spec import NOT_STATED, format_refs

        if not labels or self.spec is None:
            return NOT_STATED
        refs = self.spec.lookup_all(labels)
        pdf_url = self.relative_url(page, self.settings.spec_pdf or "spec.pdf")
        pages = sorted({r.page for r in refs})
        text = R.esc(format_refs(refs))
        return R.link(text, f"{pdf_url}#page={pages[0]}", "the specification, " + ", ".join(labels))

    def page_url(self, page: str) -> str:
        """The URL of a page inside the site: from the adapter, else MkDocs' directory URLs."""
        import posixpath

        if page in self.page_urls:
            return self.page_urls[page]
        rel = posixpath.relpath(page, self.settings.rel(self.settings.docs_dir))
        if rel == "index.md" or rel.endswith("/index.md"):
            return rel[: -len("index.md")]
        return rel[: -len(".md")] + "/"

    def relative_url(self, page: str, target: str) -> str:
        """A link from ``page`` to a path of the site, as the browser resolves it."""
        import posixpath

        here = self.page_url(page)
        base = here if here.endswith("/") or not here else posixpath.dirname(here)
        rel = posixpath.relpath(target or ".", base or ".")
        return rel + "/" if target.endswith("/") and not rel.endswith("/") else rel

    def section_implemented_in(self, entry: EntryData) -> str:
        rows = []
        for eq, r, line, text in self.computes_rows(entry):
            fn = r.function
            rows.append([
                self.eq_link(eq), "Computes it", R.code(fn.display_path), R.code(fn.short_name), str(line),
                R.link(R.esc(f"GitHub: {fn.display_path}, line {line}"), self.url(fn, line, line)),
            ])
        return R.heading(3, "Implemented in", f"{entry.id}-implemented-in") + "\n" + R.table(
            ["Equation", "Role", "File", "Function", "Lines", "GitHub"], rows) + "\n"


def _split_at_headings(seg: Markdown) -> list[tuple[str, int, bool]]:
    """Split Markdown before each heading of level 1 or 2 (outside code fences)."""
    chunks: list[tuple[str, int, bool]] = []
    current: list[str] = []
    start, starts_heading = seg.line, False
    lines = seg.text.split("\n")
    headings = {i for i, line in prose_lines(lines) if (h := HEADING.match(line)) and len(h.group(1)) <= 2}
    for i, line in enumerate(lines):
        if i in headings:
            if current:
                chunks.append(("\n".join(current), start, starts_heading))
            current, start, starts_heading = [], seg.line + i, True
        current.append(line)
    if current:
        chunks.append(("\n".join(current), start, starts_heading))
    return chunks


def excerpt_block(ctx: Context, block: Block) -> str:
    """Live lines of code: each referenced statement with its real numbers and a link."""
    b = ctx.builder
    try:
        context = int(block.data.get("context", 0))
    except ValueError:
        context = -1
    if context < 0:
        raise TraceError(f"field 'context' of trace-excerpt must be a whole number of lines, 0 or more, "
                         f"not {block.data.get('context')!r}")
    out = []
    for text in block.data["code"]:
        r = ctx.resolve(text, block.field_line("code"), f"excerpt {text.strip()}")
        if r is None:
            continue
        fn = r.function
        start = max(fn.start, r.start - context)
        end = min(fn.end, r.end + context)
        lines = list(fn.source_lines[start - fn.start : end - fn.start + 1])
        head = (f"{R.code(fn.display_path)} {R.code(fn.name.split('.', 1)[-1])} "
                f"{R.link('GitHub', b.url(fn, r.start, r.end))}")
        out.append(R.listing(lines, start, head, highlight=list(range(r.start, r.end + 1)) if context else None))
    return "\n".join(out)
