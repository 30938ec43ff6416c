"""The run stage's workers for one build: the recorder, the coverage run, KaTeX, and the background
jobs that feed them early.

Each worker is a child process with a time limit (see ``children``), started on
first use (the coverage run by the factory, ``core.site.make_build``), and ended by
``close``: when the build is over, or when ``mkdocs serve`` replaces the build
after a code change, so no worker outlives the build that made it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.resolve.callgraph import RunEvidence
from docs_hooks.resolve.codeindex import CodeIndex
from docs_hooks.run.math import MathRenderer
from docs_hooks.run.residue import Texts

if TYPE_CHECKING:
    from docs_hooks.run.coverage_map import MapsRead
    from docs_hooks.run.coverage_run import Measurement
    from docs_hooks.run.record import Recorder
    from docs_hooks.run.record_store import ReadBack


def recorder_path(settings: Settings) -> list:
    """Where recorded code imports from: the source root, the project root, the folders pytest imports the
    test files from (those in no package, as pytest's default import mode puts them on ``sys.path``), the
    model run helper's folder."""
    from docs_hooks.base.settings import ModuleNames, is_test_file, walk_files

    path = [settings.source_root, settings.project_root]
    tests = [
        f for f in walk_files(settings.tests_root, settings.project_root, settings.exclude, ".py") if is_test_file(f)
    ]
    path += [folder for folder in ModuleNames(settings.project_root).test_bases(tests) if folder not in path]
    if settings.model_run is not None:
        path.append(settings.model_run.parent)
    return path


class Workers:
    def __init__(
        self,
        settings: Settings,
        index: CodeIndex,
        math: MathRenderer | None = None,
        texts: Texts | None = None,
        read_back: ReadBack | None = None,
        maps: MapsRead | None = None,
    ):
        self.settings = settings
        self.index = index
        self.read_back = read_back  # the recordings read back, a serve session's (see record_store.ReadBack)
        self.maps = maps  # the line maps read before, a serve session's (see coverage_map.MapsRead)
        # The files the runs' dependencies read: a serve session's, kept across its builds, or this build's own.
        self._own_texts = texts is None
        self.texts = texts if texts is not None else Texts()
        self.texts.keep_in(settings.cache_dir)
        self.math = math or MathRenderer(settings.project_root, settings.cache_dir, timeout=settings.test_timeout)
        self._recorder: Recorder | None = None
        self._coverage_run: Measurement | None = None  # started by start_coverage()
        self._threads: list[threading.Thread] = []  # every job's thread that may still run
        self._threads_lock = threading.Lock()  # jobs start jobs, and a job may wait (Build.warm_up)
        self._errors: list[BaseException] = []

    @property
    def recorder(self):
        """The one recorder of this build: runs tests and helpers, caches what they saw."""
        if self._recorder is None:
            self.make_recorder()
        return self._recorder

    def make_recorder(self) -> None:
        """The build's recorder, now (its child process starts on its first miss)."""
        from docs_hooks.run.record import Recorder

        s = self.settings
        modules = {str(f.file): f.module for f in self.index.functions.values()}
        self._recorder = Recorder(
            s.project_root,
            recorder_path(s),
            modules,
            self.index.file_digests,
            s.cache_dir,
            s.test_timeout,
            self.index.functions,
            self.texts,
            busy=self._cores_taken,
            read_back=self.read_back,
        )

    def _cores_taken(self) -> int:
        """How many cores this build's runs other than the recorder take now: the coverage run's, while it runs."""
        run = self._coverage_run
        return 1 if run is not None and not run.done() else 0

    def start_coverage(self) -> None:
        """Start measuring which test runs which line, in the background (a no-op when cached or not set up)."""
        s = self.settings
        if s.coverage_tests and self._coverage_run is None:
            from docs_hooks.run.coverage_map import index_modules
            from docs_hooks.run.coverage_run import Measurement

            self._coverage_run = Measurement(
                s.project_root,
                s.source_root,
                s.coverage_tests,
                self.index.file_digests,
                s.cache_dir,
                s.test_timeout,
                index_modules(self.index),
                self.index.functions,
                self.texts,
                self.maps,
            )

    @property
    def coverage(self):
        """Which test ran which line (coverage.py), measured once per change of the code; None if not set up."""
        self.start_coverage()
        return self._coverage_run.result() if self._coverage_run is not None else None

    def evidence(self) -> RunEvidence:
        """What the runs of this build saw, for the call graph (``CallGraph(index, evidence)``): the calls seen
        while the tests ran under coverage (waiting for that run, when it is set up; nothing of it when it
        failed) and while every recording made or read so far ran (the model run, the worked examples), and the
        lines the tests executed.

        A recording counts for its test when it recorded a test of the index; the model run is no test.
        """
        from docs_hooks.run.observed import observed_calls

        calls: list = []
        lines: Mapping = {}
        if self.settings.coverage_tests:
            try:
                coverage = self.coverage
            except TraceError:  # the run failed: the pages say so where they show what it measures
                coverage = None
            if coverage is not None:
                measured = coverage.evidence()
                calls, lines = list(measured.calls), measured.lines
        for rec in self._recorder.recordings() if self._recorder is not None else ():
            fn = self.index.functions.get(rec.target) if rec.target is not None else None
            test = rec.target if fn is not None and self.index.runs_as_test(fn) else None
            calls += observed_calls(rec.seen, test)
        return RunEvidence(tuple(calls), lines)

    def tests_running(self, resolved_list) -> list[str]:
        """Tests that executed any of these statements, by line coverage (indexed tests only)."""
        if self.coverage is None:
            return []
        found: set[str] = set()
        for r in resolved_list:
            found.update(self.coverage.tests_running(r.function.repo_path, r.start, r.end))
        return sorted(t for t in found if t in self.index.functions and self.index.functions[t].is_test)

    def in_background(self, jobs: list[Callable[[], object]]) -> None:
        """Run each job in a thread of its own; they feed the workers ahead of the pages that need them
        (bench/README.md, "prefetch").

        A TraceError is dropped (the page that meets the same problem reports it
        where it is written); anything else is a bug, raised again in the build's
        thread by ``raise_errors``.
        """

        def run(job):
            try:
                job()
            except TraceError:
                pass
            except BaseException as exc:
                self._errors.append(exc)

        started = [threading.Thread(target=run, args=(job,), daemon=True) for job in jobs]
        for thread in started:
            thread.start()
        with self._threads_lock:
            self._threads += started

    def _join(self) -> None:
        """Join every job's thread but the caller's, until none is left (a job may start more of them: the
        recordings that follow from a recording)."""
        me = threading.current_thread()
        while True:
            with self._threads_lock:
                self._threads = [t for t in self._threads if t.is_alive()]
                running = [t for t in self._threads if t is not me]
            if not running:
                return
            for thread in running:
                thread.join()

    def raise_errors(self) -> None:
        if self._errors:
            raise self._errors.pop(0)

    def wait(self) -> None:
        """Wait until the background jobs are done; raise what went wrong in them that was not a TraceError.

        What was recorded is then in the recorder's store, for the next build. A job that waits (the call
        graph, made in the background) waits for the others.
        """
        self._join()
        if self._recorder is not None:
            self._recorder.flush()
        self.raise_errors()

    def close(self) -> None:
        """End every process this build started (the recorder, KaTeX, the coverage run) and drop their state."""
        self._join()
        if self._recorder is not None:
            self._recorder.close()
            self._recorder = None
        self.math.close()
        if self._coverage_run is not None:
            self._coverage_run.stop()
            self._coverage_run = None
        if self.maps is not None:
            self.maps.flush_later()  # a line map carried over, if the warm-up did not write it (Build.write_later)
        if self._own_texts:
            self.texts.close()
