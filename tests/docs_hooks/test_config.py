"""Tests of docs_hooks.kinds.config: the config inventory (``trace-config``, ``trace-inventory of: config``).

The tiny project is the one of test_shapes (a dataclass config); the class-based
one (test_params' ``layers_project``) keeps its hyperparameters in a layer
class's constructor arguments. Where each field is defined and its value:
test_configfields (with the other shapes a config takes); who sets and reads it:
test_configreaders; the table: test_configtable.
"""

from __future__ import annotations

import re

from .test_params import LAYERS, LAYERS_RUN, flat_link, layers_project
from .test_shapes import MODEL, SETTINGS, TRAIN, build, line_of, link, table_rows, tiny_project


def config_rows(markdown: str) -> dict[str, list[str]]:
    return {re.match(r"<code>(.*?)</code>", r[0]).group(1): r for r in table_rows(markdown, "trace-config")}


def test_config_fields_of_a_page(tmp_path):
    root = tiny_project(
        tmp_path,
        """
        ```trace-config
        fields: [eps, width, unused]
        ```
        """,
    )
    markdown, problems, _ = build(root)
    assert problems == []
    rows = config_rows(markdown)
    assert list(rows) == ["Config.eps", "Config.width", "TrainSettings.width", "Config.unused"]
    block_ln = line_of(MODEL, "Xn, c_ln = layer_norm_forward(")
    final_ln = line_of(MODEL, "Xf, _ = layer_norm_forward(")
    ctor = (line_of(TRAIN, "cfg = Config("), line_of(TRAIN, "    )"))
    ctor_link = (
        f'<a href="../source/src/train.py/#L{ctor[0]}" '
        f'title="train.build_config"><code>train.py:{ctor[0]}-{ctor[1]}</code></a>'
    )
    assert rows["Config.eps"] == [
        "<code>Config.eps</code><br>LayerNorm epsilon",
        link("src/model.py", line_of(MODEL, "eps: float"), "model.Config.eps"),
        "<code>1e-5</code>",
        f"<code>train.build_config</code> {ctor_link} does not pass it: the default applies",
        "<code>1e-05</code>",
        f"<code>model.block</code> {link('src/model.py', block_ln, 'model.block')}<br>"
        f"<code>model.forward</code> {link('src/model.py', final_ln, 'model.forward')}",
    ]
    assert rows["Config.width"][3] == f"<code>train.build_config</code> {ctor_link} passes <code>width=s.width</code>"
    assert rows["Config.width"][4] == "<code>4</code>"
    # `s` in build_config reads seq_len and width, which both classes have; step_size's `s.lr` decides.
    assert rows["TrainSettings.width"][5] == (
        f"<code>train.build_config</code> {link('src/train.py', line_of(TRAIN, 'width=s.width'), 'train.build_config')}"
    )
    # the helper's config() runs build_config(), which makes a TrainSettings: its values are in effect
    assert rows["TrainSettings.width"][4] == "<code>4</code>"
    assert rows["Config.unused"][5] == (
        '<strong class="trace-unread">nothing reads it; editing it changes nothing</strong>'
    )


def test_config_inventory_lists_every_field_and_flags_the_unread(tmp_path):
    root = tiny_project(
        tmp_path,
        """
        ```trace-inventory
        of: config
        ```
        """,
    )
    markdown, problems, _ = build(root)
    assert problems == []
    owners = re.findall(r'<p class="trace-config-owner"><code>(.*?)</code>', markdown)
    assert owners == ["model.Config", "settings.TrainSettings"]
    names = [re.match(r"<code>(.*?)</code>", r[0]).group(1) for r in table_rows(markdown, "trace-config")]
    assert names == [
        "seq_len",
        "width",
        "hidden",
        "heads",
        "n_layers",
        "eps",
        "init_std",
        "unused",
        "seq_len",
        "width",
        "lr",
        "ghost",
    ]
    unread = [n for n, r in zip(names, table_rows(markdown, "trace-config")) if "nothing reads it" in r[5]]
    assert unread == ["unused", "ghost"]
    rows = table_rows(markdown, "trace-config")
    assert rows[6][4] == "<code>0.5</code>"  # init_std in effect, from config() of the model run
    assert (
        rows[10][5]
        == f"<code>train.step_size</code> {link('src/train.py', line_of(TRAIN, 'return s.lr'), 'train.step_size')}"
    )
    assert rows[8][2] == "<code>4</code>"  # a default as written in settings.py
    assert rows[8][1] == link(
        "src/settings.py", line_of(SETTINGS, "seq_len: int = 4"), "settings.TrainSettings.seq_len"
    )


# ----------------------------------------------------------------------------- class-based layers


def test_a_layers_hyperparameters_are_its_constructors_arguments_as_the_run_passed_them(tmp_path):
    root = layers_project(tmp_path, "```trace-config\n```\n")
    markdown, problems, _ = build(root)

    assert problems == []
    init = line_of(LAYERS, "def __init__(self, n_in, n_out, scale=0.5):")
    run = LAYERS_RUN
    net, made = line_of(LAYERS, "self.layers = [Dense(a, b)"), line_of(run, 'Dense(cfg["h"], 1, scale=2.0)')
    at_net = flat_link("layers.py", net, "layers.Net.__init__")
    rows = config_rows(markdown)
    assert list(rows) == ["n_in", "n_out", "scale"]
    assert rows["scale"][1:4] == [
        flat_link("layers.py", init, "layers.Dense.scale"),
        "<code>0.5</code>",
        # the helper is no code of the project: what it passes shows as the value in effect
        f"<code>layers.Net.__init__</code> {at_net} does not pass it: the default applies",
    ]
    # the values the run passed, each with the call that passed it when they differ (the first call from each
    # place is recorded: the comprehension makes both of the net's layers from one line)
    helper = f"in the model run helper, line {made}"
    assert rows["n_in"][4] == f"<code>3</code> at {at_net}<br><code>4</code> {helper}"
    assert rows["scale"][4] == f"<code>0.5</code> at {at_net}<br><code>2</code> {helper}"
    read = line_of(LAYERS, "self.W = rng.normal(0.0, self.scale, (self.n_in, self.n_out))")
    assert rows["scale"][5] == (
        f"<code>layers.Dense.initialize</code> {flat_link('layers.py', read, 'layers.Dense.initialize')}"
    )
