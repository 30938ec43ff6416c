"""Tests of docs_hooks.kinds.paramtable: the parameter inventory as a table (``trace-params``, ``trace-inventory
of: parameters``): the rows a block chooses, the roles it gives them, and the cells of each row.

The pages are built on the tiny project of test_shapes (see test_params); the table's own functions are
given hand-made rows.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.modelrun import Desc, Dim
from docs_hooks.kinds.params import Init, Param, Params
from docs_hooks.kinds.paramtable import choose_params, param_table
from docs_hooks.read.blocks import Block

from .test_params import params_page
from .test_shapes import build, table_rows, tiny_project


def test_params_match_nothing_fails(tmp_path):
    root = tiny_project(tmp_path, params_page("[ln1_]"))
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:1: no parameter name contains 'ln1_'; the parameters are: "
        "emb, b{l}.ln_g, b{l}.ln_b, b{l}.w1, b{l}.b1, head_w"
    ]


def test_a_role_for_a_parameter_not_shown_fails(tmp_path):
    root = tiny_project(tmp_path, params_page("[ln_, w1]", "{ln_g: LayerNorm scale, head: The head}"))
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:1: role 'head' matches none of the parameters shown (b{l}.ln_g, b{l}.ln_b, b{l}.w1); "
        "key roles by a name pattern from the table"
    ]


# ----------------------------------------------------------------------------- the rows a block chooses


def inventory(*patterns: str) -> Params:
    return Params([SimpleNamespace(pattern=p) for p in patterns])  # only the names count


def params_block(**data) -> Block:
    return Block("params", data, 1, 4, 2)


def test_the_rows_chosen_are_each_once_in_the_order_of_the_match_texts():
    inv = inventory("emb", "b{l}.w1", "b{l}.b1", "head_w")

    chosen, roles = choose_params(inv, params_block(match=["w", "b{l}"]))

    assert [p.pattern for p in chosen] == ["b{l}.w1", "head_w", "b{l}.b1"]
    assert roles is None  # no roles field: no Role column


def test_a_role_goes_to_the_name_it_equals_else_to_every_name_that_contains_it():
    inv = inventory("w", "w_out", "b")

    _, roles = choose_params(inv, params_block(match=["w", "b"], roles={"w": "Weights", "b": "Bias"}))
    _, contained = choose_params(inv, params_block(match=["w"], roles={"_out": "Output"}))

    assert roles == {"w": "Weights", "b": "Bias"}  # not w_out: a key that is a whole name names that one
    assert contained == {"w_out": "Output"}


def test_a_match_text_no_name_contains_fails_with_the_nearest_name():
    with pytest.raises(TraceError) as caught:
        choose_params(inventory("emb", "head_w"), params_block(match=["head_v"]))

    assert caught.value.message == (
        "no parameter name contains 'head_v'; did you mean 'head_w'?; the parameters are: emb, head_w"
    )


# ----------------------------------------------------------------------------- the cells of a row


def param(pattern: str, names: list[str], size: int, *, kind: str = "array", index_field=None, holder="") -> Param:
    desc = Desc("array", (Dim(4, "width", "d"),)) if kind == "array" else Desc(kind, text="0.5")
    fn, stmt = SimpleNamespace(name="model.init"), SimpleNamespace(start=3, end=4)
    return Param(pattern, names, index_field, desc, size, "d", fn, stmt, Init("ones", "ones"), "no", holder)


EV = SimpleNamespace(links=SimpleNamespace(line_link=lambda fn, start, end: f"[{fn.name} {start}-{end}]"))
DIMS = SimpleNamespace(legend=lambda keys: "d = width = 4." if keys == ["width"] else "?")


def test_a_row_counts_the_scalars_of_one_block_and_of_every_block():
    per_block = param("b{l}.g", ["b0.g", "b1.g"], 4, index_field="n_layers")
    scalar = param("temp", ["temp"], 1, kind="scalar")

    html = param_table(EV, [per_block, scalar], {"b{l}.g": "Gain"}, DIMS, "optim.decays")

    assert table_rows(html, "trace-params") == [
        [
            "<code>b{l}.g</code><br>[model.init 3-4]",
            "<code>(d,)</code>",
            "<code>(4,)</code>",
            "<code>d</code> 4 per block, × n_layers = 2: 8",
            "ones",
            "no",
            "Gain",
        ],
        [
            "<code>temp</code><br>[model.init 3-4]",
            "<code>scalar</code>",
            "<code>scalar</code>",
            "<code>d</code> 1",
            "ones",
            "no",
            "",
        ],
    ]
    headers = re.findall(r"<th>(.*?)</th>", html)
    assert headers == [
        "Name",
        "Shape",
        "With config",
        "Scalars",
        "Initialisation",
        "Weight decay (optim.decays)",
        "Role",
    ]
    assert html.endswith('<p class="trace-shapes-legend">d = width = 4.</p>\n')


def test_a_held_by_column_when_a_layer_object_holds_a_parameter():
    held = param("W", ["Net.layers[0].W"], 12, holder="Net.layers[0]")

    html = param_table(EV, [held], None, DIMS, "")

    assert re.findall(r"<th>(.*?)</th>", html)[:2] == ["Name", "Held by"]
    assert "<th>Weight decay</th>" in html and "<th>Role</th>" not in html
    assert table_rows(html, "trace-params")[0][1] == "<code>Net.layers[0]</code>"
