"""Tests of docs_hooks.kinds.config: the config inventory (``trace-config``, ``trace-inventory of: config``).

The tiny project is the one of test_shapes (a dataclass config); the others keep
their config in a module-level dict, a YAML file read by a function, module
constants, or a layer class's constructor arguments.
"""

from __future__ import annotations

import re

from .conftest import write_tree
from .test_params import LAYERS, LAYERS_RUN, SOURCE_URL, flat_link, layers_project
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


def test_settings_the_model_run_never_made_are_not_recorded(tmp_path):
    from .test_shapes import MODEL_RUN

    helper = MODEL_RUN.replace("import train\n", "import train\nfrom model import Config\n").replace(
        "    return train.build_config()", "    return Config(seq_len=4, width=4)"
    )
    assert helper != MODEL_RUN
    root = tiny_project(
        tmp_path,
        """
        ```trace-config
        fields: [width]
        ```
        """,
        docs__examples__model_run_py=helper,
    )
    markdown, problems, _ = build(root)
    assert problems == []
    rows = config_rows(markdown)
    assert rows["Config.width"][4] == "<code>4</code>"
    assert rows["TrainSettings.width"][4] == "not recorded"


# ----------------------------------------------------------------------------- configs kept in dicts and constants


DICT_PYPROJECT = """\
[tool.docs_hooks]
repo_url = "https://example.com/repo"
ref = "abc123"
source_root = "."
tests_root = "."
model_run = "docs/examples/model_run.py"
"""


DICT_CONFIG = """\
CONFIG = {
    "width": 4,  # width of a row
    "eps": 1e-5,  # added to the variance
    "unused": 1,  # nothing reads this
}
"""


DICT_MODEL = """\
def scale(X, cfg):
    return X * cfg["width"]


def norm(X, cfg):
    return X + cfg.get("eps")


def weights(params):
    return params["width"], params["W"]  # another dict, that has a key of the same name
"""


DICT_RUN = """\
from config import CONFIG
from model import norm, scale


def config():
    return {**CONFIG, "width": 8}


def probe(cfg):
    return {**cfg, "width": 5}


def run(cfg):
    return norm(scale(1.0, cfg), cfg)
"""


CONFIG_PAGE = "```trace-inventory\nof: config\n```\n"


def dict_project(tmp_path, settings: str, files: dict[str, str] | None = None, page: str = CONFIG_PAGE):
    return write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": DICT_PYPROJECT + settings,
            "config.py": DICT_CONFIG,
            "model.py": DICT_MODEL,
            "docs/examples/model_run.py": DICT_RUN,
            "docs/page.md": page,
            **(files or {}),
        },
    )


def test_a_config_kept_in_a_module_level_dict(tmp_path):
    root = dict_project(tmp_path, 'model_config = "config.CONFIG"\n')
    markdown, problems, _ = build(root)

    assert problems == []
    assert re.findall(r'<p class="trace-config-owner">(.*?)</p>', markdown) == [
        f"<code>config.CONFIG</code> {flat_link('config.py', 1, 'config.CONFIG')}"
    ]
    literal = "the literal <code>config.CONFIG</code>"
    assert table_rows(markdown, "trace-config") == [
        [
            "<code>width</code><br>width of a row",
            flat_link("config.py", 2, "config.CONFIG.width"),
            "<code>4</code>",
            literal,
            "<code>8</code>",
            f"<code>model.scale</code> {flat_link('model.py', 2, 'model.scale')}",
        ],
        [
            "<code>eps</code><br>added to the variance",
            flat_link("config.py", 3, "config.CONFIG.eps"),
            "<code>1e-5</code>",
            literal,
            "<code>1e-05</code>",
            f"<code>model.norm</code> {flat_link('model.py', 6, 'model.norm')}",
        ],
        [
            "<code>unused</code><br>nothing reads this",
            flat_link("config.py", 4, "config.CONFIG.unused"),
            "<code>1</code>",
            literal,
            "<code>1</code>",
            '<strong class="trace-unread">nothing reads it; editing it changes nothing</strong>',
        ],
    ]


def test_a_config_loaded_from_yaml_by_a_function(tmp_path):
    loader = (
        "from pathlib import Path\n\nimport yaml\n\n\ndef load():\n"
        '    return yaml.safe_load((Path(__file__).parent / "config.yaml").read_text())\n'
    )
    root = dict_project(
        tmp_path,
        'model_config = "loader.load"\n',
        {
            "loader.py": loader,
            "config.yaml": "width: 4  # width of a row\neps: 0.00001\n",
        },
    )
    markdown, problems, _ = build(root)

    assert problems == []
    rows = table_rows(markdown, "trace-config")
    loads = (
        f'<code>loader.load()</code> <a href="{SOURCE_URL}loader.py/#L6" title="loader.load">'
        "<code>loader.py:6-7</code></a> loads it"
    )
    assert rows == [
        [
            "<code>width</code><br>width of a row",
            flat_link("config.yaml", 1, "loader.load.width"),
            "<code>4</code>",
            loads,
            "<code>4</code>",
            f"<code>model.scale</code> {flat_link('model.py', 2, 'model.scale')}",
        ],
        [
            "<code>eps</code>",
            flat_link("config.yaml", 2, "loader.load.eps"),
            "<code>1e-05</code>",
            loads,
            "<code>1e-05</code>",
            f"<code>model.norm</code> {flat_link('model.py', 6, 'model.norm')}",
        ],
    ]


def test_module_constants_read_through_the_module_or_imported_by_name(tmp_path):
    consts = "LR = 0.1  # learning rate\nSTEPS = 10  # how many steps\nSPARE = 3\n"
    train = (
        "import consts\nfrom consts import LR\n\n\ndef step(w, g):\n    return w - LR * g\n\n\n"
        "def loop(w):\n    for _ in range(consts.STEPS):\n        w = step(w, 1.0)\n    return w\n"
    )
    root = dict_project(tmp_path, 'config_module = "consts"\n', {"consts.py": consts, "train.py": train})
    markdown, problems, _ = build(root)

    assert problems == []
    read_by = {re.match(r"<code>(.*?)</code>", r[0]).group(1): r[5] for r in table_rows(markdown, "trace-config")}
    assert read_by == {
        "LR": f"<code>train.step</code> {flat_link('train.py', 6, 'train.step')}",
        "STEPS": f"<code>train.loop</code> {flat_link('train.py', 10, 'train.loop')}",
        "SPARE": '<strong class="trace-unread">nothing reads it; editing it changes nothing</strong>',
    }


def test_a_model_config_that_is_nothing_of_the_source_is_named(tmp_path):
    root = dict_project(tmp_path, 'model_config = "config.SETTINGS"\n')
    _, problems, _ = build(root)

    assert problems == [
        "docs/page.md:1: setting model_config names 'config.SETTINGS', which is not a class, a function or a "
        "module-level dict of the source; fix model_config in [tool.docs_hooks]"
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
