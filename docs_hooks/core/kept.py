"""Rendered pages kept across builds: a page that nothing it is made from has changed is not rendered again.

A page's key (``page_key``) digests what its rendering reads: the page's text,
the generator and the environment that render it (``environment``), the
settings, where the site's pages are (the front end's URLs), what the page
shows of the other pages, and what it shows of the code. What it shows of the
code is, for most pages, the whole code: the callers and tests of a function
come from any file, and a run may read any file, so a page with an entry, an
equation or a run depends on the digest of every file of the project but its
pages (``digests.project_digest``). A page made only of prose
and of blocks whose kind can name all its inputs (``KeyedKind``; a source page
names its file and what cites it) depends on those inputs only, so an edit of
one file renders one source page again, not all of them.

A process that stays across builds (``mkdocs serve``) also keeps each page's
last rendering with what it read of the code (``TracedPages``, see
``base.reads``): what resolving it and rendering it read of the code, under the
page's key without the files of the code index (``PageKeys.traced_key``).
After a code edit, a page whose every read gets the same answer from the new
build would resolve to the same plan and render the same: it is that
rendering, not rendered again. An edit of one function then renders again the pages that
read it (show it, list it among the callers or tests of theirs, ran it), not
every page that shows code. Each page's plan, and each block of a page, is kept
the same way: a page whose resolving read the same is not resolved again, and a
page rendered again renders again only the blocks that read what changed.
The questions a page asked of the runs' call graph are answered, in a build
whose graph was made from the same inputs as the build's before
(``GraphAnswers``), as that build answered them, not by walking the graph again.

Only a page rendered without a problem is kept: a problem may come from
something outside the key (a test that timed out, KaTeX missing), and a page
that shows one is rendered again on the next build.

The rendered pieces are stored as JSON in a store of the cache folder
(``cachedir.Store``, sealed like every entry), one row per key. A key starts
with a digest of the page's path (``page_key``), and only the ``VERSIONS``
renderings of a page written last are kept: each code edit under ``mkdocs
serve`` renders the pages that show the code again under new keys, and the
store would otherwise grow by all of them at every edit (bench/README.md,
"cache folder"). A page a code edit under serve took as it was is written under
its new key while serve waits for the next edit (``KeptPages.put_later``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docs_hooks.base.cachedir import Store, store_file
from docs_hooks.base.errors import TraceError
from docs_hooks.base.reads import Digests, Read, Reads, Role, Trace, Untraceable, ask_again, attached, detached_within
from docs_hooks.base.settings import installed_version
from docs_hooks.core.page import BlockPart, BlockRenderer, PagePlan, Prose
from docs_hooks.core.planned import EarlierPlans
from docs_hooks.kinds.base import Project, Rendered
from docs_hooks.render.links import Links
from docs_hooks.render.segments import Html, Piece
from docs_hooks.resolve.callgraph import CallGraph, GraphInputs
from docs_hooks.resolve.entries import SiteEntries
from docs_hooks.run.results import Results

FORMAT = 1  # the form of a stored page; a change makes every stored page a miss
# Renderings kept of each page: the current one, and a few an author may come back to (an edit undone, another
# branch checked out, the same site built by a second front end).
VERSIONS = 4
# Plans kept of each page under serve: a page is resolved from its file's text (what check and the site-wide
# tables read) and from the text the front end hands over (without its front matter), which may differ.
PLANS = 2
GENERATOR = Path(__file__).resolve().parent.parent  # the docs_hooks package: its code renders the pages


def environment(katex: str) -> str:
    """What renders a page besides its inputs: this generator's files, Python, NumPy and KaTeX (``katex``:
    its version and how the generator runs it)."""
    h = hashlib.sha256(f"{FORMAT}\0{sys.version}\0{installed_version('numpy')}\0{katex}".encode())
    for file in sorted(GENERATOR.rglob("*")):
        if file.suffix in (".py", ".js", ".css") and "__pycache__" not in file.parts:
            h.update(file.relative_to(GENERATOR).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return h.hexdigest()


def page_key(page: str, *inputs: object) -> str:
    """The key of a rendered page: a digest of its path (the group of its versions, see ``VERSIONS``), then one of
    everything it was made from (plain data, by its repr)."""
    group = hashlib.sha256(page.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return group + ":" + hashlib.sha256(repr((page, *inputs)).encode("utf-8", "surrogatepass")).hexdigest()


def dump(parts: list[Piece]) -> bytes:
    """A page's pieces as stored: text, or [html, is a block] for generated HTML."""
    return json.dumps([p if isinstance(p, str) else [p.html, p.block] for p in parts]).encode()


