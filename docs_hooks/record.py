"""Run real code under a recorder and keep what it saw: every call's inputs, locals and result.

A request names what to run: a test (``tests/test_ops.py::test_layer_norm_worked_example``)
or a function of a helper module with arguments. Requests run in a child
process (so that edited code is always the code that runs, and nothing a test
does leaks into the build); one child serves every request of a build. Each
recording is cached under a key made from the text of every file it touched,
so an edit re-runs only the recordings that depend on the edited file.

Arguments the build process cannot make (a config from a helper module, a
random generator, one array of another function's result) are described by
``Made`` and made in the child. Values of the project's own classes are sent
back as ``Opaque`` (type, repr and fields), because the build process does not
import the project's modules.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cachedir import Store, store_file
from .errors import TraceError
from .turns import Turns


@dataclass(frozen=True)
class Made:
    """An argument made in the child process: ``module.function(*args)``, then ``[item]`` when given.

    ``module`` is a dotted module name or the path of a ``.py`` file (absolute,
    or from the project root); ``args`` may hold further ``Made`` values.
    """

    module: str
    function: str
    args: tuple = ()
    item: Any = None


@dataclass
class Opaque:
    """A value of a class defined in the project's own code, as the build process sees it."""

    type: str  # module.qualname of its class (or of the function or class itself)
    text: str  # its repr
    fields: dict = field(default_factory=dict)  # dataclass fields or instance attributes

    def __getattr__(self, name: str):
        """``cfg.n_layers`` reads a recorded field, so expressions of the code evaluate on recordings."""
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(f"recorded {self.__dict__.get('type', 'object')} has no field {name!r}")


@dataclass
class Call:
    function: str  # dotted name: module, then qualified name
    caller: str | None  # dotted name of the calling function when it is recorded code
    caller_line: int  # line in the caller's file where the call was made
    args: dict[str, Any]  # the parameters as they were on entry
    locals: dict[str, Any]  # every local as it was on return
    result: Any


@dataclass
class Recording:
    request: str
    calls: list[Call] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # repo paths whose code ran
    result: Any = None

    def calls_of(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.function == name]

    def first(self, name: str) -> Call:
        calls = self.calls_of(name)
        if not calls:
            recorded = sorted({c.function for c in self.calls})
            raise TraceError(
                f"{self.request} never called {name}; it called: {', '.join(recorded) or 'nothing recorded'}"
            )
        return calls[0]


# ---------------------------------------------------------------------------- the child side

_LOCAL_ROOTS: list[str] = []  # folders of the project's own code (set in the child)
_BASELINE: set[str] = set()  # modules the child had before it could import the project (docs_hooks, ...)


def _is_local_module(name: str | None) -> bool:
    """Whether module ``name`` was loaded from the project's own code (not the environment)."""
    if not name or not _LOCAL_ROOTS or name in _BASELINE:
        return False
    file = getattr(sys.modules.get(name), "__file__", None)
    if not file:
        return name == "__main__"
    key = (file, tuple(_LOCAL_ROOTS))
    local = _LOCAL_FILES.get(key)
    if local is None:
        local = _LOCAL_FILES[key] = _is_local_file(os.path.abspath(file))
    return local


# A module file -> whether it is the project's: asked for every loaded module after every request,
# hundreds of them (NumPy's, pytest's), whose answer never changes.
_LOCAL_FILES: dict[tuple[str, tuple], bool] = {}


def _is_local_file(file: str) -> bool:
    prefixes = {os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix)}
    if any(file.startswith(p) for p in prefixes) or "site-packages" in file:
        return False
    return any(file.startswith(os.path.abspath(r) + os.sep) for r in _LOCAL_ROOTS)


def _opaque(obj: Any) -> Opaque | None:
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


class _Pickler(pickle.Pickler):
    """Pickles the project's own objects as ``Opaque``, so the build process can read them."""

    _plain = (int, float, complex, str, bytes, bool, list, tuple, dict, set, type(None))

    def reducer_override(self, obj):
        if type(obj) in self._plain or type(obj).__module__ in ("numpy", "builtins"):
            return NotImplemented
        value = _opaque(obj)
        if value is None:
            return NotImplemented
        return (Opaque, (value.type, value.text, value.fields))


def _dump(obj: Any, f) -> None:
    _Pickler(f, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)


