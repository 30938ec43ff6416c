"""The ``trace-excerpt`` block: live lines of code, each referenced statement with its real line numbers."""

from __future__ import annotations

from docs_hooks.base.errors import TraceError
from docs_hooks.read.blocks import Block
from docs_hooks.render import html as R
from docs_hooks.resolve.context import Context


def excerpt_references(ctx: Context, block: Block) -> None:
    """The block's references resolved, nothing rendered (what ``check`` does with it)."""
    _context_lines(block)
    for text in block.data["code"]:
        ctx.resolve(text, block.field_line("code"), f"excerpt {text.strip()}")


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


def excerpt_block(ctx: Context, block: Block) -> str:
    """Each referenced statement (with ``context`` lines around it) as a listing with a link to its code."""
    context = _context_lines(block)
    out = []
    for text in block.data["code"]:
        r = ctx.resolve(text, block.field_line("code"), f"excerpt {text.strip()}")
        if r is None:
            continue
        fn = r.function
        start = max(fn.start, r.start - context)
        end = min(fn.end, r.end + context)
        lines = list(fn.source_lines[start - fn.start : end - fn.start + 1])
        head = f"{R.code(fn.display_path)} {R.code(fn.name.split('.', 1)[-1])} {ctx.builder.links.code_links(fn, r.start, r.end)}"
        out.append(R.listing(lines, start, head, highlight=list(range(r.start, r.end + 1)) if context else None))
    return "\n".join(out)
