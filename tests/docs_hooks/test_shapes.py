"""Tests of docs_hooks.kinds.shapes: trace-shapes, and the model run as the kinds that show it use it.

How dimensions are named after the config (``kinds.modelrun.Dims``, on its own) is tested in test_modelrun.py,
trace-symbols in test_symbols.py (on the tiny project written here).
Each test here writes a tiny project into ``tmp_path`` (code, settings, a model run
helper and one page) and expands the page. The tiny model's real config has
``seq_len == width == 4`` on purpose: only the probe run can tell T from d.
"""

from __future__ import annotations

import ast
import html
import re
import textwrap
from pathlib import Path

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import make_build
from docs_hooks.kinds.shapes import calls_by_line

from .conftest import write_tree

PYPROJECT = """\
[project]
name = "tiny"
version = "0.0.0"

[tool.docs_hooks]
repo_url = "https://example.com/repo"
ref = "abc123"
model_config = "model.Config"
config_module = "settings"
model_run = "docs/examples/model_run.py"
init_params = "model.init_params"
decay_rule = "optim.decays"

[tool.docs_hooks.symbols]
seq_len = "T"
width = "d"
hidden = "F"
"width/heads" = "d_h"
"""

OPS = '''\
"""Tiny ops."""

import numpy as np


def layer_norm_forward(X, gamma, beta, epsilon=1e-5):
    mu = X.mean(axis=-1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
    s = 1.0 / np.sqrt(var + epsilon)
    Xhat = (X - mu) * s
    return gamma * Xhat + beta, (Xhat, s)


def linear_forward(X, W, b):
    Y = X @ W + b
    return Y, X


def split_heads(X, heads):
    T, d = X.shape
    parts = X.reshape(T, heads, d // heads)
    return parts
'''

MODEL = '''\
"""Tiny model: blocks of LayerNorm and a linear map."""

from dataclasses import dataclass

import numpy as np

from ops import layer_norm_forward, linear_forward, split_heads


@dataclass(frozen=True)
class Config:
    seq_len: int = 4  # rows of the input
    width: int = 4  # width of every row
    hidden: int = 6  # hidden width
    heads: int = 2  # heads
    n_layers: int = 2  # blocks
    eps: float = 1e-5  # LayerNorm epsilon
    init_std: float = 0.5  # std of the matrices
    unused: int = 3  # nothing reads this


def init_params(cfg, rng):
    d, std = cfg.width, cfg.init_std
    params = {}
    params["emb"] = rng.normal(0.0, std, (cfg.seq_len, d))
    for l in range(cfg.n_layers):
        params.update(init_block(cfg, rng, l))
    params["head_w"] = np.ones(d)
    return params


def init_block(cfg, rng, l):
    p = f"b{l}."
    block = {}
    block[p + "ln_g"], block[p + "ln_b"] = np.ones(cfg.width), np.zeros(cfg.width)
    block[p + "w1"] = rng.normal(0.0, cfg.init_std, (cfg.width, cfg.hidden))
    block[p + "b1"] = np.zeros(cfg.hidden)
    return block


def block(X, params, l, cfg):
    p = f"b{l}."
    Xn, c_ln = layer_norm_forward(X, params[p + "ln_g"], params[p + "ln_b"], cfg.eps)
    H, _ = linear_forward(Xn, params[p + "w1"], params[p + "b1"])
    return X + Xn


def forward(X, params, cfg):
    for l in range(cfg.n_layers):
        X = block(X, params, l, cfg)
    heads = split_heads(X, cfg.heads)
    Xf, _ = layer_norm_forward(X, params["b0.ln_g"], params["b0.ln_b"], cfg.eps)
    return Xf, heads


def never_run(X, params, cfg):
    Y, cache = layer_norm_forward(X, params["b0.ln_g"], params["b0.ln_b"])
    return Y
'''

OPTIM = '''\
def decays(name, array):
    """Fixture rule: only names with a 'w' decay, whatever their shape."""
    return "w" in name
'''

