"""A pytest plugin: the project's own test run writes the line map the build reads.

Which test runs which line (``coverage_map``) comes from running the tests named
by ``coverage_tests`` under coverage. Without this plugin the build runs them
itself, in a child process. With it, the project's test command does it on the
way: turn it on with ``-p docs_hooks.pytest_linemap`` (in ``addopts`` of
``[tool.pytest.ini_options]``). As soon as every test ``coverage_tests`` selects
has passed, the run writes the map to the build's cache, under the key the
build looks for (a digest of the code and the tests): a build after it, or
later in the same run, finds it and runs no test. A run in which one of them
failed, or that selects only some of them (``-k``, a single file), writes
nothing, and the build measures for itself.

Coverage is on only while a selected test's own call runs, as in the build's
run, so the rest of the suite runs at full speed; so is the observer of the calls
each test makes (``coverage_map.CallsPerTest``), which the map holds too.

Under pytest-xdist (``-n``), the map needs every selected test in one worker: with ``--dist loadfile``,
``loadscope`` or ``loadgroup`` the plugin schedules them as one unit of work (``Together``), the worker
that runs it writes the map, and a run says why none was written when its ``--dist`` spread them.

A run that selects all of them also makes what the pages need of the run stage
(the recordings of the worked examples' tests and of the shapes' and the model's
runs, the formulas, the specification, the cited files highlighted), in a process of its own at low priority
beside the tests (``python -m docs_hooks record``), and says at its end what it
made: the build after it reads them back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from docs_hooks.run.coverage_map import CHILD_ENV

GROUP = "docs_hooks: coverage_tests"  # the unit of work of pytest-xdist the selected tests make (Together)
WRITTEN = "docs_hooks_linemap"  # what a pytest-xdist worker tells the controller (workeroutput): written or not


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--no-docs-record",
        action="store_true",
        help="docs_hooks: do not make the recordings, formulas, specification and highlighted files the pages need "
        "beside the tests (the next build makes them)",
    )


def pytest_configure(config) -> None:
    if os.environ.get(CHILD_ENV):
        return
    from docs_hooks.base.settings import load_settings

    try:
        settings = load_settings(Path(config.rootpath))
    except Exception as exc:  # noqa: BLE001 - the build reports a settings problem itself, with its file
        config.issue_config_time_warning(pytest.PytestConfigWarning(f"docs_hooks line map: off ({exc})"), 2)
        return
    if not settings.coverage_tests or settings.cache_dir is None:
        return
    selection = Selection.of(settings.coverage_tests, settings.project_root)
    if selection is not None:
        config.pluginmanager.register(LineMap(settings, selection, XdistPlace.of(config)), "docs_hooks_linemap")


class XdistPlace:
    """Where this process stands in a pytest-xdist run: alone (no xdist), its controller, or one of its workers."""

    def __init__(self, role: str, dist: str):
        self.role, self.dist = role, dist  # role: "alone", "controller" or "worker"

    @classmethod
    def of(cls, config) -> XdistPlace:
        if hasattr(config, "workerinput"):
            return cls("worker", getattr(config.option, "dist", "no"))
        dist = getattr(config.option, "dist", "no")
        return cls("alone" if dist == "no" else "controller", dist)


class Selection:
    """The tests ``coverage_tests`` names, when it names them by paths (and ``--ignore=``) only."""

    def __init__(self, paths: list[Path], ignored: list[Path]):
        self.paths, self.ignored = paths, ignored

    @classmethod
    def of(cls, args: list[str], root: Path) -> Selection | None:
        paths, ignored = [], []
        for arg in args:
            if arg.startswith("--ignore="):
                ignored.append((root / arg.split("=", 1)[1]).resolve())
            elif arg.startswith("-"):
                return None  # selected some other way (-k, -m, ...): the build runs its own
            else:
                paths.append((root / arg.split("::", 1)[0]).resolve())
        return cls(paths, ignored)

    def holds(self, path: Path) -> bool:
        path = path.resolve()

        def under(p: Path, folder: Path) -> bool:
            return p == folder or folder in p.parents

        return any(under(path, p) for p in self.paths) and not any(under(path, i) for i in self.ignored)

    def covered_by(self, config) -> bool:
        """Whether this test run runs every test of the selection: its paths include them, nothing filtered."""
        opt = config.option
        if (
            getattr(opt, "keyword", "")
            or getattr(opt, "markexpr", "")
            or getattr(opt, "deselect", None)
            or getattr(opt, "lf", False)
        ):
            return False
        roots = [(Path(config.invocation_params.dir) / a.split("::", 1)[0]).resolve() for a in config.args]
        return all(any(p == r or r in p.parents for r in roots) for p in self.paths) and not any(
            "::" in a for a in config.args
        )


class LineMap:
    """Measures the selected tests' calls; writes the map once the last of them has passed."""

    def __init__(self, settings, selection: Selection, workers: XdistPlace):
        import coverage

        from docs_hooks.base.settings import ModuleNames
        from docs_hooks.run.coverage_map import CallsPerTest

        self.settings, self.selection = settings, selection
        self.names = ModuleNames(settings.project_root)  # tests named as the code index names them
        self.cov = coverage.Coverage(data_file=None, config_file=False, source=[str(settings.source_root)])
        self.calls = CallsPerTest(settings.project_root)
        self.selected: set[str] = set()  # node ids of the collected tests the selection holds
        self.done: set[str] = set()
        self.failed = False
        self.written = False
        self.record: RecordRun | None = None
        self.workers = workers
        self.told: list[dict] = []  # the controller of an xdist run: what each worker said of the map

    def start_record(self, config) -> None:
        opt = config.option
        asked = not getattr(opt, "collectonly", False) and not getattr(opt, "no_docs_record", False)
        if asked and any(True for _ in self.settings.pages()):
            self.record = RecordRun(self.settings.project_root)

    def pytest_sessionstart(self, session) -> None:
        # An xdist controller collects no test; it makes the recordings once, for all its workers.
        if self.workers.role == "controller" and self.selection.covered_by(session.config):
            self.start_record(session.config)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config, log):
        if not self.selection.covered_by(config):
            return None
        from xdist.scheduler import LoadFileScheduling, LoadGroupScheduling, LoadScopeScheduling

        schedulers = {
            "loadfile": LoadFileScheduling,
            "loadscope": LoadScopeScheduling,
            "loadgroup": LoadGroupScheduling,
        }
        base = schedulers.get(config.getvalue("dist"))
        return None if base is None else together(base, self.selection, Path(config.rootpath))(config, log)

    def pytest_collection_finish(self, session) -> None:
        if self.selection.covered_by(session.config):
            self.selected = {item.nodeid for item in session.items if self.selection.holds(Path(str(item.path)))}
            if self.selected and self.workers.role == "alone":
                self.start_record(session.config)

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        if self.record is not None:
            self.record.finish(stop=exitstatus == pytest.ExitCode.INTERRUPTED)
        if self.workers.role == "worker":
            workeroutput = getattr(session.config, "workeroutput", {})
            workeroutput[WRITTEN] = {"selected": len(self.selected), "ran": len(self.done), "written": self.written}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        told = getattr(node, "workeroutput", {}).get(WRITTEN)
        if told is not None:
            self.told.append(told)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.record is not None:
            for line in self.record.report():
                terminalreporter.write_line(line)
        for line in self.split_report():
            terminalreporter.write_line(line)

    def split_report(self) -> list[str]:
        """An xdist run whose selected tests all passed but no worker ran them all: why the map is not written."""
        if not self.told or any(t["written"] for t in self.told):
            return []
        selected = max(t["selected"] for t in self.told)
        ran = [t["ran"] for t in self.told if t["ran"]]
        if not selected or len(ran) < 2 or sum(ran) < selected:
            return []  # nothing selected, one worker ran them (and one failed), or some did not run
        return [
            f"docs_hooks line map: not written: the {selected} test(s) coverage_tests selects ran in {len(ran)} "
            f"workers (--dist {self.workers.dist}); with --dist loadfile, loadscope or loadgroup they run in one "
            f"worker, which writes it; the next build runs them again under coverage"
        ]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        if item.nodeid not in self.selected:
            yield
            return
        from docs_hooks.run.coverage_map import context_of

        self.cov.start()
        self.cov.switch_context(context_of(item, self.names))
        self.calls.start()
        try:
            yield
        finally:
            self.calls.stop(item)
            self.cov.switch_context("")
            self.cov.stop()

    def pytest_runtest_logreport(self, report) -> None:
        if report.nodeid not in self.selected:
            return
        if report.failed:
            self.failed = True
        elif report.when == "call" or report.skipped:
            self.done.add(report.nodeid)
        if not self.failed and not self.written and self.done == self.selected:
            self.write()  # now, not at the end: what runs after (a site build, say) finds it

    def write(self) -> None:
        from docs_hooks.core.site import index_for
        from docs_hooks.run.coverage_map import MapOf, index_modules, line_map, write_map

        self.written = True
        index = index_for(self.settings)
        modules = index_modules(index)
        s = self.settings
        text = line_map(self.cov, s.project_root, self.calls.named(modules))
        write_map(
            MapOf(s.cache_dir, index.file_digests, s.coverage_tests, modules, index.functions, s.project_root), text
        )


