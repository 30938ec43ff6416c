"""What each name of a Python file may hold, read from ``ast``: the data the code index resolves calls by.

Which function ``layer.forward_pass(X)`` calls depends on what ``layer`` holds; Python finds out by
running, the index by reading. For each function (and for the module's own top level) this module
notes what every name is bound to: imports, relative ones made absolute; assignments, to names and to
``self``'s attributes; loop variables; what is put into a list or a dict; what the function returns;
what the parameters' defaults and annotations say. ``values.Values`` then follows these bindings
across the files. The reading is flow-insensitive: a name may hold what any of its bindings gives it.

A value is written as a *path*, a tuple of strings: a name, then operations on it.
``("self", ".layers", "[]", ".forward_pass")`` is ``self.layers[i].forward_pass``: ``".x"`` reads an
attribute, ``"()"`` calls, ``"[]"`` takes an element (a subscript, or an item of a loop). Two roots are
not names: ``"=a.b"`` is what an import binds, by its absolute dotted name, and ``"?"`` a value the
reading cannot follow (a parameter nothing describes, the result of arithmetic). The elements of what
a name holds are bound under the name followed by ``"[]"`` (``layers[]``). Everything is strings and
lists, so that it is cached with the file's part of the index.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

Path = tuple[str, ...]

UNKNOWN: Path = ("?",)
CALL = "()"
ELEMENT = "[]"
RETURN = "return"  # the key of what a function returns (a keyword: never a name of the code)
YIELD = "yield"  # and of what it yields (what a pytest fixture gives the tests that name it)
PROPERTY = "*property"  # the key that marks a property (no name of the code starts with *)

# Builtins that hand back the items of what they are given, and container methods that store one.
_SAME_ITEMS = frozenset({"reversed", "sorted", "list", "tuple", "iter", "set", "frozenset"})
_CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_Container = ast.List | ast.Tuple | ast.Set | ast.Dict | ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def path_of(node: ast.AST) -> Path | None:
    """``self.layers[i].forward`` as ``("self", ".layers", "[]", ".forward")``; None when the chain does not
    start from a name (a literal, an expression in brackets)."""
    ops: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            ops.append("." + node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            ops.append(CALL)
            node = node.func
        elif isinstance(node, ast.Subscript):
            ops.append(ELEMENT)
            node = node.value
        elif isinstance(node, ast.Name):
            ops.append(node.id)
            return tuple(reversed(ops))
        else:
            return None


def written(path: Path) -> str:
    """A path as code, for messages: ``layers[...].forward``."""
    out = [path[0] if not path[0].startswith("=") else path[0][1:]]
    for op in path[1:]:
        out.append({CALL: "(...)", ELEMENT: "[...]"}.get(op, op))
    return "".join(out)


def absolute_import(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of ``from <level dots><name> import ...`` written in ``module``."""
    if not level:
        return name or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: max(0, len(parts) - (level - 1))]
    return ".".join([*parts, *([name] if name else [])])


