"""The modules of the code as resolving reads them: each parsed, with its functions' ``def`` nodes and what each
function assigns (``resolve.assignments``), found once per text of the file.

A build reads each file once (``Project``); ``Modules`` keeps what was found for
the text it read, one entry per file, so that a front end whose process stays
(``mkdocs serve``) hands the same ``Modules`` to each new build and a file the
author did not edit is not parsed and walked again after a code edit.
"""

from __future__ import annotations

import ast
from pathlib import Path

from docs_hooks.resolve.assignments import Assignments, assignments


class ParsedModule:
    """One text of a file: its tree and lines, and what resolving asked of it so far."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tree = ast.parse(text)
        self.lines = text.splitlines()
        self._definitions: list[ast.FunctionDef | ast.AsyncFunctionDef] | None = None
        self._assignments: dict[tuple[int, int, tuple[str, ...]], Assignments | None] = {}

    def definitions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """Every ``def`` of the module, nested ones included (one walk of it)."""
        if self._definitions is None:
            self._definitions = [
                node for node in ast.walk(self.tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        return self._definitions

    def assignments(self, start: int, end: int, params: tuple[str, ...]) -> Assignments | None:
        """What the function at lines ``start``-``end`` assigns; None when the module holds no such function."""
        key = (start, end, tuple(params))
        if key not in self._assignments:
            self._assignments[key] = assignments(self.tree, self.lines, start, end, params)
        return self._assignments[key]


class Modules:
    """The files read so far, each as its last text was parsed (see the module's doc)."""

    def __init__(self) -> None:
        self._known: dict[Path, ParsedModule] = {}

    def read(self, path: Path) -> ParsedModule:
        """The file as it is now: parsed again only when its text changed since it was last read."""
        text = path.read_text(encoding="utf-8")
        known = self._known.get(path)
        if known is None or known.text != text:
            known = self._known[path] = ParsedModule(text)
        return known
