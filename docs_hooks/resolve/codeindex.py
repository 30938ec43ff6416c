"""The code index: every function of a code base, its statements and its call sites.

griffe lists the modules, their functions and methods, and what each imported
name points at; ``ast`` gives the statements inside each function (a statement
over several lines is one span) and the calls and attribute reads in them. The
index is plain data, built once per build and then only looked up.

This module holds that data and its lookups. ``indexing`` builds it from the
files (``build_index``), ``readfile`` reads one file, and ``indexstore`` is the
form a file's part takes in the cache folder.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import ClassVar

from docs_hooks.base.errors import TraceError
from docs_hooks.base.reads import Reads, WatchedDict, WatchedList
from docs_hooks.resolve.bindings import Path as ValuePath
from docs_hooks.resolve.values import ModuleBindings


@dataclass(frozen=True)
class Statement:
    """One statement of a function. Compound statements keep only their header lines."""

    plain_repr: ClassVar[bool] = True  # its repr shows all it holds (base.reads)

    start: int  # first line, 1-based
    end: int  # last line of the statement (of the header, for if/for/with/...)
    lines: tuple[str, ...]  # the source lines start..end, as written (comments kept)
    tokens: str  # the code as normalised tokens, comments and layout dropped
    kind: str = ""  # what the statement does, in words: "returns", "unpacks", "assigns", "checks", ...

    @property
    def text(self) -> str:
        """The statement as written, its lines joined, indentation removed."""
        return "\n".join(line.strip() for line in self.lines)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.tokens.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CallSite:
    plain_repr: ClassVar[bool] = True  # its repr shows all it holds (base.reads)

    caller: str  # dotted name of the calling function
    callee: str  # dotted name of the called function, as resolved through imports
    statement: Statement  # the whole statement that holds the call
    line: int  # line of the call itself
    # A call of an instance, ``layer(X)``, reaches ``callee`` through this function (``LayerNorm.__call__``).
    via: str = ""
    written: str = ""  # then the name the call is written with: ``norm`` in ``self.norm(X)``


@dataclass(frozen=True)
class UnresolvedCall:
    """A call the index could not resolve that may be a call of the project's own code: its receiver may
    hold what the reading cannot tell (``layer.forward_pass(X)``, ``layer`` an item of a list filled from a
    parameter), and the name it calls is the name of a method of the project."""

    plain_repr: ClassVar[bool] = True  # its repr shows all it holds (base.reads)

    caller: str  # dotted name of the calling function
    method: str  # the name called: ``forward_pass``; ``__call__`` for a call of the object itself (``fn(X)``)
    written: str  # the callee as written: ``layer.forward_pass``, ``self.layers[...].forward``
    statement: Statement
    line: int


@dataclass(frozen=True)
class AttributeRead:
    plain_repr: ClassVar[bool] = True  # its repr shows all it holds (base.reads)

    reader: str  # dotted name of the function that reads it
    base: str  # the name before the dot (`cfg` in `cfg.ln_eps`)
    attr: str
    statement: Statement
    line: int


@dataclass
class Function:
    plain_repr: ClassVar[bool] = True  # its repr shows all it holds (base.reads)

    name: str  # dotted name, e.g. ``ops.layer_norm_forward`` or ``train.AdamW.step``
    module: str
    file: Path  # absolute path
    display_path: str  # as shown on the site: ``ops.py`` or ``tests/test_ops.py``
    repo_path: str  # from the repository root: ``src/ops.py``
    start: int
    end: int
    is_test: bool
    source_lines: tuple[str, ...]  # lines start..end
    whole: Statement  # the whole function: what a reference to it locks
    statements: list[Statement] = field(default_factory=list)
    header: Statement | None = None  # the ``def`` line(s)
    params: tuple[str, ...] = ()
    local_names: frozenset[str] = frozenset()  # parameters and every name it assigns
    docstring: str | None = None

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass
class CodeIndex:
    functions: dict[str, Function] = field(default_factory=dict)
    calls: list[CallSite] = field(default_factory=list)
    attribute_reads: list[AttributeRead] = field(default_factory=list)
    classes: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # name -> (repo_path, start, end)
    bases: dict[str, list[str]] = field(default_factory=dict)  # class -> its bases, dotted as imported
    file_digests: dict[str, str] = field(default_factory=dict)  # repo_path -> sha256 of its text
    # What the code binds its names to (see bindings and values): per module, per function, per class.
    modules: dict[str, ModuleBindings] = field(default_factory=dict)  # module name -> its top level
    scopes: dict[str, dict[str, list[tuple[str, ...]]]] = field(default_factory=dict)  # function -> its names
    attrs: dict[str, dict[str, list[tuple[str, tuple[str, ...]]]]] = field(default_factory=dict)  # class -> attr
    # What each function calls on its own instance (``self.forward(X)`` in a ``__call__``).
    on_self: dict[str, list[str]] = field(default_factory=dict)
    unresolved: list[UnresolvedCall] = field(default_factory=list)
    _calls_to: dict[str, list[CallSite]] = field(default_factory=dict)
    _unresolved_by_method: dict[str, list[UnresolvedCall]] = field(default_factory=dict)

    trace_token: ClassVar[str] = "CodeIndex"  # what a digest of a read's answer takes it for (base.reads)

    def watched(self, reads: Reads) -> CodeIndex:
        """The same index, its tables' reads noted in ``reads`` (see ``base.reads``), each table in the role
        ``index.<its name>``."""
        tables: dict[str, WatchedDict | WatchedList] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, dict):
                tables[f.name] = WatchedDict(value, reads, f"index.{f.name}")
            elif isinstance(value, list):
                tables[f.name] = WatchedList(value, reads, f"index.{f.name}")
        return replace(self, **tables)  # type: ignore[arg-type]

    def calls_to(self, name: str) -> list[CallSite]:
        return self._calls_to.get(name, [])

    def calls_by_callee(self) -> dict[str, list[CallSite]]:
        """Each callee's call sites (what ``calls_to`` answers), as a plain table: reading it notes no read."""
        return dict.copy(self._calls_to)

    def unresolved_calling(self, method: str) -> list[UnresolvedCall]:
        """The calls left unresolved that call a method of this name (``__call__``: calls of an object)."""
        return self._unresolved_by_method.get(method, [])

    def runs_as_test(self, fn: Function) -> bool:
        """Whether a test runner runs ``fn`` as a test: a ``test*`` function of a test file, or a ``test*``
        method of a ``Test*`` class or of a ``unittest.TestCase`` subclass."""
        if not fn.is_test or not fn.short_name.startswith("test"):
            return False
        owner = fn.name[: -len(fn.short_name) - 1]
        if owner == fn.module:
            return True
        if owner not in self.classes:
            return False  # a function nested in another
        return owner.rsplit(".", 1)[-1].startswith("Test") or self._is_testcase(owner, set())

    def _is_testcase(self, cls: str, seen: set[str]) -> bool:
        seen.add(cls)
        for base in self.bases.get(cls, ()):
            if base.endswith("TestCase") or (base not in seen and self._is_testcase(base, seen)):
                return True
        return False

    def function(self, name: str) -> Function:
        try:
            return self.functions[name]
        except KeyError:
            hint = did_you_mean(name, self.functions)
            raise TraceError(
                f"no function '{name}' in the code index{hint}{' ' if hint else '. '}"
                "Use the dotted name: module, then class if any, then function."
            ) from None


