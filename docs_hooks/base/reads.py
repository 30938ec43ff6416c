"""What resolving and rendering one page read of the code and of the runs, so that a later build can tell,
without rendering the page again, that it would come out the same.

Under ``mkdocs serve`` a code edit changes the code a page shows only for the pages that read what changed.
A page's traced key (``core.kept``) names what it is made from besides the code: its text, the settings,
where the pages are, the files outside the code index. What resolving and rendering it read of the code is a
``Trace``: each read names the object asked (its role: ``"index.functions"``, ``"graph"``, ``"results"``,
...), the question and its arguments, and a digest of the answer. A later build of the same process reuses
the page when its key is the same and every read, asked again of that build's objects, gets an answer with
the same digest (``Trace.holds``): the page would resolve to the same plan and render the same, as build
systems keep their verifying traces.

The objects that take part are made with a ``Reads`` of their build: the code index's tables, entry by entry
(``WatchedDict``, ``WatchedList``), and the questions of the call graph, the run's results and the project
(``traced``). A read made while another traced read is answered belongs to the outer one: asking the outer
one again makes it again. A fact a build computes once and keeps (``Results.derived``) is noted by its answer:
a later build makes it again with its own objects (``ask_again`` gives the arguments that build's project,
results and links), so that a fact made from the whole code reads as unchanged when an edit changed none of it.

A trace is complete only if every read of the code goes through one of these objects, and an answer counts
only if its digest takes it in whole (``Digests``): an answer it cannot take in (an object of an unknown
kind) makes the trace unusable, and the page is rendered again.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import PurePath
from typing import Any, TypeVar

from docs_hooks.base.errors import TraceError
from docs_hooks.base.lasttwo import LastTwo

F = TypeVar("F", bound=Callable[..., Any])

ALL = "*"  # the question of a whole table (its iteration, its length)
_MISSING = "<missing>"  # the answer of a table that has no entry for the key


class Untraceable(Exception):
    """An answer the digest cannot take in whole."""


class Digests:
    """Digests of answers; an object's (not a container's) once, by its id, for as long as the object lives
    (a weak reference), or, for an object that takes none, kept with it while the current rebuild or the one
    before it used it (``LastTwo``): what a process keeps across builds (the recordings read back, the parsed
    modules) is digested once, whichever builds used it since, and what a build left goes with it."""

    def __init__(self) -> None:
        self._memo: LastTwo[int, tuple[Any, str]] = LastTwo()
        self._live: dict[int, tuple[weakref.ref, str]] = {}  # id -> (the object, its digest) while it lives

    def new_build(self) -> None:
        """A rebuild starts (see ``LastTwo``)."""
        self._memo.new_build()

    def of(self, value: Any) -> str:
        """A digest of ``value``: equal digests, equal values, as far as a page can tell them apart. Raises
        Untraceable for a value it cannot take in whole."""
        return _sha(self._part(value))

    def _part(self, value: Any) -> str:
        """``value`` as a text that tells it apart: a plain value or a container written out, any other object
        by its digest (made once: see the class's doc)."""
        if value is None or isinstance(value, (bool, int, float, str, bytes, Enum)):
            return f"{type(value).__name__}:{value!r}"
        if type(value) in _CONTAINERS:  # made anew by many answers: not kept (a watched table is, once built)
            return self._text(value)
        key = id(value)
        live = self._live.get(key)
        if live is not None and live[0]() is value:
            return live[1]
        known = self._memo.get(key)
        if known is not None and known[0] is value:
            return known[1]
        made = _sha(self._text(value))
        try:
            self._live[key] = (weakref.ref(value, functools.partial(_forget, self._live, key)), made)
        except TypeError:  # an object that takes no weak reference
            self._memo.keep(key, (value, made))
        return made

    def _text(self, value: Any) -> str:
        kind = type(value)
        token = getattr(kind, "trace_token", None)
        if isinstance(token, str):  # an object whose own reads are traced: its identity is its role
            return f"token:{token}"
        if getattr(kind, "plain_repr", False):  # plain data whose repr shows it whole (see ``plain_repr``)
            return f"{kind.__module__}.{kind.__qualname__}{_plain(value)}"
        # Walked as the built-in types walk them: a watched table's own walk would be a read.
        if isinstance(value, tuple):
            return f"{type(value).__name__}[{','.join(self._part(v) for v in tuple.__iter__(value))}]"
        if isinstance(value, list):
            return f"list[{','.join(self._part(v) for v in list.__iter__(value))}]"
        if isinstance(value, dict):
            return "dict{" + ",".join(f"{self._part(k)}={self._part(v)}" for k, v in dict.items(value)) + "}"
        if isinstance(value, (set, frozenset)):
            return f"{type(value).__name__}{{{','.join(sorted(self._part(v) for v in value))}}}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = [f for f in dataclasses.fields(value) if f.compare]
            inner = ",".join(f"{f.name}={self._part(getattr(value, f.name))}" for f in fields)
            return f"{type(value).__module__}.{type(value).__qualname__}({inner})"
        if getattr(kind, "trace_vars", False):  # a plain object whose attributes are all it holds
            return f"{kind.__module__}.{kind.__qualname__}{self._text(vars(value))}"
        if isinstance(value, types.FunctionType) and "<" not in value.__qualname__:  # a module's function
            return f"function:{value.__module__}.{value.__qualname__}"
        if isinstance(value, PurePath):
            return f"path:{value}"
        if isinstance(value, TraceError):
            return f"error:{value.message}\0{value.path}\0{value.line}"
        if isinstance(value, ast.AST):
            return "ast:" + ast.dump(value, include_attributes=True)
        if type(value).__module__ == "numpy":  # an array or a scalar of NumPy: its type, shape and bytes
            raw = getattr(value, "tobytes", None)
            if raw is not None:
                return f"numpy:{getattr(value, 'dtype', '')}:{getattr(value, 'shape', '')}:{_sha_bytes(raw())}"
        raise Untraceable(type(value).__qualname__)


@dataclasses.dataclass(frozen=True)
class Role:
    """An object whose reads are traced, as a read's argument keeps it: by the role it plays in its build (its
    ``trace_token``, and its ``role`` when the build has several of its kind), so that a kept trace does not
    keep the build that made it (``detached``); a later build gives its own object of that role."""

    token: str
    role: str | None = None


def detached(value: Any) -> Any:
    """``value`` with every object whose reads are traced in it (in a list, a tuple, a dict or a dataclass too)
    replaced by its ``Role``; ``value`` itself when it holds none."""
    return _swapped(value, _role_of)


def detached_within(value: Any) -> tuple[Any, frozenset[int]]:
    """``detached(value)``, and the ids of what in it holds a ``Role`` (the containers made anew to hold one),
    so that ``attached`` puts the roles back without walking the rest."""
    made: set[int] = set()
    return _swapped(value, _role_of, made), frozenset(made)


def attached(value: Any, found: Callable[[Role], Any], within: frozenset[int] | None = None) -> Any:
    """``value`` with each ``Role`` in it replaced by ``found(role)``, a build's object of that role: what
    ``detached`` took out, put back from another build. ``within``: what ``detached_within`` said holds a role
    (the rest is not walked)."""
    swap = lambda v: found(v) if isinstance(v, Role) else None  # noqa: E731
    if within is None:
        return _swapped(value, swap)
    return _swapped(value, swap, within=within)


def _role_of(v: Any) -> Role | None:
    token = getattr(type(v), "trace_token", None)
    if not isinstance(token, str):
        return None
    role = getattr(v, "role", None)
    return Role(token, role if isinstance(role, str) else None)


def _swapped(
    value: Any, swap: Callable[[Any], Any], made: set[int] | None = None, within: frozenset[int] | None = None
) -> Any:
    """``value`` with each object in it for which ``swap`` gives something (not None) replaced by that, in a list,
    a tuple, a dict or a dataclass (but one of plain data, ``plain_repr``) too; ``value`` itself when nothing was.
    ``made`` collects the ids of the containers made anew; with ``within``, only those containers are walked."""
    new = swap(value)
    if new is not None:
        return new
    if within is not None and id(value) not in within:
        return value
    kind = type(value)
    out = value
    if kind in (list, tuple):
        items = [_swapped(v, swap, made, within) for v in value]
        if any(a is not b for a, b in zip(items, value)):
            out = kind(items)
    elif kind is dict:
        pairs = {k: _swapped(v, swap, made, within) for k, v in value.items()}
        if any(pairs[k] is not v for k, v in value.items()):
            out = pairs
    elif dataclasses.is_dataclass(value) and not isinstance(value, type) and not getattr(kind, "plain_repr", False):
        changed = {}
        for f in dataclasses.fields(value):
            if f.init:
                old = getattr(value, f.name)
                now = _swapped(old, swap, made, within)
                if now is not old:
                    changed[f.name] = now
        if changed:
            out = dataclasses.replace(value, **changed)
    if made is not None and out is not value:
        made.add(id(out))
    return out


@dataclasses.dataclass
class Read:
    """One read of a page's rendering: the role of the object asked, the question, its arguments (as asked:
    the same objects are asked again, see ``detached``), and the digest of the answer. ``key`` tells it apart
    from the other reads (the role, the question and a digest of the arguments): a build asked the same read
    by several pages answers it once."""

    role: str
    question: str
    args: tuple
    answer: str
    key: tuple[str, str, str]


class Trace:
    """The reads of one rendering (a page's, or a derived fact's), each once, in order."""

    def __init__(self) -> None:
        self.reads: dict[tuple[str, str, str], Read] = {}
        self.complete = True  # false once an answer could not be digested: the trace then holds for nothing

    def joined(self, later: Trace) -> Trace:
        """A trace of this one's reads, then ``later``'s (a page's resolving, then its rendering)."""
        both = Trace()
        both.reads = {**self.reads, **later.reads}
        both.complete = self.complete and later.complete
        return both

    def holds(self, ask: Callable[[Read], str | None]) -> bool:
        """Whether every read gets the same answer from ``ask`` (the digest of the answer now; None when it
        cannot be told). The reads are asked the cheapest first (``_cost``): an entry of the index before a
        question whose answer waits for the runs, so that a page that has to be rendered again is told so
        early. Which comes first changes nothing but the time: each read is asked with the arguments it was
        noted with, and the trace holds only if they all do."""
        return self.complete and all(ask(read) == read.answer for read in sorted(self.reads.values(), key=_cost))


def _cost(read: Read) -> int:
    """How long asking ``read`` again may take, as a rank: an entry of the index, a file of the project, the code's
    call graph, the runs' graph (made once the recordings are in), the results (recordings, formulas, facts)."""
    role = read.role
    if role.startswith("index."):
        return 0 if read.args != (ALL,) else 1
    return {"project": 2, "graph": 3, "results.graph": 4}.get(role, 5)


class Reads:
    """The traces being made, in each thread of a build: a page's resolving or rendering, and inside it a traced
    read being answered or a derived fact being made (their inner reads are not noted: ``None``)."""

    def __init__(self, digests: Digests | None = None) -> None:
        self._local = threading.local()
        self.digests = digests if digests is not None else Digests()  # a process's, for all its builds
        self._lock = threading.Lock()  # a digest is made in one thread at a time

    def _stack(self) -> list[Trace | None]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def noting(self) -> bool:
        """Whether a read now would be noted (a trace is open in this thread and no traced read is answered)."""
        stack: list[Trace | None] | None = getattr(self._local, "stack", None)
        return stack is not None and bool(stack) and stack[-1] is not None

    @contextmanager
    def tracing(self) -> Iterator[Trace]:
        """Note the reads made in the block, in this thread, in a new trace."""
        trace = Trace()
        stack = self._stack()
        stack.append(trace)
        try:
            yield trace
        finally:
            stack.pop()

    @contextmanager
    def unnoted(self) -> Iterator[None]:
        """Note nothing read in the block (a traced read being answered, a trace being checked)."""
        stack = self._stack()
        stack.append(None)
        try:
            yield
        finally:
            stack.pop()

    def digest(self, value: Any) -> str:
        with self._lock:
            return self.digests.of(value)

    def note(self, role: str, question: str, args: tuple, answer: Any) -> None:
        """Note a read in the open trace, if one is open and noting."""
        if not self.noting():
            return
        trace = self._stack()[-1]
        assert trace is not None
        try:
            key = (role, question, self._args_key(args))
            if key in trace.reads:  # noted already: a build answers a read the same each time it is asked
                return
            args = detached(args)
            trace.reads[key] = Read(role, question, args, self.digest(answer), key)
        except Untraceable:
            trace.complete = False

    def _args_key(self, args: tuple) -> str:
        """What tells a read's arguments apart: plain values written out (most reads are an entry of a table by
        its name), anything else by the digest of the arguments with their roles (``detached``)."""
        if all(type(a) in _PLAIN for a in args):
            return "\0".join(f"{type(a).__name__}:{a!r}" for a in args)
        return self.digest(detached(args))

    def include(self, trace: Trace) -> None:
        """``trace``'s reads read again, as it were, in the open trace (what a kept rendering inside it read)."""
        if self.noting():
            open_ = self._stack()[-1]
            assert open_ is not None
            for key, read in trace.reads.items():
                open_.reads.setdefault(key, read)
            open_.complete = open_.complete and trace.complete

    def cannot_tell(self) -> None:
        """A read was made whose answer cannot be digested: the open trace holds for nothing."""
        if self.noting():
            trace = self._stack()[-1]
            assert trace is not None
            trace.complete = False


def traced(method: F) -> F:
    """A question of an object with ``reads`` (its build's, or None) and ``role``: noted with its answer, or
    with the TraceError it raised, when a trace is open; what answering it reads is its own."""
    question = method.__name__

    @functools.wraps(method)
    def answer(self: Any, *args: Any) -> Any:
        reads: Reads | None = self.reads
        if reads is None or not reads.noting():
            return method(self, *args)
        try:
            with reads.unnoted():
                value = method(self, *args)
        except TraceError as err:
            reads.note(self.role, question, args, err)
            raise
        reads.note(self.role, question, args, value)
        return value

    return answer  # type: ignore[return-value]


def ask_again(reads: Reads, target: Any, read: Read, rebind: Callable[[Any], Any]) -> str | None:
    """The digest of the answer ``target`` (the object of the read's role in this build) gives to ``read``;
    None when it cannot be told (no such object, an answer the digest cannot take in). ``rebind`` gives each
    argument this build's objects in place of the roles (``Role``) it holds (its project, results, links), and raises
    Untraceable for a role this build has no object for."""
    if target is None:
        return None
    with reads.unnoted():
        try:
            if isinstance(target, (WatchedDict, WatchedList)):
                value = target.answer(read.args)
            else:
                try:
                    value = getattr(target, read.question)(*(rebind(a) for a in read.args))
                except TraceError as err:
                    value = err
                except Exception:  # noqa: BLE001 - the page is rendered again, and meets it there if it is real
                    return None  # asked ahead of a read that would have told the page apart (see Trace.holds)
            return reads.digest(value)
        except Untraceable:
            return None


class WatchedDict(dict):
    """A table of the code index whose reads are noted: each key read, or the whole table when it is walked,
    compared or copied. Only reads are watched: nothing changes a table once its build made it."""

    def __init__(self, data: dict, reads: Reads, role: str):
        super().__init__(data)
        self.reads = reads
        self.role = role

    def answer(self, args: tuple) -> Any:
        """What a read noted with ``args`` gets now (the whole table: itself, not changed once built)."""
        return self if args == (ALL,) else dict.get(self, args[0], _MISSING)

    def _key(self, key: Any) -> None:
        if self.reads.noting():
            self.reads.note(self.role, "", (key,), dict.get(self, key, _MISSING))

    def _all(self) -> None:
        if self.reads.noting():
            self.reads.note(self.role, "", (ALL,), self)

    def __getitem__(self, key):
        self._key(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        self._key(key)
        return dict.get(self, key, default)

    def __contains__(self, key) -> bool:
        self._key(key)
        return dict.__contains__(self, key)

    def __iter__(self):
        self._all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._all()
        return dict.__len__(self)

    def keys(self):
        self._all()
        return dict.keys(self)

    def values(self):
        self._all()
        return dict.values(self)

    def items(self):
        self._all()
        return dict.items(self)

    def __reversed__(self):
        self._all()
        return dict.__reversed__(self)

    def copy(self) -> dict:
        self._all()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self._all()
        return dict.__eq__(self, other)

    __hash__ = None


class WatchedList(list):
    """A list of the code index whose reads are noted, as one: any read reads it whole."""

    def __init__(self, data: list, reads: Reads, role: str):
        super().__init__(data)
        self.reads = reads
        self.role = role

    def answer(self, args: tuple) -> Any:
        return self

    def _all(self) -> None:
        if self.reads.noting():
            self.reads.note(self.role, "", (ALL,), self)

    def __iter__(self):
        self._all()
        return list.__iter__(self)

    def __getitem__(self, i):
        self._all()
        return list.__getitem__(self, i)

    def __len__(self) -> int:
        self._all()
        return list.__len__(self)

    def __contains__(self, item: object) -> bool:
        self._all()
        return list.__contains__(self, item)

    def __reversed__(self):
        self._all()
        return list.__reversed__(self)

    def __add__(self, other):
        self._all()
        return list.__add__(self, other)

    def __eq__(self, other: object) -> bool:
        self._all()
        return list.__eq__(self, other)

    __hash__ = None

    def copy(self) -> list:
        self._all()
        return list(list.__iter__(self))

    def index(self, *args):
        self._all()
        return list.index(self, *args)

    def count(self, item: object) -> int:
        self._all()
        return list.count(self, item)


_CONTAINERS = (list, tuple, dict, set, frozenset)
_PLAIN = frozenset({str, int, bool, type(None)})  # written out by their repr, which tells them apart


def _plain(value: Any) -> str:
    """The repr of a dataclass marked ``plain_repr`` (a ClassVar: every field is plain data, or a dataclass
    whose repr shows it whole), its sets in sorted order (a set's repr follows its history, not its items)."""
    fields = []
    for f in dataclasses.fields(value):
        if f.compare:
            v = getattr(value, f.name)
            fields.append(sorted(v, key=repr) if isinstance(v, (set, frozenset)) else v)
    return repr(fields)


def _forget(live: dict[int, tuple[weakref.ref, str]], key: int, ref: weakref.ref) -> None:
    """An object digested by its id is gone: its id may be another's next (unless another took it already)."""
    found = live.get(key)
    if found is not None and found[0] is ref:
        live.pop(key, None)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _sha_bytes(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
