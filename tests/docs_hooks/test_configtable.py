"""Tests of docs_hooks.kinds.configtable: the config inventory as tables (``trace-config``, ``trace-inventory
of: config``): the fields a block names, and what each cell says, a missing fact included."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from docs_hooks.kinds.configfields import ConfigField, ConfigInventory
from docs_hooks.kinds.configtable import config_fields_table
from docs_hooks.kinds.modelrun import source_line_link

from .test_configfields import CONFIG_PAGE, dict_project
from .test_shapes import build, tiny_project


def test_an_unknown_config_field_fails_with_a_suggestion(tmp_path):
    root = tiny_project(
        tmp_path,
        """
        ```trace-config
        fields: [epss]
        ```
        """,
    )
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:1: no config field 'epss'; did you mean 'eps'?; the fields are: seq_len, width, hidden, "
        "heads, n_layers, eps, init_std, unused, lr, ghost"
    ]


def test_trace_config_with_no_config_says_which_setting_to_set(tmp_path):
    root = dict_project(tmp_path, "", page="# Config\n\n```trace-config\nfields: [width]\n```\n\n" + CONFIG_PAGE)
    _, problems, _ = build(root)

    assert problems == [
        "docs/page.md:3: no config to show: set model_config (a dataclass or a dict) or config_module in "
        "[tool.docs_hooks], or put trace-config in an entry of a layer class's method to show its constructor's "
        "arguments",
        "docs/page.md:7: no config to show: set model_config (a dataclass or a dict) or config_module in "
        "[tool.docs_hooks], or put trace-config in an entry of a layer class's method to show its constructor's "
        "arguments",
    ]


# ----------------------------------------------------------------------------- the cells


READER = SimpleNamespace(name="model.scale")
EV = SimpleNamespace(
    index=SimpleNamespace(functions={}),
    settings=SimpleNamespace(project_root=Path("/p"), source_root=Path("/p/src")),
    links=SimpleNamespace(line_link=lambda fn, start, end: f"[{fn.name} {start}]"),
    once=lambda key, compute, *args: compute(*args),  # a fact made once per build: made at once here
)


def inventory() -> ConfigInventory:
    width = ConfigField("model.Config", "width", "4", "size of a row", "src/model.py", 3, 8, True, ["<i>set</i>"])
    width.readers = [(READER, 7), (READER, 9)]
    eps = ConfigField("model.Config", "eps", None, "", "src/model.py", 4)
    return ConfigInventory([("model.Config", "<i>Config's line</i>", [width, eps])])


def test_a_fields_row_says_where_it_is_defined_and_who_sets_and_reads_it():
    html = config_fields_table(EV, ["width"], inventory())

    [row] = [re.findall(r"<td>(.*?)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", html.split("<tbody>")[1])]
    assert row == [
        "<code>Config.width</code><br>size of a row",  # the owner is named: a block may name fields of several
        source_line_link(EV, "src/model.py", 3, 3, "model.Config.width"),
        "<code>4</code>",
        "<i>set</i>",
        "<code>8</code>",
        "<code>model.scale</code> [model.scale 7], [model.scale 9]",
    ]
    assert re.findall(r"<th>(.*?)</th>", html) == ["Field", "Defined at", "Default", "Set by", "In effect", "Read by"]


def test_a_fact_the_build_did_not_find_is_said_in_its_cell():
    html = config_fields_table(EV, ["eps"], inventory())

    cells = re.findall(r"<td>(.*?)</td>", html)
    assert cells[2:] == [
        "none: every caller must pass it",
        "nothing in the source constructs it: the default applies",
        "not recorded",
        '<strong class="trace-unread">nothing reads it; editing it changes nothing</strong>',
    ]


def test_a_block_that_names_no_field_shows_a_table_for_each_owner():
    html = config_fields_table(EV, [], inventory())

    assert html.startswith('<p class="trace-config-owner"><code>model.Config</code> <i>Config\'s line</i></p>')
    assert re.findall(r"<tr><td>(.*?)</td>", html) == ["<code>width</code><br>size of a row", "<code>eps</code>"]