def did_you_mean(wanted: str, candidates: Iterable[str], n: int = 3) -> str:
    import difflib

    close = difflib.get_close_matches(wanted, list(candidates), n=n, cutoff=0.5)
    if not close:
        return ""
    return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


# --------------------------------------------------------------------------- tokens


# Python's tokens, for comparing code: strings (with prefixes, triple quotes), comments,
# numbers, names, then operators longest first. ``tokenize`` would do the same, far slower.
_TOKEN = re.compile(
    r"""(?P<str>[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'\'\'[\s\S]*?'\'\'|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))"""
    r"|(?P<comment>#[^\n]*)"
    r"|(?P<num>(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?)"
    r"|(?P<name>\w+)"
    r"|(?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|\.\.\.|[-+*/%&|^@<>=!]=|\S)"
)
_CLOSERS = {")", "]", "}"}


def normalise_tokens(code: str) -> str:
    """Code as a sequence of tokens joined by single spaces, comments and layout dropped.

    Incomplete code (``cfg = ModelConfig(``) is accepted: its tokens up to the end count.
    A comma just before a closing bracket, as formatters add, is dropped.
    """
    out: list[str] = []
    for m in _TOKEN.finditer(code):
        if m.lastgroup == "comment":
            continue
        tok = m.group()
        if tok in _CLOSERS and out and out[-1] == ",":
            out.pop()
        out.append(tok)
    return " ".join(out)


def tokens_contain(haystack: str, needle: str) -> bool:
    """Whether the token sequence ``needle`` occurs in ``haystack`` as whole tokens."""
    if not needle:
        return False
    return f" {needle} " in f" {haystack} "


@dataclass(frozen=True)
class Root:
    """A folder of code to index, whose files are shown by their paths from ``names_from``."""

    path: Path
    names_from: Path
    is_tests: bool


@dataclass
class FileIndex:
    """What one file adds to the index: plain data, so that it can be cached."""

    digest: str
    module: str = ""  # the file's module name
    functions: list[Function] = field(default_factory=list)
    classes: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    bases: dict[str, list[str]] = field(default_factory=dict)  # class -> its bases, dotted as imported
    attribute_reads: list[AttributeRead] = field(default_factory=list)
    # What the module's top level binds (see bindings): names -> paths, modules imported with *, __all__.
    names: dict[str, list[ValuePath]] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)
    exports: list[str] | None = None
    scopes: dict[str, dict[str, list[ValuePath]]] = field(default_factory=dict)  # function -> what its names hold
    # class -> attribute of its instances -> (the function that binds it, "" for the class body; the path)
    attrs: dict[str, dict[str, list[tuple[str, ValuePath]]]] = field(default_factory=dict)
    # Calls to resolve once every module is known: (caller, callee as a path, line, statement, arguments),
    # the arguments those that may be objects of the project: (place or keyword, what it may be as paths).
    pending: list[tuple[str, ValuePath, int, Statement, tuple]] = field(default_factory=list)
