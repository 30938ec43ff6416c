"""Which tests actually run each line of the source: line coverage per test, and the calls each test made.

The static call graph says which tests *call* a function; this says which tests
*executed* a given line, measured by coverage.py while pytest runs the
configured tests, each test's lines under the test's name (``coverage_run`` runs
them, in a child process; a test run's own ``pytest_linemap`` plugin can write
the same map). The same run also notes which function called which while each
test ran (``CallsPerTest``), for the call graph. The map is kept under a digest
of every source and test file and of the module names the calls are named with,
and the last one measured is carried over to code that changed only where no
test ran (``carried``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from docs_hooks.base.cachedir import read_entry, write_entry
from docs_hooks.resolve.callgraph import ObservedCall, RunEvidence
from docs_hooks.run.observed import observed_calls

if TYPE_CHECKING:
    from docs_hooks.resolve.codeindex import Function
    from docs_hooks.run.carried import Carried
    from docs_hooks.run.dependencies import Dependencies
    from docs_hooks.run.residue import Texts


class CoverageMap:
    """line -> tests, per source file (repo paths), and the calls each test was seen making, from one coverage
    run."""

    def __init__(self, lines: dict[str, dict[int, list[str]]], calls: dict[str, list[list]] | None = None):
        self.lines = lines
        self.calls = calls or {}  # test -> [caller, callee, line, via] (see observed.calls_seen)
        self._evidence: RunEvidence | None = None

    def observed(self) -> list[ObservedCall]:
        """The calls the tests were seen making, each under its test."""
        return [call for test, seen in sorted(self.calls.items()) for call in observed_calls(seen, test)]

    def evidence(self) -> RunEvidence:
        """What the call graph reads of this run: the calls seen, and the lines the tests executed (made once: a
        map read once by a serve, see ``MapsRead``, serves each build after a code edit)."""
        if self._evidence is None:
            lines = {path: by_line.keys() for path, by_line in self.lines.items()}
            self._evidence = RunEvidence(tuple(self.observed()), lines)
        return self._evidence

    def tests_running(self, repo_path: str, start: int, end: int) -> list[str]:
        found: set[str] = set()
        by_line = self.lines.get(repo_path, {})
        for n in range(start, end + 1):
            found.update(by_line.get(n, ()))
        return sorted(found)


def _key(file_digests: dict[str, str], args: list[str], modules: dict[str, str]) -> str:
    h = hashlib.sha256(json.dumps([sorted(file_digests.items()), args, sorted(modules.items())]).encode())
    here = Path(__file__)
    h.update(here.read_bytes() + here.with_name("coverage_run.py").read_bytes())  # what reads and what measures
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


class MapsRead:
    """The line map a process (a serve's) read last, and the maps carried over that it writes later.

    A serve's builds after code edits that no test's lines reach carry the same last map over: it is read as a
    map once (``read``; the map of a large project is tens of megabytes of JSON). The map carried over to the new
    code is kept here (``write_later``) and written to the cache folder while serve waits (``flush_later``); the
    builds meanwhile find it here (``entry``). Nothing changes a map once it is read."""

    def __init__(self) -> None:
        self._last: tuple[bytes, CoverageMap] | None = None
        self._later: dict[Path, bytes] = {}
        self._lock = threading.Lock()  # the warm-up writes the later maps while a build may read

    def read(self, raw: bytes) -> CoverageMap:
        """``read_map`` of ``raw``, the map read last when it is the same text; ValueError as ``read_map``."""
        last = self._last
        if last is not None and last[0] == raw:
            return last[1]
        found = read_map(raw.decode("utf-8"))  # a UnicodeDecodeError is a ValueError too
        self._last = (raw, found)
        return found

    def remember(self, raw: bytes, measured: CoverageMap) -> None:
        """Take ``measured`` as what ``raw`` reads as: a map this process measured and wrote."""
        self._last = (raw, measured)

    def entry(self, path: Path) -> bytes | None:
        """``read_entry(path)``, or the map kept to be written there later."""
        with self._lock:
            later = self._later.get(Path(path))
        return later if later is not None else read_entry(path)

    def write_later(self, path: Path, data: bytes) -> None:
        """Keep ``data`` as the entry ``path`` of the cache, to be written by ``flush_later``."""
        with self._lock:
            self._later[Path(path)] = data

    def flush_later(self) -> None:
        """Write the maps of ``write_later`` to the cache folder (each found here until it is written)."""
        with self._lock:
            later = list(self._later.items())
        for path, data in later:
            write_entry(path, data)
            _trim(path.parent)
            with self._lock:
                if self._later.get(path) is data:
                    del self._later[path]


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
    maps: MapsRead | None = None  # the maps read before by this process (a serve's)

    @property
    def path(self) -> Path:
        return cached_map_path(self.cache_dir, self.file_digests, self.pytest_args, self.modules)

    def dependencies(self) -> Dependencies | None:
        """The code's dependencies as a line map reads them; None without the index's functions."""
        if self.functions is None or self.project_root is None:
            return None
        from docs_hooks.run.dependencies import Dependencies  # not in the coverage run's own process

        return Dependencies(self.project_root, self.functions, self.file_digests, texts=self.texts)

    def entry(self, path: Path) -> bytes | None:
        """The cache's entry ``path`` (``read_entry``), through the maps this process read and keeps to write."""
        return self.maps.entry(path) if self.maps is not None else read_entry(path)


def read_cached_map(of: MapOf) -> CoverageMap | None:
    """The line map of this code measured by these tests, when the cache holds it; runs nothing. Given the
    index's functions, a map measured on code that changed only where no test ran is carried over (see
    ``carried``) and cached under this code."""
    return read_or_carry(of)[0]


def read_or_carry(of: MapOf) -> tuple[CoverageMap | None, Carried | None]:
    """The map of this code from the cache, measured on it or carried over whole; else, when the last map
    carries over but for the tests that ran an edited function, that part of it (see ``carried.carry``)."""
    stored = read_entry(of.path)
    if stored is None:
        return carry(of)
    return from_stored(of, stored), None


def carry(of: MapOf) -> tuple[CoverageMap | None, Carried | None]:
    """With no map of this code in the cache: the last map, carried over whole (then cached under this code),
    or but for the tests that ran an edited function (then that part of it); (None, None) when it does not
    carry over."""
    last = _last_map(of)
    found = last[2] if last is not None else None
    if last is None or found is None or found.stale:
        return None, found
    text, old, _ = last
    # Carried over as it was (no line moved): the map as read (what it made for the call graph made once), and the
    # text it was read from, not written out again.
    same = found.lines is old.lines and found.calls is old.calls
    whole = old if same else CoverageMap(found.lines, found.calls)
    data = text if same else map_text(whole).encode("utf-8")
    if of.maps is not None:
        of.maps.write_later(of.path, data)  # a serve's: written while it waits
    else:
        write_entry(of.path, data)
        _trim(of.path.parent)
    return whole, None


def from_stored(of: MapOf, stored: bytes) -> CoverageMap | None:
    """The map the cache held for this code (``read_entry(of.path)``); None when it is not a line map (the
    build measures it again)."""
    try:
        measured = _read(of, stored)
    except ValueError:  # not a line map (UnicodeDecodeError is one too)
        return None
    if _read_last(of.path.parent) is None:  # lost or damaged: written again
        _write_last(of, measured)
    return measured


def _read(of: MapOf, raw: bytes) -> CoverageMap:
    """``raw`` read as a line map, once for all the builds of a process that keeps ``of.maps``."""
    return of.maps.read(raw) if of.maps is not None else read_map(raw.decode("utf-8"))


def write_map(of: MapOf, text: str, measured: CoverageMap | None = None) -> None:
    """Cache a measured line map (``line_map``'s text; ``measured``: the map it reads as, when already read) under
    the code it was measured on; given the index's functions, also as the last map measured, with what it depended
    on, for a later build to carry over (a serve's, ``of.maps``, then carries this very map)."""
    data = text.encode("utf-8")
    write_entry(of.path, data)
    if measured is None:
        measured = read_map(text)
    if of.maps is not None:
        of.maps.remember(data, measured)
    _write_last(of, measured)
    _trim(of.path.parent)


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

#: The line maps the coverage folder keeps: those read or written last (a map carried over is written again under
#: each new code, so an author's code edits would otherwise add one each), and the one ``LAST_MAP`` names.
MAPS_KEPT = 4


def _trim(folder: Path) -> None:
    """Delete the maps of ``folder`` but the ``MAPS_KEPT`` read or written last (a read marks the time of an
    entry: ``cachedir.used``) and the last one measured. A map deleted while another build goes to read it is a
    miss there: that build measures or carries it again."""
    last = _read_last(folder)
    spared = {last["map"]} if last is not None else set()
    maps = []
    for path in folder.glob("*.json"):
        if path.name == LAST_MAP:
            continue
        try:
            maps.append((path.stat().st_mtime_ns, path))
        except OSError:
            continue  # removed meanwhile
    maps.sort(reverse=True)
    for _, path in maps[MAPS_KEPT:]:
        if path.name not in spared:
            try:
                path.unlink(missing_ok=True)
            except OSError:
                return  # a folder that cannot be written (a cache restored read-only) keeps what it has


def _last_map(of: MapOf) -> tuple[bytes, CoverageMap, Carried | None] | None:
    """The last map measured (its text as stored, and as read), and what of it carries over to this code
    (``carried.carry``); None when there is none to carry over."""
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
    measured = of.entry(folder / last["map"])
    if measured is None:
        return None
    try:
        old = _read(of, measured)
    except ValueError:
        return None
    return measured, old, carried.carry(last["depends"], old.lines, old.calls, deps)


#: Past this many tests to measure again, pytest is given the configured arguments (every test) rather than one
#: node id a test: a command line's length is bounded.
MAX_NODE_IDS = 2000


def node_ids(tests: list[str], functions: Mapping[str, Function], pytest_args: list[str]) -> list[str] | None:
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


def map_text(found: CoverageMap) -> str:
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


def read_map(text: str) -> CoverageMap:
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


def _test_name(item, names) -> tuple[str, str, str]:
    """What names a test among the calls seen: its function's file and qualified name, named once the module map
    is known (as the index names the test: see ``CallsPerTest.named``), and its name as the line map gives it
    (``context_of``), for a test the map does not hold."""
    import inspect

    function = getattr(item, "function", None)
    code = getattr(inspect.unwrap(function), "__code__", None) if function is not None else None
    if code is None:
        return ("", "<unknown>", context_of(item, names))
    return (code.co_filename, code.co_qualname, context_of(item, names))


def context_of(item, names) -> str:
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