SETTINGS = """\
from dataclasses import dataclass


@dataclass(frozen=True)
class TrainSettings:
    seq_len: int = 4  # rows
    width: int = 4  # width
    lr: float = 0.1  # learning rate
    ghost: int = 1  # nothing reads this either
"""

TRAIN = """\
from model import Config
from settings import TrainSettings


def build_config(s=None):
    s = s or TrainSettings()
    cfg = Config(
        seq_len=s.seq_len,
        width=s.width,
    )
    return cfg


def step_size(s):
    return s.lr
"""

MODEL_RUN = """\
import dataclasses

import numpy as np

import train
from model import forward, init_params


def config():
    return train.build_config()


def probe(cfg):
    return dataclasses.replace(cfg, seq_len=5, width=21, heads=3, hidden=11, n_layers=13, unused=17)


def run(cfg):
    params = init_params(cfg, np.random.default_rng(0))
    X = np.arange(cfg.seq_len * cfg.width, dtype=float).reshape(cfg.seq_len, cfg.width)
    forward(X, params, cfg)
"""

TESTS = """\
import numpy as np

from ops import layer_norm_forward, linear_forward, split_heads


def test_rows_are_normalised():
    Y, _ = layer_norm_forward(np.arange(8.0).reshape(2, 4), np.ones(4), np.zeros(4))
    assert np.allclose(Y.mean(axis=-1), 0.0)
    assert linear_forward(Y, np.eye(4), np.zeros(4))[0].shape == (2, 4)
    assert split_heads(Y, 2).shape == (2, 2, 2)
"""

TINY = {
    "pyproject.toml": PYPROJECT,
    "src/ops.py": OPS,
    "src/model.py": MODEL,
    "src/optim.py": OPTIM,
    "src/settings.py": SETTINGS,
    "src/train.py": TRAIN,
    "docs/examples/model_run.py": MODEL_RUN,
    "tests/__init__.py": "",
    "tests/test_ops.py": TESTS,
}

URL = "https://example.com/repo/blob/abc123/"


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def tiny_project(tmp_path: Path, *page: str, **changes: str) -> Path:
    """The tiny project with the ``page`` parts (each dedented) as docs/page.md.

    ``changes`` replace files; the key is the path with '/' written '__' and '.' written '_' before 'py'.
    """
    files = dict(TINY)
    for key, text in changes.items():
        files[key.replace("__", "/").replace("_py", ".py")] = text
    files["docs/page.md"] = "\n".join(dedent(part) for part in page)
    return write_tree(tmp_path / "proj", files)


class StubMath:
    """Stands in for KaTeX (which the throwaway projects do not install): shows the TeX it was given."""

    version = "a stand-in for KaTeX"

    def render_many(self, items):
        return [(f"<m>{html.escape(tex)}</m>", None) for tex, _ in items]


def build(root: Path, builder=None):
    """(markdown, problems as text, builder) of docs/page.md."""
    if builder is None:
        builder = make_build(load_settings(root))
        builder.workers.math = StubMath()
    result = builder.expand("docs/page.md", (root / "docs/page.md").read_text(encoding="utf-8"))
    builder.await_background()  # as a build ends: what was recorded is stored for the next one
    return result.markdown, [str(p) for p in result.problems], builder


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line of ``text`` that contains ``needle``."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in the fixture")


def link(path: str, line: int, title: str) -> str:
    """A line reference as the page at docs/page.md shows it: to the line on its source page (see
    docs_hooks.render.sources)."""
    display = path.split("/", 1)[1]
    return f'<a href="../source/{path}/#L{line}" title="{title}"><code>{display}:{line}</code></a>'


def table_rows(html: str, cls: str) -> list[list[str]]:
    """The body rows of every table of class ``cls`` (cells as HTML), in order."""
    rows = []
    for table in re.findall(rf'<table class="trace-table {cls}">(.*?)</table>', html, re.S):
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1], re.S):
            rows.append(re.findall(r"<td>(.*?)</td>", row, re.S))
    return rows


