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

What crosses between the build and the child, and what the cache holds, is
data that cannot run code when read (see ``pack``): no pickle. Each request
has a time limit (the ``test_timeout`` setting); a request that runs longer,
or that ends the child, is an error for that request alone, and the requests
after it go to a new child. A value of more than ``MAX_ENTRIES`` entries is
kept as a ``Capped`` summary.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import children
from .cachedir import Store, store_file
from .errors import TraceError
from .settings import DEFAULT_TEST_TIMEOUT
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

    def __hash__(self) -> int:
        """Hashable, as the object it stands for may have been (a class or an instance used as a dict key)."""
        return hash((self.__dict__.get("type"), self.__dict__.get("text")))

    def __getattr__(self, name: str):
        """``cfg.n_layers`` reads a recorded field, so expressions of the code evaluate on recordings."""
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(f"recorded {self.__dict__.get('type', 'object')} has no field {name!r}")


#: An array (or list, tuple, string) with more entries than this is not kept whole: a ``Capped`` summary is
#: kept instead. Worked examples and model runs of a documented project are small; a value this large is
#: no reading matter on a page, and kept whole it would weigh on the cache and the widgets.
MAX_ENTRIES = 100_000
SHOWN_ENTRIES = 10  # the first entries a Capped keeps


@dataclass
class Capped:
    """A recorded value too large to keep (more than ``MAX_ENTRIES`` entries): what it was and a summary."""

    type: str  # numpy.ndarray, list, tuple, str, bytes
    shape: tuple
    dtype: str
    summary: dict = field(default_factory=dict)  # min, max, mean of a numeric array
    first: list = field(default_factory=list)  # its first SHOWN_ENTRIES entries (flattened)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= int(d)
        return n

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        stats = ", ".join(f"{k} {v:.4g}" for k, v in self.summary.items())
        first = ", ".join(repr(v) for v in self.first)
        return (f"<{self.type} of shape {self.shape}, {self.dtype}, {self.size} entries: too large to record "
                f"(more than {MAX_ENTRIES}){'; ' + stats if stats else ''}; first entries [{first}, ...]>")


