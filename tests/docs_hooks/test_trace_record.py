"""The recorder's view of project objects: fields read like attributes, unknown ones fail clearly."""

import pytest

from docs_hooks.record import Opaque


def test_a_recorded_project_object_reads_its_fields_as_attributes():
    cfg = Opaque("transformer.ModelConfig", "ModelConfig(n_layers=2)", {"n_layers": 2, "ln_eps": 1e-5})

    assert (cfg.n_layers, cfg.ln_eps) == (2, 1e-5)
    assert eval("cfg.n_layers * 2", {"cfg": cfg}) == 4


def test_a_field_that_was_not_recorded_is_named_in_the_error():
    cfg = Opaque("transformer.ModelConfig", "ModelConfig()", {"n_layers": 2})

    with pytest.raises(AttributeError, match="recorded transformer.ModelConfig has no field 'emb_dim'"):
        cfg.emb_dim


# ----------------------------------------------------------------------------- the child process


from docs_hooks.errors import TraceError  # noqa: E402
from docs_hooks.record import Recorder, Request  # noqa: E402

NOISY = '''
import os


def shout(n):
    print("a test that prints", n)  # must not break the messages between the build and its child
    return n * 2


def pid():
    return os.getpid()


def die():
    os._exit(3)
'''


def make_recorder(tmp_path, name: str = "noisy", text: str = NOISY, digest: str | None = None, cache=None):
    """A recorder for a project with one module, ``src/<name>.py`` (written on the first call)."""
    module = tmp_path / "src" / f"{name}.py"
    if not module.exists():
        module.parent.mkdir(exist_ok=True)
        module.write_text(text, encoding="utf-8")
    digests = {f"src/{name}.py": digest} if digest is not None else {}
    return Recorder(tmp_path, [tmp_path / "src"], {str(module): name}, digests, cache)


def test_one_child_serves_every_batch_of_a_build_and_what_the_code_prints_stays_out_of_the_replies(tmp_path):
    rec = make_recorder(tmp_path)
    try:
        first = rec.record([Request("shout 1", "noisy", "shout", (1,)), Request("pid 1", "noisy", "pid")])
        second = rec.record([Request("shout 2", "noisy", "shout", (2,)), Request("pid 2", "noisy", "pid")])
    finally:
        rec.close()

    assert list(first.values())[0].result == 2 and list(second.values())[0].result == 4
    assert list(first.values())[1].result == list(second.values())[1].result  # the same process
    assert rec.runs == 1
    assert [c.function for c in list(second.values())[0].calls] == ["noisy.shout"]


def test_a_child_that_dies_is_a_clear_error_and_the_next_batch_gets_a_new_child(tmp_path):
    rec = make_recorder(tmp_path)
    try:
        with pytest.raises(TraceError, match=r"the recording process failed \(EOFError\)"):
            rec.record([Request("die", "noisy", "die")])
        after = rec.record([Request("shout 3", "noisy", "shout", (3,))])
    finally:
        rec.close()

    assert list(after.values())[0].result == 6
    assert rec.runs == 2


def test_closing_the_recorder_stops_its_child(tmp_path):
    rec = make_recorder(tmp_path)
    rec.record([Request("shout 4", "noisy", "shout", (4,))])
    proc = rec._proc
    rec.close()

    assert proc.poll() is not None


def test_recordings_are_kept_in_one_store_and_read_back_until_a_file_they_touched_changes(tmp_path):
    cache = tmp_path / "cache"

    def recorder(digest):
        return make_recorder(tmp_path, digest=digest, cache=cache)

    request = Request("shout 5", "noisy", "shout", (5,))
    first = recorder("one")
    try:
        assert first.record([request])[request].result == 10
    finally:
        first.close()
    assert sorted(p.name for p in cache.iterdir()) == ["recordings.sqlite3"]

    again = recorder("one")
    assert again.record([request])[request].result == 10 and again.runs == 0  # read back: nothing ran

    edited = recorder("two")  # the file the recording touched has changed
    try:
        assert edited.record([request])[request].result == 10 and edited.runs == 1
    finally:
        edited.close()