ENTRY = """
```trace-entry
title: LayerNorm forward
function: ops.layer_norm_forward
status: implemented
```
"""


# ----------------------------------------------------------------------------- the model run on a page


def test_a_probe_that_cannot_separate_fields_fails_the_page(tmp_path):
    helper = MODEL_RUN.replace("seq_len=5, width=21", "seq_len=15, width=15")
    root = tiny_project(
        tmp_path,
        ENTRY,
        """
        ```trace-symbols
        rows:
          - {symbol: X, meaning: Input, code: X}
        ```
        """,
        docs__examples__model_run_py=helper,
    )
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:7: the probe config cannot tell seq_len from width: probe() in docs/examples/model_run.py "
        "gives both the value 15. Give every size field its own prime (or a product of primes where the model "
        "needs one, e.g. a width divisible by a head count), so that each dimension names one field"
    ]


# ----------------------------------------------------------------------------- trace-shapes


def test_shapes_at_every_call_site(tmp_path):
    root = tiny_project(
        tmp_path,
        ENTRY,
        """
        ```trace-shapes
        names:
          - {ref: "model.block: Xn, c_ln = layer_norm_forward(", label: Inside a block}
        ```
        """,
    )
    markdown, problems, _ = build(root)
    assert problems == []
    in_block = line_of(MODEL, "Xn, c_ln = layer_norm_forward(")
    final = line_of(MODEL, "Xf, _ = layer_norm_forward(")
    unreached = line_of(MODEL, "Y, cache = layer_norm_forward(")
    heads = re.findall(r'<p class="trace-shapes-site">(.*?)</p>', markdown)
    assert heads == [
        f"<strong>Inside a block</strong> {link('src/model.py', in_block, 'model.block')} in <code>model.block</code>",
        f"<strong><code>model.forward</code></strong> {link('src/model.py', final, 'model.forward')}",
        f"<strong><code>model.never_run</code></strong> {link('src/model.py', unreached, 'model.never_run')}",
    ]
    rows = table_rows(markdown, "trace-shapes")
    assert rows == [
        # model.block: every argument, named as written at the call, and the outputs Xn and c_ln
        ["<code>X</code>", "input", "<code>(T, d)</code>", "<code>(4, 4)</code>"],
        ["<code>params[p + &quot;ln_g&quot;]</code>", "input", "<code>(d,)</code>", "<code>(4,)</code>"],
        ["<code>params[p + &quot;ln_b&quot;]</code>", "input", "<code>(d,)</code>", "<code>(4,)</code>"],
        ["<code>cfg.eps</code>", "input", "scalar", "scalar"],
        ["<code>Xn</code>", "output", "<code>(T, d)</code>", "<code>(4, 4)</code>"],
        ["<code>c_ln</code>", "output", "<code>((T, d), (T, 1))</code>", "<code>((4, 4), (4, 1))</code>"],
        # model.forward
        ["<code>X</code>", "input", "<code>(T, d)</code>", "<code>(4, 4)</code>"],
        ["<code>params[&quot;b0.ln_g&quot;]</code>", "input", "<code>(d,)</code>", "<code>(4,)</code>"],
        ["<code>params[&quot;b0.ln_b&quot;]</code>", "input", "<code>(d,)</code>", "<code>(4,)</code>"],
        ["<code>cfg.eps</code>", "input", "scalar", "scalar"],
        ["<code>Xf</code>", "output", "<code>(T, d)</code>", "<code>(4, 4)</code>"],
        ["<code>_</code>", "output", "<code>((T, d), (T, 1))</code>", "<code>((4, 4), (4, 1))</code>"],
    ]
    legends = re.findall(r'<p class="trace-shapes-legend">(.*?)</p>', markdown)
    assert legends == ["T = seq_len = 4. d = width = 4."] * 2
    assert (
        "<p>The model run (<code>run(config())</code> in <code>docs/examples/model_run.py</code>) never reaches "
        "this call of <code>ops.layer_norm_forward</code>, so no shapes were recorded here.</p>"
    ) in markdown


