"""The calls seen while the project's code runs: who called which function, from which line, in which test.

The code index finds the calls written in the code; some it cannot follow (a
layer called through a list, a function kept in a dict or an attribute). The
runs the build makes anyway see them: the tests under coverage
(``coverage_map``, or the project's own test run with ``pytest_linemap``) and
the recordings (``record_child``). There a ``CallObserver`` keeps each *place*
of a call once: the called code, the calling code and the line of the call. This
module turns places into ``ObservedCall``s, named as the code index names
functions, which the call graph merges with the calls the index found
(``resolve.callgraph``).

A call of an instance, ``layer(X)``, runs ``Layer.__call__``, which calls
``self.forward(X)``: the observer also keeps, for a method that a ``__call__``
called on its own instance, the place of the call of the instance, so that the
test that wrote ``layer(X)`` calls ``Layer.forward`` as the index says it does
(through ``via``).

Names: a function nested in another (a comprehension, a lambda, a helper
defined inside) is named after the function of the index that holds it, since
its code is part of that function's text; code at a module's top level has no
function. The observer runs in the child processes; ``calls_seen`` and
``functions_run`` run wherever a module map is at hand.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable

from docs_hooks.resolve.callgraph import ObservedCall

#: A place: (called code, calling code, line of the call in the calling code's file).
Place = tuple


def enclosing(qualname: str) -> str | None:
    """The qualified name of the function of the index whose text holds code named ``qualname``: the function
    itself, or the one a comprehension, lambda or nested function is defined in; None at a module's top level."""
    if qualname.startswith("<"):
        return None
    return qualname.split(".<locals>.", 1)[0]


class CallObserver:
    """Keeps each place of a call of the project's code once, while it is on.

    ``is_project(filename)`` says whether a file holds the project's code (asked
    once per file). ``profile`` is a function for ``sys.setprofile`` (where
    coverage.py holds ``sys.settrace``), ``trace`` one for ``sys.settrace``: both
    see each call start, and the first look at each place is all the work done
    for it.

    With ``imports`` (a set), the code of each call made while a module of the
    project runs its top level (an import: ``sigmoid = Sigmoid()``) goes there too.
    """

    def __init__(self, is_project: Callable[[str], bool], imports: set | None = None):
        self.is_project = is_project
        self.places: set[Place] = set()
        self.via: set[tuple] = set()  # (method code, instance caller's code, its line, __call__ code)
        self.imports = imports
        self._files: dict[str, bool] = {}
        self.profile = self.trace = self._hook()

    def _hook(self):
        places, files, via, imports, is_project = self.places, self._files, self.via, self.imports, self.is_project

        def see(frame, event, arg):
            if event == "call":
                code = frame.f_code
                local = files.get(code.co_filename)
                if local is None:
                    local = files[code.co_filename] = bool(self.is_project(code.co_filename))
                if local:
                    back = frame.f_back
                    if back is not None:
                        key = (code, back.f_code, back.f_lineno)
                        if key not in places:
                            places.add(key)
                            through = via_place(frame, back)
                            if through is not None:
                                via.add(through)
                            if imports is not None and importing(back, is_project):
                                imports.add(code)
            return None

        return see

    def clear(self) -> None:
        self.places.clear()
        self.via.clear()


def via_place(frame, back) -> tuple | None:
    """For a call of a method by a ``__call__`` on its own instance (``back`` is the ``__call__``'s frame), the
    place of the instance's call: (method code, calling code, line, ``__call__`` code); else None."""
    outer = back.f_code
    if outer.co_name != "__call__" or not outer.co_argcount or not frame.f_code.co_argcount:
        return None
    caller = back.f_back
    if caller is None:
        return None
    mine = frame.f_locals.get(frame.f_code.co_varnames[0])
    if mine is None or mine is not back.f_locals.get(outer.co_varnames[0]):
        return None
    return (frame.f_code, caller.f_code, caller.f_lineno, outer)


def importing(frame, is_project: Callable[[str], bool]) -> bool:
    """Whether ``frame`` runs for the top level of a module of the project (being imported), at any depth."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "<module>" and is_project(code.co_filename):
            return True
        frame = frame.f_back
    return False


def is_installed(path: str) -> bool:
    """Whether an absolute ``path`` belongs to the Python environment (its prefixes, any site-packages), not to
    a project, even when the environment sits inside the project's folder."""
    installed = tuple({os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    return path.startswith(installed) or "site-packages" in path


def project_files(roots: Iterable[str]) -> Callable[[str], bool]:
    """``is_project`` for files under ``roots`` that are not installed packages (a virtual environment inside
    the project, say)."""
    folders = tuple(os.path.abspath(r) + os.sep for r in roots)

    def is_project(filename: str) -> bool:
        path = os.path.abspath(filename)
        return path.startswith(folders) and not is_installed(path)

    return is_project


def _name(code, modules: dict[str, str]) -> str | None:
    module = modules.get(code.co_filename)
    qualname = enclosing(code.co_qualname) if module is not None else None
    return f"{module}.{qualname}" if qualname is not None else None


def calls_seen(places: Iterable[Place], via: Iterable[tuple], modules: dict[str, str]) -> list[list]:
    """The calls seen at ``places`` (and ``via``: see ``via_place``), as ``[caller, callee, line, via]`` lists
    (see ``ObservedCall``), named through ``modules`` (absolute file -> module name as the index names it); a
    callee the index cannot hold (a nested function) is left out, and so is code outside ``modules``."""

    def callee(code) -> str | None:
        if code.co_filename not in modules or "<" in code.co_qualname:
            return None
        return f"{modules[code.co_filename]}.{code.co_qualname}"

    out: set[tuple] = set()
    for code, back, line in places:
        name = callee(code)
        if name is not None:
            out.add((_name(back, modules) if back is not None else None, name, line, ""))
    for code, caller, line, through in via:
        name = callee(code)
        if name is not None:
            out.add((_name(caller, modules), name, line, _name(through, modules) or ""))
    return [list(c) for c in sorted(out, key=lambda c: (c[0] or "", c[1], c[2], c[3]))]


def functions_run(places: Iterable[Place], modules: dict[str, str]) -> list[str]:
    """The functions (named as the index names them) whose code ran at ``places``: a nested function's code
    counts for the function that holds it."""
    return sorted({name for code, _, _ in places if (name := _name(code, modules)) is not None})


def observed_calls(seen: Iterable, test: str | None = None) -> list[ObservedCall]:
    """``[caller, callee, line, via]`` lists (as ``calls_seen`` makes them) as ObservedCalls of ``test``."""
    return [ObservedCall(caller, callee, line, test, via) for caller, callee, line, via in seen]
