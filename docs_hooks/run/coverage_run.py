"""The coverage run: the configured tests under coverage.py in a child process of their own, at the lowest
CPU priority, started as soon as a build is made and waited for only by what needs the line map
(``Measurement``); what it measures is ``coverage_map.CoverageMap``. pytest tells coverage.py when each test
starts (``child_main``, the child's own driver), so each test's lines are kept under its name. A run that fails
says which test and where, in the terms of pytest's own report.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import DEFAULT_TEST_TIMEOUT
from docs_hooks.run import children
from docs_hooks.run.coverage_map import (
    CHILD_ENV,
    CallsPerTest,
    CoverageMap,
    MapOf,
    MapsRead,
    carry,
    context_of,
    from_stored,
    line_map,
    map_text,
    node_ids,
    read_map,
    write_map,
)

if TYPE_CHECKING:
    from docs_hooks.resolve.codeindex import Function
    from docs_hooks.run.carried import Carried
    from docs_hooks.run.residue import Texts

DEFAULT_TIMEOUT = DEFAULT_TEST_TIMEOUT  # seconds a test may take unless told (the test_timeout setting)

#: How many lines of the run's output an error shows.
OUTPUT_LINES = 15


def measure(
    project_root: Path,
    source_root: Path,
    pytest_args: list[str],
    file_digests: dict[str, str],
    cache_dir: Path | None,
    timeout: float = DEFAULT_TIMEOUT,
    modules: dict[str, str] | None = None,
) -> CoverageMap:
    """Run the tests under coverage (or read the cached result for this code)."""
    return Measurement(project_root, source_root, pytest_args, file_digests, cache_dir, timeout, modules).result()


class Measurement:
    """A coverage run started now, in the background; ``result()`` waits for it.

    The builder starts it as soon as it is made, so the tests run on another
    core while the pages are indexed, recorded and rendered. ``modules``
    (absolute file -> module name, see ``index_modules``) names the functions of
    the calls seen; without it no call is named.
    """

    def __init__(
        self,
        project_root: Path,
        source_root: Path,
        pytest_args: list[str],
        file_digests: dict[str, str],
        cache_dir: Path | None,
        timeout: float = DEFAULT_TIMEOUT,
        modules: dict[str, str] | None = None,
        functions: Mapping[str, Function] | None = None,
        texts: Texts | None = None,
        maps: MapsRead | None = None,
    ):
        self.project_root = project_root
        self.timeout = timeout
        modules = modules or {}
        self._map: CoverageMap | None = None
        # Where the map goes once measured (see write_map): the cache, the code, what it was measured by.
        self._of = (
            MapOf(cache_dir, file_digests, pytest_args, modules, functions, project_root, texts, maps)
            if cache_dir
            else None
        )
        self._proc: subprocess.Popen | None = None
        self._error: TraceError | None = None
        # The last map but for the tests that ran an edited function: only those run, and the two are merged.
        self._kept: Carried | None = None
        self._source_root, self._modules, self._pytest_args = source_root, modules, pytest_args
        self._functions = functions or {}
        # The map the cache holds for this code, read back and read as a map when first asked for (``result``):
        # a build whose pages are all kept never needs it.
        self._stored: bytes | None = None
        self._reading = threading.Lock()
        if self._of is not None:
            self._stored = self._of.entry(self._of.path)
            if self._stored is not None:
                return
            self._map, self._kept = carry(self._of)
            if self._map is not None:
                return
        self._begin()

    def _begin(self) -> None:
        """Start the run: of the tests that ran an edited function (when the last map carries over but for
        them), else of every test."""
        run_args = self._pytest_args
        if self._kept is not None:
            ids = node_ids(self._kept.stale, self._functions, self._pytest_args)
            if ids is None:
                self._kept = None
            else:
                run_args = ids
        missing = missing_packages()
        if missing:
            self._error = _missing_error(missing, self.project_root, self._pytest_args)
            return
        self._start(run_args)

    def _start(self, args: list[str]) -> None:
        """Start pytest with ``args`` under coverage, in a child process of its own."""
        self.run_args = args  # what pytest is given: the tests to measure
        self._tmp = tempfile.TemporaryDirectory()
        self._lines_file = os.path.join(self._tmp.name, "lines.json")
        self._running_file = os.path.join(self._tmp.name, "running.txt")
        modules_file = os.path.join(self._tmp.name, "modules.json")
        Path(modules_file).write_text(json.dumps(self._modules), encoding="utf-8")
        self._output = open(os.path.join(self._tmp.name, "output.txt"), "w+")  # noqa: SIM115 (the run writes it; stop() closes it)
        self._started = time.monotonic()
        self._proc = children.start(
            # --assert=plain: which lines run does not depend on pytest's assertion rewriting, and
            # rewriting every test module and plugin package again (when bytecode is not cached)
            # would take longer than the tests do.
            [
                sys.executable,
                "-c",
                "from docs_hooks.run.coverage_run import child_main; child_main()",
                str(self._source_root),
                str(self.project_root),
                self._lines_file,
                self._running_file,
                modules_file,
                "-q",
                "-p",
                "no:cacheprovider",
                "--assert=plain",
                "-x",
                *args,
            ],
            cwd=self.project_root,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            env=run_environment(self._source_root, self.project_root),
        )
        _yield_to_the_build(self._proc.pid)
        self._finalizer = weakref.finalize(self, _discard, self._proc, self._output, self._tmp)

    def stop(self) -> None:
        """End the run if it is still going (its result is not needed any more) and remove its files."""
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()

    def done(self) -> bool:
        """Whether ``result()`` would answer now: read from the cache, or the run has ended."""
        proc = self._proc  # None only with a map (or one in the cache) or an error
        done = self._map is not None or self._stored is not None or self._error is not None
        return done or (proc is not None and proc.poll() is not None)

    def result(self) -> CoverageMap:
        """The line map; a TraceError (the same one each time) when the run failed, placed at the
        ``coverage_tests`` setting, since the pages that wait for it are not where the problem is."""
        if self._stored is not None:
            with self._reading:
                if self._stored is not None and self._of is not None:
                    self._map = from_stored(self._of, self._stored)
                    if self._map is None:  # not a line map: measured again, and written whole
                        self._begin()
                    self._stored = None
        if self._map is not None:
            return self._map
        if self._error is not None:  # every later use reports the same failure
            raise self._error
        try:
            code = self._wait()
            if code is None:
                self._error = self._failure(
                    f"did not finish within test_timeout = {self.timeout:g} s, so the run was stopped",
                    "make the test finish sooner, or raise test_timeout",
                )
                raise self._error
            text = None
            if code == 0:
                try:
                    text = Path(self._lines_file).read_text(encoding="utf-8")
                    measured = read_map(text)
                except (OSError, ValueError, UnicodeDecodeError):
                    text = None
            if text is None and self._kept is not None:
                # The tests that ran an edited function failed alone: measure them all, as the project runs them
                # (a test may depend on what the tests before it left), and report what that run says.
                self._finalizer()
                self._kept = None
                self._start(self._pytest_args)
                return self.result()
            if text is None:
                self._error = self._failure(how_it_ended(code), "fix the test")
                raise self._error
        finally:
            self._finalizer()
        if self._kept is not None:
            from docs_hooks.run.carried import merge

            measured = CoverageMap(*merge(self._kept, measured.lines, measured.calls))
            text = map_text(measured)
        if self._of is not None:
            write_map(self._of, text, measured)
        self._map = measured
        return self._map

    def _wait(self) -> int | None:
        """The run's exit code; None when one test ran longer than ``timeout`` seconds, and the run was
        killed with whatever it started.

        Starting Python, coverage.py and pytest and collecting the tests, before
        the first test, may take up to DEFAULT_TIMEOUT (or ``timeout`` when longer):
        on a busy machine that alone can outlast a small limit meant for one test.
        """
        proc = self._proc
        if proc is None:  # nothing was started: a map from the cache, or a package missing
            return 0
        running, since = None, self._started
        while True:
            limit = self.timeout if running is not None else max(self.timeout, DEFAULT_TIMEOUT)
            try:
                return proc.wait(timeout=min(1.0, max(0.05, since + limit - time.monotonic())))
            except subprocess.TimeoutExpired:
                pass
            now_running = self._running()
            if now_running != running:  # the next test has started: its own time begins
                running, since = now_running, time.monotonic()
            elif time.monotonic() - since > limit:
                children.kill_group(proc)
                return None

    def _running(self) -> str | None:
        """``"<count> <node id>"`` of the test running now (the count tells a test run twice apart)."""
        try:
            return Path(self._running_file).read_text(encoding="utf-8")
        except OSError:
            return None

    def _failure(self, how: str, todo: str) -> TraceError:
        """The build's one error for the run (see ``run_failure``), from what it printed."""
        self._output.seek(0)
        return run_failure(self._output.read().strip().splitlines(), self._running(), how, todo)


