"""What a path of the code may be at run time, followed across the files: how calls are resolved.

``bindings`` reads, file by file, what every name is bound to; this module follows those bindings
through the whole code base, as Python's imports do: a name of a module, then what the module imports
it from (relative imports, re-exports of a package's ``__init__.py``, ``import *`` limited by
``__all__``), what an assignment put there (a module-level instance, ``self.log_func = sigmoid``), the
items of a list or a dict that holds layers or classes, what a helper returns (``bn = make_bn()``),
what a pytest fixture gives the tests that name it, and, given ``flows``, what the calls of a function
pass to its parameters (``net.add(Dense(4))``: see ``indexing._resolve_calls``).

A value is a tuple: ``("f", name)`` a function of the index, ``("c", name)`` a class, ``("o", name)``
an instance of that class, ``("m", name)`` a module of the project, ``("b", ...)`` a container whose
items are bound in the code, ``EXTERNAL`` something from outside the project (numpy, a builtin), and
``UNKNOWN`` what the reading cannot tell (a parameter nothing describes). Each question is answered
once: the answers are kept for the build.

``Values`` looks up where a path starts (a name of a function, of a module, an import); ``Operations``
says what each step after it gives (an attribute, a call, an item). The classes' bases and methods are
``hierarchy``'s, the pytest fixtures a test's parameters name are ``fixtures``'.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from docs_hooks.resolve.bindings import CALL, ELEMENT, PROPERTY, RETURN, YIELD, Path
from docs_hooks.resolve.fixtures import Fixtures
from docs_hooks.resolve.hierarchy import Hierarchy

Value = tuple
UNKNOWN: Value = ("?",)
UNKNOWN_PATH: Path = ("?",)  # the path of a binding the reading cannot tell (bindings.UNKNOWN)
EXTERNAL: Value = ("x",)
NOTHING: frozenset = frozenset()
_UNKNOWN = frozenset([UNKNOWN])
_EXTERNAL = frozenset([EXTERNAL])

# Methods of a container that hand back its items, or the container itself.
_ITEM_METHODS = frozenset({"get", "pop", "setdefault", "__getitem__"})
_SAME_METHODS = frozenset({"values", "copy"})


@dataclass
class ModuleBindings:
    """What a module's top level binds: its names, the modules it imports ``*`` from, its ``__all__``."""

    names: dict[str, list[Path]] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)
    exports: list[str] | None = None


class _Function(Protocol):
    """What this module reads of a function of the index (``codeindex.Function``)."""

    name: str
    module: str
    file: pathlib.Path
    is_test: bool
    params: tuple[str, ...]
    local_names: frozenset[str]

    @property
    def short_name(self) -> str: ...


class _Index(Protocol):
    """The tables of the code index this module follows (``codeindex.CodeIndex``, which imports this module)."""

    @property
    def modules(self) -> dict[str, ModuleBindings]: ...
    @property
    def scopes(self) -> dict[str, dict[str, list[Path]]]: ...
    @property
    def attrs(self) -> dict[str, dict[str, list[tuple[str, Path]]]]: ...
    @property
    def functions(self) -> Mapping[str, _Function]: ...
    @property
    def classes(self) -> Mapping[str, object]: ...
    @property
    def bases(self) -> dict[str, list[str]]: ...