def walk(node: ast.AST) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under ``node`` (itself excluded), in the order of the source, with whether it lies inside a
    nested def, class or lambda."""
    stack = [(child, False) for child in reversed(list(ast.iter_child_nodes(node)))]
    while stack:
        current, nested = stack.pop()
        yield current, nested
        inner = nested or isinstance(current, _NESTED)
        stack.extend((child, inner) for child in reversed(list(ast.iter_child_nodes(current))))


def expression_paths(node: ast.AST) -> list[Path]:
    """What an expression may be, as paths ([] for a literal: no object of the project)."""
    path = path_of(node)
    if path is not None:
        return [path]
    if isinstance(node, (ast.Constant, ast.JoinedStr, ast.Lambda, *_CONTAINERS)):
        return []  # a container's items are bound by Binder._put, under the name that holds it
    if isinstance(node, ast.IfExp):
        return expression_paths(node.body) + expression_paths(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [p for v in node.values for p in expression_paths(v)]
    if isinstance(node, ast.NamedExpr):
        return expression_paths(node.value)
    return [UNKNOWN]


def looped(target: ast.AST, iterable: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | None, list[Path] | None]]:
    """What ``for target in iterable`` binds, as the assignments ``(target, value, paths)`` it makes: through
    ``reversed``, ``sorted``, ``enumerate``, ``zip``, ``.values()`` and ``.items()`` to what they iterate; the
    items of a literal list, tuple or set one by one; else an element of what the iterable is."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args:
        name, args = iterable.func.id, iterable.args
        if name in _SAME_ITEMS:
            yield from looped(target, args[0])
            return
        if name == "enumerate" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            yield target.elts[0], None, []
            yield from looped(target.elts[1], args[0])
            return
        if name == "zip" and isinstance(target, ast.Tuple) and len(target.elts) == len(args):
            for sub, arg in zip(target.elts, args):
                yield from looped(sub, arg)
            return
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args:
        method, owner = iterable.func.attr, iterable.func.value
        if method == "values":
            yield from looped(target, owner)
            return
        if method == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            yield target.elts[0], None, []
            yield from looped(target.elts[1], owner)
            return
    if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
        for item in iterable.elts:
            if isinstance(item, ast.Starred):
                yield from looped(target, item.value)
            else:
                yield target, item, None
        return
    path = path_of(iterable)
    yield target, None, [path + (ELEMENT,)] if path is not None else [UNKNOWN]


def imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[tuple[str, Path]]:
    """The names an import written in ``module`` binds, each with the path of what it imports: its absolute
    dotted name (``import a.b`` binds ``a``; ``from . import x`` in ``pkg.m``, ``x`` to ``("=pkg.x",)``)."""
    if isinstance(node, ast.Import):
        out: list[tuple[str, Path]] = []
        for a in node.names:
            bound = a.asname or a.name.split(".")[0]
            out.append((bound, ("=" + (a.name if a.asname else bound),)))
        return out
    base = absolute_import(module, is_package, node.level, node.module)
    return [(a.asname or a.name, (f"={base}.{a.name}" if base else "=" + a.name,)) for a in node.names if a.name != "*"]