def run_environment(source_root: Path, project_root: Path) -> dict[str, str]:
    """The coverage run's environment: this process's, with the import path the code index names modules by."""
    env = dict(os.environ)
    # Modules import as the code index names them: from the source root, tests from the project root.
    # This package comes last, for the run's own driver (child_main).
    env[CHILD_ENV] = "1"  # a test run's own line-map plugin stays off in here: this run measures already
    env["PYTHONPATH"] = os.pathsep.join(
        [
            str(source_root),
            str(project_root),
            env.get("PYTHONPATH", ""),
            str(Path(__file__).resolve().parents[2]),
        ]
    )
    return env


def how_it_ended(code: int) -> str:
    """How a run that wrote no line map ended, by its exit code."""
    if code < 0:
        return f"was killed by signal {-code}"
    if code == 1:
        return "failed"
    if code == 0:  # pytest returns 0 after writing the map: the process was ended (os._exit) first
        return "ended the run (exit code 0) before the line map was written (os._exit, say)"
    return f"ended with exit code {code}"


def run_failure(output: list[str], running: str | None, how: str, todo: str) -> TraceError:
    """One error for the whole build: which test (what pytest reported, else the test that was running),
    what it raised, and pytest's report of it (else the last lines of the run's output).

    ``output`` is what the run printed, line by line; ``running`` names the test running when it ended (see
    ``Measurement._running``): ``"<count> <node id>"``; ``how`` is how the run ended, ``todo`` what to do. An
    object's address in what pytest printed (``<Linear object at 0x7f3a...>``) differs from run to run: it is
    written ``at 0x...``, so two builds of the same failing run show the same page.
    """
    output = [_ADDRESS.sub(" at 0x...>", line) for line in output]
    failed = [_reported_test(line) for line in output if line.startswith(_SUMMARY_WORDS)]
    tests = ", ".join(dict.fromkeys(failed)) or (running or " ").split(" ", 1)[1]
    who = f"the test {tests}" if tests else "the run of pytest"
    report = _first_report(output)
    heading = _REPORT_HEADING.match(report[0]) if report else None
    if heading is not None and heading.group("title").startswith("ERROR collecting "):
        how = "could not be collected"  # pytest ends that with exit code 1 or 2, as it goes
    raised = next((line[1:].strip() for line in report if line.startswith("E ")), "")
    places = [m.group(1) for m in map(_PROJECT_PLACE.match, report) if m]  # the project's frames, in order
    if raised and places:
        raised = f"{places[-1]}: {raised}"
    if len(report) > OUTPUT_LINES:  # its heading, then its end, where pytest puts what was raised
        report = [report[0], "...", *report[-(OUTPUT_LINES - 1) :]]
    tail = "\n".join(output[-OUTPUT_LINES:])
    return TraceError(
        f"coverage_tests: while measuring which test runs which line, {who} {how}"
        + (f": {raised}" if raised else "")
        + f"; {todo} (or leave it out of coverage_tests in [tool.docs_hooks]). "
        + (
            "pytest reported:\n" + "\n".join(report)
            if report
            else f"Last lines of its output:\n{tail}"
            if tail
            else "It printed nothing."
        ),
        "pyproject.toml",
    )


