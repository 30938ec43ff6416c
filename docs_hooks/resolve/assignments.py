"""Which recorded value of a name is the value a line of its function saw.

The recorder keeps two values of every name of a call: the arguments as they were
on entry, and every local as it was on return. A page shows a name as a line saw
it (an expression copied from a statement reads its names there; ``after:`` names
the statement after which a name is shown), or a bare name. Where the function
assigns what the page reads tells which of the two recordings holds that value,
read from the function's ``ast`` alone:

- nothing assigns it from that line on: its value on return;
- an argument that nothing assigns before that line, nor later in a loop around
  it: its value on entry;
- otherwise neither, and the page must name another statement.

A bare name names no line: an argument is its value on entry; a name the function
binds once (and may then change in place: ``+=``, ``x[i] = ...``) is its value on
return, complete; a name bound by two statements that can both run has no one
value, and the page names the statement it means with ``after:``.

Binding is ``=``, ``:=``, a ``for``, ``with`` or ``except`` target; an in-place change
is an augmented assignment or a store into an item or an attribute. A store is
followed along the attributes it goes through: ``self.m[k] = ...`` changes
``self.m``, which a read of ``self.m[k]`` or of ``self`` sees, and a read of
``self.v`` does not. A change made inside a call (``x.fill(0)``) is not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from docs_hooks.base.errors import TraceError
from docs_hooks.resolve.anchors import parse_ref, resolve
from docs_hooks.resolve.codeindex import Statement
from docs_hooks.resolve.readfile import header_end
from docs_hooks.resolve.refs import References

ENTRY = "entry"
RETURN = "return"

Loops = tuple[tuple[int, int], ...]  # the line spans of the loops around a statement
Branches = tuple[tuple[int, int], ...]  # (line of an ``if``, 0 for its body or 1 for its else) around a statement


@dataclass(frozen=True)
class Assignment:
    """One statement that assigns a name, or stores into it."""

    name: str  # the name: ``self`` for ``self.m[k] = ...``
    path: str  # what it changes: ``self.m``
    start: int
    end: int  # the last line of the statement (of its header, for a ``for`` or ``with``)
    text: str  # the statement as written, on one line
    binds: bool  # binds the name (``=``, a loop target), rather than changing its value in place
    loops: Loops
    branches: Branches

    def excludes(self, other: Assignment) -> bool:
        """Whether the two sit in the two branches of one ``if``, so that one run takes only one of them."""
        mine = dict(self.branches)
        return any(line in mine and mine[line] != side for line, side in other.branches)

    def touches(self, path: str) -> bool:
        """Whether a read of ``path`` sees this change (``self.m`` is seen by ``self.m`` and ``self``)."""
        return self.path == path or self.path.startswith(path + ".") or path.startswith(self.path + ".")


@dataclass(frozen=True)
class _Site:
    start: int
    end: int
    loops: Loops


@dataclass(frozen=True)
class Assignments:
    """Where one function assigns each of its names, and the statements it is made of."""

    params: tuple[str, ...]
    by_name: dict[str, tuple[Assignment, ...]]
    sites: tuple[_Site, ...]

    def of(self, name: str) -> tuple[Assignment, ...]:
        return self.by_name.get(name, ())

    def read_at(self, paths: Iterable[str], line: int) -> dict[str, str] | tuple[str, Assignment]:
        """For the name of each of ``paths`` (``self`` of ``self.W``), the recording that holds what the
        statement at ``line`` read: ENTRY or RETURN; or (a path, the assignment at or after that statement
        that leaves both wrong). A statement reads before it assigns: ``g = g.dot(W.T)`` reads the ``g`` it was
        given."""
        site = self._site(line)
        return self._seen(paths, site.start, site.loops)

    def after(self, paths: Iterable[str], line: int) -> dict[str, str] | tuple[str, Assignment]:
        """As ``read_at``, for the values right after the statement at ``line`` ran."""
        site = self._site(line)
        return self._seen(paths, site.end + 1, site.loops)

    def bare(self, name: str) -> str | tuple[Assignment, ...]:
        """ENTRY for an argument, RETURN for a name bound once, else the statements that bind it, which can
        all run (a name bound in both branches of one ``if`` is bound once on every path)."""
        if name in self.params:
            return ENTRY
        binding = [a for a in self.of(name) if a.binds]
        both = [a for a in binding if any(a is not b and not a.excludes(b) for b in binding)]
        return tuple(both) if both else RETURN

    def last(self, path: str) -> Assignment | None:
        """The last statement that assigns what ``path`` reads."""
        found = [a for a in self.of(path.split(".")[0]) if a.touches(path)]
        return found[-1] if found else None

    def start_of(self, line: int) -> int:
        """The first line of the innermost statement that holds ``line``."""
        return self._site(line).start

    def _seen(self, paths: Iterable[str], threshold: int, loops: Loops) -> dict[str, str] | tuple[str, Assignment]:
        entry_ok: dict[str, bool] = {}
        blocked: dict[str, tuple[str, Assignment]] = {}
        for path in dict.fromkeys(paths):
            name = path.split(".")[0]
            found = [a for a in self.of(name) if a.touches(path)]
            later = [a for a in found if a.start >= threshold]
            looped = any(set(a.loops) & set(loops) for a in later)
            earlier = any(a.start < threshold for a in found)
            entry_ok[name] = entry_ok.get(name, True) and name in self.params and not earlier and not looped
            if later and name not in blocked:
                blocked[name] = (path, later[0])
        out: dict[str, str] = {}
        for name, entry in entry_ok.items():
            if entry:
                out[name] = ENTRY
            elif name in blocked:
                return blocked[name]
            else:
                out[name] = RETURN
        return out

    def _site(self, line: int) -> _Site:
        """The innermost statement that holds ``line`` (a compound statement's header holds its own lines)."""
        holding = [s for s in self.sites if s.start <= line <= s.end]
        if not holding:
            return _Site(line, line, ())
        return min(holding, key=lambda s: s.end - s.start)


def read_paths(tree: ast.AST) -> list[str]:
    """What an expression reads, each name with the attributes it reads it through: ``self.m[k] * g`` reads
    ``self.m``, ``k`` and ``g``."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        path = _chain(node)
        if path is not None:
            out.append(path)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return list(dict.fromkeys(out))


def _chain(node: ast.AST) -> str | None:
    """``a.b.c`` for a name read through attributes only, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _chain(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


def assignments(
    tree: ast.AST, lines: Sequence[str], start: int, end: int, params: tuple[str, ...]
) -> Assignments | None:
    """The assignments of the function defined at lines ``start``-``end`` of a module (``tree``, parsed from
    ``lines``); None when the module holds no such function."""
    node = function_node(tree, start, end)
    if node is None:
        return None
    found: dict[str, list[Assignment]] = {}
    sites = []
    walrus = any(":=" in line for line in lines[start - 1 : end])  # else no statement holds an assignment expression
    for stmt, loops, branches in _statements(node, (), ()):
        # A compound statement's header ends at its colon; a simple statement at its last token, a closing
        # bracket on a line of its own too (as the index spans it).
        last = (
            header_end(stmt, lines) if isinstance(getattr(stmt, "body", None), list) else stmt.end_lineno or stmt.lineno
        )
        sites.append(_Site(stmt.lineno, last, loops))
        text = one_line(lines[stmt.lineno - 1 : last])
        for name, path, binds in _assigned(stmt, walrus):
            found.setdefault(name, []).append(Assignment(name, path, stmt.lineno, last, text, binds, loops, branches))
    return Assignments(
        tuple(params), {k: tuple(sorted(v, key=lambda a: a.start)) for k, v in found.items()}, tuple(sites)
    )


def one_line(lines: Sequence[str]) -> str:
    """A statement's lines joined into one, as a page may quote it (comments and a header's colon dropped)."""
    parts = []
    for line in lines:
        code = line.strip()
        if "#" in code:
            code = _without_comment(code)
        parts.append(code)
    text = " ".join(p for p in parts if p)
    for opener in "([{":
        text = text.replace(opener + " ", opener)
    for closer in ")]}":
        text = text.replace(" " + closer, closer)
    return text[:-1].rstrip() if text.endswith(":") else text


def _without_comment(code: str) -> str:
    """``code`` without a trailing comment (a ``#`` inside a string stays)."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return code
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            return code[: tok.start[1]].rstrip()
    return code


def function_node(tree: ast.AST, start: int, end: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The ``def`` at lines ``start``-``end`` of a parsed module (decorators may come first)."""
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.lineno >= start
            and node.end_lineno == end
        ):
            return node
    return None


def _statements(node: ast.AST, loops: Loops, branches: Branches):
    """Every statement of the function's body, nested ones included, with the loops and branches around it
    (not those of functions or classes defined inside it)."""
    for field, side in (("body", 0), ("orelse", 1), ("finalbody", 0), ("handlers", 0), ("cases", 0)):
        inner_branches = (*branches, (node.lineno, side)) if isinstance(node, ast.If) else branches
        for stmt in getattr(node, field, None) or ():
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.match_case):
                yield from _statements(stmt, loops, inner_branches)
                continue
            yield stmt, loops, inner_branches
            inner_loops = loops
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                inner_loops = (*loops, (stmt.lineno, stmt.end_lineno or stmt.lineno))
            yield from _statements(stmt, inner_loops, inner_branches)


