"""The code index: every function of a code base, its statements and its call sites.

griffe lists the modules, their functions and methods, and what each imported
name points at; ``ast`` gives the statements inside each function (a statement
over several lines is one span) and the calls and attribute reads in them. The
index is plain data, built once per build and then only looked up.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import le
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from docs_hooks.base.cachedir import Store
from docs_hooks.base.errors import TraceError
from docs_hooks.resolve import bindings, values
from docs_hooks.resolve.bindings import Binder, path_of
from docs_hooks.resolve.bindings import Path as ValuePath
from docs_hooks.resolve.values import ModuleBindings, Values

if TYPE_CHECKING:
    import griffe


@dataclass(frozen=True)
class Statement:
    """One statement of a function. Compound statements keep only their header lines."""

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

    caller: str  # dotted name of the calling function
    method: str  # the name called: ``forward_pass``; ``__call__`` for a call of the object itself (``fn(X)``)
    written: str  # the callee as written: ``layer.forward_pass``, ``self.layers[...].forward``
    statement: Statement
    line: int


@dataclass(frozen=True)
class AttributeRead:
    reader: str  # dotted name of the function that reads it
    base: str  # the name before the dot (`cfg` in `cfg.ln_eps`)
    attr: str
    statement: Statement
    line: int


@dataclass
class Function:
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

    def calls_to(self, name: str) -> list[CallSite]:
        return self._calls_to.get(name, [])

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


# --------------------------------------------------------------------------- statements


def _statement_spans(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
) -> list[tuple[int, int, tuple[int, int, int, int], str]]:
    """Line spans of every statement in a function body, nested ones included.

    Each span also has the exact extent (line, column, end line, end column) of
    the statement's own code, so that two statements on one line stay apart.
    For a compound statement (``for``, ``if``, ``with``, ...) that is its header
    only; the statements of its body are spans of their own.
    """
    spans: list[tuple[int, int, tuple[int, int, int, int], str]] = []

    def header(node: ast.AST, start_line: int, start_col: int, body: list[ast.stmt]) -> None:
        end = header_end(node)
        end_col = body[0].col_offset if body and body[0].lineno == end else -1
        spans.append((start_line, end, (start_line, start_col, end, end_col), _kind(node)))

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            blocks = [getattr(node, name) for name in ("body", "orelse", "finalbody") if getattr(node, name, None)]
            handlers = getattr(node, "handlers", None) or []
            cases = getattr(node, "cases", None) or []
            if not (blocks or handlers or cases):
                end = node.end_lineno or node.lineno
                spans.append(
                    (node.lineno, end, (node.lineno, node.col_offset, end, node.end_col_offset or -1), _kind(node))
                )
                continue
            header(node, node.lineno, node.col_offset, blocks[0] if blocks else [])
            for block in blocks:
                visit(block)
            for handler in handlers:
                header(handler, handler.lineno, handler.col_offset, handler.body)
                visit(handler.body)
            for case in cases:
                header(case, case.pattern.lineno, case.pattern.col_offset, case.body)
                visit(case.body)

    body = list(fn.body)
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        if isinstance(first.value.value, str):
            body = body[1:]  # the docstring is not a statement of the computation
    visit(body)
    return spans


def header_end(node: ast.AST) -> int:
    """The last line of a compound statement's header: the line of its colon."""
    last = getattr(node, "lineno", 0) or getattr(getattr(node, "pattern", None), "lineno", 0)
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            continue
        for sub in ast.walk(child):
            last = max(last, getattr(sub, "end_lineno", None) or 0)
    return last


def _make_statement(
    lines: list[str], start: int, end: int, extent: tuple[int, int, int, int] | None = None, kind: str = ""
) -> Statement:
    chunk = lines[start - 1 : end]
    code = "\n".join(line.strip() for line in chunk) if extent is None else _segment(lines, *extent)
    return Statement(start, end, tuple(chunk), normalise_tokens(code), kind)


def _kind(node: ast.AST) -> str:
    """What a statement does, in a word or two (for the lists of lines no equation covers)."""
    if isinstance(node, ast.Return):
        return "returns"
    if (
        isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Tuple)
        and isinstance(node.value, (ast.Name, ast.Subscript))
    ):
        return "unpacks"
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return "assigns"
    if isinstance(node, (ast.Raise, ast.Assert)):
        return "checks"
    if isinstance(node, (ast.If, ast.Match)):
        return "branches"
    if isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
        return "loops"
    if isinstance(node, (ast.With, ast.AsyncWith, ast.Try, ast.ExceptHandler)):
        return "handles errors" if isinstance(node, (ast.Try, ast.ExceptHandler)) else "opens a context"
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return "calls"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "imports"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return "defines"
    return type(node).__name__.lower()