def digest(parts: list[Piece]) -> str:
    """What a page came out as, digested: equal digests, the same page."""
    return hashlib.sha256(dump(parts)).hexdigest()


def load(raw: bytes) -> list[Piece] | None:
    """The pieces ``dump`` stored; None for anything else (then the page is rendered again)."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, list):
        return None
    parts: list[Piece] = []
    for item in data:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], bool):
            parts.append(Html(item[0], item[1]))
        else:
            return None
    return parts


class KeptPages:
    """The rendered pages of earlier builds, by key (none without a cache folder)."""

    def __init__(self, cache_dir: Path | None):
        path = store_file(cache_dir, "rendered")
        self.store = Store(path) if path is not None else None
        self._fresh: dict[str, bytes] = {}  # rendered in this build, written by ``flush``
        self._later: dict[str, list[Piece]] = {}  # taken as they were under new keys, written by ``flush_later``
        # A front end that tells the build when it is done (``Build.await_background``) has the pages of a
        # build written in one transaction then; any other (the extension under Zensical) page by page.
        self.batched = False

    def get_many(self, keys: list[str]) -> dict[str, list[Piece]]:
        if self.store is None or not keys:
            return {}
        found = {key: self._later[key] for key in keys if key in self._later}
        found.update(
            (key, parts) for key in keys if key in self._fresh and (parts := load(self._fresh[key])) is not None
        )
        keys = [key for key in keys if key not in found]
        if not keys:
            return found
        for key, raw in self.store.get_many(keys).items():
            parts = load(raw)
            if parts is not None:
                found[key] = parts
        return found

    def put(self, key: str, parts: list[Piece]) -> None:
        """Keep the page (when ``batched``, written by ``flush``: one transaction for the pages of a build)."""
        if self.store is not None:
            self._fresh[key] = dump(parts)
            if not self.batched:
                self.flush()

    def put_later(self, key: str, parts: list[Piece]) -> None:
        """Keep a page this process had rendered under another key (a serve's code edit took it as it was, see
        ``TracedPages.reuse``), written by ``flush_later``: a serve writes them while it waits for the next edit
        (``Build.warm_up``), not in the rebuild; they are for a later process, this one has them."""
        if self.store is not None:
            self._later[key] = parts

    def flush(self) -> None:
        if self.store is not None and self._fresh:
            self.store.put_many(self._fresh, versions=VERSIONS)
        self._fresh = {}

    def flush_later(self) -> None:
        """Write the pages of ``put_later``, in one transaction."""
        later, self._later = self._later, {}
        if self.store is not None and later:
            self.store.put_many({key: dump(parts) for key, parts in later.items()}, versions=VERSIONS)

    def close(self) -> None:
        if self.store is not None:
            self.flush_later()
            self.flush()
            self.store.close()


@dataclass
class TracedPage:
    """A page as a build of this process rendered it: its key without the code (``PageKeys.traced_key``), what
    rendering it read of the code (``base.reads.Trace``) and its pieces."""

    key: str
    trace: Trace
    parts: list[Piece]


@dataclass
class TracedPlan:
    """A page's plan as a build of this process resolved it, without that build's objects (``base.reads.detached``)."""

    plan: PagePlan
    within: frozenset[int]  # what in ``plan`` holds a role (see base.reads.detached_within)


class TracedPages:
    """Each page's last rendering in this process, with what it read of the code (``base.reads``): after a code
    edit, a page whose key without the code is the same, and whose every read gets the same answer from the new
    build, is this rendering, not rendered again. A front end whose process stays across builds (``mkdocs
    serve``) keeps one for all of them; only a page rendered without a problem, and whose every read could be
    digested, is kept. Each page's plan is kept the same way (``keep_plan``): a page whose resolving read the
    same of the code is not resolved again; and each block of a page (``keep_block``): a page rendered again
    renders again only the blocks that read what changed."""

    def __init__(self) -> None:
        self._pages: dict[str, TracedPage] = {}
        self._plans: dict[str, dict[str, TracedPlan]] = {}  # page -> what it was made from -> its plan
        self.digests = Digests()  # the answers' digests, for all the builds (see base.reads.Digests)
        self.reused = 0  # pages taken from here, not rendered again (bench/ and the tests read it)
        self.plans_reused = 0  # plans taken from here, not resolved again
        # page -> the part's place in its plan -> (the page's key, what the block read, the block rendered)
        self._blocks: dict[str, dict[int, tuple[str, Trace, Rendered]]] = {}
        self.blocks_reused = 0  # blocks taken from here in a page rendered again
        self.graph = GraphAnswers()  # the runs' call graph's answers to these reads, while its inputs hold
        self.coverage = CoverageAnswers()  # line coverage's answers to these reads, while the map is the same

    def keep_block(self, page: str, key: str, at: int, trace: Trace, rendered: Rendered) -> None:
        """Keep a block of the page rendered without a problem: the part at ``at`` of its plan, under the page's
        ``key``, with what resolving the page and rendering the block read (``trace``)."""
        blocks = self._blocks.setdefault(page, {})
        if blocks and next(iter(blocks.values()))[0] != key:
            blocks.clear()  # the page's key moved on: the blocks of the key before are not asked for again
        if trace.complete and not rendered.problems:
            blocks[at] = (key, trace, rendered)
        else:
            blocks.pop(at, None)

    def block(self, page: str, key: str, at: int, ask: Callable[[Read], str | None]) -> tuple[Trace, Rendered] | None:
        """The block at ``at`` of the page as an earlier build rendered it under the page's ``key``, with what it
        read, if every read gets the same answer from ``ask``; else None. A page rendered again because one of
        its blocks read what changed takes the others as they were."""
        found = self._blocks.get(page, {}).get(at)
        if found is None or found[0] != key or not found[1].holds(ask):
            return None
        self.blocks_reused += 1
        return found[1], found[2]

    def blocks(self, page: str, key: str, resolved: Trace | None, reads: Reads, ask: AskedAgain) -> BlockRenderer:
        """How a build renders the page's blocks under a trace (``core.page.render_page``): each as an earlier
        build rendered it while what it read holds (``block``), else anew, and kept (``keep_block``) with what
        it read and what resolving the page read (``resolved``); either way its reads are the page's too."""
        before = resolved if resolved is not None else Trace()

        def render(at: int, part: BlockPart, make: Callable[[], Rendered]) -> Rendered:
            kept = self.block(page, key, at, ask)
            if kept is not None:
                reads.include(kept[0])
                return kept[1]
            try:
                with reads.tracing() as trace:
                    rendered = make()
            finally:
                reads.include(trace)  # a block that raised is the page's problem: the page is not kept
            self.keep_block(page, key, at, before.joined(trace), rendered)
            return rendered

        return render

    def earlier_plans(self, made_from: str, ask: AskedAgain) -> EarlierPlans:
        """The plans kept here, for a build that asks their reads again with ``ask`` and whose every page's plan
        is made from ``made_from`` besides its text and the code (see ``planned.EarlierPlans``)."""
        return EarlierPlans(made_from, lambda page, made: self.plan(page, made, ask, ask.found), self.keep_plan)

    def keep_plan(self, page: str, made_from: str, plan: PagePlan) -> None:
        """Keep the page's plan, made from ``made_from`` and the code it read (``plan.read``), if every read could
        be digested."""
        kept = self._plans.setdefault(page, {})
        kept.pop(made_from, None)
        if plan.read is not None and plan.read.complete:
            kept[made_from] = TracedPlan(*detached_within(plan))
            while len(kept) > PLANS:
                del kept[next(iter(kept))]

    def plan(
        self, page: str, made_from: str, ask: Callable[[Read], str | None], found: Callable[[Role], object]
    ) -> PagePlan | None:
        """The page's last plan, if it was made from ``made_from`` and every read resolving it made gets the same
        answer from ``ask``, with the objects of the build ``found`` gives (``base.reads.attached``); else None."""
        kept = self._plans.get(page, {}).get(made_from)
        if kept is None or kept.plan.read is None or not kept.plan.read.holds(ask):
            return None
        self.plans_reused += 1
        plan: PagePlan = attached(kept.plan, found, kept.within)
        return plan

    def keep(self, page: str, key: str, trace: Trace, parts: list[Piece]) -> None:
        if trace.complete:
            self._pages[page] = TracedPage(key, trace, parts)
        else:
            self._pages.pop(page, None)

    def reuse(self, page: str, key: str, ask: Callable[[Read], str | None]) -> list[Piece] | None:
        """The page's last rendering, if it was made from ``key`` and every read it made gets the same answer from
        ``ask`` (the build's, see ``base.reads.ask_again``); else None."""
        found = self._pages.get(page)
        if found is None or found.key != key or not found.trace.holds(ask):
            return None
        self.reused += 1
        return found.parts


