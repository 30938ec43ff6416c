"""The recording child process: runs each request under a tracer and sends back what it saw.

The build (``record_process.py``) starts this process with ``start_child`` and sends it
batches of requests; ``child_main`` answers them until the build closes its
input. For each request it imports the module, makes the arguments (``Made``
values are made here), runs the function or test under a trace function that
keeps the first call from each place in the project's code (``record_trace.CallTracer``), or
only the test's own call (``TargetOnly``), and writes the ``Recording`` (see
``recording.pack``) to a reply file whose path it sends as one JSON line.

Either way the recording also says what the run depended on: every function of
the project whose code ran and every call seen between them (see ``observed``),
the modules it had loaded, and the files it opened for reading (``record_local.Opened``),
so that the build keeps it only as long as none of those changes.

Only this process imports the project's code: objects of the project's own
classes leave it as ``Opaque`` values (``project_object``). What of the process
is the project's is told by ``record_local.py``, what a run keeps of each call by
``record_trace.py``; this module loads, runs and answers. It and those two import
no more of the generator than they need, and each is part of what records
(``request.RECORDER_FILES``): a change to one of them makes every recording again.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from types import CodeType, ModuleType
from typing import Any, BinaryIO

from docs_hooks.base.errors import TraceError
from docs_hooks.run import children
from docs_hooks.run.fromtext import FromText, compile_from_text
from docs_hooks.run.observed import CallObserver, calls_seen, functions_run, is_installed
from docs_hooks.run.record_local import (
    Opened,
    is_local_path,
    loaded_files,
    note_baseline,
    project_object,
    set_roots,
)
from docs_hooks.run.record_trace import CallTracer, TargetOnly, observing, snapshot
from docs_hooks.run.recording import Made, Recording, pack, unpack

#: The folder the child writes its replies to, which the build makes and removes.
REPLIES_ENV = "DOCS_HOOKS_RECORDER_REPLIES"


def _load_module(name: str, project_root: str) -> ModuleType:
    """A module by dotted name, or by the path of its file (loaded once, under its file's stem, compiled from its
    text: see fromtext)."""
    import importlib
    import importlib.util

    if not name.endswith(".py"):
        return importlib.import_module(name)
    path = os.path.abspath(os.path.join(project_root, name))
    stem = os.path.splitext(os.path.basename(path))[0]
    loaded = sys.modules.get(stem)
    if loaded is not None and os.path.abspath(getattr(loaded, "__file__", "") or "") == path:
        return loaded
    spec = importlib.util.spec_from_file_location(stem, path, loader=FromText(stem, path))
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


class _Session:
    """What the child keeps between requests: the code that ran while a module of the project was imported (every
    recording made after depends on it: ``sigmoid = Sigmoid()`` at a module's top level runs ``Sigmoid.__init__``
    once, for all of them), and the log of opened files."""

    def __init__(self) -> None:
        self.imported: set = set()  # code objects
        self.opened = Opened()

    def importing(self) -> AbstractContextManager[None]:
        """Run the next block, which only imports, noting the project's code that runs there: all of it runs at
        import time (a context manager)."""
        from contextlib import contextmanager

        observer = CallObserver(is_local_path)

        @contextmanager
        def on() -> Iterator[None]:
            sys.settrace(observer.trace)
            try:
                yield
            finally:
                sys.settrace(None)
                self.imported.update(code for code, _, _ in observer.places)

        return on()


def _run_request(
    request: dict, modules: dict[str, str], baseline: set[str] | None = None, session: _Session | None = None
) -> Recording:
    import traceback

    session = session or _Session()
    kind = request["kind"]
    root = request["project_root"]
    rec = Recording(request["name"])
    tracer = CallTracer(modules, session.imported)
    setup = CallObserver(is_local_path, session.imported)  # what setting up the test runs counts for it
    session.opened.paths = set()
    try:
        with session.importing():
            module = _load_module(request["module"], root)
        with observing(setup.trace):
            target, code, done = _test_target(module, request["function"])
    except Exception as exc:
        session.opened.paths = None
        raise TraceError(_cannot_load(request["name"], exc, root)) from None
    maker_tracer = CallTracer(modules, session.imported)  # to learn what making the arguments ran
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
    only = TargetOnly(code, modules, session.imported) if request.get("target_only") and code is not None else None
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
    opened = session.opened.take(root)
    session.opened.paths = None
    try:
        done()  # a test class's tearDown
    except Exception:
        failed += f"{chr(10) if failed else ''}{request['name']}: tearDown raised:\n{traceback.format_exc()}"
    if failed:
        raise TraceError(failed)
    observers: list[CallTracer | CallObserver] = [tracer, maker_tracer, setup]
    observers += [only.observer] if only is not None else []
    if only is not None:
        rec.calls = only.finish(rec.result if over is None else None)
        tracer.files.add(only.code.co_filename)
    else:
        rec.calls = tracer.calls
    files = tracer.files | maker_tracer.files
    if baseline is not None:
        files |= loaded_files(baseline, root)
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
    rec.result = snapshot(rec.result)
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
    note_baseline(baseline)
    configured = False
    session = _Session()
    session.opened.install()

    def configure(sys_path: list[str], project_root: str) -> None:
        for p in sys_path:
            sys.path.insert(0, p)
        set_roots(sys_path)
        compile_from_text(sys_path)  # an edit is never read from a stale bytecode cache (see fromtext)
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
