"""The recording child process: runs each request under a tracer and sends back what it saw.

The build (``record.py``) starts this process with ``start_child`` and sends it
batches of requests; ``child_main`` answers them until the build closes its
input. For each request it imports the module, makes the arguments (``Made``
values are made here), runs the function or test under a trace function that
keeps the first call from each place in the project's code (``_CallTracer``), or
only the test's own call (``_TargetOnly``), and writes the ``Recording`` (see
``recording.pack``) to a reply file whose path it sends as one JSON line.

Either way the recording also says what the run depended on: every function of
the project whose code ran and every call seen between them (see ``observed``),
the modules it had loaded, and the files it opened for reading (``_Opened``),
so that the build keeps it only as long as none of those changes.

Only this process imports the project's code: objects of the project's own
classes leave it as ``Opaque`` values (``project_object``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Container, Iterator
from contextlib import AbstractContextManager
from types import CodeType, FrameType, ModuleType
from typing import Any, BinaryIO

from docs_hooks.base.errors import TraceError
from docs_hooks.run import children
from docs_hooks.run.observed import (
    CallObserver,
    calls_seen,
    enclosing,
    functions_run,
    importing,
    is_installed,
    via_place,
)
from docs_hooks.run.recording import MAX_ENTRIES, Call, Made, Opaque, Recording, capped_summary, pack, unpack

# What sys.settrace takes: called with a frame, the event and its argument, it gives the frame's local tracer.
Tracer = Callable[[FrameType, str, Any], Any]

#: The folder the child writes its replies to, which the build makes and removes.
REPLIES_ENV = "DOCS_HOOKS_RECORDER_REPLIES"

_LOCAL_ROOTS: list[str] = []  # folders of the project's own code (set in the child)
_BASELINE: set[str] = set()  # modules the child had before it could import the project (docs_hooks, ...)


def _is_local_module(name: str | None) -> bool:
    """Whether module ``name`` was loaded from the project's own code (not the environment)."""
    if not name or not _LOCAL_ROOTS or name in _BASELINE:
        return False
    file = getattr(sys.modules.get(name), "__file__", None)
    if not file:
        return name == "__main__"
    return _is_local_path(file)


# A module file -> whether it is the project's: asked for every loaded module after every request,
# hundreds of them (NumPy's, pytest's), whose answer never changes.
_LOCAL_FILES: dict[tuple[str, tuple], bool] = {}


def _is_local_file(file: str) -> bool:
    """Whether an absolute path is in the project. Code compiled from a string (``python -c``, which starts this
    child, ``exec``) is named ``<string>``, which ``abspath`` would put in the current folder: it is no file."""
    if os.path.basename(file).startswith("<"):
        return False
    return not is_installed(file) and any(file.startswith(os.path.abspath(r) + os.sep) for r in _LOCAL_ROOTS)


def project_object(obj: Any) -> Opaque | None:
    """``obj`` as an ``Opaque`` when it is a class, function or object of the project's own code, else None."""
    import dataclasses
    import types

    if isinstance(obj, (type, types.FunctionType)):
        if _is_local_module(getattr(obj, "__module__", None)):
            return Opaque(f"{obj.__module__}.{obj.__qualname__}", repr(obj))
        return None
    cls = type(obj)
    if not _is_local_module(cls.__module__):
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