def test_shapes_with_a_quotient_and_a_field_without_symbol(tmp_path):
    root = tiny_project(
        tmp_path,
        """
        ```trace-entry
        title: Split heads
        function: ops.split_heads
        status: implemented
        ```

        ```trace-shapes
        ```
        """,
    )
    markdown, problems, _ = build(root)
    assert problems == []
    assert table_rows(markdown, "trace-shapes") == [
        ["<code>X</code>", "input", "<code>(T, d)</code>", "<code>(4, 4)</code>"],
        ["<code>cfg.heads</code>", "input", "scalar", "scalar"],
        ["<code>heads</code>", "output", "<code>(T, heads, d_h)</code>", "<code>(4, 2, 2)</code>"],
    ]
    assert re.findall(r'<p class="trace-shapes-legend">(.*?)</p>', markdown) == [
        "T = seq_len = 4. d = width = 4. heads = 2. d_h = width/heads = 2."
    ]


def test_a_label_that_points_at_no_call_site_fails(tmp_path):
    root = tiny_project(
        tmp_path,
        ENTRY,
        """
        ```trace-shapes
        names:
          - {ref: "model.block: H, _ = linear_forward(", label: Not a call of layer norm}
        ```
        """,
    )
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:7: the label 'Not a call of layer norm' names a statement of model.block that calls none of "
        "ops.layer_norm_forward; point its ref at a call site"
    ]


def test_a_missing_model_run_helper_is_explained(tmp_path):
    root = tiny_project(
        tmp_path,
        ENTRY,
        """
        ```trace-shapes
        ```
        """,
    )
    (root / "docs/examples/model_run.py").unlink()
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:7: the model run helper 'docs/examples/model_run.py' (setting model_run) does not exist; "
        "create it with config(), probe(cfg) and run(cfg)"
    ]


# ----------------------------------------------------------------------------- caching


CACHE_PAGE = (
    ENTRY
    + """
```trace-symbols
rows:
  - {symbol: X, meaning: Input, code: X}
```

```trace-shapes
```

```trace-params
match: [ln_]
```
"""
)


def test_the_model_run_is_recorded_once_per_build_and_cached_between_builds(tmp_path):
    root = tiny_project(tmp_path, CACHE_PAGE + CACHE_PAGE.replace("trace-entry", "trace-entry", 1))
    first, problems, builder = build(root)
    assert problems == []
    assert builder.workers.recorder.child.runs == 1  # every block of every page: one child process

    again, problems, builder = build(root)  # a new build, same code
    assert problems == []
    assert builder.workers.recorder.child.runs == 0
    assert again == first

    ops = root / "src/ops.py"
    ops.write_text(ops.read_text(encoding="utf-8") + "\n# a comment: Python runs none\n", encoding="utf-8")
    _, problems, builder = build(root)
    assert problems == [] and builder.workers.recorder.child.runs == 0
    ops.write_text(ops.read_text(encoding="utf-8") + "\nEDITED = True\n", encoding="utf-8")
    edited, problems, builder = build(root)
    assert problems == []
    assert builder.workers.recorder.child.runs == 1  # the edited file was part of the run: it runs again

    helper = root / "docs/examples/model_run.py"
    helper.write_text(helper.read_text(encoding="utf-8") + "\n# an edit to the helper\n", encoding="utf-8")
    _, problems, builder = build(root)
    assert builder.workers.recorder.child.runs == 1  # the helper is outside the code roots, but it ran too