def _capped(value: Any) -> "Capped | None":
    """A summary of ``value`` when it has more than MAX_ENTRIES entries, else None."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if np is not None and isinstance(value, np.ndarray):
        if value.size <= MAX_ENTRIES:
            return None
        flat = value.reshape(-1)
        summary = {}
        if value.dtype.kind in "biuf":
            finite = flat[np.isfinite(flat)] if value.dtype.kind == "f" else flat
            if finite.size:
                summary = {"min": float(finite.min()), "max": float(finite.max()), "mean": float(finite.mean())}
        return Capped("numpy.ndarray", tuple(int(d) for d in value.shape), str(value.dtype), summary,
                      flat[:SHOWN_ENTRIES].tolist())
    if isinstance(value, (list, tuple, str, bytes)) and len(value) > MAX_ENTRIES:
        first = list(value[:SHOWN_ENTRIES]) if isinstance(value, (list, tuple)) else [value[:SHOWN_ENTRIES]]
        return Capped(type(value).__name__, (len(value),), type(value).__name__, {},
                      [v if isinstance(v, (int, float, str, bool, type(None))) else repr(v) for v in first])
    return None


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


# ---------------------------------------------------------------------------- the data format

# Recordings cross from the child to the build, and sit in the cache, in a form that cannot run code
# when read: a JSON tree, then the raw bytes of every array in it (plain numeric dtypes only), each
# named in the tree by its dtype, shape and place. Reading one back makes JSON values, strings,
# numbers and NumPy arrays; a class of the project becomes an ``Opaque`` (in the child: see _opaque).
_MAGIC = b"docs_hooks-data-1\n"
_ALIGN = 16
_MAX_DEPTH = 40  # deeper than this (or a cycle) is kept as its repr
_PLAIN = (list, tuple, dict, set, frozenset, complex, bytes)


def pack(value: Any) -> bytes:
    """``value`` (recordings, calls, Made, plain data, NumPy arrays) as bytes that ``unpack`` reads back."""
    import numpy as np

    blobs: list[bytes] = []
    size = [0]

    def array(a) -> list:
        data = a.tobytes()  # in C order, whatever the array's layout
        pad = -size[0] % _ALIGN
        if pad:
            blobs.append(b"\0" * pad)
            size[0] += pad
        place = [a.dtype.str, list(a.shape), size[0], len(data)]
        blobs.append(data)
        size[0] += len(data)
        return place

    def enc(v: Any, depth: int) -> Any:
        if v is None or isinstance(v, (bool, str)) or type(v) in (int, float):
            return v
        if depth > _MAX_DEPTH:
            return {"r": [type(v).__qualname__, _safe_repr(v)]}
        d = depth + 1
        if isinstance(v, np.ndarray):
            if v.dtype.hasobject or v.dtype.fields is not None:
                if v.dtype.fields is not None:
                    return {"r": ["numpy.ndarray", _safe_repr(v)]}
                return {"AO": [list(v.shape), [enc(x, d) for x in v.reshape(-1).tolist()]]}
            return {"A": array(v)}
        if isinstance(v, np.generic):
            if isinstance(v, np.object_) or v.dtype.fields is not None:
                return {"r": [type(v).__qualname__, _safe_repr(v)]}
            return {"N": array(np.asarray(v))}
        if isinstance(v, (int, float)):  # subclasses (an IntEnum, say): their plain value
            return int(v) if isinstance(v, int) else float(v)
        if isinstance(v, Recording):
            return {"R": [v.request, enc(v.calls, d), list(v.files), enc(v.result, d)]}
        if isinstance(v, Call):
            return {"c": [v.function, v.caller, v.caller_line, enc(v.args, d), enc(v.locals, d), enc(v.result, d)]}
        if isinstance(v, Made):
            return {"M": [v.module, v.function, enc(v.args, d), enc(v.item, d)]}
        if isinstance(v, Opaque):
            return {"O": [v.type, v.text, enc(v.fields, d)]}
        if isinstance(v, Capped):
            return {"K": [v.type, list(v.shape), v.dtype, enc(v.summary, d), enc(v.first, d)]}
        capped = _capped(v)
        if capped is not None:
            return enc(capped, d)
        if type(v) not in _PLAIN:
            made = _opaque(v)  # an object of the project's own code (in the child), a NamedTuple say
            if made is not None:
                return enc(made, d)
        if isinstance(v, list):
            return {"L": [enc(x, d) for x in v]}
        if isinstance(v, tuple):
            return {"T": [enc(x, d) for x in v]}
        if isinstance(v, dict):
            return {"D": [[enc(k, d), enc(x, d)] for k, x in v.items()]}
        if isinstance(v, (set, frozenset)):
            return {"S" if isinstance(v, set) else "F": [enc(x, d) for x in v]}
        if isinstance(v, complex):
            return {"C": [v.real, v.imag]}
        if isinstance(v, bytes):
            return {"B": base64.b64encode(v).decode("ascii")}
        return {"r": [f"{type(v).__module__}.{type(v).__qualname__}", _safe_repr(v)]}

    tree = json.dumps(enc(value, 0), separators=(",", ":")).encode()
    return _MAGIC + len(tree).to_bytes(8, "little") + tree + b"".join(blobs)


def unpack(raw: bytes) -> Any:
    """What ``pack`` wrote; ValueError when ``raw`` is not that (damaged, or another format)."""
    import numpy as np

    if not raw.startswith(_MAGIC) or len(raw) < len(_MAGIC) + 8:
        raise ValueError("not recorded data")
    start = len(_MAGIC) + 8
    n = int.from_bytes(raw[len(_MAGIC):start], "little")
    if start + n > len(raw):
        raise ValueError("recorded data cut short")
    data = bytearray(raw[start + n:])  # writable arrays, as the code that reads them may expect
    dtypes: dict[str, Any] = {}

    def array(place) -> Any:
        dtype, shape, offset, nbytes = place
        dt = dtypes.get(dtype)
        if dt is None:
            dt = dtypes[dtype] = np.dtype(dtype)
            if dt.hasobject:
                raise ValueError("an object array in recorded data")
        if offset < 0 or offset + nbytes > len(data):
            raise ValueError("recorded data cut short")
        count = nbytes // dt.itemsize if dt.itemsize else 0
        return np.frombuffer(data, dtype=dt, count=count, offset=offset).reshape(tuple(shape))

    def object_array(v) -> Any:
        out = np.empty(len(v[1]), dtype=object)
        for i, x in enumerate(v[1]):
            out[i] = x
        return out.reshape(tuple(v[0]))

    # Every JSON object in the tree is one tagged value, decoded as the parser meets it (inner ones first).
    decoders = {
        "A": array,
        "N": lambda v: array(v)[()],
        "AO": object_array,
        "L": lambda v: v,
        "T": tuple,
        "D": lambda v: {k: x for k, x in v},
        "S": set,
        "F": frozenset,
        "C": lambda v: complex(v[0], v[1]),
        "B": base64.b64decode,
        "R": lambda v: Recording(v[0], v[1], list(v[2]), v[3]),
        "c": lambda v: Call(*v),
        "M": lambda v: Made(*v),
        "O": lambda v: Opaque(*v),
        "K": lambda v: Capped(v[0], tuple(v[1]), v[2], dict(v[3]), v[4]),
        "r": lambda v: Opaque(v[0], v[1], {}),
    }

    def decode(pairs: list) -> Any:
        if len(pairs) != 1 or pairs[0][0] not in decoders:
            raise ValueError("damaged recorded data")
        tag, v = pairs[0]
        return decoders[tag](v)

    try:
        return json.loads(raw[start:start + n], object_pairs_hook=decode)
    except (TypeError, KeyError, IndexError, AttributeError) as exc:
        raise ValueError(f"damaged recorded data ({exc})") from None


def _safe_repr(v: Any) -> str:
    try:
        text = repr(v)
    except Exception:  # a broken __repr__
        return f"<{type(v).__qualname__}>"
    return text if len(text) <= 1000 else text[:1000] + "..."


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
        # too large to keep: its summary (copying it first would cost as much)
        return value.copy() if value.size <= MAX_ENTRIES else _capped(value)
    if isinstance(value, (list, tuple)) and len(value) > MAX_ENTRIES:
        return _capped(value)
    if depth < 2 and isinstance(value, tuple):
        return tuple(_snapshot(v, depth + 1) for v in value)
    if depth < 2 and isinstance(value, list):
        return [_snapshot(v, depth + 1) for v in value]
    if depth < 2 and isinstance(value, dict):
        return {k: _snapshot(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (int, float, complex, str, bool, type(None))) or (np is not None and isinstance(value, np.generic)):
        return value
    return value  # sent as it is when the build reads it (see pack), else as its repr


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
    except SystemExit as exc:
        sys.settrace(None)
        code = exc.code if exc.code is None or isinstance(exc.code, int) else repr(exc.code)
        where = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next)).rstrip().splitlines()
        raise TraceError(
            f"{request['name']} called sys.exit({'' if code is None else code}) while recording, so it never "
            f"returned; a test that a page records must return normally: remove the exit "
            f"(or show another test). Where it exited:\n" + "\n".join(where[-6:])
        ) from None
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
    imported once. A batch comes on stdin (its length, then ``pack``'s bytes);
    the child answers on a copy of the original stdout, one JSON line per
    message; what the code under test prints goes to stderr, never into a message.
    """
    children.watch_parent()
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.__stdout__ = os.fdopen(1, "w", buffering=1)
    replies = os.environ.get(REPLIES_ENV) or tempfile.mkdtemp(prefix="docs-hooks-replies-")
    try:
        _serve(channel, replies)
    finally:
        shutil.rmtree(replies, ignore_errors=True)


