"""The ``trace-excerpt`` block: live lines of code, each referenced statement with its real line numbers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Rendered, Scope
from docs_hooks.read.blocks import Block
from docs_hooks.read.blockspec import BLOCK_KINDS
from docs_hooks.render import html as R
from docs_hooks.render.links import Links
from docs_hooks.resolve.anchors import Resolved
from docs_hooks.run.results import Need, Results


@dataclass(frozen=True)
class ExcerptPlan:
    context: int  # lines shown around each statement
    statements: tuple[Resolved, ...]  # the references that resolved (the others are the page's problems)


class ExcerptKind:
    name = "excerpt"
    spec = BLOCK_KINDS["excerpt"]

    def resolve(self, block: Block, scope: Scope) -> ExcerptPlan:
        context = _context_lines(block)
        found = [
            scope.resolve(text, block.field_line("code"), f"excerpt {text.strip()}") for text in block.data["code"]
        ]
        return ExcerptPlan(context, tuple(r for r in found if r is not None))

    def needs(self, plan: ExcerptPlan, done: Mapping) -> list[Need]:
        return []

    def render(self, plan: ExcerptPlan, results: Results, links: Links) -> Rendered:
        """Each referenced statement (with ``context`` lines around it) as a listing with a link to its code."""
        return Rendered("\n".join(self.listings(plan, links)))

    def listings(self, plan: ExcerptPlan, links: Links) -> list[str]:
        """What ``render`` writes: the listings, each a fence of the page's Markdown (see core.page.page_listings)."""
        out = []
        for r in plan.statements:
            fn = r.function
            start = max(fn.start, r.start - plan.context)
            end = min(fn.end, r.end + plan.context)
            lines = list(fn.source_lines[start - fn.start : end - fn.start + 1])
            head = (
                f"{R.code(fn.display_path)} {R.code(fn.name.split('.', 1)[-1])} {links.code_links(fn, r.start, r.end)}"
            )
            highlight = list(range(r.start, r.end + 1)) if plan.context else None
            out.append(R.listing(lines, start, head, highlight=highlight))
        return out


def _context_lines(block: Block) -> int:
    try:
        context = int(block.data.get("context", 0))
    except ValueError:
        context = -1
    if context < 0:
        raise TraceError(
            f"field 'context' of trace-excerpt must be a whole number of lines, 0 or more, "
            f"not {block.data.get('context')!r}"
        )
    return context