def _assigned(stmt: ast.AST, walrus: bool = True) -> list[tuple[str, str, bool]]:
    """What a statement (or a compound statement's header) assigns: (name, what it changes, whether it binds
    the name). ``walrus``: whether the statement may hold an assignment expression (``:=``)."""
    if isinstance(stmt, ast.ExceptHandler):
        return [(stmt.name, stmt.name, True)] if stmt.name else []
    targets: list[ast.expr] = []
    binds = True
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    elif isinstance(stmt, ast.AugAssign):
        targets, binds = [stmt.target], False
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    elif isinstance(stmt, ast.Delete):
        targets = stmt.targets
    out: dict[str, tuple[str, bool]] = {}
    for target in targets:
        for path, whole in _target_paths(target):
            seen = out.get(path, (path, False))
            out[path] = (path, seen[1] or (binds and whole))
    for sub in _header_nodes(stmt) if walrus else ():
        if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
            out[sub.target.id] = (sub.target.id, True)
    return [(path.split(".")[0], path, b) for path, (_, b) in out.items()]


def _header_nodes(stmt: ast.AST):
    """The nodes of a simple statement, or of a compound statement's header (its test, iterable or items)."""
    if not isinstance(getattr(stmt, "body", None), list):
        yield from ast.walk(stmt)
        return
    for field in ("test", "iter", "items", "subject"):
        value = getattr(stmt, field, None)
        for part in value if isinstance(value, list) else [value] if value is not None else []:
            yield from ast.walk(part)


