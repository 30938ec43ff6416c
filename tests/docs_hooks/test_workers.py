"""Tests of docs_hooks.workers: the run stage's workers of one build start on first use and end with ``close``;
what goes wrong in a background job reaches the build unless a page reports it itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.run.record import Request
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


def test_recorded_code_imports_from_the_source_root_and_the_project_root(make_project):
    settings = load_settings(make_project())

    assert recorder_path(settings) == [settings.source_root, settings.project_root]