class Binder:
    """Collects the bindings of one scope: ``names`` (name -> paths) and, in a method, ``attrs`` (attribute
    of ``self`` -> paths)."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.is_package = is_package
        self.self_name: str | None = None
        self.names: dict[str, list[Path]] = {}
        self.attrs: dict[str, list[Path]] = {}

    # ------------------------------------------------------------------ scopes

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, in_class: bool) -> None:
        """The bindings of a function (a method when ``in_class``): its parameters, then all its body binds.

        The first parameter of a method is bound to ``("*self",)``, the instance of its class (``("*cls",)``,
        the class, for a classmethod); a property is marked by the key ``*property``."""
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        decorators = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in node.decorator_list}
        if in_class and positional and "staticmethod" not in decorators:
            self.self_name = positional[0].arg
            self.names[self.self_name] = [("*cls",) if "classmethod" in decorators else ("*self",)]
            if "property" in decorators or "cached_property" in decorators:
                self.names[PROPERTY] = []
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for arg, default in [*zip(positional, defaults), *zip(args.kwonlyargs, args.kw_defaults)]:
            if arg.arg == self.self_name:
                continue
            self.names.setdefault(arg.arg, []).extend(_parameter(arg.annotation, default))
        for rest in (args.vararg, args.kwarg):
            if rest is not None:
                self.names.setdefault(rest.arg, []).append(UNKNOWN)
        for sub, nested in walk(node):
            self.statement(sub, nested)

    def module_level(self, tree: ast.Module) -> tuple[list[str], list[str] | None]:
        """The bindings of a module's top level (not inside its functions and classes); returns the modules
        it imports ``*`` from and its ``__all__`` (None without one)."""
        stars: list[str] = []
        exports: list[str] | None = None
        for sub in _top_level(tree.body):
            if isinstance(sub, ast.ImportFrom) and any(a.name == "*" for a in sub.names):
                stars.append(absolute_import(self.module, self.is_package, sub.level, sub.module))
                continue
            names = _all_names(sub)
            if names is not None:
                exports = [*(exports or []), *names]
            self.statement(sub, False)
        return stars, exports

    def class_body(self, node: ast.ClassDef) -> None:
        """Names bound in a class's own body (``activation = ReLU``): the class's attributes."""
        for sub in _top_level(node.body):
            self.statement(sub, False)

    # ------------------------------------------------------------------ statements

    def statement(self, node: ast.AST, nested: bool) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self.assign(target, node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(node.target, node.value)
            elif isinstance(node.target, ast.Name):
                self.names.setdefault(node.target.id, []).extend(_annotation(node.annotation))
        elif isinstance(node, ast.AugAssign):
            self._augmented(node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self.iterate(node.target, node.iter)
        elif isinstance(node, ast.NamedExpr):
            self.assign(node.target, node.value)
        elif isinstance(node, ast.withitem):
            if node.optional_vars is not None:
                self.assign(node.optional_vars, None, [UNKNOWN])
        elif isinstance(node, ast.ExceptHandler):
            if node.name:
                self.names.setdefault(node.name, []).append(UNKNOWN)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for name, path in imported(node, self.module, self.is_package):
                self.names.setdefault(name, []).append(path)
        elif isinstance(node, (ast.Return, ast.Yield)):
            if not nested and node.value is not None:
                self._put(self.names, RETURN if isinstance(node, ast.Return) else YIELD, node.value)
        elif isinstance(node, ast.Call):
            self._stored_by_call(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.names.setdefault(node.name, [])  # a def inside a function: not a function of the index
        elif isinstance(node, ast.arg) and nested:  # a parameter of a def or lambda inside the function
            self.names.setdefault(node.arg, []).append(UNKNOWN)

    def assign(self, target: ast.AST, value: ast.AST | None, paths: list[Path] | None = None) -> None:
        """Bind ``target`` to what ``value`` may be (or to ``paths``)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
            if items is not None and (len(items) != len(target.elts) or any(isinstance(i, ast.Starred) for i in items)):
                items = None
            for i, sub in enumerate(target.elts):
                if items is not None:
                    self.assign(sub, items[i])
                else:
                    self.assign(sub.value if isinstance(sub, ast.Starred) else sub, None, [UNKNOWN])
            return
        if isinstance(target, ast.Starred):
            self.assign(target.value, None, [UNKNOWN])
            return
        if isinstance(target, ast.Subscript):  # d[key] = value: one more element of d
            where = self._location(target.value)
            if where is not None:
                self._put(where[0], where[1] + ELEMENT, value, paths)
            return
        where = self._location(target)
        if where is not None:
            self._put(where[0], where[1], value, paths)

    def iterate(self, target: ast.AST, iterable: ast.AST) -> None:
        """Bind a loop's ``target`` to the items of ``iterable``."""
        for sub, value, paths in looped(target, iterable):
            self.assign(sub, value, paths)

    # ------------------------------------------------------------------ helpers

    def _location(self, target: ast.AST) -> tuple[dict[str, list[Path]], str] | None:
        """Where a binding of ``target`` goes: a name, or an attribute of ``self``."""
        if isinstance(target, ast.Name):
            return self.names, target.id
        if (
            isinstance(target, ast.Attribute)
            and self.self_name is not None
            and isinstance(target.value, ast.Name)
            and target.value.id == self.self_name
        ):
            return self.attrs, target.attr
        return None

    def _put(
        self, table: dict[str, list[Path]], key: str, value: ast.AST | None, paths: list[Path] | None = None
    ) -> None:
        bucket = table.setdefault(key, [])
        if paths is not None:
            bucket.extend(paths)
        elif isinstance(value, _CONTAINERS):
            items = table.setdefault(key + ELEMENT, [])
            for item in _items(value):
                if isinstance(item, ast.Starred):  # [*others, ...]: the items of others
                    path = path_of(item.value)
                    items.append(path + (ELEMENT,) if path is not None else UNKNOWN)
                elif isinstance(item, _CONTAINERS):
                    self._put(table, key + ELEMENT, item)
                else:
                    items.extend(expression_paths(item))
        elif value is not None:
            bucket.extend(expression_paths(value))

    def _stored_by_call(self, call: ast.Call) -> None:
        """``x.append(v)``, ``x.insert(i, v)``, ``x.add(v)``, ``x.setdefault(k, v)``: v is an element of x;
        ``x.extend(vs)``, ``x.update(d)``: the items of vs, the values of d are."""
        if not isinstance(call.func, ast.Attribute):
            return
        where = self._location(call.func.value)
        if where is None:
            return
        table, key = where
        method, args = call.func.attr, call.args
        stored = {"append": 0, "add": 0, "insert": 1, "setdefault": 1}.get(method)
        if stored is not None and len(args) > stored:
            self._put(table, key + ELEMENT, args[stored])
        elif method in ("extend", "update") and len(args) == 1:
            self._put_items(table, key, args[0])

    def _put_items(self, table: dict[str, list[Path]], key: str, items: ast.AST) -> None:
        if isinstance(items, _CONTAINERS):
            for item in _items(items):
                self._put(table, key + ELEMENT, item)
            table.setdefault(key + ELEMENT, [])
            return
        path = path_of(items)
        table.setdefault(key + ELEMENT, []).append(path + (ELEMENT,) if path is not None else UNKNOWN)

    def _augmented(self, node: ast.AugAssign) -> None:
        where = self._location(node.target)
        if where is None:
            return
        if isinstance(node.op, ast.Add) and isinstance(node.value, (ast.List, ast.Tuple, ast.ListComp)):
            self._put_items(where[0], where[1], node.value)
        else:
            where[0].setdefault(where[1], [])

    def imports(self) -> dict[str, str]:
        """The names bound by imports alone, to the absolute names they import."""
        out = {}
        for name, paths in self.names.items():
            if len(paths) == 1 and len(paths[0]) == 1 and paths[0][0].startswith("="):
                out[name] = paths[0][0][1:]
        return out


