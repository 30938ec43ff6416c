"""Tests of docs_hooks.workers: the run stage's workers of one build start on first use and end with ``close``;
what goes wrong in a background job reaches the build unless a page reports it itself."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.resolve.callgraph import ObservedCall
from docs_hooks.run.request import Request
from docs_hooks.run.workers import Workers, recorder_path

WHOAMI = "import os\n\n\ndef pid():\n    return os.getpid()\n"


def alive(pid: int) -> bool:
    """Whether the process runs (a process that ended and was not yet waited for counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def workers_for(root) -> Workers:
    settings = load_settings(root)
    return Workers(settings, index_for(settings))


def test_the_recorder_starts_on_first_use_and_close_ends_its_process(make_project):
    workers = workers_for(make_project({"src/whoami.py": WHOAMI}))
    assert workers._recorder is None  # nothing started by making the workers
    try:
        request = Request("pid", "whoami", "pid")
        pid = workers.recorder.record([request])[request].result
        assert pid != os.getpid() and alive(pid)  # the code ran in a child process
    finally:
        workers.close()

    assert not alive(pid)
    assert workers._recorder is None


def test_close_without_anything_started_starts_nothing(make_project):
    workers = workers_for(make_project())

    workers.close()

    assert workers._recorder is None and workers._coverage_run is None


def test_a_bug_in_a_background_job_is_raised_in_the_build_and_a_trace_error_is_left_to_its_page(make_project):
    workers = workers_for(make_project())
    done = []

    def reported_by_its_page():
        raise TraceError("no such test")

    def bug():
        raise ValueError("a bug in a prefetch")

    try:
        workers.in_background([reported_by_its_page, bug, lambda: done.append("ran")])
        with pytest.raises(ValueError, match="^a bug in a prefetch$"):
            workers.wait()
        workers.wait()  # raised once
    finally:
        workers.close()
    assert done == ["ran"]


def test_a_job_that_waits_waits_for_the_other_jobs_and_not_for_itself(make_project):
    workers = workers_for(make_project())
    other_may_end, done = threading.Event(), []

    def other():
        other_may_end.wait(10)
        time.sleep(0.2)  # still running when the waiting job waits
        done.append("other")

    def waiting():  # as the call graph waits when Build.warm_up makes it in the background
        time.sleep(0.2)  # long after in_background has listed this job's thread
        other_may_end.set()
        workers.wait()
        done.append("waiting")

    try:
        workers.in_background([other, waiting])
        workers.wait()
    finally:
        workers.close()
    assert done == ["other", "waiting"]  # no error (a thread cannot join itself), and in that order


def test_recorded_code_imports_from_the_source_root_and_the_project_root(make_project):
    settings = load_settings(make_project())

    assert recorder_path(settings) == [settings.source_root, settings.project_root]


def test_the_evidence_holds_the_calls_the_coverage_run_and_the_recordings_saw_for_the_merged_call_graph(make_project):
    from docs_hooks.resolve.callgraph import CallGraph

    from .test_observed import NET, NET_TESTS, line_of

    root = make_project(
        {
            "src/net.py": NET,
            "tests/test_net.py": NET_TESTS,
            "pyproject.toml": '[tool.docs_hooks]\ncoverage_tests = ["tests/test_net.py"]\n',
        }
    )
    workers = workers_for(root)
    try:
        model = Request("run()", "net", "run")  # as the model run is recorded: no test
        example = Request("test_through_a_dict", "tests.test_net", "test_through_a_dict", target_only=True)
        workers.recorder.record([model, example])
        evidence = workers.evidence()
    finally:
        workers.close()

    loop = line_of(NET, "x = layer.forward(x)")
    assert ObservedCall("net.Net.forward_pass", "net.Scale.forward", loop, None) in evidence.calls  # model run
    assert ObservedCall("net.Net.forward_pass", "net.Scale.forward", loop, "tests.test_net.test_net") in (
        evidence.calls
    )  # the coverage run, under its test
    by_dict = line_of(NET, "return build_layer(ACTIVATIONS[name])(x)")
    test = "tests.test_net.test_through_a_dict"
    assert ObservedCall("net.activate", "net.Shift.forward", by_dict, test, "net.Layer.__call__") in evidence.calls
    assert line_of(NET, 'return build_layer(("Scale", 2.0))') in evidence.lines["src/net.py"]  # what the tests ran

    graph = CallGraph(workers.index, evidence)
    forward = [workers.index.functions["net.Scale.forward"]]
    assert graph.callers(forward) == ["net.Net.forward_pass"]
    assert graph.tested_by(forward) == ["tests.test_net.test_made_by_a_factory"]
    assert graph.reached_by_tests(forward) == ["tests.test_net.test_net"]


def test_the_recordings_a_worked_example_makes_count_for_its_test(make_project):
    from .test_observed import NET, NET_TESTS, line_of

    root = make_project({"src/net.py": NET, "tests/test_net.py": NET_TESTS})  # no coverage run
    workers = workers_for(root)
    try:
        example = Request("test_net", "tests.test_net", "test_net", target_only=True)
        workers.recorder.record([example])
        evidence = workers.evidence()
    finally:
        workers.close()

    assert evidence.lines == {}
    loop = line_of(NET, "x = layer.forward(x)")
    assert ObservedCall("net.Net.forward_pass", "net.Shift.forward", loop, "tests.test_net.test_net") in (
        evidence.calls
    )
    assert ObservedCall("tests.test_net.test_net", "net.Net.forward_pass", 5, "tests.test_net.test_net") in (
        evidence.calls
    )


def test_the_recorder_counts_the_core_the_coverage_run_takes_while_it_runs(make_project):
    from .test_observed import NET, NET_TESTS

    root = make_project(
        {
            "src/net.py": NET,
            "tests/test_net.py": NET_TESTS + "\n\ndef test_slow():\n    import time\n\n    time.sleep(1)\n",
            "pyproject.toml": '[tool.docs_hooks]\ncoverage_tests = ["tests/test_net.py"]\n',
        }
    )
    workers = workers_for(root)
    try:
        assert workers.recorder.busy() == 0  # no run yet
        workers.start_coverage()
        assert workers.recorder.busy() == 1  # the tests run, for a second at least
        assert workers.coverage is not None
        assert workers.recorder.busy() == 0  # that run is over
    finally:
        workers.close()