def _segment(lines: list[str], line: int, col: int, end_line: int, end_col: int) -> str:
    """The source between two ast positions (columns count UTF-8 bytes, as ast does)."""
    chunk = [l.encode() for l in lines[line - 1 : end_line]]
    if end_col >= 0:
        chunk[-1] = chunk[-1][:end_col]
    chunk[0] = chunk[0][col:]
    return "\n".join(c.decode(errors="replace").strip() for c in chunk)


# --------------------------------------------------------------------------- building


@dataclass(frozen=True)
class Root:
    """A folder of code to index, whose files are shown by their paths from ``names_from``."""

    path: Path
    names_from: Path
    is_tests: bool


def build_index(
    roots: list[Root], project_root: Path, cache: Path | None = None, exclude: Iterable[str] = ()
) -> CodeIndex:
    """The index of every function under ``roots`` (with the garbage collector paused: see gcpause).

    ``exclude`` holds glob patterns of what to leave out (see ``settings.excluded``).
    A file under two roots is indexed once, by the deeper root (by the code's when
    both are the same folder); a test file (``test_*.py``, ``*_test.py``,
    ``conftest.py``) is a test wherever it is, shown by its path from the project root.
    Modules are named as Python imports them (see ``settings.ModuleNames``).

    With ``cache`` (the file of a cachedir.Store), what each file contributes is
    kept there under a key made from its text, its place, its module name and the
    code that reads it, so an unchanged file is read back instead of parsed again.
    """
    from docs_hooks.base.gcpause import paused

    with paused():
        return _build_index(roots, project_root, cache, tuple(exclude))


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


# The cache's entries are keyed by the code that reads a file, so an entry written by another version is
# never read back (a change of the form they are written in changes these files too).
_SELF_DIGEST = hashlib.sha256(Path(bindings.__file__).read_bytes() + Path(__file__).read_bytes()).hexdigest()


def code_files(roots: list[Root], project_root: Path, exclude: Sequence[str] = ()) -> list[tuple[Path, Root]]:
    """Every Python file under ``roots`` once, with the root it belongs to (see build_index)."""
    from docs_hooks.base.settings import DEFAULT_EXCLUDE, is_test_file, walk_files

    owner: dict[Path, Root] = {}
    tests = Root(project_root, project_root, True)
    for root in roots:
        if not root.path.is_dir():
            raise TraceError(f"code root '{root.path}' does not exist; check the docs_hooks settings")
        for file in walk_files(root.path, project_root, exclude or DEFAULT_EXCLUDE, ".py"):
            if is_test_file(file):
                owner[file] = tests
                continue
            other = owner.get(file)
            if other is None or (len(root.path.parts), not root.is_tests) > (len(other.path.parts), not other.is_tests):
                owner[file] = root
    return sorted(owner.items())


def module_names(files: list[tuple[Path, Root]], project_root: Path) -> list[str]:
    """Each file's module name, as Python imports it (see settings.ModuleNames).

    Two files Python would import under one name (``src/util.py`` and a helper
    ``tests/util.py``, both ``util``; two ``test_x.py`` in folders that are no
    packages, which pytest cannot import together either) must not share a
    name in the index: the one of the tests, else the later one, is then named
    by its path from the project root.
    """
    from docs_hooks.base.settings import ModuleNames, dotted_name, is_test_file

    names = ModuleNames(project_root)
    out = []
    for file, root in files:
        if is_test_file(file):
            out.append(names.of_test(file))
        elif root.is_tests:
            out.append(names.of_helper(file, root.path))
        else:
            out.append(names.of_code(file, root.names_from))
    first: dict[str, int] = {}
    for i, name in enumerate(out):
        j = first.setdefault(name, i)
        if j != i:
            renamed = i if files[i][1].is_tests or not files[j][1].is_tests else j
            out[renamed] = dotted_name(files[renamed][0], project_root)
            if renamed == j:
                first[name] = i
    return out


