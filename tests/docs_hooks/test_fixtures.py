"""docs_hooks.resolve.fixtures: the pytest fixture a parameter of a test names, found as pytest finds it."""

from __future__ import annotations

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.resolve.fixtures import Fixtures
from docs_hooks.resolve.hierarchy import Hierarchy

from .conftest import write_tree

PYPROJECT = '[tool.docs_hooks]\nsource_root = "."\ntests_root = "tests"\n'

CONFTEST = """\
import pytest


@pytest.fixture
def layer():
    return 1


@pytest.fixture
def shared():
    return 2
"""

DEEP_CONFTEST = """\
import pytest


@pytest.fixture
def layer():
    return 3
"""

TOP = """\
import pytest


@pytest.fixture
def local():
    return 4


def test_top(layer, local):
    pass


class TestGroup:
    @pytest.fixture
    def local(self):
        return 5

    def test_in_class(self, local):
        pass
"""


def fixtures_of(tmp_path):
    files = {
        "pyproject.toml": PYPROJECT,
        "pkg/__init__.py": "",
        "tests/conftest.py": CONFTEST,
        "tests/deep/conftest.py": DEEP_CONFTEST,
        "tests/deep/test_deep.py": "def test_deep(layer, shared, nothing):\n    pass\n",
        "tests/test_top.py": TOP,
    }
    index = index_for(load_settings(write_tree(tmp_path / "proj", files)))
    return Fixtures(index.functions, Hierarchy(index.functions, index.classes, index.bases).owner), index.functions


def test_the_nearest_conftest_above_the_test_gives_the_fixture(tmp_path):
    fixtures, functions = fixtures_of(tmp_path)
    deep = functions["test_deep.test_deep"]
    assert fixtures.named(deep, "layer") == "tests.deep.conftest.layer"
    assert fixtures.named(deep, "shared") == "tests.conftest.shared"
    assert fixtures.named(deep, "nothing") is None
    assert fixtures.named(functions["test_top.test_top"], "layer") == "tests.conftest.layer"


def test_a_method_of_the_class_comes_before_a_function_of_the_module_and_a_fixture_does_not_name_itself(tmp_path):
    fixtures, functions = fixtures_of(tmp_path)
    assert fixtures.named(functions["test_top.TestGroup.test_in_class"], "local") == "test_top.TestGroup.local"
    assert fixtures.named(functions["test_top.test_top"], "local") == "test_top.local"
    assert fixtures.named(functions["test_top.local"], "local") is None
