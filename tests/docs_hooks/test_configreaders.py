"""Tests of docs_hooks.kinds.configreaders: who sets and who reads each field of the config, found in the code.

The project is test_configfields' ``dict_project``, with the files each test adds.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from docs_hooks.kinds.configfields import ConfigField
from docs_hooks.kinds.configreaders import attribute_readers, dict_readers, order_readers, setters

from .test_configfields import DICT_CONFIG, DICT_MODEL, dict_project, static_evidence
from .test_params import flat_link
from .test_shapes import build, line_of, table_rows


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


@pytest.fixture
def static(tmp_path):
    yield from static_evidence(tmp_path)


def fields_of(owner: str, *names: str) -> list[ConfigField]:
    return [ConfigField(owner, name, None, "", "config.py", i + 1) for i, name in enumerate(names)]


# ----------------------------------------------------------------------------- set by


CFGS = """\
from dataclasses import dataclass


@dataclass
class Cfg:
    width: int = 4
    eps: float = 1e-5

    @classmethod
    def from_dict(cls, d):
        return cls(**d)
"""

MAIN = """\
from cfgs import Cfg


def build(extra):
    a = Cfg(8, eps=0.1)
    b = Cfg(width=2)
    c = Cfg(**extra)
    d = Cfg.from_dict(extra)
    return a, b, c, d
"""


def test_each_call_that_constructs_the_class_sets_what_it_passes_and_leaves_the_rest_to_the_default(static):
    ev = static({"cfgs.py": CFGS, "main.py": MAIN})
    width, eps = fields = fields_of("cfgs.Cfg", "width", "eps")

    setters(ev, "cfgs.Cfg", fields)

    fn = ev.index.functions["main.build"]

    def who(text: str) -> str:
        line = line_of(MAIN, text)
        return f"<code>main.build</code> {ev.links.line_link(fn, line, line)}"

    assert width.set_by == [
        f"{who('a = Cfg(')} passes <code>8</code> (argument 1)",
        f"{who('b = Cfg(')} passes <code>width=2</code>",
        f"{who('c = Cfg(')}: from <code>**extra</code> when it holds the key",
        f"{who('d = Cfg.')}: every key present in <code>Cfg.from_dict(extra)</code>",
    ]
    assert eps.set_by == [
        f"{who('a = Cfg(')} passes <code>eps=0.1</code>",
        f"{who('b = Cfg(')} does not pass it: the default applies",
        f"{who('c = Cfg(')}: from <code>**extra</code> when it holds the key",
        f"{who('d = Cfg.')}: every key present in <code>Cfg.from_dict(extra)</code>",
    ]  # from_dict's own cls(**d) is the class's own code: not a setter


# ----------------------------------------------------------------------------- read by


USE = """\
def area(cfg):
    return cfg.width * cfg.width


def other(obj):
    return obj.width + obj.height
"""


def test_an_attribute_is_read_through_a_name_whose_every_attribute_is_a_field_of_the_class(static):
    ev = static({"cfgs.py": CFGS, "use.py": USE})
    width, eps = fields = fields_of("cfgs.Cfg", "width", "eps")

    attribute_readers(ev, [("cfgs.Cfg", "", fields)], None)
    order_readers(fields)

    # obj in other also reads height, which Cfg has not: obj holds something else
    assert [(fn.name, line) for fn, line in width.readers] == [("use.area", 2)]
    assert eps.readers == []


def test_a_key_of_a_dict_config_is_read_where_every_key_read_through_that_name_is_one_of_the_config(static):
    ev = static({})
    width, eps, unused = fields = fields_of("config.CONFIG", "width", "eps", "unused")

    dict_readers(ev, fields)

    assert [(fn.name, line) for fn, line in width.readers] == [("model.scale", line_of(DICT_MODEL, 'cfg["width"]'))]
    assert [(fn.name, line) for fn, line in eps.readers] == [("model.norm", line_of(DICT_MODEL, 'cfg.get("eps")'))]
    assert unused.readers == []  # model.weights reads params["width"] too, but also params["W"]: another dict
    assert "unused" in DICT_CONFIG


def test_the_readers_are_kept_once_each_in_the_order_of_their_files_and_lines():
    a = SimpleNamespace(name="model.a", repo_path="model.py")
    b = SimpleNamespace(name="train.b", repo_path="b/train.py")
    c = SimpleNamespace(name="model.c", repo_path="model.py")
    field = fields_of("config.CONFIG", "width")[0]
    field.readers = [(a, 7), (b, 9), (a, 7), (c, 3)]

    order_readers([field])

    assert field.readers == [(b, 9), (c, 3), (a, 7)]