def _build_index(roots: list[Root], project_root: Path, cache: Path | None, exclude: Sequence[str] = ()) -> CodeIndex:
    index = CodeIndex()
    pending_calls: list[tuple] = []
    files = code_files(roots, project_root, exclude)
    for file, part in zip([f for f, _ in files], _file_indexes(files, project_root, cache)):
        index.file_digests[file.relative_to(project_root).as_posix()] = part.digest
        for fn in part.functions:
            index.functions[fn.name] = fn
        index.classes.update(part.classes)
        index.bases.update(part.bases)
        index.attribute_reads.extend(part.attribute_reads)
        index.modules[part.module] = ModuleBindings(part.names, part.stars, part.exports)
        index.scopes.update(part.scopes)
        for cls, table in part.attrs.items():
            index.attrs[cls] = table
        pending_calls.extend(part.pending)
    _resolve_calls(index, pending_calls)
    return index


def _resolve_calls(index: CodeIndex, pending_calls: list[tuple]) -> None:
    """Each call's targets, once every module is known (see values): the functions it calls, and the
    calls it may make that the reading could not follow (``index.unresolved``).

    Twice for the calls the first answer leaves open: a parameter may hold what the calls of its
    function pass it (``net.add(Dense(4))`` puts a Dense in ``add``'s ``layer``, then in the list
    ``self.layers``, whose loop calls ``layer.forward_pass``), and that is known once the first answer
    has resolved those calls."""
    found = Values(index)
    # Bases as written, through imports and re-exports, to the class they name.
    index.bases = {cls: [found.class_named(b) or b for b in bases] for cls, bases in index.bases.items()}
    for caller, path, *_ in pending_calls:
        if len(path) == 2 and index.scopes.get(caller, {}).get(path[0]) == [("*self",)]:
            name = path[1][1:]
            if name not in index.on_self.setdefault(caller, []):
                index.on_self[caller].append(name)
    answers = [found.of(caller, path) for caller, path, *_ in pending_calls]
    flows = _argument_flows(index, found, pending_calls, answers)
    if flows:
        found = Values(index, flows)
        answers = [
            found.of(call[0], call[1]) if values.UNKNOWN in targets else targets
            for call, targets in zip(pending_calls, answers)
        ]
    methods = _method_names(index, found)

    def add(site: CallSite) -> None:
        index.calls.append(site)
        index._calls_to.setdefault(site.callee, []).append(site)

    for (caller, path, line, stmt, _), targets in zip(pending_calls, answers):
        if targets == _OUTSIDE or not targets:
            continue  # numpy, a builtin, a literal's method: no call of the project
        done: set[str] = set()
        for kind, *rest in sorted(targets):
            if kind == "f" or kind == "c":
                callee = _constructed(index, rest[0]) if kind == "c" else rest[0]
                if callee not in done:
                    done.add(callee)
                    add(CallSite(caller, callee, stmt, line))
            elif kind == "o":
                call = found.method_of(rest[0], "__call__")
                if call is None or call in done:
                    continue
                done.add(call)
                add(CallSite(caller, call, stmt, line))
                for name in index.on_self.get(call, ()):  # dispatched on the instance's own class
                    reached = found.method_of(rest[0], name)
                    if reached is not None and reached != call and reached not in done:
                        done.add(reached)
                        add(CallSite(caller, reached, stmt, line, via=call, written=_last_name(path)))
        if values.UNKNOWN in targets:
            for method in _names_called(found, caller, path):
                if method in methods and not _dispatched(index, found, caller, path, method):
                    site = UnresolvedCall(caller, method, bindings.written(path), stmt, line)
                    index.unresolved.append(site)
                    index._unresolved_by_method.setdefault(method, []).append(site)


def _constructed(index: CodeIndex, cls: str) -> str:
    """What calling a class calls: its own constructor, else the class itself (a dataclass, say)."""
    return cls + ".__init__" if cls + ".__init__" in index.functions else cls