class Values:
    """Answers "what may this path be?" over one code index (see the module's docstring): a path's root is
    looked up here (a name of a function's scope, of a module, an import), its operations are applied by
    ``Operations``."""

    def __init__(self, index: _Index, flows: dict[str, dict[str, list[tuple[str, Path]]]] | None = None) -> None:
        # What calls pass to parameters the reading cannot tell: function -> parameter -> [(caller, path)].
        self.flows = flows or {}
        self.modules: dict[str, ModuleBindings] = index.modules
        self.scopes: dict[str, dict[str, list[Path]]] = index.scopes
        self.functions = index.functions
        self.classes = index.classes
        self.hierarchy = Hierarchy(index.functions, index.classes, index.bases)
        self.operations = Operations(self, index.attrs)
        self._fixtures = Fixtures(index.functions, self.hierarchy.owner)
        self._memo: dict[tuple, frozenset] = {}
        self._names: dict[tuple, dict[str, frozenset]] = {}

    # ------------------------------------------------------------------ questions

    def of(self, caller: str, path: Path) -> frozenset:
        """What ``path``, written in function ``caller``, may be (not kept: each call's path is its own)."""
        return self._follow(("f", caller), path)

    def class_named(self, dotted: str) -> str | None:
        """The class a dotted name leads to, through imports and re-exports (a base class as written)."""
        found = [v[1] for v in self._dotted(dotted) if v[0] == "c"]
        return found[0] if len(found) == 1 else None

    def attribute(self, value: Value, name: str) -> frozenset:
        """What attribute ``name`` of ``value`` may be."""
        return self.operations.attribute(value, name)

    # ------------------------------------------------------------------ following paths

    def bound(self, scope: tuple, path: Path) -> frozenset:
        """What a path bound in a scope may be (kept: bindings are followed again and again)."""
        return _remembered(self._memo, ("path", scope, path), lambda: self._follow(scope, path))

    def _follow(self, scope: tuple, path: Path) -> frozenset:
        root, ops = path[0], path[1:]
        if root == "?":
            return _UNKNOWN
        owner = self.hierarchy.owner
        if root[0] == "=":
            values = self._dotted(root[1:])
        elif root == "super" and ops[:1] == (CALL,) and scope[0] == "f" and owner(scope[1]):
            values, ops = frozenset([("s", owner(scope[1]))]), ops[1:]
        else:
            values = self._name(scope, root)
        step = self.operations.step
        for op in ops:
            if not values:
                break
            if len(values) == 1:
                (value,) = values
                values = step(value, op)
            else:
                values = frozenset().union(*[step(v, op) for v in values])
        return values

    def _name(self, scope: tuple, name: str) -> frozenset:
        # Kept as _remembered keeps its answers, in a table per scope: this is asked for every call.
        known = self._names.get(scope)
        if known is None:
            known = self._names[scope] = {}
        found = known.get(name)
        if found is None:
            known[name] = NOTHING
            found = known[name] = self._lookup(scope, name)
        return found

    def _lookup(self, scope: tuple, name: str) -> frozenset:
        kind, where = scope
        if kind == "f":
            fn = self.functions.get(where)
            if fn is not None and fn.is_test and name in fn.params:
                fixture = self._fixtures.named(fn, name)
                if fixture is not None:  # pytest passes what the fixture of that name returns or yields
                    return self.binding(("f", fixture), RETURN) | self.binding(("f", fixture), YIELD)
            table = self.scopes.get(where, {})
            if name in table:
                found = self.binding(scope, name)
            elif fn is not None and name in fn.local_names:
                found = _UNKNOWN  # bound in ways the reading does not follow
            else:
                return self.top_level(fn.module if fn is not None else "", name)
            passed = self.flows.get(where, {}).get(name)
            if passed:  # a parameter: also what the calls of the function pass it
                found = found.union(*(self.bound(("f", caller), path) for caller, path in passed))
            return found
        return self.top_level(where, name)

    def binding(self, scope: tuple, key: str) -> frozenset:
        """What a scope's binding ``key`` may hold (a name, ``name[]`` for its items, ``return``)."""

        def compute() -> set[Value]:
            kind, where = scope
            table = self.scopes.get(where, {}) if kind == "f" else self._module(where).names
            out: set[Value] = set()
            for path in table.get(key, ()):
                if path == ("*self",):
                    out.add(("o", self.hierarchy.owner(where)))
                elif path == ("*cls",):
                    out.add(("c", self.hierarchy.owner(where)))
                else:
                    out.update(self.bound(scope, path))
            if key + ELEMENT in table:
                out.add(("b", kind, where, key))
            return out

        return _remembered(self._memo, ("key", scope, key), compute)

    def _module(self, name: str) -> ModuleBindings:
        return self.modules.get(name) or ModuleBindings()

    def top_level(self, module: str, name: str) -> frozenset:
        """What a name of ``module``'s top level may be: what it binds, defines, or imports ``*`` from."""

        def compute() -> set[Value]:
            out: set[Value] = set()
            bindings = self._module(module)
            if name in bindings.names:
                out.update(self.binding(("m", module), name))
            dotted = f"{module}.{name}"
            if dotted in self.functions:
                out.add(("f", dotted))
            elif dotted in self.classes:
                out.add(("c", dotted))
            elif dotted in self.modules:
                out.add(("m", dotted))
            if not out:
                for star in bindings.stars:
                    if _exports(self.modules, star, name):
                        out.update(self.top_level(star, name))
                    elif star not in self.modules:
                        out.add(EXTERNAL)  # from outside the project: whatever it exports
            return out or {EXTERNAL}  # a builtin, or no name of the project

        return _remembered(self._memo, ("global", module, name), compute)

    def _dotted(self, name: str) -> frozenset:
        """What an absolute dotted name leads to: the longest module of the project it starts with, then
        the names after it, one attribute at a time."""

        def compute() -> set[Value]:
            parts = name.split(".")
            for i in range(len(parts), 0, -1):
                module = ".".join(parts[:i])
                if module in self.modules:
                    values = {("m", module)}
                    for attr in parts[i:]:
                        values = {out for v in values for out in self.operations.attribute(v, attr)}
                    return values
            return {EXTERNAL}

        return _remembered(self._memo, ("dotted", name), compute)


