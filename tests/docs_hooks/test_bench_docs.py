"""The site benchmark splits a build's CPU time into the MkDocs process and its children.

That split is what the cold-build bound printed by bench/bench_docs.py rests on,
so it is checked here on a one-page site: the build still writes the site, the
process's own CPU time is read back, and a child process's time is counted
outside it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_docs", REPO / "bench" / "bench_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_docs"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_docs", None)


def small_site(root: Path, hook: str | None = None) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# One page\n\nSome prose.\n", encoding="utf-8")
    config = "site_name: bench test\n"
    if hook is not None:
        (root / "hook.py").write_text(hook, encoding="utf-8")
        config += "hooks:\n  - hook.py\n"
    (root / "mkdocs.yml").write_text(config, encoding="utf-8")
    return root


# A hook that keeps a child process busy for a while and waits for it: its CPU time is the child's.
BUSY_CHILD = """\
import subprocess, sys


def on_post_build(config, **kwargs):
    subprocess.run([sys.executable, "-c", "import time\\nt = time.process_time()\\n"
                    "while time.process_time() - t < 0.6: pass"], check=True)
"""


def test_the_build_runs_and_its_own_cpu_time_is_read_back(bench, tmp_path):
    project = small_site(tmp_path / "project")
    run = bench.mkdocs_build(project, tmp_path / "site")
    assert (tmp_path / "site" / "index.html").is_file()
    assert run.main is not None and 0 < run.main <= run.cpu + 0.05
    assert bench.cpu_bound(run, 2) >= run.main


def test_a_child_process_counts_in_all_cpu_but_not_in_the_process_own(bench, tmp_path):
    project = small_site(tmp_path / "project", hook=BUSY_CHILD)
    run = bench.mkdocs_build(project, tmp_path / "site")
    assert run.cpu - run.main >= 0.5  # the child spun for 0.6 s of CPU
    assert run.main < run.cpu - 0.5
    assert bench.cpu_bound(run, 1) == pytest.approx(run.cpu)


def test_the_floor_holds_the_pages_the_hooks_build_renders(bench, make_project, tmp_path):
    from .conftest import run_cli
    from .test_cli import MKDOCS_YML

    page = (
        "# Layer norm\n\n$\\mu$ is the mean of the row.\n\n"
        "```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n\n"
        "```trace-equation\nid: mean\ntitle: The mean\ntex: \\mu = \\frac{1}{D} \\sum_j x_j\n"
        "code: mu = X.mean(axis=-1, keepdims=True)\n```\n\n"
        "```trace-inventory\nof: pages\n```\n"
    )
    project = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": page})
    assert run_cli(project, "relock") == 0
    bench.mkdocs_build(project, tmp_path / "site", env_project=project)

    floor = bench.make_floor(project, tmp_path / "floor", tmp_path, env_project=project)
    bench.mkdocs_build(floor, tmp_path / "site-floor")

    markdown = (floor / "docs" / "page.md").read_text(encoding="utf-8")
    assert '<span class="katex">' in markdown and "Forward</a>" in markdown  # the formulas, the table of entries
    assert "trace-html" not in markdown and "trace-late" not in markdown
    built, floor_built = (
        (root / "page" / "index.html").read_text(encoding="utf-8")
        for root in (tmp_path / "site", tmp_path / "site-floor")
    )
    assert floor_built == built


def test_the_breakdown_times_only_stages_the_generator_has():
    """--breakdown wraps the generator's functions by name; one that was renamed fails here, not silently."""
    import subprocess

    code = "import bench_docs as b; t = b.Timers(); b.install_timers(t); print(len(t.data))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO / "bench", capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"  # installed, nothing timed yet


def test_each_speed_device_the_bench_turns_off_exists(bench):
    """--devices patches the generator by name; a device that moved must fail, not measure nothing."""
    import subprocess

    for device in bench.DEVICES:
        env = {"BENCH_DOCS_WITHOUT": device, "PATH": "/usr/bin:/bin"}
        proc = subprocess.run([sys.executable, "-c", bench.SITECUSTOMIZE], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, (device, proc.stdout + proc.stderr)
