"""Which tests actually run each line of the source: line coverage per test.

The static call graph says which tests *call* a function; this says which
tests *executed* a given line, measured by coverage.py while pytest runs the
configured tests, each test's lines under the test's name (pytest tells
coverage.py when each test starts: see child_main). The same run also notes
which function called which while each test ran (an ``observed.CallObserver``
as the profile function, beside coverage.py's trace function), for the call
graph. The run happens in a child process, once per change of the code: its
result is cached under a digest of every source and test file and of the module
names the calls are named with.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from docs_hooks.base.cachedir import read_entry, write_entry
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import DEFAULT_TEST_TIMEOUT
from docs_hooks.resolve.callgraph import ObservedCall, RunEvidence
from docs_hooks.run import children
from docs_hooks.run.observed import observed_calls

if TYPE_CHECKING:
    from docs_hooks.resolve.codeindex import Function
    from docs_hooks.run.carried import Carried
    from docs_hooks.run.dependencies import Dependencies
    from docs_hooks.run.residue import Texts

DEFAULT_TIMEOUT = DEFAULT_TEST_TIMEOUT  # seconds a test may take unless told (the test_timeout setting)

#: How many lines of the run's output an error shows.
OUTPUT_LINES = 15


class CoverageMap:
    """line -> tests, per source file (repo paths), and the calls each test was seen making, from one coverage
    run."""

    def __init__(self, lines: dict[str, dict[int, list[str]]], calls: dict[str, list[list]] | None = None):
        self.lines = lines
        self.calls = calls or {}  # test -> [caller, callee, line, via] (see observed.calls_seen)

    def observed(self) -> list[ObservedCall]:
        """The calls the tests were seen making, each under its test."""
        return [call for test, seen in sorted(self.calls.items()) for call in observed_calls(seen, test)]

    def evidence(self) -> RunEvidence:
        """What the call graph reads of this run: the calls seen, and the lines the tests executed."""
        return RunEvidence(tuple(self.observed()), {path: by_line.keys() for path, by_line in self.lines.items()})

    def tests_running(self, repo_path: str, start: int, end: int) -> list[str]:
        found: set[str] = set()
        by_line = self.lines.get(repo_path, {})
        for n in range(start, end + 1):
            found.update(by_line.get(n, ()))
        return sorted(found)


def _key(file_digests: dict[str, str], args: list[str], modules: dict[str, str]) -> str:
    h = hashlib.sha256(json.dumps([sorted(file_digests.items()), args, sorted(modules.items())]).encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:24]


#: Set in the build's own coverage run, whose driver measures already: a test run's line-map plugin
#: (docs_hooks.pytest_linemap) stays off in there.
CHILD_ENV = "DOCS_HOOKS_COVERAGE_RUN"


def cached_map_path(
    cache_dir: Path, file_digests: dict[str, str], pytest_args: list[str], modules: dict[str, str]
) -> Path:
    """Where the line map of this code, measured by these tests, is cached (a test run may write it there too:
    see docs_hooks.pytest_linemap). ``modules`` (absolute file -> module) names the functions of the calls seen."""
    return Path(cache_dir) / "coverage" / f"{_key(file_digests, pytest_args, modules)}.json"


@dataclass(eq=False)
class MapOf:
    """What a line map is cached under (the cache folder, every source and test file's digest, pytest's
    arguments, the module map that names the calls seen: see ``cached_map_path``) and, to carry the last map over
    to this code (see ``carried``), the index's functions, the project's root and the files as parsed."""

    cache_dir: Path
    file_digests: dict[str, str]
    pytest_args: list[str]
    modules: dict[str, str]
    functions: Mapping[str, Function] | None = None
    project_root: Path | None = None
    texts: Texts | None = None

    @property
    def path(self) -> Path:
        return cached_map_path(self.cache_dir, self.file_digests, self.pytest_args, self.modules)

    def dependencies(self) -> Dependencies | None:
        """The code's dependencies as a line map reads them; None without the index's functions."""
        if self.functions is None or self.project_root is None:
            return None
        from docs_hooks.run.dependencies import Dependencies  # not in the coverage run's own process

        return Dependencies(self.project_root, self.functions, self.file_digests, texts=self.texts)


def read_cached_map(of: MapOf) -> CoverageMap | None:
    """The line map of this code measured by these tests, when the cache holds it; runs nothing. Given the
    index's functions, a map measured on code that changed only where no test ran is carried over (see
    ``carried``) and cached under this code."""
    return _read_or_carry(of)[0]


def _read_or_carry(of: MapOf) -> tuple[CoverageMap | None, Carried | None]:
    """The map of this code from the cache, measured on it or carried over whole; else, when the last map
    carries over but for the tests that ran an edited function, that part of it (see ``carried.carry``)."""
    path = of.path
    stored = read_entry(path)
    if stored is None:
        found = _carried_map(of)
        if found is None or found.stale:
            return None, found
        whole = CoverageMap(found.lines, found.calls)
        write_entry(path, _map_text(whole).encode("utf-8"))
        return whole, None
    try:
        measured = _read_map(stored.decode("utf-8"))
    except ValueError:  # not a line map (UnicodeDecodeError is one too): the build measures it again
        return None, None
    if _read_last(path.parent) is None:  # lost or damaged: written again
        _write_last(of, measured)
    return measured, None


def write_map(of: MapOf, text: str) -> None:
    """Cache a measured line map (``line_map``'s text) under the code it was measured on; given the index's
    functions, also as the last map measured, with what it depended on, for a later build to carry over."""
    write_entry(of.path, text.encode("utf-8"))
    _write_last(of, _read_map(text))


def _write_last(of: MapOf, measured: CoverageMap) -> None:
    deps = of.dependencies()
    if deps is None:
        return
    from docs_hooks.run import carried  # not in the coverage run's own process, which imports this module

    last = {
        "map": of.path.name,
        "args": of.pytest_args,
        "modules": of.modules,
        "depends": carried.depends(measured.lines, measured.calls, deps),
    }
    write_entry(of.path.parent / LAST_MAP, json.dumps(last, sort_keys=True).encode("utf-8"))


#: The entry of the cache's coverage folder that names the last map measured and what it depended on.
LAST_MAP = "last.json"


def _carried_map(of: MapOf) -> Carried | None:
    deps = of.dependencies()
    if deps is None or of.project_root is None:
        return None
    from docs_hooks.run import carried

    folder = Path(of.cache_dir) / "coverage"
    last = _read_last(folder)
    if last is None or last["args"] != of.pytest_args:
        return None
    if not _names_kept(last, of.modules, of.file_digests, of.project_root):
        return None
    measured = read_entry(folder / last["map"])
    if measured is None:
        return None
    try:
        old = _read_map(measured.decode("utf-8"))
    except ValueError:
        return None
    return carried.carry(last["depends"], old.lines, old.calls, deps)


#: Past this many tests to measure again, pytest is given the configured arguments (every test) rather than one
#: node id a test: a command line's length is bounded.
MAX_NODE_IDS = 2000


def _node_ids(tests: list[str], functions: Mapping[str, Function], pytest_args: list[str]) -> list[str] | None:
    """The pytest node ids that run ``tests`` (named as the index names them), every parametrization of each;
    None when one is not a test of the index, or when pytest's arguments select otherwise than by paths (a
    ``-k``, a plugin's option), which a run of node ids would not keep."""
    if len(tests) > MAX_NODE_IDS or any(a.startswith("-") and not a.startswith("--ignore=") for a in pytest_args):
        return None
    ids = []
    for name in tests:
        fn = functions.get(name)
        if fn is None or not fn.is_test or not name.startswith(fn.module + "."):
            return None
        ids.append("::".join([fn.repo_path, *name[len(fn.module) + 1 :].split(".")]))
    return list(dict.fromkeys(ids))


def _names_kept(last: dict, modules: dict[str, str], file_digests: dict[str, str], project_root: Path) -> bool:
    """Whether every module the last map's calls could name is named as before: a module may be new to the map
    only where its file changed (a module that gains its first function), since no call of the last map named
    one of its functions."""
    old = last["modules"]
    if any(modules.get(file) != name for file, name in old.items()):
        return False
    changed = {f for f, digest in file_digests.items() if last["depends"]["files"].get(f) != digest}
    root = Path(project_root)
    return all(Path(os.path.relpath(file, root)).as_posix() in changed for file in modules.keys() - old.keys())


def _read_last(folder: Path) -> dict | None:
    """The record of the last map measured (see ``_write_last``); None when there is none or it is not one
    (a damaged record is removed: the next build writes it again)."""
    raw = read_entry(folder / LAST_MAP)
    if raw is None:
        return None
    try:
        last = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        last = None
    if not _a_last_record(last):
        (folder / LAST_MAP).unlink(missing_ok=True)
        return None
    return last


def _a_last_record(last) -> bool:
    def strings(d, values=(str,)) -> bool:
        return type(d) is dict and all(type(k) is str and type(v) in values for k, v in d.items())

    if type(last) is not dict or type(last.get("map")) is not str or "/" in last["map"]:
        return False
    if type(last.get("args")) is not list or not strings(last.get("modules")):
        return False
    deps = last.get("depends")
    if type(deps) is not dict or not strings(deps.get("files")) or not strings(deps.get("modules"), (str, type(None))):
        return False
    functions = deps.get("functions")
    return type(functions) is dict and all(
        type(v) is list and len(v) == 2 and type(v[0]) is str and type(v[1]) is int for v in functions.values()
    )


def _map_text(found: CoverageMap) -> str:
    return json.dumps({"lines": found.lines, "calls": found.calls}, sort_keys=True)


def index_modules(index) -> dict[str, str]:
    """The module map of a code index: absolute file -> module name, as the index names its functions."""
    return {str(f.file): f.module for f in index.functions.values()}


def line_map(cov, project_root: Path, calls: dict[str, list[list]] | None = None) -> str:
    """The line map (repo path -> line -> the tests that ran it) of a coverage.py measurement, with the calls
    each test made (test -> [caller, callee, line, via]), as JSON text."""
    data = cov.get_data()
    root = Path(project_root).resolve()
    lines = {}
    for measured in data.measured_files():
        by_line = data.contexts_by_lineno(measured)
        lines[Path(measured).resolve().relative_to(root).as_posix()] = {
            n: sorted(c for c in contexts if c) for n, contexts in by_line.items() if any(contexts)
        }
    return json.dumps({"lines": lines, "calls": calls or {}}, sort_keys=True)


class CallsPerTest:
    """The calls each test makes while its own call runs: a ``CallObserver`` as the profile function (coverage.py
    holds the trace function), switched on and off around each test's call (see ``child_main`` and
    ``pytest_linemap``)."""

    def __init__(self, project_root: Path):
        from docs_hooks.base.settings import ModuleNames
        from docs_hooks.run.observed import CallObserver, project_files

        self.observer = CallObserver(project_files([str(project_root)]))
        self.names = ModuleNames(project_root)  # how the line map names a test
        self.tests: dict[tuple, tuple] = {}  # test (see _test_name) -> (its places, its calls through __call__)

    def start(self) -> None:
        import threading

        self.observer.clear()
        threading.setprofile(self.observer.profile)  # and in the threads a test starts
        sys.setprofile(self.observer.profile)

    def stop(self, item) -> None:
        import threading

        sys.setprofile(None)
        threading.setprofile(None)
        places, via = self.tests.setdefault(_test_name(item, self.names), (set(), set()))
        places.update(self.observer.places)
        via.update(self.observer.via)
        self.observer.clear()

    def named(self, modules: dict[str, str]) -> dict[str, list[list]]:
        """test -> the calls it made, named through ``modules`` (see observed.calls_seen)."""
        from docs_hooks.run.observed import calls_seen

        out: dict[str, list[list]] = {}
        for (file, qualname, context), (places, via) in self.tests.items():
            test = f"{modules[file]}.{qualname}" if file in modules and "<" not in qualname else context
            # pytest calling the test itself is no call of the code
            seen = [c for c in calls_seen(places, via, modules) if c[0] is not None or c[1] != test]
            out.setdefault(test, []).extend(seen)
        return {test: sorted(seen, key=lambda c: (c[0] or "", c[1], c[2], c[3])) for test, seen in sorted(out.items())}


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


def _read_map(text: str) -> CoverageMap:
    """The line map and calls as the run wrote them; ValueError when they are not (cut short, damaged)."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError("not a line map") from None
    if type(data) is not dict or type(data.get("lines")) is not dict or type(data.get("calls")) is not dict:
        raise ValueError("not a line map")
    out = {}
    for f, by_line in data["lines"].items():
        if type(by_line) is not dict or not all(
            type(tests) is list and all(type(t) is str for t in tests) for tests in by_line.values()
        ):
            raise ValueError("not a line map")
        out[f] = {int(n): tests for n, tests in by_line.items()}
    calls = {}
    for test, seen in data["calls"].items():
        if type(seen) is not list:
            raise ValueError("not a line map")
        calls[str(test)] = [_read_call(c) for c in seen]
    return CoverageMap(out, calls)


def _read_call(call) -> list:
    if type(call) is not list or len(call) != 4:
        raise ValueError("not a line map")
    caller, callee, line, via = call
    if not (caller is None or type(caller) is str) or type(callee) is not str or type(line) is not int:
        raise ValueError("not a line map")
    if type(via) is not str:
        raise ValueError("not a line map")
    return [caller, callee, line, via]


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
    ):
        self.project_root = project_root
        self.timeout = timeout
        modules = modules or {}
        self._map: CoverageMap | None = None
        # Where the map goes once measured (see write_map): the cache, the code, what it was measured by.
        self._of = (
            MapOf(cache_dir, file_digests, pytest_args, modules, functions, project_root, texts) if cache_dir else None
        )
        self._proc: subprocess.Popen | None = None
        self._error: TraceError | None = None
        # The last map but for the tests that ran an edited function: only those run, and the two are merged.
        self._kept: Carried | None = None
        if self._of is not None:  # a damaged map is measured again, and written whole
            self._map, self._kept = _read_or_carry(self._of)
            if self._map is not None:
                return
        run_args = pytest_args
        if self._kept is not None:
            ids = _node_ids(self._kept.stale, functions or {}, pytest_args)
            if ids is None:
                self._kept = None
            else:
                run_args = ids
        missing = missing_packages()
        if missing:
            self._error = _missing_error(missing, project_root, pytest_args)
            return
        self._source_root, self._modules, self._pytest_args = source_root, modules, pytest_args
        self._start(run_args)

    def _start(self, args: list[str]) -> None:
        """Start pytest with ``args`` under coverage, in a child process of its own."""
        self.run_args = args  # what pytest is given: the tests to measure
        self._tmp = tempfile.TemporaryDirectory()
        self._lines_file = os.path.join(self._tmp.name, "lines.json")
        self._running_file = os.path.join(self._tmp.name, "running.txt")
        modules_file = os.path.join(self._tmp.name, "modules.json")
        Path(modules_file).write_text(json.dumps(self._modules), encoding="utf-8")
        env = dict(os.environ)
        # Modules import as the code index names them: from the source root, tests from the project root.
        # This package comes last, for the run's own driver (child_main).
        env[CHILD_ENV] = "1"  # a test run's own line-map plugin stays off in here: this run measures already
        env["PYTHONPATH"] = os.pathsep.join(
            [
                str(self._source_root),
                str(self.project_root),
                env.get("PYTHONPATH", ""),
                str(Path(__file__).resolve().parents[2]),
            ]
        )
        self._output = open(os.path.join(self._tmp.name, "output.txt"), "w+")  # noqa: SIM115 (the run writes it; stop() closes it)
        self._started = time.monotonic()
        self._proc = children.start(
            # --assert=plain: which lines run does not depend on pytest's assertion rewriting, and
            # rewriting every test module and plugin package again (when bytecode is not cached)
            # would take longer than the tests do.
            [
                sys.executable,
                "-c",
                "from docs_hooks.run.coverage_map import child_main; child_main()",
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
            env=env,
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
        proc = self._proc  # None only with a map or an error
        return self._map is not None or self._error is not None or (proc is not None and proc.poll() is not None)

    def result(self) -> CoverageMap:
        """The line map; a TraceError (the same one each time) when the run failed, placed at the
        ``coverage_tests`` setting, since the pages that wait for it are not where the problem is."""
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
                    measured = _read_map(text)
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
                self._error = self._failure(self._how_it_ended(code), "fix the test")
                raise self._error
        finally:
            self._finalizer()
        if self._kept is not None:
            from docs_hooks.run.carried import merge

            measured = CoverageMap(*merge(self._kept, measured.lines, measured.calls))
            text = _map_text(measured)
        if self._of is not None:
            write_map(self._of, text)
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

    def _how_it_ended(self, code: int) -> str:
        if code < 0:
            return f"was killed by signal {-code}"
        if code == 1:
            return "failed"
        if code == 0:  # pytest returns 0 after writing the map: the process was ended (os._exit) first
            return "ended the run (exit code 0) before the line map was written (os._exit, say)"
        return f"ended with exit code {code}"

    def _failure(self, how: str, todo: str) -> TraceError:
        """One error for the whole build: which test (what pytest reported, else the test that was running),
        what it raised, and pytest's report of it (else the last lines of the run's output)."""
        self._output.seek(0)
        output = self._output.read().strip().splitlines()
        failed = [_reported_test(line) for line in output if line.startswith(_SUMMARY_WORDS)]
        tests = ", ".join(dict.fromkeys(failed)) or (self._running() or " ").split(" ", 1)[1]
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
            cov.switch_context(_test_context(item, names))
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


def _test_name(item, names) -> tuple[str, str, str]:
    """What names a test among the calls seen: its function's file and qualified name, named once the module map
    is known (as the index names the test: see ``CallsPerTest.named``), and its name as the line map gives it
    (``_test_context``), for a test the map does not hold."""
    import inspect

    function = getattr(item, "function", None)
    code = getattr(inspect.unwrap(function), "__code__", None) if function is not None else None
    if code is None:
        return ("", "<unknown>", _test_context(item, names))
    return (code.co_filename, code.co_qualname, _test_context(item, names))


def _test_context(item, names) -> str:
    """A pytest test's name as the code index gives it: the module named by ``names`` (a
    settings.ModuleNames) from the file that defines the test, then its class, then its name. The
    name pytest imported the module under (``__module__``) is not used: where the two differ (a
    ``conftest.py``, a test module named unlike its file), the map must still match the index."""
    function = getattr(item, "function", None)
    name = getattr(function, "__name__", None) or item.name.partition("[")[0]
    cls = getattr(item, "cls", None)
    owner = cls if cls is not None else function
    module = sys.modules.get(getattr(owner, "__module__", None) or "")
    file = getattr(module, "__file__", None) or str(item.path)
    qualified = f"{cls.__name__}.{name}" if cls is not None else name
    return f"{names.of_test(Path(file))}.{qualified}"
