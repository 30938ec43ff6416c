"""A line map carried over to code that changed only where no test ran.

The coverage run measures every configured test again whenever any source or test file changes. When the only
changes are to functions no test ran, or functions added that nothing names (see ``residue``), every test would
run the same lines as before: the last map is carried over, its lines moved with the functions that moved.

What the last map depended on (``depends``): the digest of every file, the text and start of each function a
test ran, and the rest of every module (``record.Dependencies``, as a recording depends on them). It is carried over (``carry``) only when:

- the files are the same files (none added, none removed), and the module map and pytest's arguments are the same
  (the caller checks those);
- no file that holds a test, and no ``conftest.py``, changed: a new or edited test runs other lines;
- in each changed module, every function a test ran has the same text, the rest of the module is the same, and
  every line a test ran is inside one of those functions (a line a test ran at a module's top level, in an import
  made inside a test, does not carry over).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from docs_hooks.run.record import Dependencies

if TYPE_CHECKING:
    from docs_hooks.resolve.codeindex import Function

Lines = dict[str, dict[int, list[str]]]  # repo path -> line -> the tests that ran it
Calls = dict[str, list[list]]  # test -> [caller, callee, line, via]


def ran(lines: Lines, calls: Calls, functions: Mapping[str, Function]) -> set[str]:
    """The functions of the index a test ran: a line of theirs was run, or a call from or to them was seen."""
    out = {name for seen in calls.values() for c in seen for name in (c[0], c[1]) if name in functions}
    for fn in functions.values():
        by_line = lines.get(fn.repo_path)
        if by_line and any(fn.start <= n <= fn.end for n in by_line):
            out.add(fn.name)
    return out


def depends(lines: Lines, calls: Calls, deps: Dependencies) -> dict:
    """What a line map measured on the code as it is now (``deps``: its index's functions and files) depended on,
    stored with it."""
    functions, file_digests = deps.functions, deps.file_digests
    reached = ran(lines, calls, functions)
    loaded = sorted(file_digests)
    return {
        "files": dict(file_digests),
        "functions": {name: [deps.function(name), functions[name].start] for name in sorted(reached)},
        "modules": {f: deps.module(f, reached, loaded) for f in loaded},
    }


def carry(stored: dict, lines: Lines, calls: Calls, deps: Dependencies) -> tuple[Lines, Calls] | None:
    """The map measured on the code ``stored`` describes, as the tests would measure it on the code as it is
    now (``deps``); None when they may run other lines."""
    functions, file_digests = deps.functions, deps.file_digests
    old_files = stored["files"]
    if set(old_files) != set(file_digests):
        return None
    changed = {f for f, digest in file_digests.items() if old_files[f] != digest}
    if not changed:
        return lines, calls
    if any(Path(f).name == "conftest.py" or any(fn.is_test for fn in deps.functions_in(f)) for f in changed):
        return None
    reached = stored["functions"]
    loaded = sorted(file_digests)
    shifts: dict[str, int] = {}  # function -> how far it moved
    ranges: dict[str, list[tuple[int, int, int]]] = {}  # changed file -> (old start, old end, shift)
    for name, (digest, start) in reached.items():
        now = functions.get(name)
        if now is None or deps.function(name) != digest:
            return None
        if now.repo_path in changed:
            shifts[name] = now.start - start
            ranges.setdefault(now.repo_path, []).append((start, start + now.end - now.start, now.start - start))
    if any(f not in stored["modules"] or deps.module(f, reached, loaded) != stored["modules"][f] for f in changed):
        return None
    moved_lines: Lines = {}
    for f, by_line in lines.items():
        if f not in changed:
            moved_lines[f] = by_line
            continue
        moved_lines[f] = {}
        for n, tests in by_line.items():
            shift = next((s for first, last, s in ranges.get(f, ()) if first <= n <= last), None)
            if shift is None:
                return None  # a line a test ran at the module's top level
            moved_lines[f][n + shift] = tests
    moved_calls = {test: [[c[0], c[1], c[2] + shifts.get(c[0], 0), c[3]] for c in seen] for test, seen in calls.items()}
    return moved_lines, moved_calls