def _items(node: _Container) -> list[ast.AST]:
    """The items a container literal or comprehension holds (a dict's values)."""
    if isinstance(node, ast.Dict):
        return list(node.values)
    if isinstance(node, ast.DictComp):
        return [node.value]
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return [node.elt]
    return list(node.elts)


def _parameter(annotation: ast.AST | None, default: ast.AST | None) -> list[Path]:
    """What a parameter may hold, by what its annotation and its default say; unknown too where no annotation
    describes it (a caller may pass anything)."""
    described = _annotation(annotation) if annotation is not None else []
    paths = described + (expression_paths(default) if default is not None else [])
    return paths if described else [*paths, UNKNOWN]


def _annotation(node: ast.AST) -> list[Path]:
    """An instance of each class an annotation names: ``Dense``, ``Dense | None``, ``Optional[Dense]``,
    ``Union[A, B]``, ``"Dense"``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _annotation(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _annotation(node.left) + _annotation(node.right)
    if isinstance(node, ast.Subscript):
        head = path_of(node.value)
        if head is not None and head[-1].lstrip(".") in ("Optional", "Union"):
            inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return [p for sub in inner for p in _annotation(sub)]
        return []
    path = path_of(node)
    return [path + (CALL,)] if path is not None and CALL not in path and ELEMENT not in path else []


def _top_level(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The statements of a module's (or a class's) own level, into ``if``/``try``/``with``/``for`` blocks,
    with the expressions in them; not into functions and classes."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        for sub, nested in walk(node):
            if not nested and not isinstance(sub, _NESTED):
                yield sub


def _all_names(node: ast.AST) -> list[str] | None:
    """The names an ``__all__ = [...]`` (or ``+=``, ``.extend``, ``.append``) statement lists."""
    value = None
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
        value = node.value
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
        value = node.value if node.target.id == "__all__" else None
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "__all__":
            if func.attr in ("extend", "append") and node.value.args:
                value = node.value.args[0]
                if func.attr == "append":
                    value = ast.List(elts=[value])
    if value is None:
        return None
    items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else []
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