def _argument_flows(
    index: CodeIndex, found: Values, pending_calls: list[tuple], answers: list[frozenset]
) -> dict[str, dict[str, list[tuple[str, ValuePath]]]]:
    """What the resolved calls pass to the parameters the reading could not tell:
    function -> parameter -> [(caller, path of the argument)]."""
    flows: dict[str, dict[str, list[tuple[str, ValuePath]]]] = {}
    for (caller, path, _, _, arguments), targets in zip(pending_calls, answers):
        if not arguments:
            continue
        for kind, *rest in targets:
            callee: str | None
            if kind == "c":
                callee = _constructed(index, rest[0])
            elif kind == "o":
                callee = found.method_of(rest[0], "__call__")
            elif kind == "f":
                callee = rest[0]
            else:
                continue
            fn = index.functions.get(callee) if callee is not None else None
            if callee is None or fn is None:
                continue
            table = index.scopes.get(callee, {})
            bound = bool(fn.params) and table.get(fn.params[0]) == [("*self",)]
            if bound and kind == "f" and len(path) > 1:  # Class.method(obj, ...) passes self itself
                bound = not all(v[0] == "c" for v in found.of(caller, path[:-1]))
            for key, paths in arguments:
                place = key + bound if type(key) is int else None
                param = fn.params[place] if place is not None and place < len(fn.params) else key
                if (
                    type(param) is str
                    and param in fn.params
                    and values.UNKNOWN_PATH in table.get(param, [values.UNKNOWN_PATH])
                ):
                    flows.setdefault(callee, {}).setdefault(param, []).extend((caller, p) for p in paths)
    return flows


_OUTSIDE = frozenset([values.EXTERNAL])


def _method_names(index: CodeIndex, found: Values) -> set[str]:
    """The names of the methods of the project's own classes (not the tests'): what an unresolved call
    must call to be counted as one that may reach the project's code."""
    out = set()
    for name, fn in index.functions.items():
        if not fn.is_test and found.owner(name) is not None:
            out.add(fn.short_name)
    return out


def _names_called(found: Values, caller: str, path: tuple) -> list[str]:
    """The method names an unresolved call may call: ``m`` in ``x.m(...)`` when ``x`` may be anything;
    ``__call__`` when what is called may be any object (``fn(X)``, ``self.activation(X)`` where the
    attribute holds what the reading cannot tell)."""
    if len(path) < 2 or not path[-1].startswith("."):
        return ["__call__"]
    receiver = found.of(caller, path[:-1])
    out = [path[-1][1:]] if values.UNKNOWN in receiver else []
    if any(v != values.UNKNOWN and values.UNKNOWN in found.attribute(v, path[-1][1:]) for v in receiver):
        out.append("__call__")
    return out


def _dispatched(index: CodeIndex, found: Values, caller: str, path: tuple, method: str) -> bool:
    """Whether an unresolved ``self.method(...)`` is a method its subclasses define: the calls of their
    instances reach it (see ``on_self``), so it is resolved where the instance is called."""
    if len(path) != 2 or index.scopes.get(caller, {}).get(path[0]) != [("*self",)]:
        return False
    owner = found.owner(caller)
    return owner is not None and any(found.method_of(sub, method) for sub in found.subclasses(owner))


def _last_name(path: tuple) -> str:
    """The last name a path is written with: ``norm`` in ``self.norm``."""
    for op in reversed(path):
        if op.startswith("."):
            return op[1:]
        if op not in (bindings.CALL, bindings.ELEMENT):
            return op
    return ""


def _file_indexes(files: list[tuple[Path, Root]], project_root: Path, cache: Path | None) -> list[FileIndex]:
    """Each file's part of the index: from the cache when its text was indexed before, else parsed now."""
    datas = [file.read_bytes() for file, _ in files]
    digests = [hashlib.sha256(data).hexdigest() for data in datas]
    modules = module_names(files, project_root)
    keys = []
    # Each folder is resolved once rather than once per file (bench/README.md, "check").
    resolved = {folder: folder.resolve() for folder in {project_root, *(root.names_from for _, root in files)}}
    for (file, root), digest, module in zip(files, digests, modules):
        place = f"{file.resolve()}\0{resolved[root.names_from]}\0{root.is_tests}\0{resolved[project_root]}\0{module}"
        keys.append(hashlib.sha256(f"{_SELF_DIGEST}\0{digest}\0{place}".encode()).hexdigest())
    store = Store(cache) if cache is not None else None
    try:
        stored = store.get_many(keys) if store is not None else {}
        parts, made = [], {}
        for (file, root), data, digest, key, module in zip(files, datas, digests, keys, modules):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TraceError(
                    f"cannot read: not UTF-8 ({exc.reason}); save the file as UTF-8",
                    file.relative_to(project_root).as_posix(),
                    1,
                ) from None
            part = _decode(stored[key], file, text) if key in stored else None  # None: damaged, so indexed again
            if part is None or part.digest != digest:
                part = _index_file(text, digest, file, root, project_root, module)
                made[key] = _encode(part)
            parts.append(part)
        if store is not None:
            store.put_many(made)
    finally:
        if store is not None:
            store.close()
    return parts