def _read_batch(stream) -> Any:  # pragma: no cover - runs in the child process
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


def _serve(channel, replies: str) -> None:  # pragma: no cover - runs in the child process
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

    def configure(sys_path: list[str], project_root: str) -> None:
        for p in sys_path:
            sys.path.insert(0, p)
        _LOCAL_ROOTS[:] = sys_path
        os.chdir(project_root)

    def send(message: dict) -> None:
        channel.write(json.dumps(message).encode() + b"\n")
        channel.flush()

    preload = os.environ.get(PRELOAD_ENV)
    if preload:  # started ahead of the build's first request: import the project meanwhile
        import importlib

        spec = json.loads(preload)
        configure(spec["sys_path"], spec["project_root"])
        configured = True
        for name in spec["modules"]:
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - a request that needs the module reports the error
                pass
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
                rec = _run_request(request, payload["modules"], baseline)
            except TraceError as err:
                send({"done": i, "error": err.message, "exited": isinstance(err.__context__, SystemExit)})
                continue
            fd, path = tempfile.mkstemp(dir=replies, suffix=".rec")
            with os.fdopen(fd, "wb") as f:
                f.write(pack(rec))
            send({"done": i, "path": path})


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
    from .blocks import within_root  # a page names only files of the project

    file = project_root / within_root(path, f"the test file of '{node_id}'")
    if not file.exists():
        raise TraceError(f"test file '{path}' does not exist (from '{node_id}')")
    module = ".".join(Path(path).with_suffix("").parts)
    return Request(node_id, module, func.replace("::", "."))


