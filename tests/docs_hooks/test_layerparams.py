"""Tests of docs_hooks.kinds.layerparams: the parameters of a class-based project, the arrays its layer objects
hold in the model run (``trace-params`` in an entry of a layer class's method).

The project is test_params' ``layers_project``: ``Dense`` layers whose ``initialize`` makes ``W`` and ``b``,
held in a list by a ``Net``, and one more made by the model run helper and never held.
"""

from __future__ import annotations

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import make_build
from docs_hooks.kinds.layerparams import instances, layer_attributes
from docs_hooks.run.recording import Call, Opaque, Recording

from .test_params import LAYERS, LAYERS_RUN, flat_link, layers_project, params_page
from .test_shapes import build, line_of, table_rows


def test_the_parameters_of_a_layer_class_are_the_arrays_its_objects_hold_in_the_model_run(tmp_path):
    root = layers_project(tmp_path, params_page("[W, b]", "{W: Weights}"))
    markdown, problems, _ = build(root)

    assert problems == []
    w = flat_link("layers.py", line_of(LAYERS, "self.W = rng.normal("), "layers.Dense.initialize")
    b = flat_link("layers.py", line_of(LAYERS, "self.b = np.zeros("), "layers.Dense.initialize")
    made = line_of(LAYERS_RUN, 'Dense(cfg["h"], 1, scale=2.0)')
    normal = "normal, mean 0, std 0.5"  # not read from the statement: its std is an attribute, no number
    assert table_rows(markdown, "trace-params") == [
        [
            f"<code>W</code><br>{w}",
            "<code>Net.layers[0]</code>",
            "<code>(D, H)</code>",
            "<code>(3, 4)</code>",
            "<code>D·H</code> 12",
            "rng.normal(0.0, self.scale, (self.n_in, self.n_out))",
            "the project names no rule",
            "Weights",
        ],
        [
            f"<code>W</code><br>{w}",
            "<code>Net.layers[1]</code>",
            "<code>(H, D)</code>",
            "<code>(4, 3)</code>",
            "<code>H·D</code> 12",
            "rng.normal(0.0, self.scale, (self.n_in, self.n_out))",
            "the project names no rule",
            "Weights",
        ],
        [
            f"<code>W</code><br>{w}",
            f"<code>made in the model run helper, line {made}</code>",
            "<code>(H, 1)</code>",
            "<code>(4, 1)</code>",
            "<code>H·1</code> 4",
            "rng.normal(0.0, self.scale, (self.n_in, self.n_out))",
            "the project names no rule",
            "Weights",
        ],
        [
            f"<code>b</code><br>{b}",
            "<code>Net.layers[0]</code>",
            "<code>(H,)</code>",
            "<code>(4,)</code>",
            "<code>H</code> 4",
            "zeros",
            "the project names no rule",
            "",
        ],
        [
            f"<code>b</code><br>{b}",
            "<code>Net.layers[1]</code>",
            "<code>(D,)</code>",
            "<code>(3,)</code>",
            "<code>D</code> 3",
            "zeros",
            "the project names no rule",
            "",
        ],
        [
            f"<code>b</code><br>{b}",
            f"<code>made in the model run helper, line {made}</code>",
            "<code>(1,)</code>",
            "<code>(1,)</code>",
            "<code>1</code> 1",
            "zeros",
            "the project names no rule",
            "",
        ],
    ]
    assert "<th>Held by</th>" in markdown and "<th>Weight decay</th>" in markdown
    assert normal not in markdown  # scale is an attribute, not a number the statement names


def test_a_layers_parameters_ask_the_decay_rule_with_each_one(tmp_path):
    rule = "def decays(name, array):\n    return array.ndim >= 2\n"
    root = layers_project(tmp_path, params_page("[W, b]"), 'decay_rule = "optim.decays"\n', {"optim.py": rule})
    markdown, problems, _ = build(root)

    assert problems == []
    assert "<th>Weight decay (optim.decays)</th>" in markdown
    assert [r[-1] for r in table_rows(markdown, "trace-params")] == ["yes", "yes", "yes", "no", "no", "no"]


