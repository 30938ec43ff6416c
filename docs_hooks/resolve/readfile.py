"""What one Python file adds to the code index (``codeindex.FileIndex``): griffe lists its functions, classes and
imports; ``ast`` gives each function's statements (a compound statement by its header), the calls and attribute
reads in them, and the names it assigns. Calls are kept as written, to be resolved once every module is known
(``indexing``)."""

from __future__ import annotations

import ast
import builtins
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from docs_hooks.base.errors import TraceError
from docs_hooks.resolve import bindings
from docs_hooks.resolve.bindings import Binder, path_of

if TYPE_CHECKING:
    import griffe

from docs_hooks.resolve.codeindex import AttributeRead, FileIndex, Function, Root, Statement, normalise_tokens

# --------------------------------------------------------------------------- statements


def _statement_spans(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: Sequence[str]
) -> list[tuple[int, int, tuple[int, int, int, int], str]]:
    """Line spans of every statement in a function body, nested ones included.

    Each span also has the exact extent (line, column, end line, end column) of
    the statement's own code, so that two statements on one line stay apart.
    For a compound statement (``for``, ``if``, ``with``, ...) that is its header
    only; the statements of its body are spans of their own.
    """
    spans: list[tuple[int, int, tuple[int, int, int, int], str]] = []

    def header(node: ast.AST, start_line: int, start_col: int, body: list[ast.stmt]) -> None:
        end = header_end(node, lines)
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


def header_end(node: ast.AST, lines: Sequence[str]) -> int:
    """The last line of a compound statement's header: the line of its colon (of the module's ``lines``).

    The parts of the header (a condition, a def's arguments, a with's items) end on the line before it when
    the brackets close on a line of their own (``):``); such a line starts with a closing bracket or the colon,
    and comes before the body's first statement, which never starts so."""
    last = getattr(node, "lineno", 0) or getattr(getattr(node, "pattern", None), "lineno", 0)
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            continue
        for sub in ast.walk(child):
            last = max(last, getattr(sub, "end_lineno", None) or 0)
    body = getattr(node, "body", None)
    first = body[0].lineno if isinstance(body, list) and body else last + 1
    while last + 1 < first and last < len(lines) and lines[last].lstrip()[:1] in (")", "]", "}", ":"):
        last += 1
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


def index_file(text: str, digest: str, file: Path, root: Root, project_root: Path, module_name: str) -> FileIndex:
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
        fn.statements = [
            _make_statement(lines, a, b, extent, kind) for a, b, extent, kind in _statement_spans(node, lines)
        ]
        fn.header = _make_statement(lines, node.lineno, header_end(node, lines))
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
                part.pending.append((fn.name, path, call.lineno, stmt, _arguments(call, unknown)))
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


def _arguments(call: ast.Call, unknown: frozenset[str]) -> tuple:
    """A call's arguments that may be objects of the project, as (place or keyword, paths): not literals,
    not the locals the reading cannot tell (most arguments of numerical code are arrays)."""
    given: list[tuple[int | str, ast.expr]] = [
        (i, a) for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)
    ]
    given += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
    out = []
    for key, node in given:
        paths = tuple(p for p in bindings.expression_paths(node) if p != bindings.UNKNOWN and p[0] not in unknown)
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
