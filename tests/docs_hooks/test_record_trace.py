"""docs_hooks.run.record_trace: what the recording child keeps of a run: every first call from each place, or only
the test's own call; each value as it was then, a value too large to keep as its summary."""

import importlib.util
import sys

import numpy as np
import pytest

from docs_hooks.run.record_local import set_roots
from docs_hooks.run.record_trace import CallTracer, snapshot
from docs_hooks.run.recording import MAX_ENTRIES, Capped
from docs_hooks.run.request import Request

from .conftest import make_recorder

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


def test_a_snapshot_is_a_copy_that_later_changes_cannot_alter_and_a_long_list_is_its_summary():
    x = np.arange(3.0)
    kept = snapshot((x, [x], {"x": x}))
    x += 100

    assert [list(v) for v in (kept[0], kept[1][0], kept[2]["x"])] == [[0.0, 1.0, 2.0]] * 3
    long = snapshot(list(range(MAX_ENTRIES + 1)))
    assert isinstance(long, Capped) and long.type == "list" and long.shape == (MAX_ENTRIES + 1,)
    assert snapshot(np.float64(2.5)) == 2.5 and snapshot("text") == "text"


TRACED = """
def twice(x):
    y = 2 * x
    return y


def run():
    out = [twice(1), twice(2)]  # one place, called twice: kept once
    return out + [twice(3)]
"""


@pytest.fixture
def traced(tmp_path):
    """The module TRACED, imported from a folder set as the project's own code."""
    file = tmp_path / "traced_mod.py"
    file.write_text(TRACED, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("traced_mod", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    set_roots([str(tmp_path)])
    yield module, {str(file): "traced_mod"}
    set_roots([])


def test_the_call_tracer_keeps_the_first_call_from_each_place_with_its_arguments_locals_and_result(traced):
    module, modules = traced
    tracer = CallTracer(modules)
    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        module.run()
    finally:
        sys.settrace(before)

    assert [(c.function, c.caller, c.args, c.locals.get("y"), c.result) for c in tracer.calls] == [
        ("traced_mod.twice", "traced_mod.run", {"x": 1}, 2, 2),
        ("traced_mod.twice", "traced_mod.run", {"x": 3}, 6, 6),
        ("traced_mod.run", None, {}, None, [2, 4, 6]),
    ]
    assert tracer.files == set(modules)