DEFAULT_TIMEOUT = DEFAULT_TEST_TIMEOUT  # seconds a request may take unless told (the test_timeout setting)

class Recorder:
    """Runs requests in one child process and caches each recording by the code it touched."""

    def __init__(self, project_root: Path, sys_path: list[Path], modules: dict[str, str],
                 file_digests: dict[str, str], cache_dir: Path | None, spare: tuple | None = None,
                 timeout: float = DEFAULT_TIMEOUT):
        self.project_root = project_root
        self.timeout = timeout  # seconds each request may take (the test_timeout setting)
        self.sys_path = [str(p) for p in sys_path]
        self.modules = modules  # absolute filename -> module name
        self.file_digests = file_digests  # repo path -> digest of its current text
        # Every recording of the project in one store (see cachedir.Store), keyed by its request.
        self.store = Store(store_file(cache_dir, "recordings")) if cache_dir is not None else None
        self.runs = 0  # how many child processes were started (for tests)
        self._memo: dict[Request, Recording] = {}
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        self._unread = b""  # what the child sent after the last whole message
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
        rows = self.store.get_many(list(keys))  # a damaged store is made again by the store itself: misses
        for key, raw in rows.items():
            try:
                stored = unpack(raw)
                digests, recording = stored["digests"], stored["recording"]
                if not isinstance(recording, Recording) or not isinstance(digests, dict):
                    continue
            except (ValueError, TypeError, KeyError):
                continue  # damaged, or written by another version of this code: recorded again
            if digests != {f: self._digest(f) for f in digests}:
                continue
            found[keys[key]] = recording
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
        self._unread = b""
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
            _vacuum(self.store.path)

    def _run_child(self, requests: list[Request]) -> list:
        """The requests through the child: a Recording (or the TraceError) per request, in their order.

        Each request has ``timeout`` seconds from its start. One that runs longer
        is stopped by killing the child with whatever it started, and one that
        ends the child (``os._exit``, a crash) is reported with the child's exit
        code and last lines of output; the requests after it go to a new child.
        """
        out: list = []
        while len(out) < len(requests):
            out.extend(self._run_batch(requests[len(out):]))
        return out

    def _run_batch(self, requests: list[Request]) -> list:
        """What the child answers for ``requests``, up to and including the first that stops it."""
        payload = pack({
            "sys_path": self.sys_path,
            "project_root": str(self.project_root),
            "modules": self.modules,
            "requests": [
                {"kind": "call", "name": r.name, "module": r.module, "function": r.function,
                 "args": list(r.args), "args_from": r.args_from, "over": r.over, "target_only": r.target_only,
                 "project_root": str(self.project_root)}
                for r in requests
            ],
        })
        proc = self._start()
        out: list = []
        # Until the child says it has started the first request, it may be starting Python and importing the
        # project: that may take longer than a small limit meant for one test, on a busy machine.
        deadline = time.monotonic() + max(self.timeout, DEFAULT_TIMEOUT)
        try:
            sent = self._send(proc, len(payload).to_bytes(8, "little") + payload, deadline)
        except OSError:
            sent = True  # it has ended: read below what it said, and how it ended
        if sent:
            self.flush()  # the last batch's recordings go to the store while the child runs this one
        printed = None
        while len(out) < len(requests):
            try:
                if not sent:
                    raise TimeoutError
                message = self._message(proc, deadline)
            except TimeoutError:
                children.kill_group(proc)
                self.close_child()
                req = requests[len(out)]
                out.append(TraceError(
                    f"{req.name} did not finish within test_timeout = {self.timeout:g} s, so it was stopped "
                    f"(with every process it started); make it finish sooner, or raise test_timeout in "
                    f"[tool.docs_hooks]"))
                return out
            if message is None:  # the child has ended
                out.append(self._ended(proc, requests[len(out)], printed or 0))
                return out
            if "start" in message:
                deadline = time.monotonic() + self.timeout
                printed = message.get("printed")
            elif "error" in message:
                tail = self._printed(printed) if message.get("exited") and printed is not None else ""
                out.append(TraceError(message["error"] + (f"\nLast lines of its output:\n{tail}" if tail else "")))
            else:
                reply = Path(message["path"])
                try:
                    out.append(unpack(reply.read_bytes()))
                except (OSError, ValueError) as exc:  # removed or cut short under it (a full disk, say)
                    out.append(TraceError(f"the recording of {requests[len(out)].name} could not be read back "
                                          f"({exc}); build again"))
                finally:
                    reply.unlink(missing_ok=True)
        return out

    @staticmethod
    def _send(proc: subprocess.Popen, data: bytes, deadline: float) -> bool:
        """Write ``data`` to the child's input; False when it has not read it all by ``deadline`` (stuck
        importing the project, say)."""
        fd = proc.stdin.fileno()
        view = memoryview(data)
        os.set_blocking(fd, False)
        try:
            while view:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [fd], [], left)[1]:
                    return False
                try:
                    view = view[os.write(fd, view):]
                except BlockingIOError:
                    continue
        finally:
            os.set_blocking(fd, True)
        return True

    def _message(self, proc: subprocess.Popen, deadline: float) -> dict | None:
        """The child's next message (a JSON line); None when it has ended; TimeoutError after ``deadline``."""
        fd = proc.stdout.fileno()
        while b"\n" not in self._unread:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._unread += chunk
        line, _, self._unread = self._unread.partition(b"\n")
        return json.loads(line)

    def _printed(self, since: int) -> str:
        """The last lines the child printed after ``since`` (read without moving the file's offset, which the
        child writes at)."""
        if self._stderr is None:
            return ""
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        text = os.pread(fd, size - since, since).decode(errors="replace")
        return "\n".join(text.rstrip().splitlines()[-OUTPUT_LINES:])

    def _ended(self, proc: subprocess.Popen, req: Request, printed: int) -> TraceError:
        """The error for ``req``, which the child was running (or about to run) when it ended."""
        try:
            code = proc.wait(timeout=5)  # it is exiting: let it finish writing its output
        except subprocess.TimeoutExpired:
            children.kill_group(proc)
            code = proc.returncode
        tail = self._printed(printed)
        self.close_child()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return TraceError(
            f"{req.name} ended the recording process before it returned: the process {how} (os._exit, or a "
            f"crash); a test that a page records must return normally: remove the exit (or show another test). "
            + (f"Last lines of its output:\n{tail}" if tail else "It printed nothing.")
        )

    def close_child(self) -> None:
        """Forget the child (ended or killed): the next request starts a new one."""
        if self._finalizer is not None:
            self._finalizer()
        self._proc = None
        self._unread = b""


