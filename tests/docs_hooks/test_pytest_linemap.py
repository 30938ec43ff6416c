"""docs_hooks.pytest_linemap: the project's own test run writes the line map, and the build then runs no test."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from docs_hooks.base.cachedir import read_entry
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.run.coverage_map import cached_map_path, index_modules
from docs_hooks.run.coverage_run import Measurement

from .test_coverage_run import BRANCHY, TESTS

PYPROJECT = """\
[tool.pytest.ini_options]
addopts = "-p docs_hooks.pytest_linemap"
pythonpath = ["src", "."]

[tool.docs_hooks]
coverage_tests = ["tests/test_branchy.py"]
"""


def linemap_project(make_project, tests: str = TESTS):
    return make_project({"src/branchy.py": BRANCHY, "tests/test_branchy.py": tests, "pyproject.toml": PYPROJECT})


def run_pytest(root, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DOCS_HOOKS_COVERAGE_RUN"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def map_path(root):
    settings = load_settings(root)
    index = index_for(settings)
    return settings, cached_map_path(
        settings.cache_dir, index.file_digests, settings.coverage_tests, index_modules(index)
    )


def test_a_passing_run_of_the_selected_tests_writes_the_map_the_build_then_reads_without_running_a_test(make_project):
    root = linemap_project(make_project)

    result = run_pytest(root, "tests/test_branchy.py")

    assert result.returncode == 0, result.stdout + result.stderr
    settings, path = map_path(root)
    written = json.loads(read_entry(path))
    lines = written["lines"]
    assert lines["src/branchy.py"]["3"] == ["tests.test_branchy.test_large_values_are_clipped"]
    assert lines["src/branchy.py"]["4"] == ["tests.test_branchy.test_small_values_pass_through"]
    assert written["calls"]["tests.test_branchy.test_large_values_are_clipped"] == [
        ["tests.test_branchy.test_large_values_are_clipped", "branchy.clip", 9, ""]
    ]  # the calls each test made, seen on the way

    index = index_for(settings)
    measurement = Measurement(
        root,
        settings.source_root,
        settings.coverage_tests,
        index.file_digests,
        settings.cache_dir,
        120,
        index_modules(index),
    )

    assert measurement.done() and measurement._proc is None  # read from the cache: no coverage run started
    assert measurement.result().tests_running("src/branchy.py", 3, 3) == [
        "tests.test_branchy.test_large_values_are_clipped"
    ]


def test_a_run_that_fails_or_runs_only_some_of_the_tests_writes_nothing(make_project):
    root = linemap_project(make_project, TESTS.replace("== 5\n", "== 6\n"))

    failed = run_pytest(root, "tests/test_branchy.py")
    assert failed.returncode == 1
    assert not map_path(root)[1].exists()

    (root / "tests/test_branchy.py").write_text(TESTS, encoding="utf-8")
    some = run_pytest(root, "tests/test_branchy.py::test_small_values_pass_through")
    assert some.returncode == 0, some.stdout + some.stderr
    assert not map_path(root)[1].exists()

    keyword = run_pytest(root, "tests/test_branchy.py", "-k", "small")
    assert keyword.returncode == 0
    assert not map_path(root)[1].exists()

    everything = run_pytest(root, "tests/test_branchy.py")
    assert everything.returncode == 0
    assert map_path(root)[1].exists()


CLIP_PAGE = """\
# Clipping

```trace-entry
title: Clip
function: branchy.clip
status: illustrative
```