class GraphAnswers:
    """The answers the runs' call graph gave to the reads of kept pages (digested, by the read's ``key``), kept
    across the builds of a process while the graph's inputs stay equal (``callgraph.GraphInputs``): a graph made
    from equal inputs answers the questions of ``CallGraph.FROM_INPUTS`` the same, so a build after an edit that
    changed none of them (a function added that nothing calls) takes the answers from here rather than walking
    its graph again for every page."""

    def __init__(self) -> None:
        self._inputs: GraphInputs | None = None
        self._answers: dict[tuple[str, str, str], str] = {}
        self.taken = 0  # answers taken from here, not asked of the graph (bench/ and the tests read it)

    def of(self, inputs: GraphInputs) -> dict[tuple[str, str, str], str]:
        """The answers given from inputs equal to ``inputs``, for a build whose graph has those inputs to take
        and add to; none once the inputs changed."""
        if self._inputs is None or self._inputs != inputs:
            self._answers = {}
        self._inputs = inputs  # the latest build's: an earlier build's tables are not kept alive by it
        return self._answers


class CoverageAnswers:
    """The answers line coverage gave to the reads of kept pages (``Results.tests_running``: the tests that ran a
    span of lines), kept across the builds of a process while the line map is the same object (a map carried over
    whole is: ``coverage_map.MapsRead``) and the same functions of the index are tests, all such an answer
    reads."""

    QUESTIONS = frozenset({"tests_running"})

    def __init__(self) -> None:
        self._inputs: tuple[object, frozenset[str]] | None = None
        self._answers: dict[tuple[str, str, str], str] = {}
        self.taken = 0  # answers taken from here, not asked of the map (the tests read it)

    def of(self, coverage: object, tests: frozenset[str]) -> dict[tuple[str, str, str], str]:
        """The answers given from the line map ``coverage`` while ``tests`` were the index's tests; none once
        either changed."""
        if self._inputs is None or self._inputs[0] is not coverage or self._inputs[1] != tests:
            self._answers = {}
        self._inputs = (coverage, tests)
        return self._answers