#: How many lines of a child's output an error shows.
OUTPUT_LINES = 15

#: A recording larger than this (packed) is not stored: it is recorded again when needed.
MAX_STORED_BYTES = 8 * 1024 * 1024

#: The recordings store keeps at most this many bytes of recordings: the least recently read go first.
MAX_STORE_BYTES = 256 * 1024 * 1024

#: The recordings store is vacuumed when more than this share of its file is free pages.
VACUUM_SHARE = 0.5

def _vacuum(path: Path) -> None:
    """Keep the store within MAX_STORE_BYTES (the least recently read recordings go), and give the file's
    free pages back (after rows were deleted, here or by the cache's pruning) when they are most of it."""
    if not path.is_file():
        return
    try:
        db = sqlite3.connect(path, timeout=1, isolation_level=None)
        try:
            total = db.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM entries").fetchone()[0]
            if total > MAX_STORE_BYTES:
                kept, drop = 0, []
                for key, size in db.execute("SELECT key, LENGTH(value) FROM entries ORDER BY used DESC").fetchall():
                    kept += size
                    if kept > MAX_STORE_BYTES:
                        drop.append((key,))
                with db:
                    db.execute("BEGIN")
                    db.executemany("DELETE FROM entries WHERE key = ?", drop)
            else:
                drop = []
            free = db.execute("PRAGMA freelist_count").fetchone()[0]
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            if drop or (pages and free / pages > VACUUM_SHARE):
                db.execute("VACUUM")
        finally:
            db.close()
    except sqlite3.Error:
        pass  # busy (another build) or damaged (the next read makes it again): only a saving of space