def _target_paths(target: ast.expr) -> list[tuple[str, bool]]:
    """What a target changes, each with whether it binds a name: ``a`` and ``a, b`` bind; ``a[i]`` changes
    ``a``, ``self.W`` changes ``self.W``, ``self.m[k]`` changes ``self.m``."""
    if isinstance(target, ast.Name):
        return [(target.id, True)]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [pair for elt in target.elts for pair in _target_paths(elt)]
    if isinstance(target, ast.Starred):
        return _target_paths(target.value)
    node: ast.AST = target
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        chain = _chain(node) if isinstance(node, ast.Attribute) else None
        if chain is not None:
            return [(chain, False)]
        node = node.value
    return [(node.id, False)] if isinstance(node, ast.Name) else []


def after_statement(refs: References, function: str, text: str, line: int, where: str) -> Statement:
    """The statement of ``function`` an ``after:`` names (its text, or its first tokens), recorded for the lock
    like any reference; a TraceError saying why when it names no one statement."""
    ref = f"{function}: {text}"
    try:
        resolved = resolve(refs.index, parse_ref(ref), [function])
    except TraceError as err:
        raise TraceError(err.message) from None
    if resolved.statement is None:
        raise TraceError(f"'{text}' names no statement of {function}; copy the statement's text from the code")
    refs.resolve(ref, line, where)
    return resolved.statement


# ----------------------------------------------------------------------------- what a page is told


def bound_twice(name: str, found: tuple[Assignment, ...], path: str, seen: Assignments) -> str:
    """Why a bare name that two statements bind has no one value, and how to say which one (``path``: the
    function's file as the site shows it)."""
    lines = [f"{path}:{a.start}" for a in found]
    where = ", ".join(lines[:-1]) + f" and again at {lines[-1]}"
    last = seen.last(name) or found[-1]
    return (
        f"'{name}' is bound at {where}, and the recording holds only its value on return; say which value "
        f'you mean with the statement it follows, e.g. after: "{last.text}" ({path}:{last.start}) for the '
        "value on return (a value bound again later is not recorded)"
    )


def changed_later(read: str, later: Assignment, line: int, path: str, seen: Assignments) -> str:
    """Why the value ``read`` holds after the statement at ``line`` is not recorded."""
    last = seen.last(read) or later
    read = later.path  # what changed: ``x`` of a read of ``x.T``
    return (
        f"'{read}' is changed at {path}:{later.start}, after {path}:{line}, so its recorded value (on return) "
        f"is not its value after {path}:{line}; show it after the last statement that changes it, "
        f'after: "{last.text}" ({path}:{last.start}), or an expression that reads it at {path}:{line}'
    )


def unseen(read: str, later: Assignment, line: int, code: str, path: str, seen: Assignments) -> str:
    """Why neither recording holds what the statement at ``line`` read of ``read`` to compute ``code``."""
    here = f"{path}:{line}"
    name, read = read.split(".")[0], later.path  # what changed: ``Xc`` of a read of ``Xc.mean``
    if later.start == line:
        return (
            f"'{read}' is changed at {here} by the very statement where '{code}' is computed, so its recorded "
            f"value (on return) is not what that line read; show the value the statement leaves instead, "
            f'{read} with after: "{later.text}"'
        )
    if name in seen.params:
        earlier = [a for a in seen.of(name) if a.touches(read) and a.start < line]
        why = (
            f"assigned at {path}:{earlier[0].start}, before {here} where '{code}' is computed, and changed at "
            f"{path}:{later.start}, after it"
            if earlier
            else f"changed at {path}:{later.start}, later in the loop around {here} where '{code}' is computed"
        )
        return (
            f"'{read}' is {why}, so neither its value on entry nor on return is what that line read; "
            "show a local that is not changed afterwards"
        )
    return (
        f"'{read}' is changed at {path}:{later.start}, after {here} where '{code}' is computed, so the recorded "
        "value (at return) is not what that line saw; show a local that is not changed afterwards"
    )


__all__ = [
    "after_statement",
    "ENTRY",
    "RETURN",
    "Assignment",
    "Assignments",
    "assignments",
    "bound_twice",
    "changed_later",
    "function_node",
    "one_line",
    "read_paths",
    "unseen",
]
