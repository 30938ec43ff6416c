"""The config inventory as tables: each field with where it is defined, its default, who sets it, the value in
effect and who reads it; flagged when nothing reads it.

``trace-config`` shows the fields it names (every field when it names none), ``trace-inventory of: config``
a table for each config class and module. What the rows show is gathered by ``kinds.config``.
"""

from __future__ import annotations

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.config import config_inventory
from docs_hooks.kinds.configfields import ConfigField, ConfigInventory
from docs_hooks.kinds.modelrun import Evidence, fmt_value, source_line_link
from docs_hooks.render import html as R
from docs_hooks.resolve.codeindex import Function, did_you_mean


def _field_rows(ev: Evidence, fields: list[ConfigField], show_owner: bool) -> list[list[str]]:
    rows = []
    for f in fields:
        name = R.code(f"{f.owner.rsplit('.', 1)[-1]}.{f.name}" if show_owner else f.name)
        if f.meaning:
            name += f"<br>{R.esc(f.meaning)}"
        defined = source_line_link(ev, f.repo_path, f.line, f.line, f"{f.owner}.{f.name}")
        default = R.code(f.default) if f.default is not None else "none: every caller must pass it"
        set_by = "<br>".join(f.set_by) or "nothing in the source constructs it: the default applies"
        effect = f.in_effect_html or (R.code(fmt_value(f.in_effect)) if f.has_effect else "not recorded")
        if f.readers:
            by_fn: dict[str, list[tuple[Function, int]]] = {}
            for fn, line in f.readers:
                by_fn.setdefault(fn.name, []).append((fn, line))
            read = "<br>".join(
                f"{R.code(name)} " + ", ".join(ev.links.line_link(fn, line, line) for fn, line in reads)
                for name, reads in by_fn.items()
            )
        else:
            read = '<strong class="trace-unread">nothing reads it; editing it changes nothing</strong>'
        rows.append([name, defined, default, set_by, effect, read])
    return rows


CONFIG_HEADERS = ["Field", "Defined at", "Default", "Set by", "In effect", "Read by"]


NO_CONFIG = (
    "no config to show: set model_config (a dataclass or a dict) or config_module in [tool.docs_hooks], or put "
    "trace-config in an entry of a layer class's method to show its constructor's arguments"
)


def _some_config(ev: Evidence) -> ConfigInventory:
    inv = config_inventory(ev)
    if not any(fields for _, _, fields in inv.groups):
        raise TraceError(NO_CONFIG)
    return inv


def config_fields_table(ev: Evidence, names: list[str], inv: ConfigInventory | None = None) -> str:
    """The config fields a trace-config block names (every field when it names none), of ``inv`` (by default the
    project's config inventory)."""
    inv = inv if inv is not None else _some_config(ev)
    if not names:
        return _config_tables(ev, inv)
    chosen: list[ConfigField] = []
    for name in names:
        hits = inv.lookup(name)
        if not hits:
            raise TraceError(
                f"no config field '{name}'{did_you_mean(name, inv.names())}; "
                f"the fields are: {', '.join(dict.fromkeys(inv.names()))}"
            )
        chosen.extend(hits)
    return R.table(CONFIG_HEADERS, _field_rows(ev, chosen, True), "trace-table trace-config") + "\n"


def _config_tables(ev: Evidence, inv: ConfigInventory) -> str:
    out = []
    for owner, link, fields in inv.groups:
        out.append(f'<p class="trace-config-owner">{R.code(owner)} {link}</p>')
        out.append(R.table(CONFIG_HEADERS, _field_rows(ev, fields, False), "trace-table trace-config"))
    return "\n".join(out) + "\n"


def config_table(ev: Evidence) -> str:
    return _config_tables(ev, _some_config(ev))