def _write_recordings(store: Store | None, pending: dict[str, tuple[dict, Recording]]) -> None:
    """Write ``pending`` (key -> (digests, recording)) to ``store`` in one transaction, and empty it.

    A recording larger than MAX_STORED_BYTES is left out (it is recorded again when needed).
    """
    if store is None or not pending:
        return
    items = dict(pending)
    for key in items:
        pending.pop(key, None)
    packed = {key: pack({"digests": digests, "recording": rec}) for key, (digests, rec) in items.items()}
    store.put_many({key: raw for key, raw in packed.items() if len(raw) <= MAX_STORED_BYTES})


PRELOAD_ENV = "DOCS_HOOKS_RECORDER_PRELOAD"
REPLIES_ENV = "DOCS_HOOKS_RECORDER_REPLIES"


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
    # The child's replies go to a folder the build makes and removes (see stop_child): a child that is
    # killed leaves none behind.
    env[REPLIES_ENV] = replies = tempfile.mkdtemp(prefix="docs-hooks-replies-")
    try:
        proc = children.start(
            [sys.executable, "-c", "from docs_hooks.record import child_main; child_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=project_root, env=env,
        )
    except BaseException:
        shutil.rmtree(replies, ignore_errors=True)
        raise
    proc.replies = replies
    return proc, stderr


def stop_child(proc: subprocess.Popen, stderr) -> None:
    """Close the child's input (it exits at the end of its input), then make sure it has gone, with what it started."""
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=5)
    except Exception:
        pass
    children.kill_group(proc)
    if getattr(proc, "replies", None):
        shutil.rmtree(proc.replies, ignore_errors=True)
    for f in (proc.stdout, stderr):
        try:
            f.close()
        except Exception:
            pass
