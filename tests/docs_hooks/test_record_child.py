"""What the recording child runs: a test method on an instance of its class, set up and torn down; a test whose
imports fail, named at the line that failed. (What it records of each call: test_record_trace.py.)"""

import collections

from docs_hooks.base.errors import TraceError
from docs_hooks.run.request import Request

from .conftest import expand_page, make_recorder

CLASS_TESTS = """
import unittest

EVENTS = []


def double(x):
    return 2 * x


class TestDoubling(unittest.TestCase):
    def setUp(self):
        EVENTS.append("setUp")
        self.x = 21

    def tearDown(self):
        EVENTS.append("tearDown")

    def test_double(self):
        y = double(self.x)
        assert y == 42
        return list(EVENTS)


class TestPytestStyle:
    def setup_method(self, method):
        self.x = method.__name__

    def test_double(self):
        return double(self.x)


class TestFailingTearDown(unittest.TestCase):
    def tearDown(self):
        raise RuntimeError("cannot clean up")

    def test_nothing(self):
        return double(1)
"""


def test_a_testcase_method_runs_on_an_instance_after_setup_and_before_teardown(tmp_path):
    rec = make_recorder(tmp_path, "test_classes", CLASS_TESTS)
    unit = Request("unit", "test_classes", "TestDoubling.test_double")
    pytest_style = Request("pytest", "test_classes", "TestPytestStyle.test_double")
    only = Request("unit only", "test_classes", "TestDoubling.test_double", target_only=True)
    try:
        out = rec.record([unit, pytest_style, only])
    finally:
        rec.close()

    assert out[unit].result == ["setUp"]  # setUp ran before the test, tearDown after it
    assert [(c.function, c.args) for c in out[unit].calls[:1]] == [("test_classes.double", {"x": 21})]
    assert out[pytest_style].result == "test_doubletest_double"  # setup_method ran, given the method
    [call] = out[only].calls
    assert call.function == "test_classes.TestDoubling.test_double" and call.locals["y"] == 42


def test_a_teardown_that_raises_is_reported_with_the_test(tmp_path):
    rec = make_recorder(tmp_path, "test_classes", CLASS_TESTS)
    failing = Request(
        "tests/test_classes.py::TestFailingTearDown::test_nothing", "test_classes", "TestFailingTearDown.test_nothing"
    )
    try:
        [out] = rec.record_each([failing]).values()
    finally:
        rec.close()

    assert isinstance(out, TraceError)
    assert out.message.startswith("tests/test_classes.py::TestFailingTearDown::test_nothing: tearDown raised:\n")
    assert "RuntimeError: cannot clean up" in out.message


NN = '''\
"""A module that imported fine before Python 3.10."""
import numpy as np
from collections import Hashable


def relu(x):
    return np.maximum(x, 0)
'''

TEST_NN = """\
import numpy as np

from nn import relu


def test_relu():
    y = relu(np.arange(-1.0, 2.0))
    assert y.min() == 0
"""


def test_a_test_whose_imports_fail_is_named_with_the_line_that_failed_and_the_line_that_led_there(make_project):
    page = (
        "# NN\n\n```trace-entry\ntitle: Relu\nfunction: nn.relu\nstatus: implemented\n```\n\n"
        "```trace-example\ntest: tests/test_nn.py::test_relu\ntitle: A relu\nshow:\n  - label: Input\n    code: x\n```\n"
    )
    root = make_project({"src/nn.py": NN, "tests/test_nn.py": TEST_NN, "docs/page.md": page})

    problems = [str(p) for p in expand_page(root).problems if "not reviewed yet" not in str(p)]

    assert problems == [
        "docs/page.md:10: example 'A relu': cannot load tests/test_nn.py::test_relu: src/nn.py:3: ImportError: "
        f"cannot import name 'Hashable' from 'collections' ({collections.__file__}) (from tests/test_nn.py:3); "
        "fix that line (or show another test)"
    ]
