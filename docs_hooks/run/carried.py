"""A line map carried over to code that changed only where no test ran, or only in functions some tests ran.

The coverage run measures every configured test again whenever any source or test file changes. When the only
changes are to functions no test ran, or functions added that nothing names (see ``residue``), every test would
run the same lines as before: the last map is carried over, its lines moved with the functions that moved. When
functions some tests ran changed too, those tests (the *stale* ones) are measured again, alone, and their part
of the map replaced (``merge``): every other test ran none of the changed code.

What the last map depended on (``depends``): the digest of every file, the text and start of each function a
test ran and of every function of a file that holds tests, and the rest of every module
(``dependencies.Dependencies``, as a recording depends on them). It is carried over (``carry``) only when:

- the files are the same files (none added, none removed), and the module map and pytest's arguments are the same
  (the caller checks those);
- no ``conftest.py`` changed, and a file that holds tests changed only where no test runs: every function of
  such a file (a test, a fixture, a helper) is as it was, text and place, none added and none removed (a new or
  edited test runs other lines);
- in each changed module the rest of the module is the same, and every line a test that is not stale ran is
  inside a function that kept its text (a line run at a module's top level, in an import made inside a test,
  does not carry over).

The text of a function or module is read as a recording's is: without its comments and docstrings, but for a
docstring that holds a doctest's example, which pytest may run (``residue``).

A test is stale when it was seen calling a changed (or removed) function, or being called by one: the observer
of the calls sees every call of the project's code while a test runs. What measuring the stale tests alone
assumes: that a test runs the same lines alone as after the tests before it, as with ``pytest -p
randomly`` or a single test id on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from docs_hooks.run.dependencies import Dependencies

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
        "functions": {name: [deps.function(name, loaded), functions[name].start] for name in sorted(reached)},
        "modules": {f: deps.module(f, reached, loaded) for f in loaded},
        "test files": _of_test_files(deps, loaded),
    }


@dataclass
class Carried:
    """The last map as the tests would measure it on the code as it is now, but for ``stale``: the tests that ran
    a function whose text changed, left out of ``lines`` and ``calls`` (measure them again and ``merge``)."""

    lines: Lines
    calls: Calls
    stale: list[str]


def carry(stored: dict, lines: Lines, calls: Calls, deps: Dependencies) -> Carried | None:
    """The map measured on the code ``stored`` describes, carried over to the code as it is now (``deps``); None
    when the tests may run other lines than the map's and those of the tests that ran a changed function. When no
    line moved and no test is stale, the map is ``lines`` and ``calls`` themselves.

    A function of a file that did not change is as it was, its text (comments and docstrings too, however the code
    is read now) and its place: only the functions of the changed files are digested again, and only their lines
    looked at."""
    functions, file_digests = deps.functions, deps.file_digests
    old_files = stored["files"]
    if set(old_files) != set(file_digests):
        return None
    changed = {f for f, digest in file_digests.items() if old_files[f] != digest}
    if not changed:
        return Carried(lines, calls, [])
    if any(Path(f).name == "conftest.py" for f in changed):
        return None
    reached = stored["functions"]
    loaded = sorted(file_digests)
    if any(fn.is_test for f in changed for fn in deps.functions_in(f)) and not _tests_kept(stored, deps, loaded):
        return None
    shifts: dict[str, int] = {}  # function -> how far it moved
    ranges: dict[str, list[tuple[int, int, int]]] = {}  # changed file -> (old start, old end, shift)
    edited: set[str] = set()  # functions a test ran whose text changed, or that are gone
    for name, (digest, start) in reached.items():
        now = functions.get(name)
        if now is not None and now.repo_path not in changed:
            continue  # its file is as it was (files and module names are): so is it
        if now is None or deps.function(name, loaded) != digest:
            edited.add(name)
        elif now.repo_path in changed:
            shifts[name] = now.start - start
            ranges.setdefault(now.repo_path, []).append((start, start + now.end - now.start, now.start - start))
    if any(f not in stored["modules"] or deps.module(f, reached, loaded) != stored["modules"][f] for f in changed):
        return None
    # A test ran an edited function when it was seen calling it or being called by it (the observer sees every
    # call of the project's code while a test runs, so every test that ran one of its lines).
    stale = {test for test, seen in calls.items() if any(c[0] in edited or c[1] in edited for c in seen)}
    if not stale and not any(shifts.values()):  # nothing moved: the map as it is, once its changed files hold
        if any(not _inside(n, ranges.get(f, ())) for f in changed for n in lines.get(f, ())):
            return None  # a line outside the functions that kept their text: at the module's top level
        return Carried(lines, calls, [])
    moved_lines: Lines = {}
    for f, by_line in lines.items():
        if f not in changed and not stale:
            moved_lines[f] = by_line  # nothing of it moved, no test of it left out
            continue
        moved: dict[int, list[str]] = {}
        for n, tests in by_line.items():
            kept = [t for t in tests if t not in stale]
            if not kept:
                continue
            if f in changed:
                shift = next((s for first, last, s in ranges.get(f, ()) if first <= n <= last), None)
                if shift is None:
                    return None  # a line outside the functions that kept their text: at the module's top level
                n += shift
            moved[n] = kept
        moved_lines[f] = moved  # a file measured with no line any test ran stays, as a run measures it
    moved_calls = {
        test: [[c[0], c[1], c[2] + shifts.get(c[0], 0), c[3]] for c in seen]
        for test, seen in calls.items()
        if test not in stale
    }
    return Carried(moved_lines, moved_calls, sorted(stale))


def _inside(line: int, ranges) -> bool:
    """Whether ``line`` is inside one of ``ranges`` (first, last, shift)."""
    return any(first <= line <= last for first, last, _ in ranges)


def _of_test_files(deps: Dependencies, loaded: list[str]) -> dict[str, list]:
    """The text and start of every function of a file that holds tests (a test, a fixture, a helper), run or not:
    the coverage run need not measure the test files, and pytest calls a fixture, not the code."""
    files = {fn.repo_path for fn in deps.functions.values() if fn.is_test}
    return {
        fn.name: [deps.function(fn.name, loaded), fn.start] for fn in deps.functions.values() if fn.repo_path in files
    }


def _tests_kept(stored: dict, deps: Dependencies, loaded: list[str]) -> bool:
    """Whether the files that hold tests run what they ran: each of their functions is as it was, text and place (a
    comment or a docstring is no edit, see ``residue``), none added and none removed, and no function that ran is
    gone."""
    return stored.get("test files") == _of_test_files(deps, loaded) and all(
        name in deps.functions for name in stored["functions"]
    )


def merge(kept: Carried, lines: Lines, calls: Calls) -> tuple[Lines, Calls]:
    """The whole map: what was carried over and what the stale tests measured now (``lines``, ``calls``)."""
    out: Lines = {f: {n: list(tests) for n, tests in by_line.items()} for f, by_line in kept.lines.items()}
    for f, by_line in lines.items():
        into = out.setdefault(f, {})
        for n, tests in by_line.items():
            into[n] = sorted({*into.get(n, ()), *tests})
    return out, {**kept.calls, **calls}