def together(base, selection: Selection, root: Path):
    """pytest-xdist's scheduler ``base`` (one that hands out units of work: a file, a class, a group), but for the
    tests ``selection`` holds, which make one unit, ``GROUP``: the worker that runs them all writes the map."""
    held: dict[str, bool] = {}  # file of a node id -> whether the selection holds it

    class Together(base):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            if file not in held:
                held[file] = selection.holds(root / file)
            return GROUP if held[file] else super()._split_scope(nodeid)

    return Together


class RecordRun:
    """``python -m docs_hooks record`` in a child process at low priority, beside the tests: what the pages need
    of the run stage, made for the next build. It ends with the test run however that ends (``run.children``)."""

    def __init__(self, root: Path):
        from docs_hooks.run import children

        self.output = tempfile.TemporaryFile()  # noqa: SIM115 - read and closed by report(), after the run
        self.proc = children.start(
            [sys.executable, "-m", "docs_hooks", "--root", str(root), "record"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            preexec_fn=(lambda: os.nice(10)) if hasattr(os, "nice") else None,  # the tests first
        )
        self.stopped = False
        self.waited = 0.0  # seconds the test run waited for it after its last test

    def finish(self, stop: bool = False) -> None:
        """Wait for it (it may still be running in a short test run), or end it (an interrupted run)."""
        from docs_hooks.run import children

        self.stopped = stop and self.proc.poll() is None
        if self.stopped:
            children.kill_group(self.proc)
        start = time.monotonic()
        self.proc.wait()
        self.waited = time.monotonic() - start
        children.release(self.proc)

    def report(self) -> list[str]:
        """What to say at the end of the test run: what it made, and each recording that failed."""
        if self.stopped:
            return ["docs_hooks record: stopped with the test run; the next build makes the recordings"]
        self.output.seek(0)
        lines = self.output.read().decode("utf-8", "replace").splitlines()
        self.output.close()
        if self.waited >= 0.1:
            lines.append(
                f"docs_hooks record: the tests were done {self.waited:.1f} s before it (--no-docs-record leaves it "
                "to the next build)"
            )
        if self.proc.returncode in (0, 1):
            return lines
        return [f"docs_hooks record: ended with exit {self.proc.returncode}; the next build makes the recordings:"] + [
            f"  {line}" for line in lines[-20:]
        ]