def _load_module(name: str, project_root: str) -> ModuleType:
    """A module by dotted name, or by the path of its file (loaded once, under its file's stem)."""
    import importlib
    import importlib.util

    if not name.endswith(".py"):
        return importlib.import_module(name)
    path = os.path.abspath(os.path.join(project_root, name))
    stem = os.path.splitext(os.path.basename(path))[0]
    loaded = sys.modules.get(stem)
    if loaded is not None and os.path.abspath(getattr(loaded, "__file__", "") or "") == path:
        return loaded
    spec = importlib.util.spec_from_file_location(stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no Python file at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(stem, None)
        raise
    return module


def _attr_path(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _make(value: Any, project_root: str) -> Any:
    """``value`` with every ``Made`` in it made (calls happen here, in the child)."""
    if isinstance(value, Made):
        args = [_make(a, project_root) for a in value.args]
        result = _attr_path(_load_module(value.module, project_root), value.function)(*args)
        return result if value.item is None else result[value.item]
    if isinstance(value, tuple):
        return tuple(_make(v, project_root) for v in value)
    if isinstance(value, list):
        return [_make(v, project_root) for v in value]
    return value


def _loaded_files(baseline: set[str], project_root: str) -> set[str]:
    """Files of the project's own modules imported since ``baseline`` (they can change a result)."""
    out = set()
    root = os.path.abspath(project_root) + os.sep
    for name, module in list(sys.modules.items()):
        if name in baseline or not _is_local_module(name):
            continue
        file = getattr(module, "__file__", None)
        if file and os.path.abspath(file).startswith(root):
            out.add(os.path.abspath(file))
    return out


def _snapshot(value: Any, depth: int = 0) -> Any:
    """A copy that later in-place changes cannot alter."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        pass  # then no value is a NumPy array
    else:
        if isinstance(value, np.ndarray):
            # too large to keep: its summary (copying it first would cost as much)
            return value.copy() if value.size <= MAX_ENTRIES else capped_summary(value)
    if isinstance(value, (list, tuple)) and len(value) > MAX_ENTRIES:
        return capped_summary(value)
    if depth < 2 and isinstance(value, tuple):
        return tuple(_snapshot(v, depth + 1) for v in value)
    if depth < 2 and isinstance(value, list):
        return [_snapshot(v, depth + 1) for v in value]
    if depth < 2 and isinstance(value, dict):
        return {k: _snapshot(v, depth + 1) for k, v in value.items()}
    numpy = sys.modules.get("numpy")  # a NumPy scalar is a plain value: only where NumPy was imported
    if isinstance(value, (int, float, complex, str, bool, type(None))) or (
        numpy is not None and isinstance(value, numpy.generic)
    ):
        return value
    if depth < 2 and not isinstance(value, (type, set, frozenset, bytes)):
        # An object of the project (a layer, its ``self``) as it is now: its fields change as the code runs on.
        made = project_object(value)
        if made is not None:  # no fields yet (``self`` as __init__ starts) is what it holds at that moment too
            return Opaque(made.type, made.text, {k: _snapshot(v, depth + 1) for k, v in made.fields.items()})
    return value  # sent as it is when the build reads it (see pack), else as its repr


def _test_target(module: ModuleType, function: str) -> tuple[Callable[..., Any], CodeType | None, Callable[[], None]]:
    """What to call for ``function`` of ``module``: (callable, its code, what to run after it).

    A plain function is called as it is. A method of a class (``TestLayerNorm.test_forward``) is called
    bound to a new instance, as the test runners do: a ``unittest.TestCase`` is made with the method's
    name and its ``setUp`` runs first (``tearDown`` and cleanups after); a pytest class is made with no
    arguments, its ``setup_method`` run first. Setting up runs before recording starts.
    """
    path = function.split(".")
    owner = _attr_path(module, ".".join(path[:-1])) if len(path) > 1 else module
    target = getattr(owner, path[-1])
    if not isinstance(owner, type):
        return target, getattr(target, "__code__", None), lambda: None
    import unittest

    code = getattr(target, "__code__", None)
    if issubclass(owner, unittest.TestCase):
        case = owner(path[-1])
        case.setUp()

        def done() -> None:
            try:
                case.tearDown()
            finally:
                case.doCleanups()

        return getattr(case, path[-1]), code, done
    instance = owner()
    if hasattr(instance, "setup_method"):
        instance.setup_method(target)
    return (
        getattr(instance, path[-1]),
        code,
        (lambda: instance.teardown_method(target)) if hasattr(instance, "teardown_method") else (lambda: None),
    )


def _entry_call(frame: FrameType, modules: dict[str, str], function: str) -> Call:
    """The call a frame starts: its caller (when that is the project's code), its line and its arguments."""
    back = frame.f_back
    caller = None
    if back is not None and back.f_code.co_filename in modules:
        # From a comprehension, lambda or nested function: the function of the index it is written in.
        outer = enclosing(back.f_code.co_qualname)
        caller = f"{modules[back.f_code.co_filename]}.{outer}" if outer is not None else None
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    args = {n: _snapshot(frame.f_locals[n]) for n in names if n in frame.f_locals}
    return Call(function, caller, back.f_lineno if back is not None else 0, args, {}, None)


class _CallTracer:
    """Records the first call from each place in the project's code: arguments, locals on return, result."""

    def __init__(self, modules: dict[str, str], imports: set | None = None) -> None:
        self.modules = modules  # absolute filename -> module name
        self.imports = imports  # where the code of calls made while a module is imported goes (see observed)
        self.calls: list[Call] = []
        self.stack: list[tuple[Any, Call]] = []
        self.files: set[str] = set()
        self.places: set[tuple] = set()  # (code, calling code, line) of every call seen
        self.via: set[tuple] = set()  # calls of an instance that reached a method through __call__ (see observed)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Tracer | None:
        """The global trace function: called when a Python function starts (C calls raise no event).

        A frame of the project's code that is the first call from its place gets a
        local tracer, with line events turned off, that sees it return; every other
        frame gets none, so code runs at close to full speed once it has been seen.
        """
        if event != "call":
            return None
        back = frame.f_back
        place = (frame.f_code, back.f_code if back is not None else None, back.f_lineno if back is not None else 0)
        if place in self.places:  # the fast way out: this place was seen (or is not the project's)
            return None
        self.places.add(place)
        module = self.modules.get(frame.f_code.co_filename)
        if module is None:
            return None
        if back is not None:
            through = via_place(frame, back)
            if through is not None:
                self.via.add(through)
            if self.imports is not None and importing(back, _is_local_path):
                self.imports.add(frame.f_code)
        self.files.add(frame.f_code.co_filename)
        qual = frame.f_code.co_qualname
        if "<" in qual:  # comprehensions, lambdas, nested functions
            return None
        # Only the first call from each place is kept (``places`` above): a loop (central differences
        # call the forward thousands of times) adds nothing the pages show, only weight to the cache.
        self.stack.append((frame, _entry_call(frame, self.modules, f"{module}.{qual}")))
        frame.f_trace_lines = False
        return self._local

    def _local(self, frame: FrameType, event: str, arg: Any) -> Tracer:
        if event == "return" and self.stack and self.stack[-1][0] is frame:
            _, call = self.stack.pop()
            call.locals = {k: _snapshot(v) for k, v in frame.f_locals.items()}
            call.result = _snapshot(arg)
            self.calls.append(call)
        return self._local


class _TargetOnly:
    """Records the first call of one function and nothing below it: what it calls is only observed.

    The trace function sees the call start, keeps its frame and arguments, and
    hands over to a ``CallObserver``, which notes each place of a call of the
    project's code once and traces no line; the frame object keeps the
    function's locals when it returns, so they are read afterwards. Central
    differences inside a worked example then run at close to full speed instead
    of being recorded call by call.
    """

    def __init__(self, code: CodeType, modules: dict[str, str], imports: set | None = None) -> None:
        self.code = code
        self.modules = modules
        self.frame: FrameType | None = None
        self.call: Call | None = None
        self.observer = CallObserver(_is_local_path, imports)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is self.code and self.frame is None:
            sys.settrace(self.observer.trace)  # what the function calls is only observed
            back = frame.f_back
            if back is not None:
                self.observer.places.add((frame.f_code, back.f_code, back.f_lineno))
            code = frame.f_code
            name = f"{self.modules.get(code.co_filename, code.co_filename)}.{code.co_qualname}"
            self.frame = frame
            self.call = _entry_call(frame, self.modules, name)
        return None

    def finish(self, result: Any) -> list[Call]:
        """The recorded call, with its locals as they were on return and its ``result``."""
        if self.call is None or self.frame is None:  # set together, when the call starts
            return []
        self.call.locals = {k: _snapshot(v) for k, v in self.frame.f_locals.items()}
        self.call.result = _snapshot(result)
        self.frame = None
        return [self.call]


_OWN_FILES = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # docs_hooks' own


def _cannot_load(name: str, exc: Exception, project_root: str) -> str:
    """Why the test ``name`` could not be loaded, at the line of the project that raised (an import that
    failed, say) and the line that led there: ``cannot load T: src/nn.py:3: ImportError: ... (from
    tests/test_nn.py:3)``."""
    import traceback

    places = [(f.filename, f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
    if isinstance(exc, SyntaxError) and exc.filename:  # compiled, never run: the file is no frame
        places.append((exc.filename, exc.lineno))
    root = os.path.abspath(project_root) + os.sep
    shown = []
    for file, line in places:
        if file.startswith("<"):  # <frozen importlib._bootstrap>, <string>: no file of the project
            continue
        path = os.path.abspath(file)
        if path.startswith(root) and not path.startswith(_OWN_FILES) and _is_project_file(path):
            shown.append(f"{os.path.relpath(path, root)}:{line}")
    what = f"{type(exc).__name__}: {exc}"
    if not shown:
        return f"cannot load {name}: {what}"
    led = f" (from {shown[0]})" if shown[0] != shown[-1] else ""
    return f"cannot load {name}: {shown[-1]}: {what}{led}; fix that line (or show another test)"


def _is_project_file(path: str) -> bool:
    """Whether ``path`` is one of the project's files, not of the environment (a virtual environment in it)."""
    return not is_installed(path)


class _Opened:
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
        if importing(sys._getframe(2), _is_local_path):
            self.at_import.add(path)

    def take(self, root: str, code_files: Container[str]) -> list[str]:
        """The files opened since the last take, or by an import, that are data of the project: under ``root``,
        not its code (``code_files``, which the recording depends on through the functions that ran), no
        bytecode and no installed package; as paths from ``root``."""
        paths, self.paths = (self.paths or set()) | self.at_import, set()
        top = os.path.abspath(root) + os.sep
        return sorted(
            os.path.relpath(p, root)
            for p in paths
            if p.startswith(top)
            and not is_installed(p)
            and "__pycache__" not in p.split(os.sep)
            and p not in code_files
            and os.path.isfile(p)
        )


class _Session:
    """What the child keeps between requests: the code that ran while a module of the project was imported (every
    recording made after depends on it: ``sigmoid = Sigmoid()`` at a module's top level runs ``Sigmoid.__init__``
    once, for all of them), and the log of opened files."""

    def __init__(self) -> None:
        self.imported: set = set()  # code objects
        self.opened = _Opened()

    def importing(self) -> AbstractContextManager[None]:
        """Run the next block, which only imports, noting the project's code that runs there: all of it runs at
        import time (a context manager)."""
        from contextlib import contextmanager

        observer = CallObserver(_is_local_path)

        @contextmanager
        def on() -> Iterator[None]:
            sys.settrace(observer.trace)
            try:
                yield
            finally:
                sys.settrace(None)
                self.imported.update(code for code, _, _ in observer.places)

        return on()


def _is_local_path(file: str) -> bool:
    """Whether a file of code (a code object's filename) is the project's own (see ``_is_local_module``)."""
    key = (file, tuple(_LOCAL_ROOTS))
    local = _LOCAL_FILES.get(key)
    if local is None:
        local = _LOCAL_FILES[key] = _is_local_file(os.path.abspath(file))
    return local


def _observing(trace: Tracer) -> AbstractContextManager[None]:
    """Run the next block with ``trace`` as the trace function (a context manager)."""
    from contextlib import contextmanager

    @contextmanager
    def on() -> Iterator[None]:
        sys.settrace(trace)
        try:
            yield
        finally:
            sys.settrace(None)

    return on()


def _run_request(
    request: dict, modules: dict[str, str], baseline: set[str] | None = None, session: _Session | None = None
) -> Recording:
    import traceback

    session = session or _Session()
    kind = request["kind"]
    root = request["project_root"]
    rec = Recording(request["name"])
    tracer = _CallTracer(modules, session.imported)
    setup = CallObserver(_is_local_path, session.imported)  # what setting up the test runs counts for it
    session.opened.paths = set()
    try:
        with session.importing():
            module = _load_module(request["module"], root)
        with _observing(setup.trace):
            target, code, done = _test_target(module, request["function"])
    except Exception as exc:
        session.opened.paths = None
        raise TraceError(_cannot_load(request["name"], exc, root)) from None
    maker_tracer = _CallTracer(modules, session.imported)  # to learn what making the arguments ran
    sys.settrace(maker_tracer)
    try:
        args = _make(tuple(request.get("args", [])), root)
        if kind == "call" and request.get("args_from"):
            args = _attr_path(module, request["args_from"])(*args)
            args = args if isinstance(args, tuple) else (args,)
        over = _make(request.get("over"), root)
    except Exception:
        sys.settrace(None)
        session.opened.paths = None
        raise TraceError(f"cannot make the arguments of {request['name']}:\n{traceback.format_exc()}") from None
    finally:
        sys.settrace(None)
    only = _TargetOnly(code, modules, session.imported) if request.get("target_only") and code is not None else None
    failed = ""
    sys.settrace(only or tracer)
    try:
        if over is None:
            rec.result = target(*args)
        else:  # the function once for each (key, value) of a mapping
            rec.result = {key: target(key, value, *args) for key, value in over.items()}
    except Exception:
        sys.settrace(None)
        failed = f"{request['name']} raised while recording:\n{traceback.format_exc()}"
    except SystemExit as exc:
        sys.settrace(None)
        session.opened.paths = None
        exit_code = exc.code if exc.code is None or isinstance(exc.code, int) else repr(exc.code)
        raised = exc.__traceback__  # set: the exception was raised
        below = raised.tb_next if raised is not None else None  # this function's own frame left out
        where = "".join(traceback.format_exception(type(exc), exc, below)).rstrip().splitlines()
        raise TraceError(
            f"{request['name']} called sys.exit({'' if exit_code is None else exit_code}) while recording, so it never "
            f"returned; a test that a page records must return normally: remove the exit "
            f"(or show another test). Where it exited:\n" + "\n".join(where[-6:])
        ) from None
    finally:
        sys.settrace(None)
    opened = session.opened.take(root, modules)
    session.opened.paths = None
    try:
        done()  # a test class's tearDown
    except Exception:
        failed += f"{chr(10) if failed else ''}{request['name']}: tearDown raised:\n{traceback.format_exc()}"
    if failed:
        raise TraceError(failed)
    observers: list[_CallTracer | CallObserver] = [tracer, maker_tracer, setup]
    observers += [only.observer] if only is not None else []
    if only is not None:
        rec.calls = only.finish(rec.result if over is None else None)
        tracer.files.add(only.code.co_filename)
    else:
        rec.calls = tracer.calls
    files = tracer.files | maker_tracer.files
    if baseline is not None:
        files |= _loaded_files(baseline, root)
    rec.files = sorted(os.path.relpath(f, root) for f in files)
    places = set().union(*(o.places for o in observers))
    loaded = {os.path.normpath(os.path.join(root, f)) for f in rec.files}
    # Code that ran when the loaded modules were imported made the state this run started from.
    at_import = {(c, None, 0) for c in session.imported if os.path.normpath(os.path.abspath(c.co_filename)) in loaded}
    rec.reached = functions_run(places | at_import, modules)
    rec.seen = calls_seen(places, set().union(*(o.via for o in observers)), modules)
    rec.opened = opened
    if code is not None and code.co_filename in modules and "<" not in code.co_qualname:
        rec.target = f"{modules[code.co_filename]}.{code.co_qualname}"
    rec.result = _snapshot(rec.result)
    return rec


def child_main() -> None:  # pragma: no cover - runs in the child process
    """Answer batches of requests until the build closes the pipe.

    One process serves the whole build, so Python, NumPy and the project are
    imported once. A batch comes on stdin (its length, then ``pack``'s bytes);
    the child answers on a copy of the original stdout, one JSON line per
    message; what the code under test prints goes to stderr, never into a message.
    """
    children.watch_parent()
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    # typeshed marks sys.__stdout__ Final; the child rebinds it, so code that restores it prints to stderr too
    sys.stdout = sys.__stdout__ = os.fdopen(1, "w", buffering=1)  # type: ignore[misc]
    replies = os.environ.get(REPLIES_ENV) or tempfile.mkdtemp(prefix="docs-hooks-replies-")
    try:
        _serve(channel, replies)
    finally:
        shutil.rmtree(replies, ignore_errors=True)


def _read_batch(stream: BinaryIO) -> Any:  # pragma: no cover - runs in the child process
    head = stream.read(8)
    if len(head) < 8:
        return None
    n = int.from_bytes(head, "little")
    body = stream.read(n)
    if len(body) < n:
        return None
    return unpack(body)


def _printed_so_far() -> int | None:  # pragma: no cover - runs in the child process
    """Where the child's output file stands: what a request prints starts there."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        return os.lseek(2, 0, os.SEEK_CUR)
    except (OSError, ValueError):
        return None


def _serve(channel: BinaryIO, replies: str) -> None:  # pragma: no cover - runs in the child process
    """The child's loop: for each request, ``{"start": i}`` as it starts, then ``{"done": i, "path": ...}``
    (its recording, written to a file in ``replies``) or ``{"done": i, "error": ...}``.

    The build reads a reply file in one go; a reply of megabytes sent through the
    pipe itself would be read 64 KiB at a time by a thread that must win the
    interpreter from the build's own thread for every piece. The ``start``
    messages let the build hold each request to its time limit.
    """
    baseline = set(sys.modules)
    _BASELINE.update(baseline)
    configured = False
    session = _Session()
    session.opened.install()

    def configure(sys_path: list[str], project_root: str) -> None:
        for p in sys_path:
            sys.path.insert(0, p)
        _LOCAL_ROOTS[:] = sys_path
        os.chdir(project_root)

    def send(message: dict) -> None:
        channel.write(json.dumps(message).encode() + b"\n")
        channel.flush()

    while True:
        payload = _read_batch(sys.stdin.buffer)
        if payload is None:
            return
        if not configured:
            configure(payload["sys_path"], payload["project_root"])
            configured = True
        for i, request in enumerate(payload["requests"]):  # in order (two requests may share a name)
            send({"start": i, "printed": _printed_so_far()})
            try:
                rec = _run_request(request, payload["modules"], baseline, session)
            except TraceError as err:
                send({"done": i, "error": err.message, "exited": isinstance(err.__context__, SystemExit)})
                continue
            fd, path = tempfile.mkstemp(dir=replies, suffix=".rec")
            with os.fdopen(fd, "wb") as f:
                f.write(pack(rec, project_object))
            send({"done": i, "path": path})
