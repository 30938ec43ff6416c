"""Every kind of trace block, in one explicit table.

For each kind: its fields (``blocks.BLOCK_KINDS``, checked when the page is
read), how it renders (a function of the block and the build's data), which
code references it makes without running anything (what ``check``, ``relock``
and ``impact`` resolve), what it asks the run stage to record for the whole
build, and what it starts early. ``entry`` and ``equation`` open and fill
entries and are rendered by the builder itself. Nothing is attached at run
time: adding a kind means adding a row here and its fields in blocks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from docs_hooks.kinds import example as examples
from docs_hooks.kinds import inventory, results, shapes
from docs_hooks.kinds.excerpt import excerpt_block, excerpt_references
from docs_hooks.read.blocks import BLOCK_KINDS, BlockSpec
from docs_hooks.render import matrix


@dataclass(frozen=True)
class Kind:
    spec: BlockSpec
    render: Callable | None = None  # (ctx, block) -> HTML
    references: Callable | None = None  # (ctx, block) -> None: resolves the block's code references, runs nothing
    requests: Callable | None = None  # (builder) -> {key: Request}: recorded in the build's one batch
    prefetch: Callable | None = None  # (builder, {page: parsed page}) -> None: the run-stage work, started early
    tables: dict = field(default_factory=dict)  # for trace-inventory: the table of each value of 'of:'


KINDS: dict[str, Kind] = {
    "entry": Kind(BLOCK_KINDS["entry"]),
    "equation": Kind(BLOCK_KINDS["equation"]),
    "excerpt": Kind(BLOCK_KINDS["excerpt"], render=excerpt_block, references=excerpt_references),
    "symbols": Kind(
        BLOCK_KINDS["symbols"],
        render=shapes.symbols_block,
        requests=shapes.model_requests,
        prefetch=shapes.prefetch_model_run,
    ),
    "shapes": Kind(BLOCK_KINDS["shapes"], render=shapes.shapes_block, references=shapes.shapes_references),
    "example": Kind(
        BLOCK_KINDS["example"],
        render=examples.example_handler,
        references=examples.example_references,
        prefetch=examples.prefetch_tests,
    ),
    "params": Kind(BLOCK_KINDS["params"], render=inventory.params_block, requests=inventory.inventory_requests),
    "config": Kind(BLOCK_KINDS["config"], render=inventory.config_block, requests=inventory.config_requests),
    "inventory": Kind(
        BLOCK_KINDS["inventory"],
        render=inventory.inventory_block,
        tables={
            "parameters": inventory.parameters_inventory,
            "config": inventory.config_inventory_block,
            **{name: matrix.site_table_block(table) for name, table in matrix.TABLES.items()},
        },
    ),
    "results": Kind(BLOCK_KINDS["results"], render=results.results_block),
}

if set(KINDS) != set(BLOCK_KINDS):  # pragma: no cover - a kind declared in one table and not the other
    raise ImportError(f"docs_hooks.kinds and blocks.BLOCK_KINDS disagree: {sorted(set(KINDS) ^ set(BLOCK_KINDS))}")