NESTED = '''
import numpy as np


def helper(x):
    return x * 2


def worked_example():
    data = np.arange(3.0)
    doubled = helper(data)
    data += 100  # changed after helper saw it
    total = float(doubled.sum())
    return total
'''


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


SLEEPY = '''
import time


def nap(seconds):
    time.sleep(seconds)
    return seconds
'''


def test_a_caller_waiting_for_another_callers_batch_goes_on_when_that_batch_is_in(tmp_path):
    """Not after the next batch the other caller (the prefetch) sends: that one may be long."""
    import threading
    import time

    rec = make_recorder(tmp_path, "sleepy", SLEEPY)
    first, long = Request("first", "sleepy", "nap", (0.5,)), Request("long", "sleepy", "nap", (3.0,))
    rec.record([Request("warm up", "sleepy", "nap", (0.0,))])  # the child is up before the clock starts
    done = {}

    def prefetch():
        rec.record([first])
        rec.record([long])
        done["long"] = time.monotonic()

    def page():
        time.sleep(0.2)  # asks while the prefetch's first batch runs
        assert rec.record([first])[first].result == 0.5
        done["page"] = time.monotonic()

    threads = [threading.Thread(target=prefetch), threading.Thread(target=page)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    finally:
        rec.close()
    assert done["long"] - done["page"] > 2.0  # the page went on about 3 s before the long batch ended
    assert rec.runs == 1


def test_replies_go_through_files_that_are_removed_and_the_child_removes_its_folder(tmp_path):
    import glob
    import os
    import tempfile

    pattern = f"{tempfile.gettempdir()}/docs-hooks-replies-*"
    before = set(glob.glob(pattern))
    rec = make_recorder(tmp_path)
    try:
        rec.record([Request("shout 7", "noisy", "shout", (7,))])
        [folder] = set(glob.glob(pattern)) - before  # the child's folder for its replies ...
        assert os.listdir(folder) == []  # ... holds no reply once it was read
    finally:
        rec.close()
    assert not os.path.exists(folder)  # and goes with the child


def test_recordings_reach_the_store_even_when_the_recorder_is_never_flushed_or_closed(tmp_path):
    import gc

    def recorder():
        return make_recorder(tmp_path, digest="one", cache=tmp_path / "c")

    request = Request("shout 9", "noisy", "shout", (9,))
    first = recorder()
    assert first.record([request])[request].result == 18
    del first  # a caller that forgot: its recordings are written when it goes
    gc.collect()

    again = recorder()
    try:
        assert again.record([request])[request].result == 18 and again.runs == 0
    finally:
        again.close()


# ----------------------------------------------------------------------------- tests in classes


from docs_hooks import record  # noqa: E402  (test_request by its module: pytest would collect the name)

CLASS_TESTS = '''
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
'''


def test_a_test_id_names_a_class_and_its_method_and_the_module_is_the_path_from_the_project_root(tmp_path):
    (tmp_path / "test_layers.py").write_text("", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text("", encoding="utf-8")

    assert record.test_request("test_layers.py::TestLayerNorm::test_forward", tmp_path) == \
        Request("test_layers.py::TestLayerNorm::test_forward", "test_layers", "TestLayerNorm.test_forward")
    assert record.test_request("tests/test_ops.py::test_forward", tmp_path).module == "tests.test_ops"
    with pytest.raises(TraceError) as err:
        record.test_request("test_layers.py::TestLayerNorm::", tmp_path)
    assert str(err.value) == ("'test_layers.py::TestLayerNorm::' is not a test id; write it as "
                              "tests/test_file.py::test_name or tests/test_file.py::TestClass::test_name")


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
    failing = Request("tests/test_classes.py::TestFailingTearDown::test_nothing", "test_classes",
                      "TestFailingTearDown.test_nothing")
    try:
        [out] = rec.record_each([failing]).values()
    finally:
        rec.close()

    assert isinstance(out, TraceError)
    assert out.message.startswith("tests/test_classes.py::TestFailingTearDown::test_nothing: tearDown raised:\n")
    assert "RuntimeError: cannot clean up" in out.message
