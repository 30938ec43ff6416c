"""docs_hooks.resolve.hierarchy: the bases in Python's order, the method a name finds on a class, the classes
that derive from one, and the class a method belongs to."""

from __future__ import annotations

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.resolve.hierarchy import Hierarchy, mro

from .conftest import write_tree

PYPROJECT = '[tool.docs_hooks]\nsource_root = "."\ntests_root = "tests"\n'

LAYERS = """\
class Base:
    def forward(self, X):
        return X

    def __call__(self, X):
        return self.forward(X)


class Dense(Base):
    def forward(self, X):
        return X


class Deep(Dense):
    pass


def helper():
    return 1
"""


def hierarchy_of(tmp_path) -> Hierarchy:
    root = write_tree(tmp_path / "proj", {"pyproject.toml": PYPROJECT, "pkg/__init__.py": "", "pkg/layers.py": LAYERS})
    index = index_for(load_settings(root))
    return Hierarchy(index.functions, index.classes, index.bases)


def test_a_method_is_found_on_the_class_else_on_the_first_base_that_has_it(tmp_path):
    classes = hierarchy_of(tmp_path)
    assert classes.method_of("pkg.layers.Deep", "forward") == "pkg.layers.Dense.forward"
    assert classes.method_of("pkg.layers.Deep", "__call__") == "pkg.layers.Base.__call__"
    assert classes.method_of("pkg.layers.Base", "forward") == "pkg.layers.Base.forward"
    assert classes.method_of("pkg.layers.Deep", "backward") is None
    assert classes.mro("pkg.layers.Deep") == ["pkg.layers.Deep", "pkg.layers.Dense", "pkg.layers.Base"]


def test_the_subclasses_of_a_class_are_found_however_far_down(tmp_path):
    classes = hierarchy_of(tmp_path)
    assert sorted(classes.subclasses("pkg.layers.Base")) == ["pkg.layers.Deep", "pkg.layers.Dense"]
    assert classes.subclasses("pkg.layers.Deep") == []


def test_a_method_has_its_class_for_owner_and_a_module_level_function_none(tmp_path):
    classes = hierarchy_of(tmp_path)
    assert classes.owner("pkg.layers.Dense.forward") == "pkg.layers.Dense"
    assert classes.owner("pkg.layers.helper") is None
    assert classes.owner("pkg.layers.nowhere") is None


def test_a_method_is_looked_up_through_the_bases_in_pythons_own_order():
    class Base: ...

    class A(Base): ...

    class B(Base): ...

    class C(A, B): ...

    class D(B): ...

    class E(C, D): ...

    bases = {"E": ["C", "D"], "C": ["A", "B"], "D": ["B"], "A": ["Base"], "B": ["Base"], "Base": []}
    assert mro(bases, "E") == [k.__name__ for k in E.__mro__[:-1]] == ["E", "C", "A", "D", "B", "Base"]
    assert mro({"X": ["Y", "Z"], "Y": ["Z"], "Z": []}, "X") == ["X", "Y", "Z"]
    # an order Python would refuse (class X(Z, Y) with Y(Z)): depth first, each class once
    assert mro({"X": ["Z", "Y"], "Y": ["Z"], "Z": []}, "X") == ["X", "Z", "Y"]
    assert mro({"X": ["Y"], "Y": ["X"]}, "X") == ["X", "Y"]  # a cycle the code cannot hold ends
    assert mro({}, "Q") == ["Q"]  # a class outside the index: itself only
