"""The calls seen while code runs: each place of a call once, named as the code index names functions; a call
through a list of layers, a module-level instance, a dict of classes and a factory; a comprehension's call counted
for the function it is written in; a call of an instance reaching the method its ``__call__`` runs."""

from __future__ import annotations

import importlib
import sys

import pytest

from docs_hooks.run.observed import CallObserver, calls_seen, enclosing, functions_run, observed_calls, project_files

# Layers the code index cannot follow: through a list, a module-level instance, a dict of classes, a factory.
NET = """\
import sys


class Layer:
    def __call__(self, x):
        return self.forward(x)


class Scale(Layer):
    def __init__(self, k):
        self.k = k

    def forward(self, x):
        return x * self.k


class Shift(Layer):
    def forward(self, x):
        return x + 1


LAYERS = [("Scale", 2.0), ("Shift",)]  # the layers by name, as a config file would name them


def build_layer(spec):
    # a layer made from its name: what it is, only a run can tell
    name, *args = spec
    return getattr(sys.modules[__name__], name)(*args)


def make_scale():
    return build_layer(("Scale", 2.0))


def default_scale():
    return Scale(2.0)


class Net:
    def __init__(self):
        self.layers = [build_layer(spec) for spec in LAYERS]

    def forward_pass(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def all_at_once(self, x):
        return [layer.forward(x) for layer in self.layers]


shift = build_layer(("Shift",))

ACTIVATIONS = {"shift": ("Shift",)}


def activate(name, x):
    return build_layer(ACTIVATIONS[name])(x)


def run():
    return Net().forward_pass(1.0)
"""

NET_TESTS = """\
from net import Net, activate, make_scale, shift


def test_net():
    assert Net().forward_pass(1.0) == 3.0


def test_module_level_instance():
    assert shift(1.0) == 2.0


def test_made_by_a_factory():
    layer = make_scale()
    assert layer.forward(1.0) == 2.0


def test_through_a_dict():
    assert activate("shift", 1.0) == 2.0
"""


def line_of(text: str, code: str) -> int:
    """The line of ``text`` that holds ``code`` (once)."""
    [n] = [i for i, line in enumerate(text.splitlines(), 1) if code in line]
    return n


@pytest.fixture
def net(tmp_path, monkeypatch):
    """The module ``net`` (NET), imported from ``tmp_path``, and the module map naming its file."""
    (tmp_path / "net.py").write_text(NET, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("net", None)
    module = importlib.import_module("net")
    yield module, {str(tmp_path / "net.py"): "net"}
    sys.modules.pop("net", None)


def observe(trace, tmp_path, call) -> CallObserver:
    observer = CallObserver(project_files([str(tmp_path)]))
    hook = observer.profile if trace == "profile" else observer.trace
    (sys.setprofile if trace == "profile" else sys.settrace)(hook)
    try:
        call()
    finally:
        sys.setprofile(None) if trace == "profile" else sys.settrace(None)
    return observer


@pytest.mark.parametrize("trace", ["profile", "trace"])
def test_a_call_through_a_list_of_layers_is_seen_from_its_line_once(net, tmp_path, trace):
    module, modules = net
    network = module.Net()

    observer = observe(trace, tmp_path, lambda: [network.forward_pass(1.0) for _ in range(3)])

    seen = calls_seen(observer.places, observer.via, modules)
    loop = line_of(NET, "x = layer.forward(x)")
    assert ["net.Net.forward_pass", "net.Scale.forward", loop, ""] in seen
    assert ["net.Net.forward_pass", "net.Shift.forward", loop, ""] in seen
    assert len(seen) == 3  # and the call of forward_pass itself, from this test (not in the map): each once
    assert seen[0][:2] == [None, "net.Net.forward_pass"]


def test_a_comprehension_calls_for_the_function_it_is_written_in(net, tmp_path):
    module, modules = net
    network = module.Net()

    observer = observe("profile", tmp_path, lambda: network.all_at_once(1.0))

    line = line_of(NET, "return [layer.forward(x) for layer in self.layers]")
    seen = calls_seen(observer.places, observer.via, modules)
    assert ["net.Net.all_at_once", "net.Scale.forward", line, ""] in seen
    assert functions_run(observer.places, modules) == [
        "net.Net.all_at_once",
        "net.Scale.forward",
        "net.Shift.forward",
    ]  # the comprehension's own code is part of all_at_once


def test_a_call_of_an_instance_reaches_the_method_its_call_runs_from_the_calling_line(net, tmp_path):
    module, modules = net

    observer = observe("profile", tmp_path, lambda: module.activate("shift", 1.0))

    line = line_of(NET, "return build_layer(ACTIVATIONS[name])(x)")
    seen = calls_seen(observer.places, observer.via, modules)
    assert ["net.activate", "net.Layer.__call__", line, ""] in seen
    assert ["net.Layer.__call__", "net.Shift.forward", line_of(NET, "return self.forward(x)"), ""] in seen
    assert ["net.activate", "net.Shift.forward", line, "net.Layer.__call__"] in seen  # as the index names it


def test_observed_calls_are_plain_data_for_the_call_graph(net, tmp_path):
    module, modules = net

    observer = observe("profile", tmp_path, lambda: module.shift(1.0))
    calls = observed_calls(calls_seen(observer.places, observer.via, modules), "tests.test_net.test_x")

    assert {(c.caller, c.callee, c.test, c.via) for c in calls} == {
        (None, "net.Layer.__call__", "tests.test_net.test_x", ""),
        ("net.Layer.__call__", "net.Shift.forward", "tests.test_net.test_x", ""),
        (None, "net.Shift.forward", "tests.test_net.test_x", "net.Layer.__call__"),
    }


def test_nested_code_is_named_after_the_function_that_holds_it():
    assert enclosing("Net.forward_pass") == "Net.forward_pass"
    assert enclosing("Net.all_at_once.<locals>.<listcomp>") == "Net.all_at_once"
    assert enclosing("outer.<locals>.inner.<locals>.<lambda>") == "outer"
    assert enclosing("<module>") is None and enclosing("<listcomp>") is None


def test_installed_packages_are_not_the_project_even_inside_its_folder(tmp_path):
    is_project = project_files([str(tmp_path)])

    assert is_project(str(tmp_path / "net.py"))
    assert not is_project(str(tmp_path / ".venv/lib/python3.11/site-packages/numpy/core.py"))
    assert not is_project("/elsewhere/net.py")
