"""The classes of the code index as Python looks a method up: each class's bases in Python's order, the
method a name finds on a class, the classes that derive from one, the class a method belongs to.

``values.Values`` asks these while it follows what a path may be, and ``callgraph.CallGraph`` while it
counts the calls that may reach a method; neither needs the other for them. The bases are the ones the
index holds when the hierarchy is made (as written, or the classes they name once resolved).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


def mro(bases: Mapping[str, Sequence[str]], cls: str) -> list[str]:
    """``cls`` and the classes it inherits from, in the order Python looks a method up (C3, as ``__mro__``):
    the classes ``bases`` knows, each once. Where C3 has no answer (Python would refuse the class), the bases
    depth first."""

    def linear(name: str, seen: tuple[str, ...]) -> list[str]:
        parents = [b for b in bases.get(name, ()) if b != name and b not in seen]
        rest = [linear(b, (*seen, name)) for b in parents] + [list(parents)]
        out = [name]
        while any(rest):
            rest = [r for r in rest if r]
            head = next((r[0] for r in rest if not any(r[0] in other[1:] for other in rest)), None)
            if head is None:  # inconsistent: depth first, each once
                return list(dict.fromkeys(out + [c for r in rest for c in r]))
            out.append(head)
            rest = [r[1:] if r[0] == head else r for r in rest]
        return list(dict.fromkeys(out))

    return linear(cls, ())


class _Function(Protocol):
    """What this module reads of a function of the index (``codeindex.Function``)."""

    @property
    def short_name(self) -> str: ...


class Hierarchy:
    """The classes of one code index (``functions``, ``classes`` and ``bases`` are its tables), their bases and
    their methods; each method looked up is kept."""

    def __init__(
        self, functions: Mapping[str, _Function], classes: Mapping[str, object], bases: dict[str, list[str]]
    ) -> None:
        self.functions = functions
        self.classes = classes
        self.bases = bases
        self._methods: dict[tuple[str, str], str | None] = {}  # (class, name) -> the method found
        self._subclasses: dict[str, list[str]] | None = None

    def mro(self, cls: str) -> list[str]:
        """``cls`` and its bases, in the order Python looks a method up (see ``mro``)."""
        return mro(self.bases, cls)

    def method_of(self, cls: str, name: str) -> str | None:
        """``cls.name`` if the index has it, else the first of ``cls``'s bases (in Python's order) that has it."""
        key = (cls, name)
        if key not in self._methods:
            self._methods[key] = self._find_method(cls, name)
        return self._methods[key]

    def _find_method(self, cls: str, name: str) -> str | None:
        return next((f"{c}.{name}" for c in mro(self.bases, cls) if f"{c}.{name}" in self.functions), None)

    def subclasses(self, cls: str) -> list[str]:
        """Every class of the index that derives from ``cls``, however far down."""
        if self._subclasses is None:
            self._subclasses = {}
            for sub, bases in self.bases.items():
                for base in bases:
                    self._subclasses.setdefault(base, []).append(sub)
        out, todo = [], list(self._subclasses.get(cls, ()))
        while todo:
            sub = todo.pop()
            if sub not in out:
                out.append(sub)
                todo.extend(self._subclasses.get(sub, ()))
        return out

    def owner(self, function: str) -> str | None:
        """The class a function is a method of (None for a module-level function)."""
        fn = self.functions.get(function)
        if fn is None:
            return None
        owner = function[: -len(fn.short_name) - 1]
        return owner if owner in self.classes else None