class AskedAgain:
    """What a build answers to the reads an earlier build's pages made (``TracedPages.reuse``): each read asked
    of this build's object of its role (``base.reads.ask_again``), with this build's objects in place of the
    roles its arguments hold, once per build for all the pages that made it. A question of the runs' call graph
    whose answer an earlier build gave from the same inputs is that answer (``GraphAnswers``), and so is a
    question of line coverage asked of the same map (``CoverageAnswers``)."""

    def __init__(
        self,
        reads: Reads,
        project: Project,
        results: Results,
        links: Links,
        graph: GraphAnswers | None = None,
        coverage: CoverageAnswers | None = None,
    ):
        self.reads, self.project, self.results, self.links = reads, project, results, links
        self._asked: dict[tuple[str, str, str], str | None] = {}  # each read's answer, digested
        self._graph, self._coverage = graph, coverage
        self._graph_answers: dict[tuple[str, str, str], str] | None = None  # this build's graph's, once made
        self._coverage_answers: dict[tuple[str, str, str], str] | None = None  # this build's map's, once read

    def __call__(self, read: Read) -> str | None:
        if read.key not in self._asked:
            self._asked[read.key] = self._answer(read)
        return self._asked[read.key]

    def _answer(self, read: Read) -> str | None:
        kept = self._kept(read)
        if kept is None:
            return ask_again(self.reads, self._object(read.role), read, self._rebound)
        keeper, answers = kept
        known = answers.get(read.key)
        if known is not None:
            keeper.taken += 1
            return known
        answer = ask_again(self.reads, self._object(read.role), read, self._rebound)
        if answer is not None:
            answers[read.key] = answer
        return answer

    def learn(self, trace: Trace) -> None:
        """Keep the answers the runs' call graph and line coverage gave a page rendered in this build (what it
        read, ``trace``) for the next build whose graph has the same inputs (``GraphAnswers``), or that reads the
        same map (``CoverageAnswers``)."""
        for read in trace.reads.values():
            kept = self._kept(read)
            if kept is not None:
                kept[1].setdefault(read.key, read.answer)

    def _kept(self, read: Read) -> tuple[GraphAnswers | CoverageAnswers, dict[tuple[str, str, str], str]] | None:
        """Where the answer to ``read`` is kept across builds, with the answers kept for this build: a question of
        the runs' call graph that its inputs alone answer, or one of line coverage; None for any other read (or
        when the line map cannot be had: the read is asked, and says so)."""
        if self._graph is not None and read.role == "results.graph" and read.question in CallGraph.FROM_INPUTS:
            return self._graph, self._graph_answers_now()
        if self._coverage is not None and read.role == "results" and read.question in CoverageAnswers.QUESTIONS:
            answers = self._coverage_answers_now()
            return (self._coverage, answers) if answers is not None else None
        return None

    def _coverage_answers_now(self) -> dict[tuple[str, str, str], str] | None:
        """The answers given from this build's line map with its index's tests (found once, when first asked)."""
        assert self._coverage is not None
        if self._coverage_answers is None:
            with self.reads.unnoted():
                try:
                    coverage = self.results.coverage
                except TraceError:
                    return None
                tests = frozenset(name for name, fn in self.project.index.functions.items() if fn.is_test)
            self._coverage_answers = self._coverage.of(coverage, tests)
        return self._coverage_answers

    def _graph_answers_now(self) -> dict[tuple[str, str, str], str]:
        """The answers given by graphs with the inputs of this build's (made once, when first asked)."""
        assert self._graph is not None
        if self._graph_answers is None:
            with self.reads.unnoted():
                self._graph_answers = self._graph.of(GraphInputs.of(self.results.graph))
        return self._graph_answers

    def _rebound(self, value: object) -> object:
        return attached(value, self.found)

    def found(self, role: Role) -> object:
        """This build's object of ``role``; Untraceable when it has none (the read is not told)."""
        found = {"CodeIndex": self.project.index, "Links": self.links}.get(role.token)
        if found is None and role.role is not None:
            found = self._object(role.role)
        if found is None:
            raise Untraceable(role.token)
        return found

    def _object(self, role: str) -> object:
        """The object of this build that plays ``role`` in a trace."""
        if role.startswith("index."):
            return getattr(self.project.index, role.removeprefix("index."), None)
        if role == "results.graph":
            return self.results.graph
        return {"project": self.project, "graph": self.project.graph, "results": self.results}.get(role)