```trace-example
test: tests/test_branchy.py::test_large_values_are_clipped
title: A large value
show:
  - {label: Limit, code: limit}
```
"""


def test_a_run_of_every_selected_test_also_makes_the_recordings_the_pages_need_and_says_so(make_project):
    from docs_hooks.core.recordings import record_site

    root = make_project(
        {
            "src/branchy.py": BRANCHY,
            "tests/test_branchy.py": TESTS,
            "pyproject.toml": PYPROJECT,
            "docs/clip.md": CLIP_PAGE,
        }
    )

    some = run_pytest(root, "tests/test_branchy.py", "-k", "small")
    assert "docs_hooks record" not in some.stdout  # a run of some of the tests leaves the recordings to the build
    listed = run_pytest(root, "tests/test_branchy.py", "--collect-only")
    assert listed.returncode == 0 and "docs_hooks record" not in listed.stdout  # so does a run that runs none
    declined = run_pytest(root, "tests/test_branchy.py", "--no-docs-record")
    assert declined.returncode == 0 and "docs_hooks record" not in declined.stdout  # and one that says so
    assert record_site(load_settings(root)).made == 1
    (root / "src/branchy.py").write_text(BRANCHY.replace("return x", "return (x)"), encoding="utf-8")

    everything = run_pytest(root, "tests/test_branchy.py")

    assert everything.returncode == 0, everything.stdout + everything.stderr
    # No repo_url: every file of the index has a source page. The entry's listing: no mkdocs.yml to highlight it as.
    assert (
        "docs_hooks record: 1 recording(s) the pages need, 1 made, 0 stored already; 0 formula(s) rendered; "
        "7 source file(s) highlighted; 0 fenced code block(s) of the pages highlighted, 0 kept already; 0 problem(s)\n"
    ) in everything.stdout
    # A run this short ends before the record step does, and says how long it waited for it.
    assert re.search(
        r"docs_hooks record: the tests were done \d+\.\d s before it \(--no-docs-record", everything.stdout
    )
    assert record_site(load_settings(root)).made == 0  # what a build then finds stored: it records nothing


def test_under_pytest_xdist_a_worker_that_runs_every_selected_test_writes_the_map_or_the_run_says_why_none_did(
    make_project,
):
    small, large = TESTS.split("\n\n\ndef test_large")
    root = make_project(
        {
            "src/branchy.py": BRANCHY,
            "tests/test_small.py": small,
            "tests/test_large.py": "from branchy import clip\n\n\ndef test_large" + large,
            "pyproject.toml": PYPROJECT.replace('["tests/test_branchy.py"]', '["tests"]'),
        }
    )

    # --dist load hands out tests, not files: both workers run some of the five (two here, three in BASE_FILES).
    split = run_pytest(root, "tests", "-n", "2", "--dist", "load", "--no-docs-record")

    assert split.returncode == 0, split.stdout + split.stderr
    assert not map_path(root)[1].exists()
    assert (
        "docs_hooks line map: not written: the 5 test(s) coverage_tests selects ran in 2 workers (--dist load); "
        "with --dist loadfile, loadscope or loadgroup they run in one worker, which writes it"
    ) in split.stdout

    # --dist loadfile: a file to each worker, but the selected tests are one unit of work (as under loadscope and
    # loadgroup, whose schedulers the plugin takes the same way).
    together = run_pytest(root, "tests", "-n", "2", "--dist", "loadfile", "--no-docs-record")

    assert together.returncode == 0, together.stdout + together.stderr
    assert "docs_hooks line map: not written" not in together.stdout
    written = json.loads(read_entry(map_path(root)[1]))
    assert written["lines"]["src/branchy.py"]["3"] == ["tests.test_large.test_large_values_are_clipped"]
    assert written["lines"]["src/branchy.py"]["4"] == ["tests.test_small.test_small_values_pass_through"]
    assert written["calls"]["tests.test_small.test_small_values_pass_through"]  # the calls, seen in that worker


def test_an_xdist_run_makes_the_recordings_once_in_its_controller_and_says_so(make_project):
    from docs_hooks.core.recordings import record_site

    root = make_project(
        {
            "src/branchy.py": BRANCHY,
            "tests/test_branchy.py": TESTS,
            "pyproject.toml": PYPROJECT,
            "docs/clip.md": CLIP_PAGE,
        }
    )

    everything = run_pytest(root, "tests/test_branchy.py", "-n", "2", "--dist", "loadgroup")

    assert everything.returncode == 0, everything.stdout + everything.stderr
    assert everything.stdout.count("docs_hooks record: 1 recording(s) the pages need, 1 made") == 1
    assert map_path(root)[1].exists()
    assert record_site(load_settings(root)).made == 0