class Operations:
    """What an operation on a value gives (the rules ``Values`` applies to a path, step by step): an attribute
    of a module, of a class or an instance (a method through the bases, a property's result, what the code
    binds the attribute to), of ``super()``, of a container; a call of a function, a class, an instance
    (its ``__call__``); an item of a container or of an instance (its ``__getitem__``). What a binding holds
    is asked of ``values``; each answer is kept for the build."""

    def __init__(self, values: Values, attrs: dict[str, dict[str, list[tuple[str, Path]]]]) -> None:
        self.values = values
        self.attrs = attrs  # class -> attribute -> [(function that binds it, or "" for the class body, path)]
        self.modules = values.modules
        self.scopes = values.scopes
        self.hierarchy = values.hierarchy
        self._memo: dict[tuple, frozenset] = {}

    def step(self, value: Value, op: str) -> frozenset:
        """What operation ``op`` (``.name``, ``()``, ``[]``) on ``value`` may give."""
        if value is EXTERNAL or value == EXTERNAL:
            return _EXTERNAL if op[0] == "." else _UNKNOWN  # what outside code returns may be a project object
        if value == UNKNOWN:
            return _UNKNOWN
        key = ("step", value, op)
        found = self._memo.get(key)
        if found is None:
            self._memo[key] = NOTHING
            if op == CALL:
                found = self.call(value)
            elif op == ELEMENT:
                found = self.items(value)
            else:
                found = self.attribute(value, op[1:])
            self._memo[key] = found
        return found

    def attribute(self, value: Value, attr: str) -> frozenset:
        """What attribute ``attr`` of ``value`` may be."""
        kind = value[0]
        if kind == "m":
            module = f"{value[1]}.{attr}"
            found = self.values.top_level(value[1], attr)
            if module in self.modules and found == _EXTERNAL:
                return frozenset([("m", module)])
            return found
        if kind in ("o", "c"):
            method = self.hierarchy.method_of(value[1], attr)
            if method is not None:
                if kind == "o" and PROPERTY in self.scopes.get(method, {}):
                    return self.call(("f", method))  # a property: what it returns
                return frozenset([("f", method)])
            return self._class_attribute(value[1], attr)
        if kind == "s":  # super(): a method of the bases
            for base in self.hierarchy.bases.get(value[1], ()):
                method = self.hierarchy.method_of(base, attr)
                if method is not None:
                    return frozenset([("f", method)])
            return _EXTERNAL
        if kind == "b":
            if attr in _ITEM_METHODS:
                return frozenset([("i", value)])
            if attr in _SAME_METHODS:
                return frozenset([("=", value)])
            return _EXTERNAL  # append, keys, ...: a container's own methods
        if kind == "x":
            return _EXTERNAL
        return _UNKNOWN

    def _class_attribute(self, cls: str, key: str) -> frozenset:
        """What an attribute (or ``attr[]``, its items) of an instance of ``cls`` may hold: what the class and
        its bases bind it to, else what subclasses do; unknown when no code of the index binds it."""

        def compute() -> set[Value]:
            out: set[Value] = set()
            for owners in ([cls, *self.hierarchy.mro(cls)[1:]], self.hierarchy.subclasses(cls)):
                bound = False
                for owner in owners:
                    table = self.attrs.get(owner, {})
                    bound = bound or key in table or key + ELEMENT in table
                    for function, path in table.get(key, ()):
                        scope = ("f", function) if function else ("m", _module_of(self.modules, owner))
                        out.update(self.values.bound(scope, path))
                    if key + ELEMENT in table:
                        out.add(("b", "c", owner, key))
                if bound:
                    return out
            return {UNKNOWN}

        return _remembered(self._memo, ("attr", cls, key), compute)

    def call(self, value: Value) -> frozenset:
        """What calling ``value`` may give."""
        kind = value[0]
        if kind == "f":
            return self.values.binding(("f", value[1]), RETURN)
        if kind == "c":
            return frozenset([("o", value[1])])
        if kind == "o":
            method = self.hierarchy.method_of(value[1], "__call__")
            return self.values.binding(("f", method), RETURN) if method is not None else _UNKNOWN
        if kind == "i":  # d.get(name): an item of d
            return self.items(value[1])
        if kind == "=":  # d.values(), d.copy(): d itself
            return frozenset([value[1]])
        return _UNKNOWN  # what outside code returns may be anything, a project object passed in included

    def items(self, value: Value) -> frozenset:
        """What an item of ``value`` may be."""
        kind = value[0]
        if kind == "b":
            _, where_kind, where, key = value
            if where_kind == "c":
                return self._class_attribute(where, key + ELEMENT)
            return self.values.binding((where_kind, where), key + ELEMENT)
        if kind == "o":
            method = self.hierarchy.method_of(value[1], "__getitem__")
            if method is not None:
                return self.values.binding(("f", method), RETURN)
        return _UNKNOWN


def _remembered(memo: dict[tuple, frozenset], key: tuple, compute: Callable[[], Iterable[Value]]) -> frozenset:
    """``memo[key]``, computed once; asked again while being computed (a cycle), nothing."""
    found = memo.get(key)
    if found is None:
        memo[key] = NOTHING  # asked again while being answered: a cycle, which adds nothing
        found = memo[key] = frozenset(compute())
    return found


def _exports(modules: Mapping[str, ModuleBindings], module: str, name: str) -> bool:
    """Whether ``from module import *`` brings ``name``: in its ``__all__``, else any public name."""
    if module not in modules:
        return False
    listed = modules[module].exports
    return name in listed if listed is not None else not name.startswith("_")


def _module_of(modules: Mapping[str, ModuleBindings], cls: str) -> str:
    """The module of the project a class is defined in (the longest one its dotted name starts with)."""
    parts = cls.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:i]) in modules:
            return ".".join(parts[:i])
    return ""