class PageKeys:
    """Each planned page's key in one build (``page_key`` of what its rendering reads, as the module's doc says),
    worked out once for each text of the page and state of the site."""

    def __init__(
        self,
        settings: str,
        widget_kernels: frozenset[str] | None,
        files: str,
        katex: Callable[[], str],
        others: str | None = None,
    ):
        self.settings = settings  # the settings' digest (digests.settings_digest)
        self.widget_kernels = sorted(widget_kernels or ())
        self.files = files  # the digest of every file of the project but its pages (digests.project_digest)
        self.others = others  # the same, but the files of the code index (whose reads a trace notes)
        self.katex = katex  # KaTeX's version and how the generator runs it, asked for when first needed
        self._environment: str | None = None
        self._known: dict[str, tuple[tuple, str]] = {}  # page -> (what it was made from, its key)
        self._site: tuple[int, str] | None = None  # (the site's version, its digest)

    def key(
        self, page: str, text: str, plan: PagePlan, made_from: tuple, results: Results, links: Links, site: SiteEntries
    ) -> str:
        """The page's key; ``made_from`` tells, inside one build, that it was worked out already (resolving the
        site, a dirty build's marking)."""
        known = self._known.get(page)
        if known is not None and known[0] == made_from:
            return known[1]
        key = self._key(page, text, plan, results, links, site, self.files)
        self._known[page] = (made_from, key)
        return key

    def traced_key(
        self, page: str, text: str, plan: PagePlan, results: Results, links: Links, site: SiteEntries
    ) -> str | None:
        """The page's key without the files of the code index: what resolving and rendering the page read of
        those files is its trace (``TracedPages``). None without ``others``."""
        if self.others is None:
            return None
        return self._key(page, text, plan, results, links, site, self.others, "traced")

    def _key(
        self,
        page: str,
        text: str,
        plan: PagePlan,
        results: Results,
        links: Links,
        site: SiteEntries,
        files: str,
        *more: str,
    ) -> str:
        if self._environment is None:
            self._environment = environment(self.katex())
        inputs = []
        whole_code = bool(plan.entries)
        for part in plan.parts:
            if isinstance(part, Prose):
                inputs.append(
                    [(r.function.name, r.function.repo_path, r.start, r.end) if r else None for r in part.inline]
                )
            elif isinstance(part, BlockPart) and hasattr(part.kind, "inputs"):
                inputs.append(part.kind.inputs(part.plan, results, links))
            else:
                whole_code = True
        return page_key(
            page,
            self._environment,
            self.settings,
            self.widget_kernels,
            text,
            links.state(),
            files if whole_code else None,
            self._site_digest(site) if plan.reads_site and whole_code else None,
            inputs,
            *more,
        )

    def _site_digest(self, site: SiteEntries) -> str:
        if self._site is None or self._site[0] != site.version:
            self._site = (site.version, site.digest())
        return self._site[1]
