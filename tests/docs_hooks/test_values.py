"""Calls resolved by what a name may hold (docs_hooks.resolve.values), one tiny package per shape of code:
a base class imported with a relative import, a star re-export limited by ``__all__`` and imported inside a
test, a module-level instance, an attribute that holds a callable, a dict of classes, an instance a helper
makes, a list of layers, a pytest fixture, a parameter given a layer by the calls of its function; and what a
page then says under "Called by" and "Tested by"."""

from __future__ import annotations

import re

import pytest

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import expand_site, index_for, make_build
from docs_hooks.resolve.callgraph import CallGraph

from .conftest import write_tree

PYPROJECT = '[tool.docs_hooks]\nsource_root = "."\ntests_root = "tests"\n'


def graph_of(tmp_path, files: dict[str, str]) -> CallGraph:
    """The call graph of a project of ``files``: the package ``pkg`` at its top, tests in ``tests/`` (no
    ``__init__.py``, pytest's default layout)."""
    root = write_tree(tmp_path / "proj", {"pyproject.toml": PYPROJECT, "pkg/__init__.py": "", **files})
    return CallGraph(index_for(load_settings(root)))


def callers(graph: CallGraph, name: str) -> list[str]:
    return graph.callers([graph.index.function(name)])


def direct_tests(graph: CallGraph, name: str) -> list[str]:
    return graph.tested_by([graph.index.function(name)])


MODULE = '''\
class Module:
    """Calling a module runs its forward."""

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, *args):
        raise NotImplementedError
'''

L1 = """\
import numpy as np

{import_line}


class L1(Module):
    def __init__(self, alpha):
        self.alpha = alpha

    def forward(self, W):
        return self.alpha * np.abs(W).sum()

    def backward(self, W):
        return self._bwd(W)

    def _bwd(self, W):
        return self.alpha * np.sign(W)
"""

TEST_L1 = """\
import numpy as np

from pkg.layers import L1


def test_penalty():
    reg = L1(0.5)
    assert reg(np.ones(2)) == 1.0
"""


@pytest.mark.parametrize("import_line", ["from .module import Module", "from pkg.module import Module"])
def test_a_layer_called_reaches_its_forward_through_a_base_imported_either_way(tmp_path, import_line):
    graph = graph_of(
        tmp_path,
        {
            "pkg/module.py": MODULE,
            "pkg/layers.py": L1.format(import_line=import_line),
            "tests/test_l1.py": TEST_L1,
        },
    )

    assert graph.index.bases["pkg.layers.L1"] == ["pkg.module.Module"]
    assert direct_tests(graph, "pkg.layers.L1.forward") == ["test_l1.test_penalty"]
    # reg(...): Module.__call__, which calls forward on the instance: L1's own
    assert [(s.caller, s.via, s.written) for s in graph.index.calls_to("pkg.layers.L1.forward")] == [
        ("test_l1.test_penalty", "pkg.module.Module.__call__", "reg"),
    ]


STAR_INIT = "from .layers import *  # noqa: F403\nfrom .layers import Hidden as _Hidden  # noqa: F401\n"

LAYERS_ALL = L1.format(import_line="from .module import Module") + (
    '\n\nclass Hidden(Module):\n    def forward(self, W):\n        return W\n\n\n__all__ = ["L1"]\n'
)

TEST_STAR = """\
import numpy as np


def test_gradient():
    from pkg import L1

    reg = L1(alpha=0.1)
    assert reg.forward(np.ones(2)) == 0.2
    assert (reg.backward(np.ones(2)) == 0.1).all()


def test_hidden():
    from pkg import Hidden  # not in __all__: import * does not bring it

    Hidden().forward(1)
"""


def test_a_class_imported_inside_a_test_through_a_star_re_export_is_followed_as_far_as_all_allows(tmp_path):
    graph = graph_of(
        tmp_path,
        {
            "pkg/__init__.py": STAR_INIT,
            "pkg/module.py": MODULE,
            "pkg/layers.py": LAYERS_ALL,
            "tests/test_l1.py": TEST_STAR,
        },
    )

    assert direct_tests(graph, "pkg.layers.L1.forward") == ["test_l1.test_gradient"]
    assert direct_tests(graph, "pkg.layers.L1.backward") == ["test_l1.test_gradient"]
    fn = graph.index.function("pkg.layers.L1._bwd")
    assert (graph.tested_by([fn]), graph.reached_by_tests([fn])) == ([], ["test_l1.test_gradient"])
    assert direct_tests(graph, "pkg.layers.Hidden.forward") == []