# --------------------------------------------------------------------------- the cache's form
#
# A file's part of the index is stored as JSON: data only, so reading an entry cannot run code,
# whoever wrote it. Statements are written once and referred to by their place in a list, as the
# objects themselves are shared in memory; functions too, where a row names one. The
# lines of code are not stored: the entry's key is made from the file's text, so they are taken
# from the file as it is.


def _encode(part: FileIndex) -> bytes:
    statements: dict[int, int] = {}  # id of a Statement -> its place in the list
    statement_list: list[list] = []
    places = {f.name: i for i, f in enumerate(part.functions)}  # functions by their place in the list

    def stmt(s: Statement | None) -> int | None:
        if s is None:
            return None
        if id(s) not in statements:
            statements[id(s)] = len(statement_list)
            statement_list.append([s.start, s.end, s.tokens, s.kind])
        return statements[id(s)]

    functions = [
        {
            "name": f.name,
            "module": f.module,
            "display_path": f.display_path,
            "repo_path": f.repo_path,
            "start": f.start,
            "end": f.end,
            "is_test": f.is_test,
            "statements": [stmt(s) for s in f.statements],
            "header": stmt(f.header),
            "whole": stmt(f.whole),
            "params": list(f.params),
            "local_names": sorted(f.local_names),
            "docstring": f.docstring,
        }
        for f in part.functions
    ]
    data = {
        "digest": part.digest,
        "functions": functions,
        "classes": {name: list(where) for name, where in part.classes.items()},
        "bases": {name: list(bases) for name, bases in part.bases.items()},
        "reads": [[r.reader, r.base, r.attr, stmt(r.statement), r.line] for r in part.attribute_reads],
        # A binding with nothing bound is a row with the empty path: the name is bound, to nothing of the project.
        "module": part.module,
        "names": [[key, list(p)] for key, paths in part.names.items() for p in paths or [()]],
        "stars": part.stars,
        "exports": part.exports,
        "scopes": [
            [places[fn], key, list(p)]
            for fn, table in part.scopes.items()
            for key, paths in table.items()
            for p in paths or [()]
        ],
        "attrs": [
            [cls, attr, places.get(fn, -1), list(p)]  # -1: bound in the class's own body
            for cls, table in part.attrs.items()
            for attr, entries in table.items()
            for fn, p in entries or [("", ())]
        ],
        "pending": [
            [places[caller], list(path), line, stmt(s), [[key, [list(p) for p in paths]] for key, paths in arguments]]
            for caller, path, line, s, arguments in part.pending
        ],
        "statements": statement_list,
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_T = TypeVar("_T")


class _Damaged(Exception):
    """A cache entry that is not what _encode writes."""


# Types are checked a column at a time (``set(map(type, ...))`` runs in C), which reads the cached index back
# faster than checking value by value (bench/README.md, "check").
def _only(values: Iterable[object], *kinds: type) -> None:
    """Every one of ``values`` is exactly of one of ``kinds`` (JSON makes no subclasses; a bool is no int)."""
    if not set(map(type, values)) <= set(kinds):
        raise _Damaged(kinds[0].__name__)


def _typed(value: object, kind: type[_T], name: str) -> _T:
    if type(value) is not kind:
        raise _Damaged(name)
    return value


def _columns(rows: object, width: int, name: str) -> list[tuple]:
    """A list of rows of ``width`` items as ``width`` columns."""
    rows = _typed(rows, list, name)
    _only(rows, list)
    columns = list(zip(*rows, strict=True)) if rows else [()] * width
    if len(columns) != width:
        raise _Damaged(name)
    return columns


def _decode(raw: bytes, file: Path, text: str) -> FileIndex | None:
    """The FileIndex an entry of ``file`` (whose text is ``text``) holds; None when it is damaged: made again."""
    lines = text.splitlines()

    def spans(starts: Sequence[int], ends: Sequence[int]) -> list[tuple[str, ...]]:
        _only(starts, int)
        _only(ends, int)
        if min(starts, default=1) < 1 or max(ends, default=0) > len(lines) or not all(map(le, starts, ends)):
            raise _Damaged("span")
        return [tuple(lines[a - 1 : b]) for a, b in zip(starts, ends)]

    def indexes(column: Sequence[int]) -> None:
        """``column`` holds places in a list (the statements', the functions')."""
        _only(column, int)
        if min(column, default=0) < 0:
            raise _Damaged("place")

    def paths(column: Sequence[list[str]]) -> list[tuple[str, ...]]:
        """``column`` holds paths (see bindings): lists of strings, the empty one for "bound to nothing"."""
        _only(column, list)
        _only(chain.from_iterable(column), str)
        return [tuple(p) for p in column]

    def bound(keys: Sequence[str], column: Sequence[list[str]]) -> dict[str, list[tuple[str, ...]]]:
        _only(keys, str)
        table: dict[str, list[tuple[str, ...]]] = {}
        for key, path in zip(keys, paths(column)):
            bucket = table.setdefault(key, [])
            if path:
                bucket.append(path)
        return table

    try:
        data = _typed(json.loads(raw), dict, "entry")
        starts, ends, tokens, kinds = _columns(data["statements"], 4, "statements")
        _only(tokens, str)
        _only(kinds, str)
        statements = list(map(Statement, starts, ends, spans(starts, ends), tokens, kinds))

        part = FileIndex(_typed(data["digest"], str, "digest"))
        functions = _typed(data["functions"], list, "functions")
        _only(functions, dict)
        (
            f_names,
            f_modules,
            f_shown,
            f_repo,
            f_starts,
            f_ends,
            f_tests,
            f_stmts,
            f_headers,
            f_wholes,
            f_params,
            f_locals,
            f_docs,
        ) = (
            [f[key] for f in functions]
            for key in (
                "name",
                "module",
                "display_path",
                "repo_path",
                "start",
                "end",
                "is_test",
                "statements",
                "header",
                "whole",
                "params",
                "local_names",
                "docstring",
            )
        )
        for texts in (f_names, f_modules, f_shown, f_repo):
            _only(texts, str)
        _only(f_tests, bool)
        _only(f_docs, str, type(None))
        _only(f_wholes, int)  # every function has its whole statement
        indexes([i for i in (*f_headers, *f_wholes) if i is not None])
        for lists in (f_stmts, f_params, f_locals):
            _only(lists, list)
        indexes(list(chain.from_iterable(f_stmts)))
        _only(chain.from_iterable((*f_params, *f_locals)), str)
        for name, module, shown, repo, start, end, source, is_test, stmts, header, whole, params, local, doc in zip(
            f_names,
            f_modules,
            f_shown,
            f_repo,
            f_starts,
            f_ends,
            spans(f_starts, f_ends),
            f_tests,
            f_stmts,
            f_headers,
            f_wholes,
            f_params,
            f_locals,
            f_docs,
        ):
            part.functions.append(
                Function(
                    name=name,
                    module=module,
                    file=file,
                    display_path=shown,
                    repo_path=repo,
                    start=start,
                    end=end,
                    is_test=is_test,
                    source_lines=source,
                    statements=[statements[i] for i in stmts],
                    header=None if header is None else statements[header],
                    whole=statements[whole],
                    params=tuple(params),
                    local_names=frozenset(local),
                    docstring=doc,
                )
            )

        classes = _typed(data["classes"], dict, "classes")
        _only(classes, str)
        names, starts, ends = _columns(list(classes.values()), 3, "classes")
        _only(names, str)
        _only(starts, int)
        _only(ends, int)
        part.classes = dict(zip(classes, zip(names, starts, ends)))
        bases = _typed(data["bases"], dict, "bases")
        _only(bases, str)
        _only(bases.values(), list)
        _only(chain.from_iterable(bases.values()), str)
        part.bases = {name: list(values) for name, values in bases.items()}

        readers, read_bases, attrs, places, read_lines = _columns(data["reads"], 5, "reads")
        for column in (readers, read_bases, attrs):
            _only(column, str)
        indexes(places)
        _only(read_lines, int)
        part.attribute_reads = [
            AttributeRead(reader, base, attr, statements[i], line)
            for reader, base, attr, i, line in zip(readers, read_bases, attrs, places, read_lines)
        ]

        part.module = _typed(data["module"], str, "module")
        part.names = bound(*_columns(data["names"], 2, "names"))
        part.stars = _typed(data["stars"], list, "stars")
        _only(part.stars, str)
        part.exports = data["exports"]
        if part.exports is not None:
            _only(_typed(part.exports, list, "exports"), str)
        fns = part.functions
        owners, keys, column = _columns(data["scopes"], 3, "scopes")
        indexes(owners)
        for owner, key, path in zip(owners, keys, paths(column)):
            bucket = part.scopes.setdefault(fns[owner].name, {}).setdefault(_typed(key, str, "scope"), [])
            if path:
                bucket.append(path)
        owning, attrs, owners, column = _columns(data["attrs"], 4, "attrs")
        _only(owning, str)
        _only(attrs, str)
        _only(owners, int)
        for cls, attr, owner, path in zip(owning, attrs, owners, paths(column)):
            bound_by = part.attrs.setdefault(cls, {}).setdefault(attr, [])
            if path:
                bound_by.append((fns[owner].name if owner >= 0 else "", path))

        callers, column, call_lines, places, arguments = _columns(data["pending"], 5, "pending")
        indexes(callers)
        callees = paths(column)
        if not all(callees):
            raise _Damaged("call")
        _only(call_lines, int)
        indexes(places)
        _only(arguments, list)
        keys, given = _columns(list(chain.from_iterable(arguments)), 2, "arguments")
        _only(keys, int, str)
        _only(given, list)
        passed = paths(list(chain.from_iterable(given)))
        if not all(passed):
            raise _Damaged("argument")
        rows, taken = [], iter(passed)
        for row in arguments:
            rows.append(tuple((key, tuple(next(taken) for _ in ps)) for key, ps in row))
        part.pending = [
            (fns[caller].name, callee, line, statements[i], row)
            for caller, callee, line, i, row in zip(callers, callees, call_lines, places, rows)
        ]
        return part
    except (_Damaged, ValueError, KeyError, IndexError, TypeError, RecursionError):
        return None


def _index_file(text: str, digest: str, file: Path, root: Root, project_root: Path, module_name: str) -> FileIndex:
    """What one file adds to the index. Parsing someone's code is no place to warn them about it: the
    warnings Python gives while compiling it (an invalid escape sequence in a docstring) are not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=SyntaxWarning)
        warnings.filterwarnings("ignore", message=r"invalid (octal )?escape sequence", category=DeprecationWarning)
        return _read_file(text, digest, file, root, project_root, module_name)


def _read_file(text: str, digest: str, file: Path, root: Root, project_root: Path, module_name: str) -> FileIndex:
    part = FileIndex(digest, module_name)
    repo_path = file.relative_to(project_root).as_posix()
    display = file.relative_to(root.names_from).as_posix()
    try:
        tree = ast.parse(text, filename=str(file))
    except SyntaxError as exc:
        raise TraceError(f"cannot parse: {exc.msg}; fix the syntax error", repo_path, exc.lineno) from None
    import griffe  # only when a file is parsed: an index read from the cache does not need it

    module = griffe.visit(module_name, filepath=file, code=text)
    lines = text.splitlines()
    is_package = file.name == "__init__.py"

    top = Binder(module_name, is_package)
    part.stars, part.exports = top.module_level(tree)
    part.names = _deduplicated(top.names)
    imports = top.imports()
    # A call of a builtin (len, print, isinstance) calls no code of the project: not kept, unless the module
    # may bind that name itself (``import *`` may bring any name).
    builtin = set() if part.stars else _BUILTINS - set(part.names) - set(module.members)
    nodes_by_line = {
        node.lineno: node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }

    def add_function(obj: griffe.Function, cls: str | None) -> None:
        node = _find_def(nodes_by_line, obj)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        start, end = _lines(obj)
        source_lines = tuple(lines[start - 1 : end])
        fn = Function(
            name=obj.path,
            module=module_name,
            file=file,
            display_path=display,
            repo_path=repo_path,
            start=start,
            end=end,
            is_test=root.is_tests,
            source_lines=source_lines,
            whole=Statement(start, end, source_lines, normalise_tokens("\n".join(source_lines))),
            docstring=obj.docstring.value if obj.docstring else None,
        )
        fn.statements = [_make_statement(lines, a, b, extent, kind) for a, b, extent, kind in _statement_spans(node)]
        fn.header = _make_statement(lines, node.lineno, header_end(node))
        args = node.args
        fn.params = tuple(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])
        extra = [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        # One walk over the function collects the calls, the attribute reads and the names it assigns.
        assigned: set[str] = set()
        calls: list[ast.Call] = []
        reads: list[ast.Attribute] = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                if isinstance(sub.ctx, (ast.Store, ast.Del)):
                    assigned.add(sub.id)
            elif isinstance(sub, ast.Call):
                calls.append(sub)
            elif isinstance(sub, ast.Attribute):
                if isinstance(sub.ctx, ast.Load) and isinstance(sub.value, ast.Name):
                    reads.append(sub)
        fn.local_names = frozenset([*fn.params, *extra, *assigned])
        part.functions.append(fn)
        binder = Binder(module_name, is_package)
        binder.function(node, cls is not None)
        part.scopes[fn.name] = _pruned(binder.names, fn.local_names)
        if cls is not None:
            table = part.attrs.setdefault(cls, {})
            for attr, paths in _deduplicated(binder.attrs).items():
                table.setdefault(attr, []).extend((fn.name, p) for p in paths)
        by_start = sorted(fn.statements, key=lambda s: (s.start, -s.end))
        unknown = fn.local_names - set(part.scopes[fn.name])  # locals the reading cannot tell
        for call in calls:
            path = path_of(call.func)
            if path is None or (path[0] in builtin and path[0] not in fn.local_names and path[0] not in binder.names):
                continue
            stmt = _innermost(by_start, call.lineno)
            if stmt is not None:
                part.pending.append((fn.name, path, call.lineno, stmt, _arguments(binder, call, unknown)))
        for read in reads:
            stmt = _innermost(by_start, read.lineno)
            if stmt is not None and isinstance(read.value, ast.Name):  # so it is (see the walk above)
                part.attribute_reads.append(AttributeRead(fn.name, read.value.id, read.attr, stmt, read.lineno))

    # Not aliases (what a name is imported as): the functions and classes the file defines.
    for member in module.members.values():
        if isinstance(member, griffe.Function):
            add_function(member, None)
        elif isinstance(member, griffe.Class):
            part.classes[member.path] = (repo_path, *_lines(member))
            part.bases[member.path] = [_base_name(str(base), module_name, imports) for base in member.bases]
            node = _find_def(nodes_by_line, member)
            if isinstance(node, ast.ClassDef):  # what the class's own body binds: attributes of every instance
                body = Binder(module_name, is_package)
                body.class_body(node)
                table = part.attrs.setdefault(member.path, {})
                for attr, paths in _deduplicated(body.names).items():
                    table.setdefault(attr, []).extend(("", p) for p in paths)
            for sub in member.members.values():
                if isinstance(sub, griffe.Function):
                    add_function(sub, member.path)
    return part


_BUILTINS = frozenset(dir(builtins)) - {"super"}  # super() reaches the bases: see values


def _arguments(binder: Binder, call: ast.Call, unknown: frozenset[str]) -> tuple:
    """A call's arguments that may be objects of the project, as (place or keyword, paths): not literals,
    not the locals the reading cannot tell (most arguments of numerical code are arrays)."""
    given: list[tuple[int | str, ast.expr]] = [
        (i, a) for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)
    ]
    given += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
    out = []
    for key, node in given:
        paths = tuple(p for p in binder.values(node) if p != bindings.UNKNOWN and p[0] not in unknown)
        if paths:
            out.append((key, paths))
    return tuple(out)


def _deduplicated(table: dict[str, list]) -> dict[str, list]:
    return {key: list(dict.fromkeys(paths)) for key, paths in table.items()}


def _pruned(table: dict[str, list], local_names: frozenset[str]) -> dict[str, list]:
    """A function's bindings without those that say only "unknown" of a local name: a local name with no
    binding is unknown already (see values.Values), and most locals of numerical code are arrays."""
    return {
        key: paths
        for key, paths in _deduplicated(table).items()
        if not (paths == [bindings.UNKNOWN] and key in local_names)
    }


def _base_name(written: str, module: str, aliases: dict[str, str]) -> str:
    """A base class as a dotted name: through the module's imports, else a class of the same module."""
    head, _, rest = written.partition(".")
    if head in aliases:
        return aliases[head] + (f".{rest}" if rest else "")
    return written if "." in written else f"{module}.{written}"


def _lines(obj: griffe.Object) -> tuple[int, int]:
    """The first and last line of a function or class griffe read from a file's text: its visitor takes them
    from the ast nodes, which the parser always places."""
    return cast(int, obj.lineno), cast(int, obj.endlineno)


def _find_def(
    nodes_by_line: Mapping[int, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef], obj: griffe.Object
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    start, end = _lines(obj)
    for line in range(start, end + 1):
        node = nodes_by_line.get(line)
        if node is not None and getattr(node, "name", None) == obj.name:
            return node
    return None


def _innermost(statements: list[Statement], line: int) -> Statement | None:
    best = None
    for stmt in statements:
        if stmt.start > line:
            break
        if stmt.start <= line <= stmt.end:
            if best is None or (stmt.end - stmt.start) <= (best.end - best.start):
                best = stmt
    return best
