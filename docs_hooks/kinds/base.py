"""The interface every block kind implements, and the data each of its steps is given.

A block kind (``trace-example``, ``trace-shapes``, ...) takes part in three of
the four stages, each a method with a narrow input:

- ``resolve(block, scope) -> plan``: the block's fields checked and its code
  references resolved (through ``scope.resolve``, which records them for the
  lock), against the code index; nothing runs. ``check``, ``relock`` and
  ``impact`` stop here.
- ``needs(plan, done)``: what the plan asks the run stage for (recordings,
  formulas, line coverage), given what was recorded so far (``done``). Asked
  again when what it asked for is in, so a need may follow from a recording
  (central differences need the recorded call). The build starts them all early,
  in the background; rendering asks the results for them all the same.
- ``render(plan, results, links) -> Rendered``: the block's HTML, a pure
  function of the plan, the run's results and the site's links.

No kind is given the build: a plan holds what its render needs, and the kinds
are one explicit registry (``docs_hooks.kinds.KINDS``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, TypeVar

from docs_hooks.base.errors import TraceError
from docs_hooks.base.reads import Reads, traced
from docs_hooks.base.settings import Settings
from docs_hooks.read.blocks import Block
from docs_hooks.read.blockspec import BlockSpec
from docs_hooks.resolve.anchors import Resolved
from docs_hooks.resolve.assignments import Assignments
from docs_hooks.resolve.callgraph import CallGraph
from docs_hooks.resolve.codeindex import CodeIndex, Function
from docs_hooks.resolve.entries import EntryData
from docs_hooks.resolve.modules import Modules, ParsedModule
from docs_hooks.resolve.refs import References

if TYPE_CHECKING:
    from docs_hooks.read.spec import SpecIndex
    from docs_hooks.render.links import Links
    from docs_hooks.run.recording import Recording
    from docs_hooks.run.request import Request
    from docs_hooks.run.results import Need, Results

P = TypeVar("P")


@dataclass(frozen=True)
class Project:
    """What resolving may read of the project: its settings, the code index and call graph, the
    specification's labels, and what the front end knows of the site's scripts. Nothing here runs code."""

    settings: Settings
    index: CodeIndex
    graph: CallGraph
    spec: SpecIndex | None = None  # the specification's labels (its numbers come from the run stage)
    # The functions the site's scripts register a browser kernel for (the front end reads them from the
    # site's extra_javascript); None when unknown (the command line), and then no example is warned about.
    widget_kernels: frozenset[str] | None = None
    # The code's modules, parsed once per text: a front end whose process stays hands each build the same ones.
    modules: Modules = field(default_factory=Modules, compare=False, repr=False)
    # Where its answers are noted while a page renders (see ``base.reads``): under ``mkdocs serve``.
    reads: Reads | None = field(default=None, compare=False, repr=False)
    _read: dict[Path, ParsedModule] = field(default_factory=dict, compare=False, repr=False)

    trace_token: ClassVar[str] = "Project"  # what a digest of a read's answer takes it for (base.reads)
    role: ClassVar[str] = "project"

    @traced
    def text(self, path: Path) -> str:
        """The text of a file of the project, as a block reads it while it renders (a read noted: base.reads)."""
        return path.read_text(encoding="utf-8")

    @traced
    def tree(self, path: Path) -> ast.Module:
        """The parsed module at ``path`` (a file of the index), read once per build."""
        return self._module(path).tree

    def _module(self, path: Path) -> ParsedModule:
        if path not in self._read:
            self._read[path] = self.modules.read(path)
        return self._read[path]

    @traced
    def definition(self, fn: Function) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The ``def`` of ``fn`` in its module as read in this build; None when the file no longer holds it."""
        for node in self._module(fn.file).definitions():
            if node.name == fn.short_name and fn.start <= node.lineno <= fn.end:
                return node
        return None

    @traced
    def assignments(self, fn: Function) -> Assignments | None:
        """What the function assigns, statement by statement (``resolve.assignments``), found once per text of
        its file; None when its file no longer holds it."""
        return self._module(fn.file).assignments(fn.start, fn.end, fn.params)


@dataclass
class Scope:
    """Where a block sits: its page, the entry above it, and the page's references (see ``resolve``)."""

    project: Project
    page: str
    entry: EntryData | None
    refs: References

    def resolve(self, text: str, line: int, where: str) -> Resolved | None:
        """One code reference, resolved (trying the entry's functions first) and recorded for the lock; None
        when it did not resolve (its problem, at ``line``, is recorded with the page's)."""
        scope = [f.name for f in self.entry.functions] if self.entry else None
        return self.refs.resolve(text, line, where, scope)

    def function(self, name: str) -> Function:
        return self.project.index.function(name)


class Rendered(NamedTuple):
    """A block's HTML, and the problems met making it that still let it show (a warning, not an error box)."""

    html: str
    problems: tuple[TraceError, ...] = ()


class BlockKind(Protocol[P]):
    """One kind of trace block (see the module's doc). ``name`` is what follows ``trace-`` in the page."""

    name: str
    spec: BlockSpec

    def resolve(self, block: Block, scope: Scope) -> P: ...

    def needs(self, plan: P, done: Mapping[Request, Recording | TraceError]) -> Iterable[Need]: ...

    def render(self, plan: P, results: Results, links: Links) -> Rendered: ...


class KeyedKind(BlockKind[P], Protocol[P]):
    """A kind that can say, without rendering, everything its HTML is made from (``inputs``: a text to digest).

    A page made only of such blocks and of prose is kept across builds under the digest of those inputs,
    so a change elsewhere in the code does not render it again (a source page: its file and what cites
    it). A kind without ``inputs`` makes its page depend on every file of the code."""

    def inputs(self, plan: P, results: Results, links: Links) -> str: ...


def placed(err: TraceError, block: Block, page: str, field_name: str | None = None) -> TraceError:
    """``err`` placed at the block (or at one of its fields) when it has no place of its own."""
    return err.at(page, block.field_line(field_name) if field_name else block.line)


AnyKind = BlockKind[Any]


def byte_lines(text: str) -> list[bytes]:
    """The lines of a module's text (read with Python's newlines) as ast numbers them, each encoded as UTF-8:
    ast's columns count bytes. (``str.splitlines`` also splits at a form feed, which ends no line for ast.)"""
    return [line.encode() for line in text.split("\n")]


def source_segment(lines: list[bytes], node: ast.expr) -> str:
    """``ast.get_source_segment`` on the ``byte_lines`` of the source: it would split the whole text again for
    every node."""
    first, last = node.lineno - 1, last_line(node) - 1
    if first == last:
        return lines[first][node.col_offset : node.end_col_offset].decode()
    chunk = [lines[first][node.col_offset :], *lines[first + 1 : last], lines[last][: node.end_col_offset]]
    return b"\n".join(chunk).decode()


def last_line(node: ast.expr | ast.stmt) -> int:
    """The node's last line (``end_lineno``): ast.parse sets it on every node; only one made by hand has none."""
    return node.end_lineno if node.end_lineno is not None else node.lineno
