"""What of the recording child's process is the project's: its modules, its objects, and the files its code
opens for reading.

The child (``record_child.py``) tells the project's own code from the environment's (NumPy, pytest, this
generator, a virtual environment inside the project) by the folders it imports the project from
(``set_roots``) and the modules it had before it could import the project (``note_baseline``). The tracers
(``record_trace.py``) ask ``is_local_path`` of every call they see; a recording names the project's modules it
loaded (``loaded_files``) and the data files it read (``Opened``), and an object of the project's own classes
leaves the child as an ``Opaque`` value (``project_object``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from docs_hooks.run.observed import importing, is_installed
from docs_hooks.run.recording import Opaque

_LOCAL_ROOTS: list[str] = []  # folders of the project's own code (set in the child)
_BASELINE: set[str] = set()  # modules the child had before it could import the project (docs_hooks, ...)


def set_roots(roots: list[str]) -> None:
    """The folders of the project's own code: where the child imports it from."""
    _LOCAL_ROOTS[:] = roots


def note_baseline(names: set[str]) -> None:
    """Modules the child has before it imports the project: none of them is the project's."""
    _BASELINE.update(names)


def is_local_module(name: str | None) -> bool:
    """Whether module ``name`` was loaded from the project's own code (not the environment)."""
    if not name or not _LOCAL_ROOTS or name in _BASELINE:
        return False
    file = getattr(sys.modules.get(name), "__file__", None)
    if not file:
        return name == "__main__"
    return is_local_path(file)


# A module file -> whether it is the project's: asked for every loaded module after every request,
# hundreds of them (NumPy's, pytest's), whose answer never changes.
_LOCAL_FILES: dict[tuple[str, tuple], bool] = {}


def _is_local_file(file: str) -> bool:
    """Whether an absolute path is in the project. Code compiled from a string (``python -c``, which starts this
    child, ``exec``) is named ``<string>``, which ``abspath`` would put in the current folder: it is no file."""
    if os.path.basename(file).startswith("<"):
        return False
    return not is_installed(file) and any(file.startswith(os.path.abspath(r) + os.sep) for r in _LOCAL_ROOTS)


def is_local_path(file: str) -> bool:
    """Whether a file of code (a code object's filename) is the project's own (see ``is_local_module``)."""
    key = (file, tuple(_LOCAL_ROOTS))
    local = _LOCAL_FILES.get(key)
    if local is None:
        local = _LOCAL_FILES[key] = _is_local_file(os.path.abspath(file))
    return local


def project_object(obj: Any) -> Opaque | None:
    """``obj`` as an ``Opaque`` when it is a class, function or object of the project's own code, else None."""
    import dataclasses
    import types

    if isinstance(obj, (type, types.FunctionType)):
        if is_local_module(getattr(obj, "__module__", None)):
            return Opaque(f"{obj.__module__}.{obj.__qualname__}", repr(obj))
        return None
    cls = type(obj)
    if not is_local_module(cls.__module__):
        return None
    if dataclasses.is_dataclass(obj):
        fields = {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)}
    else:
        fields = dict(getattr(obj, "__dict__", {}) or {})
    try:
        text = repr(obj)
    except Exception:  # pragma: no cover - a broken __repr__
        text = f"<{cls.__qualname__}>"
    return Opaque(f"{cls.__module__}.{cls.__qualname__}", text, fields)


def loaded_files(baseline: set[str], project_root: str) -> set[str]:
    """Files of the project's own modules imported since ``baseline`` (they can change a result)."""
    out = set()
    root = os.path.abspath(project_root) + os.sep
    for name, module in list(sys.modules.items()):
        if name in baseline or not is_local_module(name):
            continue
        file = getattr(module, "__file__", None)
        if file and os.path.abspath(file).startswith(root):
            out.add(os.path.abspath(file))
    return out


class Opened:
    """The files the code opens for reading: ``open`` (``io.open``) and ``os.open``, wrapped in the child.

    While a request runs, what it opens is its own (``paths``); what a module of
    the project opens while it is imported (``DATA = json.load(...)`` at its top
    level) shaped every request after it too (``at_import``). The wrappers go in
    once (``install``) and only note the path: they never change what ``open``
    does or raises. Python's audit hooks would see every open, but a hook written
    in Python is called for every audited event, and reading ``frame.f_code`` is
    one, which the tracers do on every call (bench/README.md has the figures).
    """

    def __init__(self) -> None:
        self.paths: set[str] | None = None
        self.at_import: set[str] = set()

    def install(self) -> None:
        import builtins
        import functools
        import io

        def wrap(opener: Callable[..., Any], mode_of: Callable[[tuple, dict], bool]) -> Callable[..., Any]:
            @functools.wraps(opener)
            def opened(file: Any, *args: Any, **kwargs: Any) -> Any:
                self._note(file, mode_of(args, kwargs))
                return opener(file, *args, **kwargs)

            return opened

        def open_reads(args: tuple, kwargs: dict) -> bool:
            mode = args[0] if args else kwargs.get("mode", "r")
            return not isinstance(mode, str) or "r" in mode or "+" in mode

        def os_open_reads(args: tuple, kwargs: dict) -> bool:
            flags = args[0] if args else kwargs.get("flags", 0)
            return kwargs.get("dir_fd") is None and (not isinstance(flags, int) or flags & os.O_ACCMODE != os.O_WRONLY)

        builtins.open = io.open = wrap(io.open, open_reads)
        os.open = wrap(os.open, os_open_reads)

    def _note(self, file: Any, reads: bool) -> None:  # file: whatever the code passed to open
        if not reads or isinstance(file, int):
            return
        try:
            path = os.path.abspath(os.fsdecode(os.fspath(file)))
        except Exception:  # noqa: BLE001 - not a path: the real open says so to the code that called it
            return
        if self.paths is not None:
            self.paths.add(path)
        if importing(sys._getframe(2), is_local_path):
            self.at_import.add(path)

    def take(self, root: str) -> list[str]:
        """The files opened since the last take, or by an import, that are data of the project: under ``root``, no
        bytecode and no installed package; as paths from ``root``. A module of the code is among them when the code
        opened it itself (its own source, ``open(__file__)``: Python imports a module without ``open``), and then
        the recording depends on all of its text, comments included."""
        paths, self.paths = (self.paths or set()) | self.at_import, set()
        top = os.path.abspath(root) + os.sep
        return sorted(
            os.path.relpath(p, root)
            for p in paths
            if p.startswith(top) and not is_installed(p) and "__pycache__" not in p.split(os.sep) and os.path.isfile(p)
        )
