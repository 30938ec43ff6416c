"""The config inventory: every config value, read from the code and from running it.

Every field of the model config (setting ``model_config``) and of the config
module (setting ``config_module``) with its default and the line that defines it,
who sets it (calls that construct the model config), the value in effect (the
config ``config()`` of the model run helper returns; for the config module's
classes, the first object of that class ``config()`` made or passed on while it
ran) and every function that reads it. A field that nothing reads is flagged.

A class-based project keeps its hyperparameters in constructor arguments: without
``model_config`` and ``config_module``, the inventory of a layer's method shows
the constructor's arguments: the signature's defaults, the calls that pass them,
the values the run passed and who reads the attribute each is kept in.

The fields and the values in effect are read by ``kinds.configfields``, who sets
and who reads each by ``kinds.configreaders``; this module puts them together,
once per build. ``kinds.configtable`` shows them as ``trace-config`` and
``trace-inventory of: config`` do (``kinds.inventory``).
"""

from __future__ import annotations

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.kinds.configfields import (
    LOADED_CONFIG,
    ConfigInventory,
    Group,
    constructor_fields,
    dataclass_config,
    dict_config,
    module_config,
    passed_in_the_run,
)
from docs_hooks.kinds.configreaders import (
    attribute_readers,
    constructor_readers,
    dict_readers,
    imported_readers,
    order_readers,
    setters,
)
from docs_hooks.kinds.modelrun import Evidence, source_line_link
from docs_hooks.resolve.codeindex import CodeIndex
from docs_hooks.run.request import Request


def config_requests(s: Settings, index: CodeIndex) -> dict[str, Request | TraceError]:
    """When ``model_config`` names a function (one that loads the config from YAML or JSON): one call of it."""
    name = s.model_config
    fn = index.functions.get(name) if name else None
    if fn is None:
        return {}
    return {LOADED_CONFIG: Request(f"{fn.name}()", fn.module, fn.name[len(fn.module) + 1 :])}


def config_inventory(ev: Evidence) -> ConfigInventory:
    return ev.once("config", _config_inventory, ev)


def _config_inventory(ev: Evidence) -> ConfigInventory:
    s = ev.settings
    groups: list[Group] = []
    if s.model_config and s.model_config not in ev.index.classes:
        group = dict_config(ev, s.model_config)
        dict_readers(ev, group[2])
        groups.append(group)
    elif s.model_config:
        group = dataclass_config(ev, s.model_config)
        setters(ev, s.model_config, group[2])
        groups.append(group)
    if s.config_module:
        for group in module_config(ev, s.config_module):
            owner, _, fields = group
            if owner == s.config_module:  # its constants
                imported_readers(ev, owner, fields)
            else:
                setters(ev, owner, fields)
            groups.append(group)
    attribute_readers(ev, groups, s.config_module)
    for _, _, fields in groups:
        order_readers(fields)
    return ConfigInventory(groups)


def constructor_config(ev: Evidence, cls: str) -> ConfigInventory:
    return ev.once(f"config of {cls}", _constructor_config, ev, cls)


def _constructor_config(ev: Evidence, cls: str) -> ConfigInventory:
    """A layer class's hyperparameters: its constructor's arguments, their defaults, the calls that pass them, the
    values the model run passed, and who reads the attribute each is kept in."""
    init, node, fields = constructor_fields(ev, cls)
    setters(ev, cls, fields)
    passed_in_the_run(ev, cls, init, fields)
    constructor_readers(ev, cls, init, node, fields)
    order_readers(fields)
    link = source_line_link(ev, init.repo_path, node.lineno, node.lineno, init.name)
    return ConfigInventory([(cls, link, fields)])
