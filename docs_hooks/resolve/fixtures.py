"""Which pytest fixture a parameter of a test names, found as pytest finds it: a method of the test's class,
a function of its module, else a function of the nearest ``conftest.py`` above the test's file.

``values.Values`` asks this for each parameter of a test (or of a fixture): what the parameter holds is
what that fixture returns or yields.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Mapping
from typing import Protocol


class _Function(Protocol):
    """What this module reads of a function of the index (``codeindex.Function``)."""

    name: str
    module: str
    file: pathlib.Path

    @property
    def short_name(self) -> str: ...


class Fixtures:
    """The fixtures of one code index's functions; ``owner`` gives the class a function is a method of."""

    def __init__(self, functions: Mapping[str, _Function], owner: Callable[[str], str | None]) -> None:
        self.functions = functions
        self.owner = owner
        self._conftest: dict[str, list[tuple[pathlib.Path, str]]] | None = None  # name -> [(folder, function)]

    def named(self, test: _Function, name: str) -> str | None:
        """The pytest fixture a parameter of a test (or of a fixture) names: a method of its class, a function
        of its module, else of the nearest ``conftest.py`` above it."""
        owner = self.owner(test.name)
        for candidate in (f"{owner}.{name}" if owner else None, f"{test.module}.{name}"):
            if candidate is not None and candidate in self.functions and candidate != test.name:
                return candidate
        if self._conftest is None:
            self._conftest = {}
            for fn in self.functions.values():
                if fn.file.name == "conftest.py" and fn.name == f"{fn.module}.{fn.short_name}":
                    self._conftest.setdefault(fn.short_name, []).append((fn.file.parent, fn.name))
        above = [
            (len(folder.parts), found) for folder, found in self._conftest.get(name, ()) if folder in test.file.parents
        ]
        return max(above)[1] if above else None
