"""What of a module's text a run can depend on, besides the functions whose code ran.

A run (a recording, the coverage run) depends on the functions whose code ran and on the rest of each module it
loaded: imports, constants, classes, each ``def`` line. A function that did not run and that nothing can reach
by its name is left out of that rest as a whole, its ``def`` line too: appending such a function to a module, or
editing one, changes nothing a run saw. A function is left out only when all of this holds:

- it is defined at the module's top level, without decorators;
- its defaults and annotations are names, attributes, constants and subscripts of them (evaluating the ``def``
  runs no code);
- its name is written nowhere else in the files the run loaded: no call or reference to it, no string naming it
  (``getattr(ops, "name")``, ``__all__``), no other binding of that name (it shadows nothing);
- no file the run loaded walks a namespace (``globals()``, ``vars(module)``, ``dir(module)``, a module's
  ``__dict__``, ``inspect.getmembers``, ``sys.modules``) or looks a name made at run time up in a module it
  imports (``getattr(ops, name)``): a registry filled that way would see a new function.

What this cannot see: a name made at run time looked up in a module the code holds otherwise than by an import
(``m = importlib.import_module(...)``, then ``getattr(m, name, None)``), where the old run took the fallback.

Every other change of a module outside the bodies of the functions that ran counts.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Set
from dataclasses import dataclass, field

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Calls that list a namespace when given a module (or, at the top level, the module's own).
_LISTING = {"vars", "dir", "getmembers"}

#: Calls that look a name up in a namespace: given a module and a name made at run time, they may find a new one.
_LOOKUP = {"getattr", "hasattr"}


@dataclass(frozen=True)
class Unreachable:
    """A top-level function that may be left out when it did not run: its name and lines (first to last)."""

    name: str
    start: int
    end: int


@dataclass
class ModuleText:
    """One file as a run's dependencies read it."""

    lines: list[str]
    words: Counter = field(default_factory=Counter)  # identifier -> how often it is written (code, strings)
    candidates: list[Unreachable] = field(default_factory=list)
    lists_namespaces: bool = False

    @classmethod
    def of(cls, text: str) -> ModuleText:
        lines = text.splitlines()
        module = cls(lines, Counter(_WORD.findall(text)))
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            module.lists_namespaces = True  # a file Python cannot read: nothing is left out
            return module
        module.lists_namespaces = _lists_namespaces(tree)
        postponed = any(
            isinstance(node, ast.ImportFrom)
            and node.module == "__future__"
            and any(a.name == "annotations" for a in node.names)
            for node in tree.body
        )
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _inert(node, postponed):
                module.candidates.append(Unreachable(node.name, node.lineno, node.end_lineno or node.lineno))
        return module

    def words_in(self, start: int, end: int) -> Counter:
        return Counter(_WORD.findall("\n".join(self.lines[start - 1 : end])))


def left_out(module: ModuleText, ran: Set[str], loaded: Iterable[ModuleText]) -> list[Unreachable]:
    """The functions of ``module`` left out of what a run depends on: candidates whose name is not in ``ran``
    (the short names of its functions that ran) and is written nowhere else in ``module`` or the other files
    ``loaded``."""
    others = [m for m in loaded if m is not module]
    if module.lists_namespaces or any(m.lists_namespaces for m in others):
        return []
    out = []
    for fn in module.candidates:
        if fn.name in ran:
            continue
        elsewhere = module.words[fn.name] - module.words_in(fn.start, fn.end)[fn.name]
        if elsewhere == 0 and not any(m.words[fn.name] for m in others):
            out.append(fn)
    return out


def digest(module: ModuleText, skipped: Iterable[range]) -> str:
    """A digest of ``module``'s non-blank lines outside the ``skipped`` line ranges (1-based)."""
    skip: set[int] = set()
    for lines in skipped:
        skip.update(lines)
    rest = [line for n, line in enumerate(module.lines, 1) if n not in skip and line.strip()]
    return hashlib.sha256("\n".join(rest).encode()).hexdigest()[:24]


def _inert(node: ast.FunctionDef | ast.AsyncFunctionDef, postponed: bool) -> bool:
    """Whether running this ``def`` statement only binds its name: no decorator, defaults and annotations that
    call nothing."""
    if node.decorator_list:
        return False
    args = node.args
    evaluated: list[ast.expr | None] = [*args.defaults, *args.kw_defaults]
    if not postponed:
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        evaluated += [a.annotation for a in every if a is not None] + [node.returns]
    return all(e is None or _plain(e) for e in evaluated)


def _plain(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant | ast.Name):
        return True
    if isinstance(e, ast.Attribute):
        return _plain(e.value)
    if isinstance(e, ast.Subscript):
        return _plain(e.value) and _plain(e.slice)
    if isinstance(e, ast.Tuple | ast.List):
        return all(_plain(x) for x in e.elts)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitOr):  # int | None
        return _plain(e.left) and _plain(e.right)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub | ast.UAdd):
        return _plain(e.operand)
    return False


def _lists_namespaces(tree: ast.Module) -> bool:
    """Whether the code can list a namespace a new function would appear in: ``globals()``, ``vars()`` or
    ``dir()`` at the top level, ``sys.modules``, or ``vars``, ``dir``, ``inspect.getmembers`` or ``__dict__`` of
    a name the file imports (a module), or ``getattr`` or ``hasattr`` of such a name and a name made at run
    time."""
    imported = {
        (a.asname or a.name).partition(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for a in node.names
    }
    in_functions = {
        id(node)
        for stmt in tree.body
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for node in ast.walk(stmt)
    }

    def a_module(e: ast.expr) -> bool:
        return isinstance(e, ast.Name) and e.id in imported

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr == "__dict__" and a_module(node.value):
                return True
            if node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys":
                return True
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if called == "globals":
            return True
        if called in _LOOKUP and len(node.args) >= 2 and a_module(node.args[0]):
            if not isinstance(node.args[1], ast.Constant):  # a name made at run time
                return True
        if called in _LISTING:
            if node.args and a_module(node.args[0]):
                return True
            if not node.args and called != "getmembers" and id(node) not in in_functions:
                return True
    return False