#: What the coverage run imports: coverage.py, which measures, and pytest, which runs the tests.
NEEDED = {"coverage": "coverage", "pytest": "pytest"}  # module -> the package pip installs it with


def missing_packages() -> list[str]:
    """The packages the coverage run needs that this Python (the run's) cannot import."""
    import importlib.util

    return [package for module, package in NEEDED.items() if importlib.util.find_spec(module) is None]


def _missing_error(missing: list[str], project_root: Path, pytest_args: list[str]) -> TraceError:
    """The build's one error for a package the coverage run needs: at the setting's line, or, for the default,
    at pyproject.toml, saying what the default measures."""
    line = setting_line(project_root / "pyproject.toml", "coverage_tests")
    names = " and ".join(f"the {p} package" for p in missing)
    folder = "the project's root folder" if pytest_args == ["."] else " ".join(a.rstrip("/") + "/" for a in pytest_args)
    where = "" if line else f" (by default, the tests in {folder})"
    return TraceError(
        f"coverage_tests{where} needs {names} to measure which test runs which line, and {sys.executable} cannot "
        f"import {'them' if len(missing) > 1 else 'it'}: pip install {' '.join(missing)}; or set coverage_tests = [] "
        "in [tool.docs_hooks] to build without line coverage",
        "pyproject.toml",
        line,
    )


def setting_line(pyproject: Path, key: str) -> int | None:
    """The line of ``key = ...`` in the ``[tool.docs_hooks]`` table of ``pyproject``; None when it is not there."""
    try:
        lines = pyproject.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    table = None
    for number, text in enumerate(lines, 1):
        stripped = text.strip()
        if stripped.startswith("["):
            table = stripped.strip("[]").strip()
        elif table == "tool.docs_hooks" and re.match(rf"{re.escape(key)}\s*=", stripped):
            return number
    return None


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")  # how Python's default repr ends: <layers.Linear object at 0x7f...>