ACTIVATIONS = """\
import numpy as np


class Sigmoid:
    def __call__(self, x):
        return 1 / (1 + np.exp(-x))

    def gradient(self, x):
        s = self(x)
        return s * (1 - s)


class ReLU:
    def __call__(self, x):
        return np.maximum(x, 0)

    def gradient(self, x):
        return (x > 0) * 1.0


class TanH:
    def __call__(self, x):
        return np.tanh(x)

    def gradient(self, x):
        return 1 - np.tanh(x) ** 2


sigmoid = Sigmoid()  # one shared instance


def predict(x):
    return sigmoid(x) > 0.5
"""

LOSS = """\
import numpy as np

from pkg.activations import sigmoid


class CrossEntropy:
    def __init__(self):
        self.log_func = sigmoid

    def loss(self, y, logits):
        p = self.log_func(logits)
        return -y * np.log(p)
"""

ACTIVATION_LAYER = """\
from pkg.activations import ReLU, TanH

activation_functions = {"relu": ReLU, "tanh": TanH}


class Activation:
    def __init__(self, name):
        self.func = activation_functions[name]()

    def forward_pass(self, X):
        return self.func(X)

    def backward_pass(self, X, grad):
        return grad * self.func.gradient(X)


def lookup(name):
    return activation_functions.get(name)()
"""

TEST_SIGMOID = """\
from pkg.activations import sigmoid


def test_sigmoid_gradient():
    assert sigmoid.gradient(0.0) == 0.25
"""


def test_a_module_level_instance_an_attribute_holding_it_and_a_dict_of_classes_are_followed(tmp_path):
    graph = graph_of(
        tmp_path,
        {
            "pkg/activations.py": ACTIVATIONS,
            "pkg/loss.py": LOSS,
            "pkg/layers.py": ACTIVATION_LAYER,
            "tests/test_sigmoid.py": TEST_SIGMOID,
        },
    )

    assert callers(graph, "pkg.activations.Sigmoid.__call__") == [
        "pkg.activations.Sigmoid.gradient",  # self(x)
        "pkg.activations.predict",  # sigmoid(x), the module-level instance
        "pkg.loss.CrossEntropy.loss",  # self.log_func(logits), log_func = sigmoid
    ]
    assert direct_tests(graph, "pkg.activations.Sigmoid.gradient") == ["test_sigmoid.test_sigmoid_gradient"]
    for cls in ("ReLU", "TanH"):  # activation_functions[name]() in __init__, then self.func(X)
        assert callers(graph, f"pkg.activations.{cls}.__call__") == ["pkg.layers.Activation.forward_pass"]
        assert callers(graph, f"pkg.activations.{cls}.gradient") == ["pkg.layers.Activation.backward_pass"]
    # the classes themselves are called where they are looked up: by [name] and by .get(name)
    assert [s.caller for s in graph.index.calls_to("pkg.activations.ReLU")] == [
        "pkg.layers.Activation.__init__",
        "pkg.layers.lookup",
    ]
    assert callers(graph, "pkg.activations.Sigmoid.gradient") == []  # not in the dict: no guess


BATCHNORM = """\
class BatchNorm:
    def __init__(self, momentum=0.9):
        self.momentum = momentum

    def forward_pass(self, X):
        return X * self.momentum


def make_bn(momentum=0.9):
    bn = BatchNorm(momentum=momentum)
    return bn
"""

TEST_BN = """\
import pytest

from pkg.norm import make_bn


@pytest.fixture
def norm():
    layer = make_bn(0.5)
    yield layer


def test_made_by_the_helper():
    bn = make_bn()
    assert bn.forward_pass(2.0) == 1.8


def test_given_by_a_fixture(norm):
    assert norm.forward_pass(2.0) == 1.0
"""


def test_an_instance_a_helper_returns_or_a_fixture_yields_is_of_the_class_it_made(tmp_path):
    graph = graph_of(tmp_path, {"pkg/norm.py": BATCHNORM, "tests/test_bn.py": TEST_BN})

    assert direct_tests(graph, "pkg.norm.BatchNorm.forward_pass") == [
        "test_bn.test_made_by_the_helper",
        "test_bn.test_given_by_a_fixture",
    ]