def test_a_layer_class_the_model_run_never_makes_is_named(tmp_path):
    run = LAYERS_RUN.replace(
        '    Dense(cfg["h"], 1, scale=2.0).initialize(np.random.default_rng(1))  # made, never held: named where it was\n',
        "",
    )
    run = run.replace('net = Net([cfg["d"], cfg["h"], cfg["d"]])', "net = None").replace(
        'return net.forward(np.ones((cfg["n"], cfg["d"])))', "return net"
    )
    root = layers_project(tmp_path, params_page("[W]"), files={"docs/examples/model_run.py": run})
    _, problems, _ = build(root)

    assert problems == [
        "docs/page.md:8: the model run (docs/examples/model_run.py) made no layers.Dense object; trace-params shows "
        "the arrays a layer's __init__ or initialize keeps on it (self.W = ...), for each layer of that class the run "
        "makes"
    ]


# ----------------------------------------------------------------------------- where a layer keeps its parameters


PARAMS_DICT = """\
import numpy as np


class Linear:
    def __init__(self, n):
        self.n = n
        self.W = np.zeros((n, n))
        self.b = np.zeros(n)

    def params(self):
        return {"weight": self.W, "bias": self.b}


class Counter:
    def __init__(self, n):
        self.steps = 0
        self.W = np.zeros(n)


class Listed:
    def __init__(self, n):
        self.W = np.zeros(n)

    def params(self):
        return [self.W]
"""


@pytest.fixture
def project(tmp_path):
    """The code index of the class-based project, with PARAMS_DICT as linear.py."""
    root = layers_project(tmp_path, "", files={"linear.py": PARAMS_DICT})
    builder = make_build(load_settings(root), coverage=False)
    try:
        yield builder.project
    finally:
        builder.close()


def test_a_layers_parameters_may_be_the_attributes_its_creating_methods_set(project):
    attrs = layer_attributes(project, "layers.Dense")

    # __init__ sets n_in, n_out and scale (W = None is a constant: not one), initialize W and b
    assert [(a.name, a.attr, a.function.name) for a in attrs] == [
        ("n_in", "n_in", "layers.Dense.__init__"),
        ("n_out", "n_out", "layers.Dense.__init__"),
        ("scale", "scale", "layers.Dense.__init__"),
        ("W", "W", "layers.Dense.initialize"),
        ("b", "b", "layers.Dense.initialize"),
    ]
    assert attrs[3].statement.start == line_of(LAYERS, "self.W = rng.normal(")
    assert [a.name for a in layer_attributes(project, "linear.Counter")] == ["W"]  # steps = 0: a constant


def test_a_params_method_names_the_parameters_and_says_which_attributes_they_are(project):
    attrs = layer_attributes(project, "linear.Linear")

    assert [(a.name, a.attr, a.statement.start) for a in attrs] == [
        ("weight", "W", line_of(PARAMS_DICT, "self.W = np.zeros((n, n))")),
        ("bias", "b", line_of(PARAMS_DICT, "self.b = np.zeros(n)")),
    ]


def test_a_params_method_that_returns_no_dict_of_attributes_fails(project):
    with pytest.raises(TraceError) as caught:
        layer_attributes(project, "linear.Listed")

    line = line_of(PARAMS_DICT, "return [self.W]") - 1
    assert caught.value.message == (
        f"linear.Listed.params (linear.py:{line}) should return a dict of the parameters, "
        '"name": self.attribute for each, so that the table can name each and find the line that creates it'
    )


# ----------------------------------------------------------------------------- the layer objects of a run


def test_each_object_is_named_by_where_the_run_kept_it_else_by_the_call_that_made_or_took_it():
    made = Opaque("layers.Dense", "<Dense at 0x1>", {"W": "as made"})
    trained = Opaque("layers.Dense", "<Dense at 0x1>", {"W": "after a step"})  # the same object, later
    alone = Opaque("layers.Dense", "<Dense at 0x2>", {})
    passed = Opaque("layers.Dense", "<Dense at 0x3>", {})
    net = Opaque("layers.Net", "<Net at 0x4>", {"layers": [trained]})
    rec = Recording(
        "run(config())",
        calls=[
            Call("layers.Net.forward", None, 30, {"self": net}, {}, None),  # holds the first object, seen first
            Call("layers.Dense.__init__", "layers.Net.__init__", 5, {"self": made}, {}, None),
            Call("layers.Dense.__init__", None, 17, {"self": alone}, {}, None),
            Call("layers.Net.add", None, 18, {"layer": passed}, {}, None),
        ],
    )

    found = instances(rec, "layers.Dense")

    assert [(name, [s.fields.get("W") for s in snapshots]) for name, snapshots in found] == [
        ("Net.layers[0]", ["as made", "after a step"]),  # a snapshot taken at a call comes first
        ("made in the model run helper, line 17", [None]),
        ("layer of Net.add", [None]),
    ]
