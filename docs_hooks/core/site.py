"""One build of a whole site: index the code once, resolve every page, run what the plans need, render pages.

Used by every front end (the MkDocs plugin, the Python-Markdown extension, the
command line). ``make_build`` is the one factory: with ``static=True`` (what
``check``, ``relock`` and ``impact`` use) the build only reads and resolves, and
starts no process.

A full build resolves every page before it renders any (``plan_site``): the
site-wide tables and the source pages then read the entries every page really
has, and the run stage gets every plan's needs at once, in the background
(recordings in one child process, formulas in one KaTeX process, the tests
under coverage), while the pages are rendered; a page waits only for what it
shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from docs_hooks.base.cachedir import store_file
from docs_hooks.base.errors import TraceError
from docs_hooks.base.gcpause import freeze, paused, unfreeze
from docs_hooks.base.reads import Reads
from docs_hooks.base.settings import Settings
from docs_hooks.core.digests import project_digests, settings_digest
from docs_hooks.core.kept import AskedAgain, KeptPages, PageKeys, TracedPages
from docs_hooks.core.page import PagePlan, RenderedPage, page_needs, render_page, status_problems
from docs_hooks.core.planned import ParsedPages, SitePlans
from docs_hooks.core.warmup import WarmUp
from docs_hooks.kinds import KINDS
from docs_hooks.kinds.base import Project
from docs_hooks.read.blocks import Page
from docs_hooks.read.formulas import page_formulas
from docs_hooks.render import segments
from docs_hooks.render.links import Links
from docs_hooks.render.listings import Listings
from docs_hooks.render.segments import Piece
from docs_hooks.resolve.callgraph import CallGraph
from docs_hooks.resolve.codeindex import CodeIndex, Root
from docs_hooks.resolve.entries import EntryData, SiteEntries
from docs_hooks.resolve.indexing import IndexedFiles, build_index
from docs_hooks.resolve.lock import LockEntry, compare, read_lock
from docs_hooks.resolve.modules import Modules
from docs_hooks.run.coverage_map import MapsRead
from docs_hooks.run.record_store import ReadBack
from docs_hooks.run.recording import Recording
from docs_hooks.run.request import Request
from docs_hooks.run.residue import Texts
from docs_hooks.run.results import Results
from docs_hooks.run.workers import Workers


@dataclass
class Expanded:
    """One page through the stages: what MkDocs (or any front end) shows, and what ``check`` compares."""

    parts: list[Piece]  # Markdown and the generated HTML kept apart from it (see render.segments)
    problems: list[TraceError]
    uses: list[LockEntry]  # every reference that resolved, for the lock
    unresolved: dict[tuple[str, str], int]  # (page, key) -> line, for references that did not
    entries: list[EntryData]

    @property
    def markdown(self) -> str:
        """The page as one Markdown text with the generated HTML in it."""
        return segments.markdown(self.parts)


class Shown:
    """Which problems each page shows, in one pass of a front end over the pages: a page's own (each once), and
    each problem of the build placed elsewhere (the coverage run's failure, at its setting) on the first page
    that meets it in the order the front end takes them (MkDocs: its navigation). Decided as pages are taken,
    not as they are expanded, so that the page showing such a problem is the same whichever pages a build
    expanded first, kept or left (a dirty build, ``mkdocs serve`` rendering pages while it waits)."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}  # a problem of the build -> the page showing it

    def on(self, page: str, problems: list[TraceError]) -> list[TraceError]:
        """The problems ``page`` shows of ``problems`` (what its expansion met)."""
        out = []
        for text, problem in {str(p): p for p in problems}.items():
            if problem.path in (None, page) or self._owner.setdefault(text, page) == page:
                out.append(problem)
        return out


def index_for(settings: Settings, project_root: Path | None = None, indexed: IndexedFiles | None = None) -> CodeIndex:
    """The code index of the source and tests roots (optionally of a copy of the tree); ``indexed``: the parts of
    the last index of this process (see ``indexing.IndexedFiles``)."""
    root = project_root or settings.project_root
    src = root / settings.source_root.relative_to(settings.project_root)
    tests = root / settings.tests_root.relative_to(settings.project_root)
    roots = [Root(src, src, False)]
    if tests.is_dir():
        roots.append(Root(tests, root, True))
    # A copy of the tree (impact's old revision) lives in a temporary folder: nothing to keep for it.
    cache = store_file(settings.cache_dir, "index") if project_root is None else None
    return build_index(roots, root, cache, settings.exclude, indexed)


class Build:
    """One build: the project as resolved (``project``), the pages read and resolved so far (``plans``), the run
    stage's ``results`` and the ``links``; it runs what the plans need and renders the pages. Make it with
    ``make_build``; ``close`` ends what it started."""

    def __init__(
        self,
        project: Project,
        workers: Workers | None,
        static: bool,
        files: str | None = None,
        others: str | None = None,
        traces: TracedPages | None = None,
        parsed: ParsedPages | None = None,
    ):
        self.project = project
        self.settings = project.settings
        self.static = static
        self.links = Links(project.settings, project.index)
        self.workers = workers
        self.plans = SitePlans(project, KINDS, build_order, parsed)
        self.listings: Listings | None = None  # each source file highlighted, kept in the cache folder by its text
        self.results: Results | None = None
        if workers is not None:  # a build that renders
            self.listings = Listings(project.settings.cache_dir)
            self.results = Results(
                workers, self.site, project.spec, self._every_recording, self.listings.lines, project.reads
            )
        self._rendered: dict[str, tuple[tuple, Expanded]] = {}  # page -> (what it was made from, the page)
        # Rendered pages of earlier builds (see kept): only a build that renders, and knows the digest of
        # the project's files (``files``, see digests.project_digest) its pages are made from.
        self.kept: KeptPages | None = None
        self.keys: PageKeys | None = None
        if workers is not None and files is not None:
            self.kept = KeptPages(project.settings.cache_dir)
            self.keys = PageKeys(
                settings_digest(project.settings), project.widget_kernels, files, lambda: workers.math.version, others
            )
        # Each page's last rendering in this process with what it read of the code (see kept.TracedPages): a
        # front end whose process stays across builds hands each the same; only with the project's ``reads``.
        self.traces = traces if project.reads is not None and others is not None else None
        # What this build answers to the reads of earlier builds' pages (see kept.TracedPages).
        self.asked: AskedAgain | None = None
        if self.traces is not None and project.reads is not None and self.results is not None:
            self.asked = AskedAgain(
                project.reads, project, self.results, self.links, self.traces.graph, self.traces.coverage
            )
            kernels = ",".join(sorted(project.widget_kernels or ()))
            made_from = f"{settings_digest(project.settings)}\0{others}\0{kernels}"
            self.plans.earlier = self.traces.earlier_plans(made_from, self.asked)
        self._kept_parts: dict[str, tuple[str, list[Piece]]] = {}  # page -> (its key, its pieces), read back
        # The pages of the site: those the front end handed over (plan_site) or had expanded, not those only
        # read for their entries; the call graph is made from the recordings of all of them.
        self._site_pages: dict[str, None] = {}
        self.warming = WarmUp()  # what mkdocs serve does while it waits (warm_up)

    # ------------------------------------------------------------------ read and resolve (see planned)

    @property
    def site(self) -> SiteEntries:
        """The entries of the site's pages as resolved so far (see ``planned.SitePlans``)."""
        return self.plans.site

    def plan(self, page: str, text: str) -> PagePlan:
        """The page resolved (once for each text of it); its entries join the site's."""
        return self.plans.plan(page, text)

    def plan_site(self, pages: dict[str, str]) -> None:
        """Resolve every page now (in order), then start in the background what their plans need."""
        self.plans.plan_all(pages)
        self._site_pages = dict.fromkeys(pages)
        self.plans.site_entries()  # the pages the front end did not hand over (none, for MkDocs): from their files
        if self.results is not None:
            kept = self._read_kept(pages)
            to_render = [p for p in pages if p not in kept and not self._expanded(p, pages[p])]
            self._prefetch(
                [self.plan(p, pages[p]) for p in to_render], [self.plans.parse(p, pages[p]) for p in to_render]
            )

    def site_entries(self) -> SiteEntries:
        """Every page's entries (see ``planned.SitePlans.site_entries``)."""
        return self.plans.site_entries()

    def source_files(self, pages: dict[str, str] | None = None) -> list[str]:
        """The files of the code that get a source page (see ``planned.source_files``)."""
        return self.plans.source_files(pages)

    # ------------------------------------------------------------------ run

    def _prefetch(self, plans: list[PagePlan], pages: list[Page]) -> None:
        """Every plan's needs, started in the background; asked again with what was recorded, until no plan
        asks for more (a need may follow from a recording)."""
        results, workers = self.results, self.workers
        if results is None or workers is None:  # a static build runs nothing
            return
        formulas = {id(plan): page_formulas(page) for plan, page in zip(plans, pages)}
        workers.in_background([lambda: record_rounds(results, plans, formulas)])

    def _every_recording(self) -> None:
        """Every recording the site's pages use, answered (read back, or made when missing): the call graph is
        made from the calls all of them saw, not only those of the pages this build renders (a kept page's are
        read back), so a page comes out the same whichever others were kept."""
        if self.results is not None:  # a static build runs nothing
            planned = [self.plans.planned(page) for page in list(self._site_pages)]
            record_rounds(self.results, [known[1] for known in planned if known is not None])

    # ------------------------------------------------------------------ render

    def expand(self, page: str, text: str) -> Expanded:
        """The page through every stage (a static build: resolved only); the same text once per build, as
        long as what it shows of the other pages (a site-wide table, a source page) has not changed, and
        not again in a later build when nothing it is made from has changed (see kept)."""
        if self.workers is not None:
            self.workers.raise_errors()
        plan = self.plan(page, text)
        self._site_pages.setdefault(page)
        if not self.static:
            self.plans.site_entries()
        made_from = self._made_from(page, text)
        known = self._rendered.get(page)
        if known is not None and known[0] == made_from:
            return known[1]
        problems = list(plan.problems)
        parts: list[Piece] = []
        if self.results is None:  # static: the call graph of the code, with the calls the last test run saw of it
            problems += status_problems(plan, self.project.graph)
        else:
            key = self._key(page, text, plan)
            kept = self._kept_parts.pop(page, None)
            if kept is None or kept[0] != key:
                found = self.kept.get_many([key]) if self.kept is not None and key is not None else {}
                kept = (key, found[key]) if key in found else None
            traced = self._traced_key(page, text, plan) if kept is None else None
            reused = None  # the page's last rendering in this process, when what it read is unchanged
            if traced is not None and self.traces is not None and self.asked is not None:
                reused = self.traces.reuse(page, traced, self.asked)
                if reused is not None and key is not None and self.kept is not None:
                    self.kept.put_later(key, reused)
            if kept is not None:  # kept only when it had no problem, and made from the same inputs
                parts = kept[1]
                self.warming.read_back.add(page)
            elif reused is not None:  # its trace is kept, and the facts it reads were made to tell it held
                parts = reused
                self.warming.read_back.discard(page)
            else:
                self.warming.read_back.discard(page)
                rendered = self._render(page, plan, traced)
                parts = rendered.parts
                problems += rendered.problems  # which page shows one of the build's problems: see Shown
                if not rendered.problems and key is not None and self.kept is not None:
                    self.kept.put(key, parts)
        result = Expanded(parts, problems, plan.refs.uses, plan.refs.unresolved, plan.entries)
        self._rendered[page] = (made_from, result)  # the page's last expansion only: serve edits it again
        return result

    def _render(self, page: str, plan: PagePlan, traced: str | None) -> RenderedPage:
        """The page rendered; with ``traced`` (its key without the code), what it read of the code kept with it
        (see kept.TracedPages)."""
        assert self.results is not None
        reads = self.project.reads
        if traced is None or reads is None or self.traces is None or self.asked is None:
            return render_page(plan, self.results, self.links)
        with reads.tracing() as trace:
            rendered: RenderedPage = render_page(
                plan, self.results, self.links, self.traces.blocks(page, traced, plan.read, reads, self.asked)
            )
        self.asked.learn(trace)
        if not rendered.problems and plan.read is not None:
            self.traces.keep(page, traced, plan.read.joined(trace), rendered.parts)
        return rendered

    def _traced_key(self, page: str, text: str, plan: PagePlan) -> str | None:
        """The page's key without the files of the code index (see kept.PageKeys.traced_key); None when this
        build keeps no traces."""
        if self.traces is None or plan.read is None or self.keys is None or self.results is None:
            return None
        return self.keys.traced_key(page, text, plan, self.results, self.links, self.site)

    # ------------------------------------------------------------------ kept across builds

    def expansion_key(self, page: str) -> str | None:
        """What a page planned in this build is rendered from, digested (see kept): equal keys, equal pages.
        None when pages are not kept (a build without a cache folder, or one that renders nothing)."""
        known = self.plans.planned(page)
        return self._key(page, *known) if known is not None else None

    def _read_kept(self, pages: dict[str, str]) -> set[str]:
        """The pages whose rendering an earlier build kept (read now, in one query): they need no run."""
        if self.kept is None:
            return set()
        keys = {}
        for page, text in pages.items():
            if self._expanded(page, text):
                continue  # nothing to read
            key = self._key(page, text, self.plan(page, text))
            if key is not None:
                keys[key] = page
        found = self.kept.get_many(list(keys))
        self._kept_parts = {keys[key]: (key, parts) for key, parts in found.items()}
        return set(self._kept_parts)

    def _key(self, page: str, text: str, plan: PagePlan) -> str | None:
        """What the page's rendering is made from, digested (see kept.PageKeys); None when it is not kept."""
        if self.keys is None or self.results is None:
            return None
        return self.keys.key(page, text, plan, self._made_from(page, text), self.results, self.links, self.site)

    def _expanded(self, page: str, text: str) -> bool:
        """Whether this build expanded the page already, from the same text and what it shows of the others."""
        known = self._rendered.get(page)
        return known is not None and known[0] == self._made_from(page, text)

    def _made_from(self, page: str, text: str) -> tuple:
        """What tells, inside one build, that a page expanded before would come out the same."""
        plan = self.plan(page, text)
        return (text, self.site.version if plan.reads_site else None, self.links.state())

    def await_background(self) -> None:
        """Wait until the background work is done; raise what went wrong in it that was not a TraceError."""
        if self.workers is not None:
            self.workers.wait()
        if self.kept is not None:
            self.kept.flush()  # the pages this build rendered, for the next

    def write_kept_when_done(self) -> None:
        """The front end calls ``await_background`` once the build is done: the pages it rendered are written
        then, in one transaction."""
        if self.kept is not None:
            self.kept.batched = True

    def warm_up(self) -> None:
        """Make the call graph, and render once each page with blocks this build read back, in the background
        (see ``warmup``). A front end calls it once a build is done and its process stays (``mkdocs serve``)."""
        if self.results is not None and self.workers is not None and self._site_pages:
            known = {page: found for page in self._site_pages if (found := self.plans.planned(page)) is not None}
            self.warming.start(
                self.workers,
                self.results,
                [plan for _, plan in known.values()],
                lambda plan: self._render(plan.page, plan, self._traced_key(plan.page, *known[plan.page])),
                self.write_later,
            )

    def write_later(self) -> None:
        """Write what this build took as it was under new keys: the pages (``KeptPages.put_later``) and the line
        map carried over (``MapsRead.write_later``). The warm-up does, while serve waits; else ``close``."""
        if self.kept is not None:
            self.kept.flush_later()
        if self.workers is not None and self.workers.maps is not None:
            self.workers.maps.flush_later()

    def close(self) -> None:
        """End every process this build started and drop their state (a replaced or finished build)."""
        self.warming.stop()
        if self.workers is not None:
            self.workers.close()
        if self.kept is not None:
            self.kept.close()
        if self.listings is not None:
            self.listings.close()


def record_rounds(
    results: Results, plans: list[PagePlan], formulas: dict[int, list[tuple[str, bool]]] | None = None
) -> dict[Request, Recording | TraceError]:
    """Every recording ``plans`` need, asked for in rounds until no plan asks for more (a need may follow from
    a recording); each one's recording, or the error making it met. With ``formulas`` (a plan's id -> its
    page's formulas), the first round's other needs (formulas, line coverage) are started too
    (``Results.prefetch``)."""
    done: dict[Request, Recording | TraceError] = {}
    while True:
        needs = [n for plan in plans for n in page_needs(plan, done, (formulas or {}).get(id(plan), ()))]
        fresh = [n for n in dict.fromkeys(needs) if not (isinstance(n, Request) and n in done)]
        if formulas is not None:
            results.prefetch([n for n in fresh if not isinstance(n, Request)])
        formulas = None  # the formulas are the first round's only
        requests = [n for n in fresh if isinstance(n, Request)]
        if not requests:
            return done
        done.update(results.recordings(requests))


@dataclass
class AcrossBuilds:
    """What a front end whose process stays across builds (``mkdocs serve``) hands each of them, the same objects
    every time: a file not edited since the last build is not read into them again, nor a recording stored since.

    ``texts``: the files the runs depend on; ``modules``: the code as resolving
    parses it; ``indexed``: each file's part of the code index; ``read_back``:
    the recordings as read from the cache; ``maps``: the last line map as read
    from the cache, which each code edit no test's lines reach carries over;
    ``parsed``: each page as last parsed (``planned.ParsedPages``);
    ``traces`` (when the front end waits for the author's edits): each page's
    last rendering with what it read of the code (``kept.TracedPages``), so
    that a code edit renders again only the pages that read what changed.
    """

    texts: Texts = field(default_factory=Texts)
    modules: Modules = field(default_factory=Modules)
    indexed: IndexedFiles = field(default_factory=IndexedFiles)
    read_back: ReadBack = field(default_factory=ReadBack)
    maps: MapsRead = field(default_factory=MapsRead)
    parsed: ParsedPages = field(default_factory=ParsedPages)
    traces: TracedPages | None = None


def make_build(
    settings: Settings,
    coverage: bool = True,
    static: bool = False,
    index: CodeIndex | None = None,
    widget_kernels: frozenset[str] | None = None,
    across: AcrossBuilds | None = None,
) -> Build:
    """The one factory of builds: the site build, ``check``, ``relock`` and ``impact`` all make theirs here.

    A full build indexes the code, then starts the coverage run (unless
    ``coverage`` is false) in a child process of its own; the recordings and
    KaTeX start in theirs as soon as the pages are resolved (``Build._prefetch``),
    so that they overlap with each other and with the rest of the build instead
    of running in turn.

    A ``static`` build (``check``, ``relock``, ``impact``) stops after resolving:
    it reads the pages and resolves every reference against the index, and starts
    no process. ``index`` is the code index to resolve against (``impact`` passes
    the base revision's); by default the project's own.

    A front end whose process stays across builds hands each the same ``across``
    (see ``AcrossBuilds``); by default a build keeps nothing for another.
    """
    with paused():
        build = _make_build(settings, coverage and not static, static, index, widget_kernels, across or AcrossBuilds())
        # What the build holds lives through it: out of collections until expand_site ends, or the front
        # end's next build starts (see gcpause), and frozen before the collector runs again.
        freeze()
    return build


def _make_build(
    settings: Settings,
    coverage: bool,
    static: bool,
    index: CodeIndex | None,
    widget_kernels: frozenset[str] | None,
    across: AcrossBuilds,
) -> Build:
    index = index if index is not None else index_for(settings, indexed=across.indexed)
    code, others = project_digests(settings, index.file_digests) if not static else (None, None)
    traces = across.traces
    reads = Reads(traces.digests) if traces is not None and not static else None
    if reads is not None:
        index = index.watched(reads)
    spec = None
    if settings.spec_source is not None:
        from docs_hooks.read.spec import labels_without_compiling

        cache = settings.cache_dir / "spec" if settings.cache_dir else None
        if static:  # resolving needs the labels only: no Typst run
            spec = labels_without_compiling(settings.spec_source, cache)
        else:  # Typst runs in a child process of its own
            from docs_hooks.run.spec import compile_spec

            spec = compile_spec(settings.spec_source, cache_dir=cache, timeout=settings.test_timeout)
    evidence = cached_evidence(settings, index) if static else None
    graph = CallGraph(index, evidence, reads)
    project = Project(settings, index, graph, spec, widget_kernels, across.modules, reads)
    workers = (
        None if static else Workers(settings, index, texts=across.texts, read_back=across.read_back, maps=across.maps)
    )
    build = Build(project, workers, static, files=code, others=others, traces=traces, parsed=across.parsed)
    # The pages as their files hold them, as the command line resolves them: parsed now, or read back from the
    # cache, so that each build keeps the entries a later check reads (a front end hands over other texts).
    build.plans.parse_files()
    if workers is not None and coverage:  # check reads no HTML and never waits for it: it makes its build without
        workers.start_coverage()
    return build


def cached_evidence(settings: Settings, index: CodeIndex):
    """The calls the last test run saw of this very code (the line map the test run or a build wrote), read from
    the cache without running anything; None when there is none."""
    s, cache = settings, settings.cache_dir
    if not s.coverage_tests or cache is None:
        return None
    from docs_hooks.run.coverage_map import MapOf, index_modules, read_cached_map

    found = read_cached_map(
        MapOf(cache, index.file_digests, s.coverage_tests, index_modules(index), index.functions, s.project_root)
    )
    return found.evidence() if found is not None else None


def build_order(settings: Settings) -> list[Path]:
    """The pages in the order MkDocs builds them: folder by folder, each folder's index page first."""

    def key(file: Path):
        rel = file.relative_to(settings.docs_dir)
        return (rel.parent.parts, rel.name not in ("index.md", "README.md"), rel.name)

    return sorted(settings.pages(), key=key)


@dataclass
class SiteResult:
    pages: dict[str, Expanded] = field(default_factory=dict)
    problems: list[TraceError] = field(default_factory=list)

    @property
    def uses(self) -> list[LockEntry]:
        return [u for e in self.pages.values() for u in e.uses]


def site_pages(settings: Settings) -> dict[str, str]:
    """Every page of the site (its path from the project root -> its text), in build order."""
    return {settings.rel(f): f.read_text(encoding="utf-8") for f in build_order(settings)}


def expand_site(settings: Settings, build: Build | None = None) -> SiteResult:
    """Every page through the stages (a static build: resolved only)."""
    build = build or make_build(settings)
    result = SiteResult()
    freeze()  # the index and the parsed pages live through the build: see gcpause
    try:
        pages = site_pages(settings)
        build.plan_site(pages)
        shown = Shown()
        for rel, text in pages.items():
            expanded = build.expand(rel, text)
            result.pages[rel] = expanded
            result.problems.extend(shown.on(rel, expanded.problems))
        build.await_background()  # a bug in the background work is raised here, not lost
    finally:
        unfreeze()
    return result


def check_site(settings: Settings, build: Build | None = None) -> list[TraceError]:
    """Every problem of the pages' references, plus the lock comparison: what ``check`` reports.

    It stops after resolving (a static build): it runs nothing, so it reads no
    recording, renders no formula and does not wait for the coverage run."""
    build = build or make_build(settings, static=True)
    result = expand_site(settings, build)
    locked = read_lock(settings.lock_path, settings.rel(settings.lock_path))
    unresolved = {k: v for e in result.pages.values() for k, v in e.unresolved.items()}
    return result.problems + compare(locked, result.uses, settings.rel(settings.lock_path), unresolved)


__all__ = [
    "Build",
    "Expanded",
    "SiteResult",
    "build_order",
    "check_site",
    "expand_site",
    "index_for",
    "make_build",
]
