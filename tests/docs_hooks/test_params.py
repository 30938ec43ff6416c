"""Tests of docs_hooks.kinds.params: the parameter inventory (``trace-params``, ``trace-inventory of: parameters``).

The tiny project is the one of test_shapes: its init_params makes
``emb``, per-layer ``b{l}.ln_g``, ``b{l}.ln_b``, ``b{l}.w1``, ``b{l}.b1`` and
``head_w``, and its optimizer rule decays exactly the names that contain a
'w', whatever their shape, so that a table that followed the shape instead of
the rule would show. A class-based project (``layers_project``) holds its
parameters on layer objects (test_layerparams); the table is test_paramtable's.
"""

from __future__ import annotations

import re

from docs_hooks.kinds.modelrun import Desc, Dim
from docs_hooks.kinds.params import decay_words, symbolic_size

from .conftest import write_tree
from .test_shapes import MODEL, build, line_of, link, table_rows, tiny_project

ROLES = '{ln_g: LayerNorm scale, "b{l}.w1": Hidden layer}'


def params_page(match: str, roles: str | None = None) -> str:
    return "```trace-params\n" + f"match: {match}\n" + (f"roles: {roles}\n" if roles else "") + "```\n"


def test_params_of_a_page(tmp_path):
    root = tiny_project(tmp_path, params_page("[ln_, w1]", ROLES))
    markdown, problems, _ = build(root)
    assert problems == []
    ln = line_of(MODEL, 'block[p + "ln_g"], block[p + "ln_b"] =')
    w1 = line_of(MODEL, 'block[p + "w1"] =')
    per_block = "per block, × n_layers = 2"
    assert table_rows(markdown, "trace-params") == [
        [
            f"<code>b{{l}}.ln_g</code><br>{link('src/model.py', ln, 'model.init_block')}",
            "<code>(d,)</code>",
            "<code>(4,)</code>",
            f"<code>d</code> 4 {per_block}: 8",
            "ones",
            "no",
            "LayerNorm scale",
        ],
        [
            f"<code>b{{l}}.ln_b</code><br>{link('src/model.py', ln, 'model.init_block')}",
            "<code>(d,)</code>",
            "<code>(4,)</code>",
            f"<code>d</code> 4 {per_block}: 8",
            "zeros",
            "no",
            "",
        ],
        [
            f"<code>b{{l}}.w1</code><br>{link('src/model.py', w1, 'model.init_block')}",
            "<code>(d, F)</code>",
            "<code>(4, 6)</code>",
            f"<code>d·F</code> 24 {per_block}: 48",
            "normal, mean 0, std init_std = 0.5",
            "yes",
            "Hidden layer",
        ],
    ]
    assert "<th>Weight decay (optim.decays)</th>" in markdown
    assert '<p class="trace-shapes-legend">d = width = 4. F = hidden = 6.</p>' in markdown


def test_every_parameter_and_the_total(tmp_path):
    root = tiny_project(
        tmp_path,
        """
        ```trace-inventory
        of: parameters
        ```
        """,
    )
    markdown, problems, _ = build(root)
    assert problems == []
    rows = table_rows(markdown, "trace-params")
    names = [re.match(r"<code>(.*?)</code>", r[0]).group(1) for r in rows]
    assert names == ["emb", "b{l}.ln_g", "b{l}.ln_b", "b{l}.w1", "b{l}.b1", "head_w"]
    # The rule, not the shape: emb is a matrix without a 'w', head_w a vector with one.
    assert {n: r[5] for n, r in zip(names, rows)} == {
        "emb": "no",
        "b{l}.ln_g": "no",
        "b{l}.ln_b": "no",
        "b{l}.w1": "yes",
        "b{l}.b1": "no",
        "head_w": "yes",
    }
    assert {n: r[4] for n, r in zip(names, rows)} == {
        "emb": "normal, mean 0, std init_std = 0.5",  # std read through `d, std = cfg.width, cfg.init_std`
        "b{l}.ln_g": "ones",
        "b{l}.ln_b": "zeros",
        "b{l}.w1": "normal, mean 0, std init_std = 0.5",
        "b{l}.b1": "zeros",
        "head_w": "ones",
    }
    assert rows[0][1:4] == ["<code>(T, d)</code>", "<code>(4, 4)</code>", "<code>T·d</code> 16"]
    assert rows[4][1:4] == ["<code>(F,)</code>", "<code>(6,)</code>", "<code>F</code> 6 per block, × n_layers = 2: 12"]
    # 16 + 2 * (4 + 4 + 24 + 6) + 4
    assert (
        '<p class="trace-params-total">One block: 38 scalars; n_layers = 2 blocks. '
        "The whole model: 96 scalars in 10 arrays.</p>"
    ) in markdown


