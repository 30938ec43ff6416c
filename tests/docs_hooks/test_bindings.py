"""Reading what names are bound to (docs_hooks.resolve.bindings): imports made absolute, ``__all__`` and
``import *``, assignments to names and to ``self``, the items of lists and dicts, loop variables,
parameters, what a function returns."""

from __future__ import annotations

import ast

import pytest

from docs_hooks.resolve.bindings import UNKNOWN, Binder, absolute_import, expression_paths, imported, looped, written


@pytest.mark.parametrize(
    ("module", "is_package", "level", "name", "absolute"),
    [
        ("pkg.deep.layers", False, 1, "module", "pkg.deep.module"),
        ("pkg.deep.layers", False, 2, "util", "pkg.util"),
        ("pkg.deep", True, 1, "layers", "pkg.deep.layers"),  # in pkg/deep/__init__.py
        ("pkg.deep", True, 1, None, "pkg.deep"),  # from . import layers
        ("pkg.deep.layers", False, 0, "numpy", "numpy"),
        ("layers", False, 3, "x", "x"),  # above the top: as far up as there is
    ],
)
def test_a_relative_import_is_made_absolute_from_the_module_it_is_written_in(module, is_package, level, name, absolute):
    assert absolute_import(module, is_package, level, name) == absolute


def module_bindings(code: str, module: str = "pkg.layers", is_package: bool = False):
    binder = Binder(module, is_package)
    stars, exports = binder.module_level(ast.parse(code))
    return binder.names, stars, exports


def test_a_modules_top_level_binds_its_imports_instances_and_containers_and_lists_its_exports():
    names, stars, exports = module_bindings(
        "from .module import Module\n"
        "import numpy as np\n"
        "import os.path\n"
        "from .activations import *\n"
        "sigmoid = Sigmoid()\n"
        "table = {'relu': ReLU, 'tanh': TanH}\n"
        "if np:\n"
        "    fallback = sigmoid\n"
        "__all__ = ['Dense']\n"
        "__all__ += ['L1']\n"
        "def inner():\n"
        "    hidden = 1\n"
    )

    assert names == {
        "Module": [("=pkg.module.Module",)],
        "np": [("=numpy",)],
        "os": [("=os",)],
        "sigmoid": [("Sigmoid", "()")],
        "table": [],
        "table[]": [("ReLU",), ("TanH",)],
        "fallback": [("sigmoid",)],
        "__all__": [],
        "__all__[]": [],
    }
    assert (stars, exports) == (["pkg.activations"], ["Dense", "L1"])


def function_bindings(code: str, in_class: bool = False):
    node = ast.parse(code).body[0]
    binder = Binder("pkg.net", False)
    binder.function(node, in_class)
    return binder.names, binder.attrs


def test_a_method_binds_self_its_attributes_the_items_it_stores_and_what_it_returns():
    names, attrs = function_bindings(
        "def build(self, n, loss=CrossEntropy, layer: Dense | None = None, *rest):\n"
        "    self.layers = [Dense(n), ReLU()]\n"
        "    self.layers.append(make_bn())\n"
        "    self.by_name = {}\n"
        "    self.by_name['out'] = layer\n"
        "    self.loss = loss()\n"
        "    for i, item in enumerate(self.layers):\n"
        "        last = item\n"
        "    out = [l.forward for l in reversed(self.layers)]\n"
        "    return self\n",
        in_class=True,
    )

    assert names == {
        "self": [("*self",)],
        "n": [UNKNOWN],
        "loss": [("CrossEntropy",), UNKNOWN],  # the default, or what a caller passes
        "layer": [("Dense", "()")],  # as annotated
        "rest": [UNKNOWN],
        "i": [],
        "item": [("self", ".layers", "[]")],
        "last": [("item",)],
        "out": [],
        "out[]": [("l", ".forward")],
        "l": [("self", ".layers", "[]")],
        "return": [("self",)],
    }
    assert attrs == {
        "layers": [],
        "layers[]": [("Dense", "()"), ("ReLU", "()"), ("make_bn", "()")],
        "by_name": [],
        "by_name[]": [("layer",)],
        "loss": [("loss", "()")],
    }


def test_a_path_is_written_as_code_for_messages():
    assert written(("self", ".layers", "[]", ".forward")) == "self.layers[...].forward"
    assert written(("=pkg.layers.Dense", "()")) == "pkg.layers.Dense(...)"


def expression(code: str) -> ast.expr:
    return ast.parse(code, mode="eval").body


def test_an_expression_may_be_what_each_of_its_branches_is_and_a_literal_nothing_of_the_project():
    assert expression_paths(expression("self.layers[0]")) == [("self", ".layers", "[]")]
    assert expression_paths(expression("a if flag else b()")) == [("a",), ("b", "()")]
    assert expression_paths(expression("given or Default()")) == [("given",), ("Default", "()")]
    assert expression_paths(expression("[Dense(), ReLU()]")) == []  # its items are bound under its name
    assert expression_paths(expression("1.5")) == []
    assert expression_paths(expression("a + b")) == [UNKNOWN]


def test_a_loop_binds_its_target_to_the_items_of_what_it_iterates_through_the_builtins_that_keep_them():
    def bound(loop: str) -> list[tuple[str, str | None, list | None]]:
        node = ast.parse(loop).body[0]
        assert isinstance(node, ast.For)
        return [
            (ast.unparse(t), ast.unparse(v) if v is not None else None, p) for t, v, p in looped(node.target, node.iter)
        ]

    assert bound("for layer in reversed(self.layers): pass") == [("layer", None, [("self", ".layers", "[]")])]
    assert bound("for i, (a, b) in enumerate(zip(xs, ys)): pass") == [
        ("i", None, []),
        ("a", None, [("xs", "[]")]),
        ("b", None, [("ys", "[]")]),
    ]
    assert bound("for name, cls in table.items(): pass") == [("name", None, []), ("cls", None, [("table", "[]")])]
    assert bound("for f in [relu, *others]: pass") == [("f", "relu", None), ("f", None, [("others", "[]")])]
    assert bound("for x in range(3) + y: pass") == [("x", None, [UNKNOWN])]


def test_an_import_binds_each_name_to_what_it_imports_by_its_absolute_name():
    def bound(code: str, module: str = "pkg.layers", is_package: bool = False) -> list:
        node = ast.parse(code).body[0]
        assert isinstance(node, (ast.Import, ast.ImportFrom))
        return imported(node, module, is_package)

    assert bound("import numpy.linalg, numpy as np") == [("numpy", ("=numpy",)), ("np", ("=numpy",))]
    assert bound("import numpy.linalg as la") == [("la", ("=numpy.linalg",))]
    assert bound("from .ops import relu as r, gelu") == [("r", ("=pkg.ops.relu",)), ("gelu", ("=pkg.ops.gelu",))]
    assert bound("from . import ops", "pkg", True) == [("ops", ("=pkg.ops",))]
    assert bound("from .ops import *") == []  # a star binds what the module exports: see module_level
