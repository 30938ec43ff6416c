"""The trace functions the recording child runs code under, and the copies of values they keep.

``CallTracer`` records the first call from each place in the project's code: its arguments, its locals on
return and its result; ``TargetOnly`` records one function's call and only observes what it calls (see
``observed.CallObserver``). Each value is kept as it was at that moment (``snapshot``): a copy that later
in-place changes cannot alter, a value too large to keep as its summary, an object of the project as its fields.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from types import CodeType, FrameType
from typing import Any

from docs_hooks.run.observed import CallObserver, enclosing, importing, via_place
from docs_hooks.run.record_local import is_local_path, project_object
from docs_hooks.run.recording import MAX_ENTRIES, Call, Opaque, capped_summary

# What sys.settrace takes: called with a frame, the event and its argument, it gives the frame's local tracer.
Tracer = Callable[[FrameType, str, Any], Any]


def snapshot(value: Any, depth: int = 0) -> Any:
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
        return tuple(snapshot(v, depth + 1) for v in value)
    if depth < 2 and isinstance(value, list):
        return [snapshot(v, depth + 1) for v in value]
    if depth < 2 and isinstance(value, dict):
        return {k: snapshot(v, depth + 1) for k, v in value.items()}
    numpy = sys.modules.get("numpy")  # a NumPy scalar is a plain value: only where NumPy was imported
    if isinstance(value, (int, float, complex, str, bool, type(None))) or (
        numpy is not None and isinstance(value, numpy.generic)
    ):
        return value
    if depth < 2 and not isinstance(value, (type, set, frozenset, bytes)):
        # An object of the project (a layer, its ``self``) as it is now: its fields change as the code runs on.
        made = project_object(value)
        if made is not None:  # no fields yet (``self`` as __init__ starts) is what it holds at that moment too
            return Opaque(made.type, made.text, {k: snapshot(v, depth + 1) for k, v in made.fields.items()})
    return value  # sent as it is when the build reads it (see pack), else as its repr


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
    args = {n: snapshot(frame.f_locals[n]) for n in names if n in frame.f_locals}
    return Call(function, caller, back.f_lineno if back is not None else 0, args, {}, None)


class CallTracer:
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
            if self.imports is not None and importing(back, is_local_path):
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
            call.locals = {k: snapshot(v) for k, v in frame.f_locals.items()}
            call.result = snapshot(arg)
            self.calls.append(call)
        return self._local


class TargetOnly:
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
        self.observer = CallObserver(is_local_path, imports)

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
        self.call.locals = {k: snapshot(v) for k, v in self.frame.f_locals.items()}
        self.call.result = snapshot(result)
        self.frame = None
        return [self.call]


def observing(trace: Tracer) -> AbstractContextManager[None]:
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