def test_editing_a_module_without_functions_re_runs(tmp_path):
    root = tiny_project(tmp_path, CACHE_PAGE)
    build(root)
    settings = root / "src/settings.py"
    settings.write_text(
        settings.read_text(encoding="utf-8").replace("width: int = 4", "width: int = 6"), encoding="utf-8"
    )
    markdown, problems, builder = build(root)
    assert builder.workers.recorder.child.runs == 1
    assert "<code>(T, d)</code> <code>(4, 6)</code>" in markdown  # the new width, through config()


# ----------------------------------------------------------------------------- the real project


REPO = Path(__file__).resolve().parents[2]


def test_smoke_on_the_real_project(tmp_path):
    settings = load_settings(REPO, {"cache_dir": str(tmp_path / "cache")})
    builder = make_build(settings)
    page = dedent("""
        ```trace-entry
        title: LayerNorm backward
        function: ops.layer_norm_backward
        status: implemented
        ```

        ```trace-symbols
        rows:
          - {symbol: dY, meaning: Gradient on the output, code: dY}
          - {symbol: "\\\\hat{X},\\\\, s", meaning: The cache, code: "Xhat, s"}
          - {symbol: "\\\\operatorname{mean}_i", meaning: Row mean, code: ".mean(axis=-1, keepdims=True)"}
        ```

        ```trace-shapes
        ```
        """)
    result = builder.expand("docs/smoke.md", page)
    assert [str(p) for p in result.problems] == []
    rows = table_rows(result.markdown, "trace-symbols")
    assert rows[0][3].startswith("<code>(T, d)</code>")
    assert rows[1][3].startswith("<code>(T, d) and (T, 1)</code>")
    assert rows[2][3].startswith("<code>(T, 1)</code>")
    legends = re.findall(r'<p class="trace-shapes-legend">(.*?)</p>', result.markdown)
    assert legends and all(re.fullmatch(r"T = seq_len = \d+\. d = emb_dim = \d+\.", legend) for legend in legends)


# ----------------------------------------------------------------------------- layer objects


LAYER_FILES = {
    "pyproject.toml": (
        '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\nsource_root = "."\n'
        'tests_root = "."\nmodel_run = "docs/examples/model_run.py"\n\n'
        '[tool.docs_hooks.symbols]\nseq_len = "T"\nwidth = "d"\nhidden = "h"\n'
    ),
    "layers.py": """\
import numpy as np


class Layer:
    def __call__(self, X):
        return self.forward(X)


class Linear(Layer):
    def __init__(self, d_in, d_out):
        self.W = np.ones((d_in, d_out))

    def forward(self, X):
        return X @ self.W

    def backward(self, dY):
        return dY @ self.W.T


class Model(Layer):
    def __init__(self, cfg):
        self.up = Linear(cfg["width"], cfg["hidden"])
        self.down = Linear(cfg["hidden"], cfg["width"])

    def forward(self, X):
        H = self.up(X)
        return self.down(H)

    def backward(self, dY):
        dH = self.down.backward(dY)
        return self.up.backward(dH)
""",
    "docs/examples/model_run.py": """\
import numpy as np

from layers import Model


def config():
    return {"seq_len": 3, "width": 4, "hidden": 6}


def probe(cfg):
    return {"seq_len": 5, "width": 7, "hidden": 11}


def run(cfg):
    model = Model(cfg)
    Y = model(np.ones((cfg["seq_len"], cfg["width"])))
    model.backward(Y)
""",
}


