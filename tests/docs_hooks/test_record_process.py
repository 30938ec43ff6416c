"""docs_hooks.run.record_process: one child process serves a build's batches, what the code prints stays out of
its messages, and a request that hangs or ends the process is one clear error for it alone, the next request
going to a new process."""

import os

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.run.record_child import REPLIES_ENV
from docs_hooks.run.record_process import start_child, stop_child
from docs_hooks.run.request import Request

from .conftest import expand_page, make_recorder
from .test_record import NOISY, SLEEPY, misbehaving, problems


def test_one_child_serves_every_batch_of_a_build_and_what_the_code_prints_stays_out_of_the_replies(tmp_path):
    rec = make_recorder(tmp_path, "noisy", NOISY)
    try:
        first = rec.record([Request("shout 1", "noisy", "shout", (1,)), Request("pid 1", "noisy", "pid")])
        second = rec.record([Request("shout 2", "noisy", "shout", (2,)), Request("pid 2", "noisy", "pid")])
    finally:
        rec.close()

    assert list(first.values())[0].result == 2 and list(second.values())[0].result == 4
    assert list(first.values())[1].result == list(second.values())[1].result  # the same process
    assert rec.child.runs == 1
    assert [c.function for c in list(second.values())[0].calls] == ["noisy.shout"]


def test_a_child_that_dies_is_a_clear_error_and_the_next_batch_gets_a_new_child(tmp_path):
    rec = make_recorder(tmp_path, "noisy", NOISY)
    try:
        with pytest.raises(
            TraceError, match=r"die ended the recording process before it returned: the process exited with code 3"
        ):
            rec.record([Request("die", "noisy", "die")])
        after = rec.record([Request("shout 3", "noisy", "shout", (3,))])
    finally:
        rec.close()

    assert list(after.values())[0].result == 6
    assert rec.child.runs == 2


def test_closing_the_recorder_stops_its_child(tmp_path):
    rec = make_recorder(tmp_path, "noisy", NOISY)
    rec.record([Request("shout 4", "noisy", "shout", (4,))])
    proc = rec.child.proc
    rec.close()

    assert proc.poll() is not None


def test_replies_go_through_files_that_are_removed_and_the_child_removes_its_folder(tmp_path):
    rec = make_recorder(tmp_path, "sleepy", SLEEPY)
    rec.child.timeout = 1
    try:
        rec.record([Request("nap 0", "sleepy", "nap", (0,))])
        folder = rec.child.proc.replies  # the child's folder for its replies ...
        assert os.listdir(folder) == []  # ... holds no reply once it was read
        stopped = rec.record_each([Request("nap 1000", "sleepy", "nap", (1000,))])  # killed at its time limit
        assert isinstance(list(stopped.values())[0], TraceError)
        assert not os.path.exists(folder)  # and goes with the child, even one that was killed
    finally:
        rec.close()


def test_a_test_that_hangs_is_stopped_at_test_timeout_with_one_error_and_the_page_goes_on(make_project):
    root = misbehaving(make_project, "test_hangs", "test_rows_have_zero_mean", timeout=2)

    result = expand_page(root)

    assert problems(result) == [
        "docs/page.md:10: example 'test_hangs': tests/test_ops.py::test_hangs did not finish within "
        "test_timeout = 2 s, so it was stopped (with every process it started); make it finish sooner, "
        "or raise test_timeout in [tool.docs_hooks]"
    ]
    assert "Tiny numerical example" in result.markdown or "test_rows_have_zero_mean" in result.markdown


def test_a_test_that_ends_the_recording_process_is_named_at_its_example_and_the_next_one_records(make_project):
    root = misbehaving(make_project, "test_leaves", "test_rows_have_zero_mean")

    result = expand_page(root)

    assert problems(result) == [
        "docs/page.md:10: example 'test_leaves': tests/test_ops.py::test_leaves ended the recording process "
        "before it returned: the process exited with code 0 (os._exit, or a crash); a test that a page records "
        "must return normally: remove the exit (or show another test). Last lines of its output:\n"
        "about to leave"
    ]


def test_a_started_child_has_a_folder_for_its_replies_which_goes_when_it_is_stopped(tmp_path):
    proc, stderr = start_child(tmp_path)
    folder = proc.replies

    assert os.path.isdir(folder) and REPLIES_ENV not in os.environ  # given to the child alone
    assert proc.poll() is None  # it waits for its first batch

    stop_child(proc, stderr)

    assert proc.poll() is not None and not os.path.exists(folder) and stderr.closed
