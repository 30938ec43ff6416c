"""What the recording child records: every first call from each place, or only the test's own call; a value
too large to keep as its summary; a test method on an instance of its class, set up and torn down."""

import collections

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.run.record import Request
from docs_hooks.run.recording import MAX_ENTRIES, Capped

from .conftest import expand_page, make_recorder

NESTED = """
import numpy as np


def helper(x):
    return x * 2


def worked_example():
    data = np.arange(3.0)
    doubled = helper(data)
    data += 100  # changed after helper saw it
    total = float(doubled.sum())
    return total
"""


def test_a_target_only_request_records_the_function_itself_and_nothing_it_calls(tmp_path):
    rec = make_recorder(tmp_path, "nested", NESTED)
    only = Request("worked", "nested", "worked_example", target_only=True)
    full = Request("worked", "nested", "worked_example")  # the same name: replies go by position
    try:
        out = rec.record([only, full])
    finally:
        rec.close()

    [call] = out[only].calls
    assert call.function == "nested.worked_example" and call.args == {}
    assert call.locals["total"] == 6.0 and call.result == 6.0 == out[only].result
    assert list(call.locals["data"]) == [100.0, 101.0, 102.0]  # the locals as they were on return
    assert out[only].files == ["src/nested.py"]
    assert [c.function for c in out[full].calls] == ["nested.helper", "nested.worked_example"]
    assert list(out[full].first("nested.helper").args["x"]) == [0.0, 1.0, 2.0]  # as helper saw it


def test_a_large_recorded_value_is_kept_as_its_shape_dtype_summary_and_first_entries(tmp_path):
    rec = make_recorder(
        tmp_path,
        "big",
        "import numpy as np\n\n\ndef big():\n    X = np.linspace(-1.0, 1.0, 10_000_000)\n    return X.sum()\n",
        digest="one",
        cache=tmp_path / "cache",
    )
    request = Request("big", "big", "big")
    try:
        [recording] = rec.record([request]).values()
    finally:
        rec.close()

    X = recording.first("big.big").locals["X"]
    assert isinstance(X, Capped) and (X.shape, X.dtype, X.size) == ((10_000_000,), "float64", 10_000_000)
    assert X.summary == {"min": -1.0, "max": 1.0, "mean": pytest.approx(0.0, abs=1e-12)}
    assert X.first[0] == -1.0 and len(X.first) == 10
    assert repr(X).startswith(
        f"<numpy.ndarray of shape (10000000,), float64, 10000000 entries: too large to "
        f"record (more than {MAX_ENTRIES}); min -1, max 1, mean "
    )
    assert (tmp_path / "cache/recordings.sqlite3").stat().st_size < 1_000_000


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