def test_shapes_at_the_call_sites_of_a_layers_forward_called_through_call(tmp_path):
    files = dict(LAYER_FILES)
    files["docs/page.md"] = (
        "```trace-entry\ntitle: Linear\nfunction: [layers.Linear.forward, layers.Linear.backward]\n"
        "status: illustrative\n```\n\n```trace-shapes\n```\n"
    )
    root = write_tree(tmp_path / "proj", files)
    markdown, problems, _ = build(root)

    assert problems == []

    def at(line: int, fn: str) -> str:
        return (
            f'<strong><code>{fn}</code></strong> <a href="../source/layers.py/#L{line}" title="{fn}">'
            f"<code>layers.py:{line}</code></a>"
        )

    assert re.findall(r'<p class="trace-shapes-site">(.*?)</p>', markdown) == [
        at(6, "layers.Layer.__call__"),  # self.forward(X): seen at run time (the model run), not followed
        at(26, "layers.Model.forward"),
        at(27, "layers.Model.forward"),  # self.up(X), self.down(H)
        at(30, "layers.Model.backward"),
        at(31, "layers.Model.backward"),  # self.down.backward(dY), ...
    ]
    assert table_rows(markdown, "trace-shapes") == [
        ["<code>X</code>", "input", "<code>(T, d)</code>", "<code>(3, 4)</code>"],  # the first call there: self.up
        ["<code>self.forward(…)</code>", "output", "<code>(T, h)</code>", "<code>(3, 6)</code>"],
        ["<code>X</code>", "input", "<code>(T, d)</code>", "<code>(3, 4)</code>"],
        ["<code>H</code>", "output", "<code>(T, h)</code>", "<code>(3, 6)</code>"],
        ["<code>H</code>", "input", "<code>(T, h)</code>", "<code>(3, 6)</code>"],
        ["<code>self.down(…)</code>", "output", "<code>(T, d)</code>", "<code>(3, 4)</code>"],  # returned
        ["<code>dY</code>", "input", "<code>(T, d)</code>", "<code>(3, 4)</code>"],
        ["<code>dH</code>", "output", "<code>(T, h)</code>", "<code>(3, 6)</code>"],
        ["<code>dH</code>", "input", "<code>(T, h)</code>", "<code>(3, 6)</code>"],
        ["<code>self.up.backward(…)</code>", "output", "<code>(T, d)</code>", "<code>(3, 4)</code>"],
    ]


SITES_FILES = {
    "pyproject.toml": (
        '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\nsource_root = "."\n'
        'tests_root = "."\nmodel_run = "docs/examples/model_run.py"\n\n'
        '[tool.docs_hooks.symbols]\nseq_len = "T"\nwidth = "d"\n'
    ),
    "net.py": """\
import numpy as np


def affine(X, W, b=0.0, *extra, scale=1.0, **options):
    return (X @ W + b) * scale, X


def pair(X):
    return X, X.sum(axis=-1), X.T


def tick(X):
    pass


class Net:
    def __init__(self, cfg):
        self.W = np.ones((cfg["width"], cfg["width"]))

    def forward(self, X, params):
        a = affine(X, self.W)  # a tuple, unpacked nowhere
        Y, _ = affine(
            X[0:2],
            params["w"],
            scale=2.0 * params["s"],
        )
        self.cache = affine(Y, self.W, 0.5, X, extra_flag=X[0])
        first, *rest = pair(Y)
        tick(Y)
        return affine(X, self.W)[0] + 1.0
""",
    "docs/examples/model_run.py": """\
import numpy as np

from net import Net


def config():
    return {"seq_len": 3, "width": 4}


def probe(cfg):
    return {"seq_len": 5, "width": 7}


def run(cfg):
    X = np.ones((cfg["seq_len"], cfg["width"]))
    Net(cfg).forward(X, {"w": np.eye(cfg["width"]), "s": 3.0})
""",
}


