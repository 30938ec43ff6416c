"""Which tests actually run each line of the source: line coverage per test.

The static call graph says which tests *call* a function; this says which
tests *executed* a given line, measured by coverage.py with its
``test_function`` dynamic context while pytest runs the configured tests. The
run happens in a child process, once per change of the code: its result is
cached under a digest of every source and test file.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path

from .atomic import atomic_write
from .cachedir import used
from .errors import TraceError


class CoverageMap:
    """line -> tests, per source file (repo paths), from one coverage run."""

    def __init__(self, lines: dict[str, dict[int, list[str]]]):
        self.lines = lines

    def tests_running(self, repo_path: str, start: int, end: int) -> list[str]:
        found: set[str] = set()
        by_line = self.lines.get(repo_path, {})
        for n in range(start, end + 1):
            found.update(by_line.get(n, ()))
        return sorted(found)


def _key(file_digests: dict[str, str], args: list[str]) -> str:
    h = hashlib.sha256(json.dumps([sorted(file_digests.items()), args]).encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:24]


def measure(project_root: Path, source_root: Path, pytest_args: list[str], file_digests: dict[str, str],
            cache_dir: Path | None) -> CoverageMap:
    """Run the tests under coverage (or read the cached result for this code)."""
    return Measurement(project_root, source_root, pytest_args, file_digests, cache_dir).result()


class Measurement:
    """A coverage run started now, in the background; ``result()`` waits for it.

    The builder starts it as soon as it is made, so the tests run on another
    core while the pages are indexed, recorded and rendered.
    """

    def __init__(self, project_root: Path, source_root: Path, pytest_args: list[str],
                 file_digests: dict[str, str], cache_dir: Path | None):
        self.project_root = project_root
        self._map: CoverageMap | None = None
        self._cached = cache_dir / "coverage" / f"{_key(file_digests, pytest_args)}.json" if cache_dir else None
        self._proc: subprocess.Popen | None = None
        self._error: TraceError | None = None
        if self._cached is not None and self._cached.exists():
            raw = json.loads(self._cached.read_text())
            used(self._cached)
            self._map = CoverageMap({f: {int(n): t for n, t in lines.items()} for f, lines in raw.items()})
            return
        self._tmp = tempfile.TemporaryDirectory()
        self._data_file = os.path.join(self._tmp.name, "coverage.sqlite")
        rc = os.path.join(self._tmp.name, "coveragerc")
        Path(rc).write_text(f"[run]\ndynamic_context = test_function\nsource = {source_root}\n"
                            f"data_file = {self._data_file}\n")
        env = dict(os.environ)
        # Modules import as the code index names them: from the source root, tests from the project root.
        env["PYTHONPATH"] = os.pathsep.join([str(source_root), str(project_root), env.get("PYTHONPATH", "")])
        self._output = open(os.path.join(self._tmp.name, "output.txt"), "w+")
        self._proc = subprocess.Popen(
            # --assert=plain: which lines run does not depend on pytest's assertion rewriting, and
            # rewriting every test module and plugin package again (when bytecode is not cached)
            # would take longer than the tests do.
            [sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", "-m", "pytest", "-q",
             "-p", "no:cacheprovider", "--assert=plain", "-x", *pytest_args],
            cwd=project_root, stdout=self._output, stderr=subprocess.STDOUT, env=env,
        )
        _yield_to_the_build(self._proc.pid)
        self._finalizer = weakref.finalize(self, _discard, self._proc, self._output, self._tmp)

    def done(self) -> bool:
        """Whether ``result()`` would answer now: read from the cache, or the run has ended."""
        return self._map is not None or self._error is not None or self._proc.poll() is not None

    def result(self) -> CoverageMap:
        if self._map is not None:
            return self._map
        if self._error is not None:  # every later use reports the same failure
            raise TraceError(self._error.message)
        try:
            if self._proc.wait() != 0:
                self._output.seek(0)
                tail = self._output.read().strip().splitlines()[-15:]
                self._error = TraceError("the tests failed while measuring which test runs which line; "
                                         "fix them first:\n" + "\n".join(tail))
                raise self._error
            import coverage

            data = coverage.CoverageData(basename=self._data_file)
            data.read()
            lines: dict[str, dict[int, list[str]]] = {}
            for measured in data.measured_files():
                repo_path = Path(measured).resolve().relative_to(self.project_root.resolve()).as_posix()
                by_line = data.contexts_by_lineno(measured)
                lines[repo_path] = {n: sorted(c for c in ctxs if c) for n, ctxs in by_line.items() if any(ctxs)}
        finally:
            self._finalizer()
        if self._cached is not None:
            atomic_write(self._cached, json.dumps(lines, sort_keys=True))
        self._map = CoverageMap(lines)
        return self._map


#: The coverage run's niceness: the lowest priority. What it measures is needed only once the pages
#: are rendered (see Builder.defer), while the build and the recorder are needed all along; on a busy
#: machine it takes the cores they leave idle instead of slowing them down.
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
    """Stop a run nobody waited for, and remove its files."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    output.close()
    tmp.cleanup()