def test_the_decay_column_follows_the_rule_when_the_rule_changes(tmp_path):
    rule = "def decays(name, array):\n    return array.ndim >= 2\n"
    root = tiny_project(
        tmp_path,
        """
        ```trace-inventory
        of: parameters
        ```
        """,
        src__optim_py=rule,
    )
    markdown, problems, _ = build(root)
    assert problems == []
    assert [r[5] for r in table_rows(markdown, "trace-params")] == ["yes", "no", "no", "yes", "no", "no"]


def test_an_init_whose_mean_is_a_negated_non_number_is_shown_as_code(tmp_path):
    # The name the mean is read through is first assigned -1j (in a branch the run never takes): no number
    # the table can give, so the initialisation is shown as its code (this used to crash on float(1j)).
    model = MODEL.replace(
        '    params["emb"] = rng.normal(0.0, std, (cfg.seq_len, d))\n',
        "    if cfg.unused < 0:\n"
        "        mean = -1j\n"
        "    else:\n"
        "        mean = 0.0\n"
        '    params["emb"] = rng.normal(mean, std, (cfg.seq_len, d))\n',
    )
    root = tiny_project(tmp_path, params_page("[emb]"), src__model_py=model)
    markdown, problems, _ = build(root)
    assert problems == []
    [row] = table_rows(markdown, "trace-params")
    assert row[4] == "rng.normal(mean, std, (cfg.seq_len, d))"


def test_an_init_the_values_contradict_fails(tmp_path):
    # The code reads as ones, but a later statement changes the values: the cross-check catches it.
    model = MODEL.replace(
        '    params["head_w"] = np.ones(d)\n',
        '    params["head_w"] = np.ones(d)\n    params.update(head_w=np.full(d, 2.0))\n',
    )
    root = tiny_project(tmp_path, params_page("[head_w]"), src__model_py=model)
    _, problems, _ = build(root)
    head = line_of(model, 'params["head_w"] = np.ones(d)')
    assert problems == [
        f"docs/page.md:1: parameter head_w: model.py:{head} creates it with ones, but init_params returned other values"
    ]


def test_the_symbolic_size_multiplies_the_symbols_and_writes_a_repeated_one_as_a_power():
    d, F = Dim(4, "width", "d"), Dim(6, "hidden", "F")

    assert symbolic_size(Desc("array", (d, F))) == "d·F"
    assert symbolic_size(Desc("array", (d, d))) == "d²"
    assert symbolic_size(Desc("array", (Dim(3, None, None), d))) == "3·d"  # a size no field explains: its number
    assert symbolic_size(Desc("scalar", text="0.5")) == "1"


def test_the_decay_words_say_what_the_rule_answered_for_every_name_of_a_row():
    decays = {"b0.w": True, "b1.w": True, "b0.g": False, "b1.g": True}

    assert decay_words(decays, ["b0.w", "b1.w"]) == "yes"
    assert decay_words(decays, ["b0.g"]) == "no"
    assert decay_words(decays, ["b0.g", "b1.g"]) == "mixed: b0.g: no, b1.g: yes"
    assert decay_words(None, ["b0.w"]) == "the project names no rule"


# ----------------------------------------------------------------------------- a class-based project