def test_shapes_name_every_argument_as_written_and_every_result_however_it_is_used(tmp_path):
    files = dict(SITES_FILES)
    files["docs/page.md"] = (
        "```trace-entry\ntitle: Affine\nfunction: net.affine\nstatus: illustrative\n```\n\n```trace-shapes\n```\n\n"
        "```trace-shapes\nfunction: [net.pair, net.tick]\n```\n"
    )
    root = write_tree(tmp_path / "proj", files)
    markdown, problems, _ = build(root)

    assert problems == []
    assert table_rows(markdown, "trace-shapes") == [
        # a = affine(X, self.W): an attribute argument; the whole result, named by its target
        ["<code>X</code>", "input", "<code>(T, d)</code>", "<code>(3, 4)</code>"],
        ["<code>self.W</code>", "input", "<code>(d, d)</code>", "<code>(4, 4)</code>"],
        ["<code>a</code>", "output", "<code>((T, d), (T, d))</code>", "<code>((3, 4), (3, 4))</code>"],
        # Y, _ = affine(X[0:2], params["w"], scale=2.0 * params["s"]): subscripts, a keyword expression
        ["<code>X[0:2]</code>", "input", "<code>(2, d)</code>", "<code>(2, 4)</code>"],
        ["<code>params[&quot;w&quot;]</code>", "input", "<code>(d, d)</code>", "<code>(4, 4)</code>"],
        ["<code>2.0 * params[&quot;s&quot;]</code>", "input", "scalar", "scalar"],
        ["<code>Y</code>", "output", "<code>(2, d)</code>", "<code>(2, 4)</code>"],
        ["<code>_</code>", "output", "<code>(2, d)</code>", "<code>(2, 4)</code>"],
        # self.cache = affine(Y, self.W, 0.5, X, extra_flag=X[0]): a constant; the result stored in an attribute.
        # What *extra and **options gather is not recorded by parameter, so it is not shown.
        ["<code>Y</code>", "input", "<code>(2, d)</code>", "<code>(2, 4)</code>"],
        ["<code>self.W</code>", "input", "<code>(d, d)</code>", "<code>(4, 4)</code>"],
        ["<code>0.5</code>", "input", "scalar", "scalar"],
        ["<code>self.cache</code>", "output", "<code>((2, d), (2, d))</code>", "<code>((2, 4), (2, 4))</code>"],
        # return affine(X, self.W)[0] + 1.0: returned inside an expression
        ["<code>X</code>", "input", "<code>(T, d)</code>", "<code>(3, 4)</code>"],
        ["<code>self.W</code>", "input", "<code>(d, d)</code>", "<code>(4, 4)</code>"],
        ["<code>affine(…)</code>", "output", "<code>((T, d), (T, d))</code>", "<code>((3, 4), (3, 4))</code>"],
        # first, *rest = pair(Y): unpacked with a starred target
        ["<code>Y</code>", "input", "<code>(2, d)</code>", "<code>(2, 4)</code>"],
        ["<code>first</code>", "output", "<code>(2, d)</code>", "<code>(2, 4)</code>"],
        ["<code>rest</code>", "output", "<code>((2,), (d, 2))</code>", "<code>((2,), (4, 2))</code>"],
        # tick(Y): returns nothing, so no output
        ["<code>Y</code>", "input", "<code>(2, d)</code>", "<code>(2, 4)</code>"],
    ]


def test_the_calls_by_line_are_each_call_with_every_statement_that_holds_it_in_the_order_of_a_walk():
    """Against the plain definition (a walk of every statement of the module), on this repository's own code:
    the same statements and calls, in the same order (which statement wins a tie follows it)."""

    def plain(tree: ast.AST) -> dict:
        found: dict = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Call):
                        found.setdefault(sub.lineno, []).append((node, sub))
        return found

    repo = Path(__file__).resolve().parents[2]
    files = [*sorted((repo / "src").rglob("*.py")), *sorted((repo / "docs_hooks" / "kinds").rglob("*.py"))]
    nested = "def f(x):\n    if g(h(x)):\n        y = g(x); z = [g(v) for v in h(y)]\n    return g(g(x))\n"
    trees = [ast.parse(f.read_text(encoding="utf-8")) for f in files] + [ast.parse(nested)]
    assert len(trees) > 10
    for tree in trees:
        want, got = plain(tree), calls_by_line(tree)
        assert list(got) == list(want)
        assert all([(id(s), id(c)) for s, c in got[n]] == [(id(s), id(c)) for s, c in want[n]] for n in want)
