"""The processes a build starts end with it, however it ends (here: ``kill -9``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import BASE_FILES

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table in /proc")

HANGS = (
    BASE_FILES["tests/test_ops.py"]
    + """

def test_hangs():
    import subprocess, time
    layer_norm_forward(np.eye(2), np.ones(2), np.zeros(2))
    subprocess.Popen(["sleep", "10000"])
    time.sleep(10000)
"""
)

PAGE = """# Page

```trace-entry
title: The entry
function: ops.layer_norm_forward
status: implemented
```

```trace-example
test: tests/test_ops.py::test_hangs
title: Hangs
show:
  - label: mu
    code: mu
```
"""

BUILD = """
import sys
from docs_hooks.core.site import expand_site, make_build
from docs_hooks.base.settings import load_settings

settings = load_settings(sys.argv[1])
expand_site(settings, make_build(settings))
"""


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) of every process."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        out[int(entry)] = (int(fields[1]), fields[0], cmd)
    return out


def _descendants(pid: int) -> dict[int, str]:
    procs = _processes()
    found, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, _, cmd) in procs.items():
            if ppid == parent and child not in found:
                found[child] = cmd
                todo.append(child)
    return found


def _alive(pids) -> dict[int, str]:
    procs = _processes()
    return {p: procs[p][2] for p in pids if p in procs and procs[p][1] != "Z"}  # a zombie has ended


def test_kill_9_of_a_build_ends_the_recording_and_coverage_processes_and_what_they_started(make_project):
    pyproject = (
        BASE_FILES["pyproject.toml"].replace(
            "coverage_tests = []", 'coverage_tests = ["tests/test_ops.py::test_hangs"]'
        )
        + "test_timeout = 600\n"
    )
    root = make_project({"tests/test_ops.py": HANGS, "docs/page.md": PAGE, "pyproject.toml": pyproject})
    started: dict[int, str] = {}
    build = subprocess.Popen(
        [sys.executable, "-c", BUILD, str(root)], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(1200):  # both hanging tests have started their `sleep`
            started = _descendants(build.pid)
            if sum(cmd.startswith("sleep 10000") for cmd in started.values()) == 2:
                break
            assert build.poll() is None, "the build ended before its tests hung"
            time.sleep(0.1)
        else:
            pytest.fail(f"the hanging tests never started: {started}")
        assert any("record_child import child_main" in cmd for cmd in started.values())
        assert any("coverage_run import child_main" in cmd for cmd in started.values())

        os.kill(build.pid, signal.SIGKILL)
        build.wait()
        for _ in range(600):
            if not _alive(started):
                break
            time.sleep(0.1)
        assert _alive(started) == {}
    finally:
        if build.poll() is None:
            build.kill()
            build.wait()
        for pid in _alive(started):  # nothing is left behind should the test fail
            os.kill(pid, signal.SIGKILL)