def _load_module(name: str, project_root: str):
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
        np = None
    if np is not None and isinstance(value, np.ndarray):
        return value.copy()
    if depth < 2 and isinstance(value, tuple):
        return tuple(_snapshot(v, depth + 1) for v in value)
    if depth < 2 and isinstance(value, list):
        return [_snapshot(v, depth + 1) for v in value]
    if depth < 2 and isinstance(value, dict):
        return {k: _snapshot(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (int, float, complex, str, bool, type(None))) or (np is not None and isinstance(value, np.generic)):
        return value
    try:
        pickle.dumps(value)
        return value
    except Exception:
        return repr(value)


def _test_target(module, function: str):
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

        def done():
            try:
                case.tearDown()
            finally:
                case.doCleanups()

        return getattr(case, path[-1]), code, done
    case = owner()
    if hasattr(case, "setup_method"):
        case.setup_method(target)
    return getattr(case, path[-1]), code, (lambda: case.teardown_method(target)) if hasattr(case, "teardown_method") \
        else (lambda: None)


def _entry_call(frame, modules: dict[str, str], function: str) -> Call:
    """The call a frame starts: its caller (when that is the project's code), its line and its arguments."""
    back = frame.f_back
    caller = None
    if back is not None and back.f_code.co_filename in modules and "<" not in back.f_code.co_qualname:
        caller = f"{modules[back.f_code.co_filename]}.{back.f_code.co_qualname}"
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    args = {n: _snapshot(frame.f_locals[n]) for n in names if n in frame.f_locals}
    return Call(function, caller, back.f_lineno if back is not None else 0, args, {}, None)


class _Recorder:
    def __init__(self, modules: dict[str, str]):
        self.modules = modules  # absolute filename -> module name
        self.calls: list[Call] = []
        self.stack: list[tuple[Any, Call]] = []
        self.files: set[str] = set()
        self.places: set[tuple] = set()  # (code, calling code, line) of every call seen

    def __call__(self, frame, event, arg):
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
        qual = frame.f_code.co_qualname
        if "<" in qual:  # comprehensions, lambdas, nested functions
            return None
        self.files.add(frame.f_code.co_filename)
        # Only the first call from each place is kept (``places`` above): a loop (central differences
        # call the forward thousands of times) adds nothing the pages show, only weight to the cache.
        self.stack.append((frame, _entry_call(frame, self.modules, f"{module}.{qual}")))
        frame.f_trace_lines = False
        return self._local

    def _local(self, frame, event, arg):
        if event == "return" and self.stack and self.stack[-1][0] is frame:
            _, call = self.stack.pop()
            call.locals = {k: _snapshot(v) for k, v in frame.f_locals.items()}
            call.result = _snapshot(arg)
            self.calls.append(call)
        return self._local


class _TargetOnly:
    """Records the first call of one function and nothing below it: everything it calls runs untraced.

    The trace function sees the call start, keeps its frame and arguments, and
    turns tracing off; the frame object keeps the function's locals when it
    returns, so they are read afterwards. Central differences inside a worked
    example then run at full speed instead of raising an event per call.
    """

    def __init__(self, code, modules: dict[str, str]):
        self.code = code
        self.modules = modules
        self.frame = None
        self.call: Call | None = None

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code is self.code and self.frame is None:
            sys.settrace(None)  # what the function calls runs at full speed
            code = frame.f_code
            name = f"{self.modules.get(code.co_filename, code.co_filename)}.{code.co_qualname}"
            self.frame = frame
            self.call = _entry_call(frame, self.modules, name)
        return None

    def finish(self, result: Any) -> list[Call]:
        """The recorded call, with its locals as they were on return and its ``result``."""
        if self.call is None:
            return []
        self.call.locals = {k: _snapshot(v) for k, v in self.frame.f_locals.items()}
        self.call.result = _snapshot(result)
        self.frame = None
        return [self.call]


def _run_request(request: dict, modules: dict[str, str], baseline: set[str] | None = None) -> Recording:
    import traceback

    kind = request["kind"]
    root = request["project_root"]
    rec = Recording(request["name"])
    recorder = _Recorder(modules)
    try:
        module = _load_module(request["module"], root)
        target, code, done = _test_target(module, request["function"])
    except Exception as exc:
        raise TraceError(f"cannot load {request['name']}: {type(exc).__name__}: {exc}") from None
    maker_recorder = _Recorder(modules)  # only to learn which files making the arguments ran
    sys.settrace(maker_recorder)
    try:
        args = _make(tuple(request.get("args", [])), root)
        if kind == "call" and request.get("args_from"):
            args = _attr_path(module, request["args_from"])(*args)
            args = args if isinstance(args, tuple) else (args,)
        over = _make(request.get("over"), root)
    except Exception:
        sys.settrace(None)
        raise TraceError(f"cannot make the arguments of {request['name']}:\n{traceback.format_exc()}") from None
    finally:
        sys.settrace(None)
    only = _TargetOnly(code, modules) if request.get("target_only") and code is not None else None
    failed = ""
    sys.settrace(only or recorder)
    try:
        if over is None:
            rec.result = target(*args)
        else:  # the function once for each (key, value) of a mapping
            rec.result = {key: target(key, value, *args) for key, value in over.items()}
    except Exception:
        sys.settrace(None)
        failed = f"{request['name']} raised while recording:\n{traceback.format_exc()}"
    finally:
        sys.settrace(None)
    try:
        done()  # a test class's tearDown
    except Exception:
        failed += f"{chr(10) if failed else ''}{request['name']}: tearDown raised:\n{traceback.format_exc()}"
    if failed:
        raise TraceError(failed)
    if only is not None:
        rec.calls = only.finish(rec.result if over is None else None)
        recorder.files.add(code.co_filename)
    else:
        rec.calls = recorder.calls
    files = recorder.files | maker_recorder.files
    if baseline is not None:
        files |= _loaded_files(baseline, root)
    rec.files = sorted(os.path.relpath(f, root) for f in files)
    rec.result = _snapshot(rec.result)
    return rec


def child_main() -> None:  # pragma: no cover - runs in the child process
    """Answer batches of requests until the build closes the pipe.

    One process serves the whole build, so Python, NumPy and the project are
    imported once. Messages are pickles on stdin and on a copy of the original
    stdout; what the code under test prints goes to stderr, never into a message.
    """
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.__stdout__ = os.fdopen(1, "w", buffering=1)
    replies = tempfile.mkdtemp(prefix="docs-hooks-replies-")
    try:
        _serve(channel, replies)
    finally:
        shutil.rmtree(replies, ignore_errors=True)


def _serve(channel, replies: str) -> None:  # pragma: no cover - runs in the child process
    """The child's loop: each reply is written to a file in ``replies`` and its path sent on ``channel``.

    The build reads a file in one go; a reply of megabytes sent through the pipe
    itself would be read 64 KiB at a time by a thread that must win the
    interpreter from the build's own thread for every piece.
    """
    baseline = set(sys.modules)
    _BASELINE.update(baseline)
    configured = False

    def configure(sys_path: list[str], project_root: str) -> None:
        for p in sys_path:
            sys.path.insert(0, p)
        _LOCAL_ROOTS[:] = sys_path
        os.chdir(project_root)

    preload = os.environ.get(PRELOAD_ENV)
    if preload:  # started ahead of the build's first request: import the project meanwhile
        import importlib
        import json

        spec = json.loads(preload)
        configure(spec["sys_path"], spec["project_root"])
        configured = True
        for name in spec["modules"]:
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - a request that needs the module reports the error
                pass
    while True:
        try:
            payload = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        if not configured:
            configure(payload["sys_path"], payload["project_root"])
            configured = True
        out = []  # in the order of the requests (two requests may share a name)
        for request in payload["requests"]:
            try:
                out.append(_run_request(request, payload["modules"], baseline))
            except TraceError as err:
                out.append(err)
        fd, path = tempfile.mkstemp(dir=replies, suffix=".pickle")
        with os.fdopen(fd, "wb") as f:
            _dump(out, f)
        pickle.dump(path, channel)
        channel.flush()


# ---------------------------------------------------------------------------- the build side


@dataclass(frozen=True)
class Request:
    """What to run. ``name`` is how pages and messages refer to it."""

    name: str
    module: str  # dotted module to import, or the path of a .py file
    function: str  # attribute path inside it
    args: tuple = ()  # may hold Made values: arguments made in the child
    args_from: str | None = None  # a function of the same module that returns the arguments
    over: Made | None = None  # a mapping made in the child: call function(key, value, *args) for each item
    # Record only the call of ``function`` itself (arguments, locals on return, result); what it calls runs
    # untraced. For a worked example that shows the test's own locals: see _TargetOnly.
    target_only: bool = False


def test_request(node_id: str, project_root: Path) -> Request:
    """A request for a test by its pytest id: ``tests/test_x.py::test_name``, ``test_x.py::TestCase::test_name``.

    The module is the file's path from the project root (``tests.test_x``), as
    the code index names it; a method of a test class is run on an instance of
    its class (see ``_test_target``).
    """
    path, sep, func = node_id.partition("::")
    if not sep or not path.endswith(".py") or not func or not all(p.isidentifier() for p in func.split("::")):
        raise TraceError(f"'{node_id}' is not a test id; write it as tests/test_file.py::test_name "
                         "or tests/test_file.py::TestClass::test_name")
    file = project_root / path
    if not file.exists():
        raise TraceError(f"test file '{path}' does not exist (from '{node_id}')")
    module = ".".join(Path(path).with_suffix("").parts)
    return Request(node_id, module, func.replace("::", "."))


class Recorder:
    """Runs requests in one child process and caches each recording by the code it touched."""

    def __init__(self, project_root: Path, sys_path: list[Path], modules: dict[str, str],
                 file_digests: dict[str, str], cache_dir: Path | None, spare: tuple | None = None):
        self.project_root = project_root
        self.sys_path = [str(p) for p in sys_path]
        self.modules = modules  # absolute filename -> module name
        self.file_digests = file_digests  # repo path -> digest of its current text
        # Every recording of the project in one store (see cachedir.Store), keyed by its request.
        self.store = Store(store_file(cache_dir, "recordings")) if cache_dir is not None else None
        self.runs = 0  # how many child processes were started (for tests)
        self._memo: dict[Request, Recording] = {}
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        self._finalizer: weakref.finalize | None = None
        self._turns = Turns()  # one conversation with the child at a time
        # Recorded, not yet in the store: key -> (digests of the files it touched, recording). Written while
        # the child runs the next batch, by flush(), and at the latest when this recorder goes (or the
        # process ends), so a caller that never flushes loses nothing.
        self._unstored: dict[str, tuple[dict, Recording]] = {}
        self._unstored_finalizer = weakref.finalize(self, _write_recordings, self.store, self._unstored)
        # A child started ahead of time (see start_child), used on the first miss, else stopped with the recorder.
        self._spare = spare
        self._spare_finalizer = weakref.finalize(self, stop_child, *spare) if spare else None

    def _digest(self, repo_path: str) -> str | None:
        """Digest of a file's text: from the index, else read now (helpers outside the code roots)."""
        known = self.file_digests.get(repo_path)
        if known is not None:
            return known
        try:
            return hashlib.sha256((self.project_root / repo_path).read_bytes()).hexdigest()
        except OSError:
            return None

    @staticmethod
    def _key(req: Request) -> str:
        return hashlib.sha256(repr(req).encode()).hexdigest()[:24]

    def _cached(self, requests: list[Request]) -> dict[Request, Recording]:
        """The stored recordings of ``requests`` that are still true: no file they touched has changed."""
        if self.store is None or not requests:
            return {}
        keys = {self._key(req): req for req in requests}
        found = {}
        for key, raw in self.store.get_many(list(keys)).items():
            try:
                stored = pickle.loads(raw)
            except Exception:
                continue  # written by another version of this code: recorded again
            if stored.get("digests") != {f: self._digest(f) for f in stored.get("digests", {})}:
                continue
            found[keys[key]] = stored["recording"]
        return found

    def flush(self) -> None:
        """Write what was recorded since the last write to the store (the build calls it when its pages are done)."""
        _write_recordings(self.store, self._unstored)

    def record(self, requests: list[Request]) -> dict[Request, Recording]:
        """Recordings for ``requests``; raises TraceError for one that failed."""
        out = self.record_each(requests)
        for value in out.values():
            if isinstance(value, TraceError):
                raise value
        return out

    def record_each(self, requests: list[Request]) -> dict[Request, "Recording | TraceError"]:
        """Recordings for ``requests``, all in one child process; a request that failed maps to its error.

        One conversation with the child at a time (the prefetch runs in threads). A
        caller whose requests are in another caller's batch waits for that batch
        only: it is woken as soon as the recordings are in, not after whatever
        batch the other caller sends next.
        """
        memo = self._memo
        with self._turns.turn(lambda: all(req in memo for req in requests)) as recorded:
            if recorded:  # already (by the prefetch, say)
                return {req: memo[req] for req in requests}
            return self._record_each(requests)

    def _record_each(self, requests: list[Request]) -> dict[Request, "Recording | TraceError"]:
        missing = [req for req in dict.fromkeys(requests) if req not in self._memo]
        self._memo.update(self._cached(missing))
        todo = [req for req in missing if req not in self._memo]
        if todo:
            for req, value in zip(todo, self._run_child(todo)):
                self._memo[req] = value
            self._turns.landed()  # a page waiting for these goes on
            if self.store is not None:
                for req in todo:
                    rec = self._memo[req]
                    if not isinstance(rec, TraceError):
                        self._unstored[self._key(req)] = ({f: self._digest(f) for f in set(rec.files)}, rec)
        return {req: self._memo[req] for req in requests}

    def _start(self) -> subprocess.Popen:
        """The child process that serves this recorder's requests (started on the first miss)."""
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self.runs += 1
        if self._spare is not None and self._spare[0].poll() is None:
            (self._proc, self._stderr), self._spare = self._spare, None
            self._spare_finalizer.detach()
        else:
            self._proc, self._stderr = start_child(self.project_root)
        self._finalizer = weakref.finalize(self, stop_child, self._proc, self._stderr)
        return self._proc

    def close(self) -> None:
        """Store what is not stored yet, and stop the child process (it also stops when this process exits)."""
        self.flush()
        if self._finalizer is not None:
            self._finalizer()
        self._proc = None
        if self.store is not None:
            self.store.close()

    def _run_child(self, requests: list[Request]) -> list:
        """One batch through the child: a Recording (or the TraceError) per request, in their order."""
        payload = {
            "sys_path": self.sys_path,
            "project_root": str(self.project_root),
            "modules": self.modules,
            "requests": [
                {"kind": "call", "name": r.name, "module": r.module, "function": r.function,
                 "args": list(r.args), "args_from": r.args_from, "over": r.over, "target_only": r.target_only,
                 "project_root": str(self.project_root)}
                for r in requests
            ],
        }
        proc = self._start()
        try:
            pickle.dump(payload, proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
            self.flush()  # the last batch's recordings go to the store while the child runs this one
            reply = Path(pickle.load(proc.stdout))
            try:
                return pickle.loads(reply.read_bytes())
            finally:
                reply.unlink(missing_ok=True)
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            stderr = b""
            if self._stderr is not None:
                if isinstance(exc, EOFError):  # it is exiting: let it finish writing its traceback
                    try:
                        proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        pass
                self._stderr.seek(0)
                stderr = self._stderr.read()
            self.close()
            raise TraceError(
                f"the recording process failed ({type(exc).__name__}):\n"
                + stderr.decode(errors="replace")[-4000:]
            ) from None


def _write_recordings(store: Store | None, pending: dict[str, tuple[dict, Recording]]) -> None:
    """Write ``pending`` (key -> (digests, recording)) to ``store`` in one transaction, and empty it."""
    if store is None or not pending:
        return
    items = dict(pending)
    for key in items:
        pending.pop(key, None)
    store.put_many({key: pickle.dumps({"digests": digests, "recording": rec}, protocol=pickle.HIGHEST_PROTOCOL)
                    for key, (digests, rec) in items.items()})


PRELOAD_ENV = "DOCS_HOOKS_RECORDER_PRELOAD"


def start_child(project_root: Path, sys_path: list[Path] | None = None, preload: list[str] = ()) -> tuple:
    """A recording child process, and the file its stderr goes to.

    With ``sys_path`` and ``preload`` it imports those modules of the project
    while it waits for its first request, so a build can start it before it has
    indexed the code and find Python and the project's imports ready.
    """
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    if sys_path is not None:
        import json

        env[PRELOAD_ENV] = json.dumps({"sys_path": [str(p) for p in sys_path], "project_root": str(project_root),
                                       "modules": list(preload)})
    else:
        env.pop(PRELOAD_ENV, None)
    stderr = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from docs_hooks.record import child_main; child_main()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=project_root, env=env,
    )
    return proc, stderr


def stop_child(proc: subprocess.Popen, stderr) -> None:
    """Close the child's input (it exits at the end of its input), then make sure it has gone."""
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=5)
    except Exception:
        proc.kill()
        proc.wait()
    for f in (proc.stdout, stderr):
        try:
            f.close()
        except Exception:
            pass
