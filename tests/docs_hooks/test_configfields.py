"""Tests of docs_hooks.kinds.configfields: where each field of the config is defined and the value it held in
the run, for each shape a config takes: a dataclass (test_config's tiny project), a config module's classes and
constants, a module-level dict, a YAML file read by a function, a layer class's constructor arguments.

``dict_project`` keeps its config in a module-level dict; the other shapes add their files to it.
"""

from __future__ import annotations

import re

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import make_build
from docs_hooks.kinds.configfields import constructor_fields, module_config
from docs_hooks.kinds.modelrun import Evidence

from .conftest import write_tree
from .test_config import config_rows
from .test_params import SOURCE_URL, flat_link
from .test_shapes import build, line_of, table_rows, tiny_project

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


# ----------------------------------------------------------------------------- the fields and their values, on a page


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


def test_a_model_config_that_is_nothing_of_the_source_is_named(tmp_path):
    root = dict_project(tmp_path, 'model_config = "config.SETTINGS"\n')
    _, problems, _ = build(root)

    assert problems == [
        "docs/page.md:1: setting model_config names 'config.SETTINGS', which is not a class, a function or a "
        "module-level dict of the source; fix model_config in [tool.docs_hooks]"
    ]


# ----------------------------------------------------------------------------- read without running


def static_evidence(tmp_path):
    """Yields a function that gives the evidence of the dict project with the files it is given, asking for no
    recording: what is read from the code alone. Ends the builds it made."""
    builders = []

    def evidence(files: dict[str, str]) -> Evidence:
        builder = make_build(load_settings(dict_project(tmp_path, "", files)), coverage=False)
        builders.append(builder)
        return Evidence(builder.project, builder.results, builder.links, {})

    yield evidence
    for builder in builders:
        builder.close()


@pytest.fixture
def static(tmp_path):
    yield from static_evidence(tmp_path)


CONSTS = """\
from dataclasses import dataclass
from typing import ClassVar

LR = 0.1  # learning rate
_SCRATCH = 3


@dataclass
class Optim:
    betas: tuple = (0.9, 0.99)  # Adam's betas
    name: ClassVar[str] = "adam"
    steps: int = 10
"""


def test_a_config_module_is_a_group_for_each_class_then_one_for_its_public_constants(static):
    ev = static({"consts.py": CONSTS})

    groups = module_config(ev, "consts")

    assert [(owner, [(f.name, f.default, f.meaning, f.line) for f in fields]) for owner, _, fields in groups] == [
        (
            "consts.Optim",
            [
                ("betas", "(0.9, 0.99)", "Adam's betas", line_of(CONSTS, "betas:")),
                ("steps", "10", "", line_of(CONSTS, "steps:")),
            ],
        ),
        ("consts", [("LR", "0.1", "learning rate", line_of(CONSTS, "LR = 0.1"))]),
    ]
    assert groups[1][1] == "<code>consts.py</code>"
    assert not any(f.has_effect for _, _, fields in groups for f in fields)  # no model run asked: not recorded


def test_a_config_module_that_is_no_file_of_the_source_is_named(static):
    ev = static({})

    with pytest.raises(TraceError) as caught:
        module_config(ev, "hyper")

    assert caught.value.message == (
        "setting config_module names 'hyper', but there is no hyper.py; fix config_module in [tool.docs_hooks]"
    )


BLOCKS = """\
class Base:
    def __init__(self, n):
        self.n = n


class Block(Base):
    def __init__(
        self,
        width,  # size of a row
        eps=1e-5,
        *,
        heads=2,  # how many heads
    ):
        super().__init__(width)


class Same(Base):
    pass


class Bare:
    pass
"""


def test_a_constructors_fields_are_its_arguments_after_self_with_the_comment_on_each_line(static):
    ev = static({"blocks.py": BLOCKS})

    init, node, fields = constructor_fields(ev, "blocks.Block")
    _, _, inherited = constructor_fields(ev, "blocks.Same")

    assert (init.name, node.lineno) == ("blocks.Block.__init__", line_of(BLOCKS, "class Block(Base):") + 1)
    assert [(f.owner, f.name, f.default, f.meaning, f.line) for f in fields] == [
        ("blocks.Block", "width", None, "size of a row", line_of(BLOCKS, "width,")),
        ("blocks.Block", "eps", "1e-5", "", line_of(BLOCKS, "eps=1e-5")),
        ("blocks.Block", "heads", "2", "how many heads", line_of(BLOCKS, "heads=2")),
    ]
    # the base's constructor, whose one-line signature gives no argument a comment of its own
    assert [(f.owner, f.name, f.default, f.meaning) for f in inherited] == [("blocks.Same", "n", None, "")]


def test_a_class_without_a_constructor_has_no_arguments_to_show(static):
    ev = static({"blocks.py": BLOCKS})

    with pytest.raises(TraceError) as caught:
        constructor_fields(ev, "blocks.Bare")

    assert caught.value.message == (
        "blocks.Bare defines no __init__, so its objects take no arguments for trace-config to show"
    )
