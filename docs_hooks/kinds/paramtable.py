"""The parameter inventory as a table: the rows a ``trace-params`` block chooses, with the roles it gives them,
and every parameter with the totals of one block and of the whole model (``trace-inventory of: parameters``).

What the rows show is read by ``kinds.params`` (``init_params``) and ``kinds.layerparams`` (a layer class's
objects); this module only chooses among them and writes the HTML.
"""

from __future__ import annotations

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.modelrun import Evidence, model_run
from docs_hooks.kinds.params import Param, Params, parameters
from docs_hooks.read.blocks import Block
from docs_hooks.render import html as R
from docs_hooks.resolve.codeindex import Function, Statement, did_you_mean


def _stmt_link(ev: Evidence, fn: Function, stmt: Statement) -> str:
    return ev.links.line_link(fn, stmt.start, stmt.end)


def _param_rows(ev: Evidence, params: list[Param], roles: dict[str, str] | None) -> list[list[str]]:
    rows = []
    for p in params:
        name = R.code(p.pattern) + "<br>" + _stmt_link(ev, p.function, p.statement)
        if p.index_field:
            count = (
                f"{R.code(p.symbolic_size)} {p.size} per block, × {R.esc(p.index_field)} = {len(p.names)}: {p.total}"
            )
        else:
            count = f"{R.code(p.symbolic_size)} {p.size}"
        symbolic = p.desc.symbolic() if p.desc.kind != "scalar" else "scalar"
        concrete = p.desc.concrete() if p.desc.kind != "scalar" else "scalar"
        row = [name, R.code(symbolic), R.code(concrete), count, R.esc(p.init.text), R.esc(p.decay)]
        if any(q.holder for q in params):
            row.insert(1, R.code(p.holder))
        if roles is not None:
            row.append(R.esc(roles.get(p.pattern, "")))
        rows.append(row)
    return rows


def param_table(ev: Evidence, params: list[Param], roles, dims, rule: str) -> str:
    headers = [
        "Name",
        "Shape",
        "With config",
        "Scalars",
        "Initialisation",
        f"Weight decay ({rule})" if rule else "Weight decay",
    ]
    if any(p.holder for p in params):
        headers.insert(1, "Held by")
    if roles is not None:
        headers.append("Role")
    keys: list[str] = []
    for p in params:
        for k in p.desc.symbol_keys():
            if k not in keys:
                keys.append(k)
    legend = dims.legend(keys)
    out = R.table(headers, _param_rows(ev, params, roles), "trace-table trace-params")
    if legend:
        out += f'\n<p class="trace-shapes-legend">{R.esc(legend)}</p>'
    return out + "\n"


def choose_params(inv: Params, block: Block) -> tuple[list[Param], dict[str, str] | None]:
    """The parameters a trace-params block shows (each name that contains one of its ``match`` texts) and
    the role it gives each, checked against the recorded inventory."""
    chosen: list[Param] = []
    unmatched: list[str] = []
    for text in block.data["match"]:
        hits = [p for p in inv.params if text in p.pattern]
        if not hits:
            unmatched.append(text)
        chosen.extend(p for p in hits if p not in chosen)
    if unmatched:
        names = [p.pattern for p in inv.params]
        raise TraceError(
            f"no parameter name contains '{unmatched[0]}'{did_you_mean(unmatched[0], names)}; "
            f"the parameters are: {', '.join(names)}"
        )
    roles: dict[str, str] | None = None
    if block.data.get("roles") is not None:
        roles = {}
        for key, text in block.data["roles"].items():
            patterns = [p.pattern for p in chosen if p.pattern == key] or [
                p.pattern for p in chosen if str(key) in p.pattern
            ]
            if not patterns:
                raise TraceError(
                    f"role '{key}' matches none of the parameters shown ({', '.join(p.pattern for p in chosen)}); "
                    "key roles by a name pattern from the table"
                )
            for h in patterns:
                roles[h] = str(text)
    return chosen, roles


def parameters_table(ev: Evidence) -> str:
    """Every parameter of the model, with the totals of one block and of the whole model."""
    inv = parameters(ev)
    out = param_table(ev, inv.params, None, model_run(ev).dims, inv.rule)
    parts = []
    if inv.index_field:
        parts.append(f"One block: {inv.per_block:,} scalars; {inv.index_field} = {inv.blocks} blocks.")
    parts.append(f"The whole model: {inv.total:,} scalars in {sum(len(p.names) for p in inv.params)} arrays.")
    return out + f'<p class="trace-params-total">{R.esc(" ".join(parts))}</p>\n'