_SUMMARY_WORDS = ("FAILED ", "ERROR ")  # how pytest's short summary starts the line of each test that failed

_REPORT_HEADING = re.compile(r"^_{3,} (?P<title>.+) _{3,}$")  # the heading of one test's report: ___ test_x ___

# A frame of the report in the project's files, which pytest names from the project root (others absolutely):
# ``tests/test_x.py:3: in <module>`` above what an import raised, ``tests/test_x.py:3: AssertionError`` below it.
_PROJECT_PLACE = re.compile(r"^([^/\s][^\s:]*\.py:\d+): ")


def _reported_test(line: str) -> str:
    """The test a summary line names: ``FAILED tests/t.py::test_x - AssertionError`` names tests/t.py::test_x."""
    word = next(w for w in _SUMMARY_WORDS if line.startswith(w))
    return line[len(word) :].split(" - ")[0]


def _first_report(output: list[str]) -> list[str]:
    """pytest's report of the first test that failed (its part of FAILURES or ERRORS, heading first); [] when
    the output has none (the run was stopped, say)."""
    start = next((i for i, line in enumerate(output) if _REPORT_HEADING.match(line)), None)
    if start is None:
        return []
    ends = (i for i in range(start + 1, len(output)) if _REPORT_HEADING.match(output[i]) or output[i].startswith("="))
    return output[start : next(ends, len(output))]


#: The coverage run's niceness: the lowest priority, so that a serve rebuilding after each save leaves the
#: author's machine responsive. It changes no build's time here: the pages with an entry wait for the run
#: (who calls what comes from it), and nothing else competes with it then (bench/README.md, "code edit").
COVERAGE_NICENESS = 19


def _yield_to_the_build(pid: int) -> None:
    """Give the coverage run the lowest CPU priority (where the system has priorities)."""
    setpriority = getattr(os, "setpriority", None)  # not on Windows: the run then keeps its priority
    if setpriority is None:
        return
    try:
        setpriority(os.PRIO_PROCESS, pid, COVERAGE_NICENESS)
    except ProcessLookupError:
        pass  # it has ended already (its result, or its failure, is read as usual)


def _discard(proc: subprocess.Popen, output, tmp: tempfile.TemporaryDirectory) -> None:
    """Stop a run nobody waited for (with whatever it started), and remove its files."""
    children.kill_group(proc)
    output.close()
    tmp.cleanup()


def child_main() -> None:  # pragma: no cover - runs in the coverage run's own process
    """The coverage run: pytest under coverage.py, each test's lines measured under the test's name.

    Arguments: the source root, the project root, the JSON file to write
    (see ``line_map``), the file that names the test running now (for a test
    that ends the process), the JSON file of the module map (absolute file ->
    module name, to name the calls seen), then pytest's arguments.
    pytest switches coverage.py's context as each test's call starts and ends,
    to the test's name as the code index gives it (module.function, or
    module.Class.method). coverage.py's own ``test_function`` contexts guess the
    test from each new frame's name instead: that check on every call costs a
    good part of the run, and it takes any function named ``test*`` for a test
    (Hypothesis runs a test through a method named ``test_function``, so every
    line such a test ran was counted for that method). The exit code is pytest's.
    """
    children.watch_parent()
    source_root, project_root, out, running, modules_file, *pytest_args = sys.argv[1:]
    import coverage
    import pytest

    from docs_hooks.base.settings import ModuleNames
    from docs_hooks.run.fromtext import compile_from_text

    compile_from_text([source_root, project_root])  # the tests measure the code as it is now (see fromtext)
    cov = coverage.Coverage(data_file=None, config_file=False, source=[source_root])
    names = ModuleNames(Path(project_root))
    calls = CallsPerTest(Path(project_root))

    class TestContexts:
        started = 0

        def pytest_runtest_logstart(self, nodeid, location):
            self.started += 1
            Path(running).write_text(f"{self.started} {nodeid}", encoding="utf-8")

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_call(self, item):
            cov.switch_context(context_of(item, names))
            calls.start()
            try:
                yield
            finally:
                calls.stop(item)
                cov.switch_context("")

    cov.start()
    try:
        code = pytest.main(pytest_args, plugins=[TestContexts()])
    finally:
        cov.stop()
    if code == 0:
        modules = json.loads(Path(modules_file).read_text(encoding="utf-8"))
        Path(out).write_text(line_map(cov, Path(project_root), calls.named(modules)), encoding="utf-8")
    sys.exit(int(code))
