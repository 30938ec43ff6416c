"""Run real code under a recorder and keep what it saw: every call's inputs, locals and result.

A request names what to run: a test (``tests/test_ops.py::test_layer_norm_worked_example``)
or a function of a helper module with arguments. Requests run in a child
process (so that edited code is always the code that runs, and nothing a test
does leaks into the build), all of a build's requests in one child. Each
recording is cached under a key made from the text of every file it touched,
so an edit re-runs only the recordings that depend on the edited file.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import TraceError


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

    def first(self, name: str, request_hint: str = "") -> Call:
        calls = self.calls_of(name)
        if not calls:
            recorded = sorted({c.function for c in self.calls})
            raise TraceError(
                f"{self.request} never called {name}; it called: {', '.join(recorded) or 'nothing recorded'}"
            )
        return calls[0]


# ---------------------------------------------------------------------------- the child side


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


class _Recorder:
    def __init__(self, modules: dict[str, str]):
        self.modules = modules  # absolute filename -> module name
        self.calls: list[Call] = []
        self.stack: list[tuple[Any, Call]] = []
        self.files: set[str] = set()

    def __call__(self, frame, event, arg):
        if event not in ("call", "return"):
            return
        module = self.modules.get(frame.f_code.co_filename)
        if module is None:
            return
        qual = frame.f_code.co_qualname
        if "<" in qual:  # comprehensions, lambdas, nested functions
            return
        if event == "call":
            back = frame.f_back
            caller = None
            if back is not None and back.f_code.co_filename in self.modules and "<" not in back.f_code.co_qualname:
                caller = f"{self.modules[back.f_code.co_filename]}.{back.f_code.co_qualname}"
            code = frame.f_code
            names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            args = {n: _snapshot(frame.f_locals[n]) for n in names if n in frame.f_locals}
            call = Call(f"{module}.{qual}", caller, back.f_lineno if back else 0, args, {}, None)
            self.stack.append((frame, call))
            self.files.add(frame.f_code.co_filename)
        else:
            if not self.stack or self.stack[-1][0] is not frame:
                return
            _, call = self.stack.pop()
            call.locals = {k: _snapshot(v) for k, v in frame.f_locals.items()}
            call.result = _snapshot(arg)
            self.calls.append(call)


def _run_request(request: dict, modules: dict[str, str]) -> Recording:
    import importlib
    import traceback

    kind = request["kind"]
    rec = Recording(request["name"])
    recorder = _Recorder(modules)
    try:
        module = importlib.import_module(request["module"])
        target = module
        for part in request["function"].split("."):
            target = getattr(target, part)
    except Exception as exc:
        raise TraceError(f"cannot load {request['name']}: {type(exc).__name__}: {exc}") from None
    args = request.get("args", [])
    if kind == "call" and request.get("args_from"):
        maker = module
        for part in request["args_from"].split("."):
            maker = getattr(maker, part)
        args = maker(*request.get("args", []))
        args = args if isinstance(args, tuple) else (args,)
    sys.setprofile(recorder)
    try:
        rec.result = target(*args)
    except Exception:
        sys.setprofile(None)
        raise TraceError(f"{request['name']} raised while recording:\n{traceback.format_exc()}") from None
    finally:
        sys.setprofile(None)
    rec.calls = recorder.calls
    root = request["project_root"]
    rec.files = sorted(os.path.relpath(f, root) for f in recorder.files)
    rec.result = _snapshot(rec.result)
    return rec


def child_main() -> None:  # pragma: no cover - runs in the child process
    payload = pickle.load(sys.stdin.buffer)
    for p in payload["sys_path"]:
        sys.path.insert(0, p)
    os.chdir(payload["project_root"])
    out = {}
    for request in payload["requests"]:
        try:
            out[request["name"]] = _run_request(request, payload["modules"])
        except TraceError as err:
            out[request["name"]] = err
    with open(payload["out"], "wb") as f:
        pickle.dump(out, f)


# ---------------------------------------------------------------------------- the build side


@dataclass(frozen=True)
class Request:
    """What to run. ``name`` is how pages and messages refer to it."""

    name: str
    module: str  # dotted module to import
    function: str  # attribute path inside it
    args: tuple = ()
    args_from: str | None = None  # a function of the same module that returns the arguments


def test_request(node_id: str, tests_parent: Path, project_root: Path) -> Request:
    """A request for ``tests/test_x.py::test_name``."""
    path, sep, func = node_id.partition("::")
    if not sep or not path.endswith(".py") or not func:
        raise TraceError(f"'{node_id}' is not a test id; write it as tests/test_file.py::test_name")
    file = project_root / path
    if not file.exists():
        raise TraceError(f"test file '{path}' does not exist (from '{node_id}')")
    module = ".".join(Path(path).with_suffix("").relative_to(tests_parent.relative_to(project_root)).parts) \
        if tests_parent != project_root else ".".join(Path(path).with_suffix("").parts)
    return Request(node_id, module, func)


class Recorder:
    """Runs requests in one child process and caches each recording by the code it touched."""

    def __init__(self, project_root: Path, sys_path: list[Path], modules: dict[str, str],
                 file_digests: dict[str, str], cache_dir: Path | None):
        self.project_root = project_root
        self.sys_path = [str(p) for p in sys_path]
        self.modules = modules  # absolute filename -> module name
        self.file_digests = file_digests  # repo path -> digest of its current text
        self.cache_dir = cache_dir
        self.runs = 0  # how many child processes were started (for tests)
        self._memo: dict[Request, Recording] = {}

    def _key_path(self, req: Request) -> Path | None:
        if self.cache_dir is None:
            return None
        name = hashlib.sha256(repr(req).encode()).hexdigest()[:24]
        return self.cache_dir / "recordings" / f"{name}.pickle"

    def _cached(self, req: Request) -> Recording | None:
        path = self._key_path(req)
        if path is None or not path.exists():
            return None
        try:
            with path.open("rb") as f:
                stored = pickle.load(f)
        except Exception:
            return None
        if stored.get("digests") != {f: self.file_digests.get(f) for f in stored.get("digests", {})}:
            return None
        return stored["recording"]

    def _store(self, req: Request, rec: Recording) -> None:
        path = self._key_path(req)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        touched = set(rec.files)
        digests = {f: self.file_digests.get(f) for f in touched}
        tmp = path.with_suffix(".tmp")
        with tmp.open("wb") as f:
            pickle.dump({"digests": digests, "recording": rec}, f)
        os.replace(tmp, path)

    def record(self, requests: list[Request]) -> dict[Request, Recording]:
        """Recordings for ``requests``; raises TraceError for one that failed."""
        out: dict[Request, Recording] = {}
        todo = []
        for req in dict.fromkeys(requests):
            if req in self._memo:
                out[req] = self._memo[req]
                continue
            cached = self._cached(req)
            if cached is not None:
                out[req] = self._memo[req] = cached
            else:
                todo.append(req)
        if todo:
            results = self._run_child(todo)
            for req in todo:
                value = results[req.name]
                if isinstance(value, TraceError):
                    raise value
                self._store(req, value)
                out[req] = self._memo[req] = value
        return out

    def _run_child(self, requests: list[Request]) -> dict[str, Any]:
        self.runs += 1
        payload = {
            "sys_path": self.sys_path,
            "project_root": str(self.project_root),
            "modules": self.modules,
            "requests": [
                {"kind": "call", "name": r.name, "module": r.module, "function": r.function,
                 "args": list(r.args), "args_from": r.args_from, "project_root": str(self.project_root)}
                for r in requests
            ],
        }
        env = dict(os.environ)
        env.setdefault("PYTHONHASHSEED", "0")
        with tempfile.TemporaryDirectory() as tmp:
            payload["out"] = os.path.join(tmp, "recordings.pickle")
            proc = subprocess.run(
                [sys.executable, "-c", "from docs_hooks.record import child_main; child_main()"],
                input=pickle.dumps(payload), capture_output=True, cwd=self.project_root, env=env,
            )
            if proc.returncode != 0 or not os.path.exists(payload["out"]):
                raise TraceError(
                    "the recording process failed:\n" + proc.stderr.decode(errors="replace")[-4000:]
                )
            with open(payload["out"], "rb") as f:
                return pickle.load(f)