NETWORK = """\
from pkg.dense import Dense, ReLU


class Network:
    def __init__(self):
        self.layers = [Dense(4), ReLU()]

    def deepen(self):
        self.layers.append(Dense(4))

    def forward(self, X):
        for layer in self.layers:
            X = layer.forward_pass(X)
        return X

    def backward(self, grad):
        for layer in reversed(self.layers):
            grad = layer.backward_pass(grad)
        return grad


class Pipeline:
    def __init__(self):
        self.stages = []

    def add(self, layer):
        self.stages.append(layer)

    def forward(self, X):
        for layer in self.stages:
            X = layer.forward_pass(X)
        return X
"""

DENSE = """\
class Dense:
    def __init__(self, n):
        self.n = n

    def forward_pass(self, X):
        return X * self.n

    def backward_pass(self, grad):
        return grad * self.n


class ReLU:
    def forward_pass(self, X):
        return max(X, 0)

    def backward_pass(self, grad):
        return grad
"""


def test_a_loop_over_a_list_of_layers_made_in_the_class_calls_each_layer(tmp_path):
    graph = graph_of(tmp_path, {"pkg/net.py": NETWORK, "pkg/dense.py": DENSE})

    for cls in ("Dense", "ReLU"):
        assert callers(graph, f"pkg.dense.{cls}.forward_pass") == ["pkg.net.Network.forward"]
        assert callers(graph, f"pkg.dense.{cls}.backward_pass") == ["pkg.net.Network.backward"]
    # Pipeline.stages is filled from a parameter: the loop's call is not resolved, and it is counted
    assert [(s.caller, s.line, s.written) for s in graph.unresolved_calls_to("pkg.dense.Dense.forward_pass")] == [
        ("pkg.net.Pipeline.forward", 31, "layer.forward_pass")
    ]
    assert graph.unresolved_calls_to("pkg.dense.Dense.backward_pass") == []


def test_the_page_of_a_layer_in_a_list_says_who_calls_it(tmp_path):
    page = (
        "# Dense\n\n```trace-entry\ntitle: Dense forward\nfunction: pkg.dense.Dense.forward_pass\n"
        "status: illustrative\n```\n"
    )
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": PYPROJECT,
            "pkg/__init__.py": "",
            "pkg/net.py": NETWORK,
            "pkg/dense.py": DENSE,
            "docs/dense.md": page,
        },
    )
    settings = load_settings(root)

    result = expand_site(settings, make_build(settings, coverage=False)).pages["docs/dense.md"]

    assert [str(p) for p in result.problems] == []
    called = re.search(r"<td>Called by</td><td>(.*?)</td>", result.markdown, re.S).group(1)
    assert re.findall(r"<code>(.*?)</code>", called) == ["pkg.net.Network.forward"]


BUILDER = """\
from pkg.dense import Dense, ReLU
from pkg.net import Pipeline


class Penalty:
    def __call__(self, W):
        return abs(W)


class Scaled:
    def __init__(self, n, regularizer=None):
        self.n = n
        self.regularizer = regularizer

    def penalty(self):
        return self.regularizer(self.n)


def build():
    pipe = Pipeline()
    pipe.add(Dense(4))
    Pipeline.add(pipe, layer=ReLU())
    return pipe, Scaled(2, regularizer=Penalty())
"""


def test_a_parameter_holds_what_the_calls_of_its_function_pass_it(tmp_path):
    graph = graph_of(tmp_path, {"pkg/net.py": NETWORK, "pkg/dense.py": DENSE, "pkg/build.py": BUILDER})

    # pipe.add(Dense(4)) and Pipeline.add(pipe, layer=ReLU()): the items of self.stages, called in forward
    for cls in ("Dense", "ReLU"):
        assert "pkg.net.Pipeline.forward" in callers(graph, f"pkg.dense.{cls}.forward_pass")
    assert callers(graph, "pkg.build.Penalty.__call__") == ["pkg.build.Scaled.penalty"]  # by keyword
    # what else a caller may pass is still not known: the call stays counted for other layers
    assert [s.caller for s in graph.index.unresolved_calling("forward_pass")] == ["pkg.net.Pipeline.forward"]
