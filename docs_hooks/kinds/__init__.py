"""Every kind of trace block, in one explicit table.

Each kind implements ``kinds.base.BlockKind``: its fields (``read.blockspec.BLOCK_KINDS``,
checked when the page is read), ``resolve`` (what it names, checked against the
code; what ``check``, ``relock`` and ``impact`` run), ``needs`` (what it asks the
run stage for) and ``render`` (its HTML). ``entry`` and ``equation`` open and fill
entries: the page walk (``core.page``) handles them itself. Nothing is attached
at run time: adding a kind means adding a row here and its fields in blockspec.py.
"""

from __future__ import annotations

from docs_hooks.kinds.base import AnyKind, BlockKind, Project, Rendered, Scope
from docs_hooks.kinds.example import ExampleKind
from docs_hooks.kinds.excerpt import ExcerptKind
from docs_hooks.kinds.inventory import ConfigKind, InventoryKind, ParamsKind
from docs_hooks.kinds.results import ResultsKind
from docs_hooks.kinds.shapes import ShapesKind
from docs_hooks.kinds.source import SourceKind
from docs_hooks.kinds.symbols import SymbolsKind
from docs_hooks.read.blockspec import BLOCK_KINDS

STRUCTURE = frozenset({"entry", "equation"})  # the blocks the page walk reads itself

KINDS: dict[str, AnyKind] = {
    kind.name: kind
    for kind in (
        ExcerptKind(),
        SymbolsKind(),
        ShapesKind(),
        ExampleKind(),
        ParamsKind(),
        ConfigKind(),
        InventoryKind(),
        ResultsKind(),
        SourceKind(),
    )
}

if set(KINDS) | STRUCTURE != set(BLOCK_KINDS):  # pragma: no cover - a kind declared in one table and not the other
    raise ImportError(
        f"docs_hooks.kinds and BLOCK_KINDS disagree: {sorted((set(KINDS) | STRUCTURE) ^ set(BLOCK_KINDS))}"
    )

__all__ = ["KINDS", "STRUCTURE", "AnyKind", "BlockKind", "Project", "Rendered", "Scope"]
