"""What the run stage gives the render stage: recordings, rendered formulas, line coverage, the compiled
specification, and the entries of every page of the site; and, kept with them across builds, each source file
highlighted for its page.

``Results`` answers each question from what was run before it was asked (the
build starts every plan's requests in the background as soon as the pages are
resolved: ``prefetch``), and otherwise runs it then, so rendering never depends
on the order the pages are rendered in. Each answer is the same for the whole
build: a value or the TraceError that making it met.

What a block kind asks for is a ``Need``: a ``Request`` (a recording), a
``Formula``, or ``COVERAGE`` (which test ran which line).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from docs_hooks.base.errors import TraceError
from docs_hooks.base.reads import Reads, Untraceable, traced
from docs_hooks.run.recording import Recording
from docs_hooks.run.request import Request

if TYPE_CHECKING:
    from docs_hooks.read.spec import SpecIndex
    from docs_hooks.resolve.anchors import Resolved
    from docs_hooks.resolve.callgraph import CallGraph
    from docs_hooks.resolve.entries import SiteEntries
    from docs_hooks.run.coverage_map import CoverageMap
    from docs_hooks.run.workers import Workers

T = TypeVar("T")


@dataclass(frozen=True)
class Formula:
    """A formula to render with KaTeX: its TeX, and whether it is shown as a block."""

    tex: str
    display: bool = False


class _Coverage:
    def __repr__(self) -> str:
        return "COVERAGE"


COVERAGE = _Coverage()  # the need of line coverage (which test ran which line)

Need = Request | Formula | _Coverage


class Results:
    """The run stage's answers for one build, made at most once each (see the module's doc)."""

    trace_token = "Results"  # what a digest of a read's answer takes it for (base.reads)
    role = "results"

    def __init__(
        self,
        workers: Workers,
        site: SiteEntries,
        spec: SpecIndex | None = None,
        every_recording: Callable[[], object] | None = None,
        listings: Callable[[str], list[str]] | None = None,
        reads: Reads | None = None,
    ):
        self.workers = workers
        self.reads = reads  # where its answers are noted while a page renders (see ``base.reads``)
        # A file's lines highlighted, by its text, kept across builds (the build's ``render.listings.Listings``).
        self.listings = listings
        # What answers every recording the site's pages use (the build's), before the call graph is made.
        self.every_recording = every_recording
        self._graph: CallGraph | None = None
        self.site = site  # every page's entries (resolved), for the site-wide tables
        self.spec = spec  # the compiled specification, or None when none is configured
        self._derived: dict[Any, Any] = {}
        self._derived_digests: dict[Any, str] = {}  # each derived fact's digest, once a page noted it (``reads``)
        self._lock = threading.RLock()  # a derived fact may read another one, or the graph
        # The graph's own: a derived fact that does not read the graph need not wait while it is made (in the
        # background, say: Build.warm_up). Making the graph reads no derived fact.
        self._graph_lock = threading.Lock()
        self._math_problem: TraceError | None = None

    # ------------------------------------------------------------------ recordings

    @traced
    def recording(self, request: Request) -> Recording:
        """The recording of ``request``; its TraceError when it failed."""
        value = self.recordings([request])[request]
        if isinstance(value, TraceError):
            raise TraceError(value.message)
        return value

    @traced
    def recordings(self, requests: Iterable[Request]) -> dict[Request, Recording | TraceError]:
        """Each request's recording or error, all in one child process (what was recorded before is read back)."""
        wanted = list(dict.fromkeys(requests))
        if not wanted:
            return {}
        try:
            return self.workers.recorder.record_each(wanted)
        except TraceError as err:  # the child process itself failed: every request failed with it
            return {req: err for req in wanted}

    # ------------------------------------------------------------------ formulas

    def formulas(self, formulas: list[Formula]) -> list[tuple[str | None, str | None]]:
        """Each formula's (HTML, error): HTML None with an error message when KaTeX refused it, with an
        empty message when KaTeX could not run at all (that problem is raised, once, by ``math_problem``).

        Not a read of a page's trace (``base.reads``): it reads nothing of the code, and what it answers follows
        from the formulas and from KaTeX, which a page's key names (``kept.environment``), so a kept page's
        formulas are not typeset again to tell that it holds."""
        if not formulas:
            return []
        try:
            return self.workers.math.render_many([(f.tex, f.display) for f in formulas])
        except TraceError as err:
            self._math_problem = self._math_problem or err
            return [(None, "")] * len(formulas)

    @traced
    def math_problem(self) -> TraceError | None:
        """Why KaTeX could not render at all in this build, if it could not."""
        return self._math_problem

    # ------------------------------------------------------------------ source files

    @traced
    def source_lines(self, text: str) -> list[str] | None:
        """A file's lines highlighted for its source page, read back when an earlier build (or ``python -m
        docs_hooks record``) highlighted the same text; None when this build keeps none (the page makes them)."""
        return self.listings(text) if self.listings is not None else None

    # ------------------------------------------------------------------ line coverage

    @property
    def coverage(self) -> CoverageMap | None:
        """Which test ran which line, measured once per change of the code; None when not set up (the
        ``coverage_tests`` setting); the run's TraceError when it failed."""
        return self.workers.coverage

    @traced
    def tests_running(self, resolved: list[Resolved]) -> list[str]:
        """Tests that executed any of these statements, by line coverage (tests of the index only)."""
        return self.workers.tests_running(resolved)

    # ------------------------------------------------------------------ the call graph

    @property
    def graph(self) -> CallGraph:
        """The call graph of the code merged with the calls the runs saw: the coverage run's and those of every
        recording the site's pages use, whichever pages this build renders (a kept page's recordings are read
        back; waiting for the background work, so that none is left out). What "Called by", "Tested by", the
        status of an entry, the shapes at call sites and the matrix read."""
        with self._graph_lock:
            if self._graph is None:
                from docs_hooks.resolve.callgraph import CallGraph

                # Made for the build, whichever page asks first: what making it reads is no page's read (a page
                # notes each question it asks of the graph, see ``CallGraph``).
                with self.reads.unnoted() if self.reads is not None else contextlib.nullcontext():
                    self.workers.wait()
                    if self.every_recording is not None:
                        self.every_recording()
                    self._graph = CallGraph(self.workers.index, self.workers.evidence(), self.reads, "results.graph")
            return self._graph

    # ------------------------------------------------------------------ derived facts

    def derived(self, key: Any, compute: Callable[..., T], *args: Any) -> T:
        """``compute(*args)`` once per build for ``key``: facts several blocks read (the model run's dimensions,
        the parameter inventory); a TraceError it raised is raised again on every later use.

        While a page renders under a trace (``reads``), the page notes the fact by its answer, not by what
        making it read: a later build asks ``derived_digest`` again with its own objects (``compute`` is a
        module's function, and ``base.reads.ask_again`` gives ``args`` that build's project, results and
        links), so that a fact made from the whole code, such as every call of the code, reads as unchanged
        when the edit changed none of it."""
        value = self._made(key, compute, args)
        reads = self.reads
        if reads is not None and reads.noting():
            try:
                reads.note(self.role, "derived_digest", (key, compute, *args), self.derived_digest(key, compute, *args))
            except Untraceable:
                reads.cannot_tell()
        if isinstance(value, TraceError):
            raise TraceError(value.message, value.path, value.line)
        return value

    def derived_digest(self, key: Any, compute: Callable[..., T], *args: Any) -> str:
        """A digest of the fact ``derived`` gives for ``key`` (made now if this build has not made it yet);
        raises Untraceable when the digest cannot take it in whole."""
        value = self._made(key, compute, args)
        with self._lock:
            made = self._derived_digests.get(key)
        if made is None:
            assert self.reads is not None
            made = self.reads.digest(value)
            with self._lock:
                self._derived_digests[key] = made
        return made

    def _made(self, key: Any, compute: Callable[..., Any], args: tuple) -> Any:
        """The fact of ``key``, or the TraceError making it raised; made now, its reads its own (not a page's)."""
        with self._lock:
            if key not in self._derived:
                try:
                    if self.reads is not None:
                        with self.reads.unnoted():
                            self._derived[key] = compute(*args)
                    else:
                        self._derived[key] = compute(*args)
                except TraceError as err:
                    self._derived[key] = err
            return self._derived[key]

    # ------------------------------------------------------------------ ahead of time

    def prefetch(self, needs: Iterable[Need]) -> None:
        """Start what ``needs`` ask for now, in the background: the coverage run, the recordings (in one
        child process) and the formulas (in one KaTeX process), so they run at once on a cold build."""
        needs = list(dict.fromkeys(needs))
        if any(n is COVERAGE for n in needs):
            self.workers.start_coverage()
        requests = [n for n in needs if isinstance(n, Request)]
        formulas = [n for n in needs if isinstance(n, Formula)]
        jobs: list[Callable[[], object]] = []
        if formulas and self.workers.math.available():
            jobs.append(lambda: self.formulas(formulas))
        if requests:
            jobs.append(lambda: self.recordings(requests))
        self.workers.in_background(jobs)
