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
from pathlib import Path

from .atomic import atomic_write
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
    key = _key(file_digests, pytest_args)
    cached = cache_dir / "coverage" / f"{key}.json" if cache_dir else None
    if cached is not None and cached.exists():
        return CoverageMap({f: {int(n): t for n, t in lines.items()} for f, lines in json.loads(cached.read_text()).items()})
    with tempfile.TemporaryDirectory() as tmp:
        data_file = os.path.join(tmp, "coverage.sqlite")
        rc = os.path.join(tmp, "coveragerc")
        Path(rc).write_text(f"[run]\ndynamic_context = test_function\nsource = {source_root}\n"
                            f"data_file = {data_file}\n")
        env = dict(os.environ)
        # Modules import as the code index names them: from the source root, tests from the project root.
        env["PYTHONPATH"] = os.pathsep.join([str(source_root), str(project_root), env.get("PYTHONPATH", "")])
        proc = subprocess.run(
            [sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", "-m", "pytest", "-q",
             "-p", "no:cacheprovider", "-x", *pytest_args],
            cwd=project_root, capture_output=True, text=True, env=env,
        )
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
            raise TraceError("the tests failed while measuring which test runs which line; fix them first:\n"
                             + "\n".join(tail))
        import coverage

        data = coverage.CoverageData(basename=data_file)
        data.read()
        lines: dict[str, dict[int, list[str]]] = {}
        for measured in data.measured_files():
            repo_path = Path(measured).resolve().relative_to(project_root.resolve()).as_posix()
            by_line = data.contexts_by_lineno(measured)
            lines[repo_path] = {n: sorted(c for c in ctxs if c) for n, ctxs in by_line.items() if any(ctxs)}
    if cached is not None:
        atomic_write(cached, json.dumps(lines, sort_keys=True))
    return CoverageMap(lines)