SOURCE_URL = "../source/"  # the source pages, from a page at docs/page.md (its URL: page/)


def flat_link(path: str, line: int, title: str) -> str:
    return f'<a href="{SOURCE_URL}{path}/#L{line}" title="{title}"><code>{path}:{line}</code></a>'


LAYERS = """\
import numpy as np


class Layer:
    def __init__(self):
        self.cache = None


class Dense(Layer):
    def __init__(self, n_in, n_out, scale=0.5):
        super().__init__()
        self.n_in = n_in
        self.n_out = n_out
        self.scale = scale
        self.W = None  # made by initialize

    def initialize(self, rng):
        self.W = rng.normal(0.0, self.scale, (self.n_in, self.n_out))
        self.b = np.zeros(self.n_out)

    def forward(self, X):
        self.cache = X
        return X @ self.W + self.b


class Net:
    def __init__(self, sizes):
        rng = np.random.default_rng(0)
        self.layers = [Dense(a, b) for a, b in zip(sizes, sizes[1:])]
        for layer in self.layers:
            layer.initialize(rng)

    def forward(self, X):
        for layer in self.layers:
            X = layer.forward(X)
        self.layers[0].W = self.layers[0].W + 1.0  # a training step: the values change, not the shapes
        return X
"""


LAYERS_RUN = """\
import numpy as np

from layers import Dense, Net


def config():
    return {"n": 2, "d": 3, "h": 4}


def probe(cfg):
    return {"n": 5, "d": 7, "h": 11}


def run(cfg):
    net = Net([cfg["d"], cfg["h"], cfg["d"]])
    Dense(cfg["h"], 1, scale=2.0).initialize(np.random.default_rng(1))  # made, never held: named where it was
    return net.forward(np.ones((cfg["n"], cfg["d"])))
"""


LAYERS_TEST = """\
import numpy as np

from layers import Net


def test_forward():
    assert Net([2, 3]).forward(np.ones((1, 2))).shape == (1, 3)
"""


LAYER_ENTRY = """\
# Dense

```trace-entry
title: Dense forward
function: layers.Dense.forward
status: illustrative
```
"""


LAYERS_PYPROJECT = """\
[tool.docs_hooks]
source_root = "."
tests_root = "."
model_run = "docs/examples/model_run.py"
coverage_tests = []

[tool.docs_hooks.symbols]
n = "N"
d = "D"
h = "H"
"""


def layers_project(tmp_path, page: str, settings: str = "", files: dict | None = None):
    return write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": LAYERS_PYPROJECT.replace("coverage_tests = []\n", "coverage_tests = []\n" + settings),
            "layers.py": LAYERS,
            "test_layers.py": LAYERS_TEST,
            "docs/examples/model_run.py": LAYERS_RUN,
            "docs/page.md": LAYER_ENTRY + page,
            **(files or {}),
        },
    )


def test_trace_params_outside_a_class_without_init_params_says_what_to_set(tmp_path):
    root = layers_project(tmp_path, "")
    (root / "docs/page.md").write_text("# Params\n\n" + params_page("[W]"), encoding="utf-8")
    _, problems, _ = build(root)

    assert problems == [
        "docs/page.md:3: trace-params shows the parameters init_params(cfg, rng) creates (set init_params in "
        "[tool.docs_hooks]), or, in an entry of a layer class's method, the arrays that class's objects hold in the "
        "model run"
    ]


def test_without_a_decay_rule_the_column_says_the_project_names_none(tmp_path):
    root = tiny_project(tmp_path, params_page("[ln_]"))
    pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    (root / "pyproject.toml").write_text(pyproject.replace('decay_rule = "optim.decays"\n', ""), encoding="utf-8")
    markdown, problems, _ = build(root)

    assert problems == []  # no "setting decay_rule is not set": the setting is optional
    assert "<th>Weight decay</th>" in markdown
    assert [r[5] for r in table_rows(markdown, "trace-params")] == ["the project names no rule"] * 2
