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


def make_recorder(tmp_path):
    (tmp_path / "src").mkdir()
    module = tmp_path / "src" / "noisy.py"
    module.write_text(NOISY, encoding="utf-8")
    return Recorder(tmp_path, [tmp_path / "src"], {str(module): "noisy"}, {}, None)


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
    (tmp_path / "src").mkdir()
    module = tmp_path / "src" / "noisy.py"
    module.write_text(NOISY, encoding="utf-8")
    cache = tmp_path / "cache"

    def recorder(digest):
        return Recorder(tmp_path, [tmp_path / "src"], {str(module): "noisy"}, {"src/noisy.py": digest}, cache)

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
    (tmp_path / "src").mkdir()
    module = tmp_path / "src" / "nested.py"
    module.write_text(NESTED, encoding="utf-8")
    rec = Recorder(tmp_path, [tmp_path / "src"], {str(module): "nested"}, {}, None)
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
