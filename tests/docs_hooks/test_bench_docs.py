"""bench/bench_docs.py measures what it says: its floor is MkDocs alone on the same pages, its serve run
rebuilds after the edits an author makes and reads the memory of the whole process tree, and each speed device
it turns off exists.

These run the bench's own pieces on a one-page site; the bench itself prints figures and passes nothing.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
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


PAGE = (
    "# Layer norm\n\nThe mean of the row.\n\n"
    "```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n\n"
    "```trace-equation\nid: mean\ntitle: The mean\ntex: \\mu = \\frac{1}{D} \\sum_j x_j\n"
    "code: mu = X.mean(axis=-1, keepdims=True)\n```\n"
)


@pytest.fixture
def site(make_project):
    from .conftest import run_cli
    from .test_cli import MKDOCS_YML

    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": PAGE})
    assert run_cli(root, "relock") == 0
    return root


def test_the_floor_is_the_same_pages_with_the_plugin_taken_out(bench, site, tmp_path):
    floor = bench.make_floor(site)

    text = (site / floor).read_text(encoding="utf-8")
    assert "docs_hooks" not in text and "- search" in text and "docs_dir: docs" in text
    bench.mkdocs_build(site, tmp_path / "floor", floor)
    html = (tmp_path / "floor" / "page" / "index.html").read_text(encoding="utf-8")
    assert "ops.layer_norm_forward" in html and "katex" not in html  # the block as a code block: nothing expanded


def test_a_mkdocs_yml_without_the_plugin_is_refused(bench):
    with pytest.raises(SystemExit, match="names no 'docs_hooks'"):
        bench.without_plugin("site_name: x\nplugins:\n  - search\n")


def test_a_serve_run_rebuilds_after_a_prose_and_a_code_edit_and_reads_the_memory_of_the_process_tree(bench, site):
    served = bench.serve(site, "mkdocs.yml", "page.md", 2, pause=0)

    assert set(served) == {
        "first",
        "prose edit",
        "code edit",
        "code edit kept",
        "code edit plans kept",
        "code edit blocks kept",
        "rss first",
        "children first",
        "rss code",
        "children code",
        "own code",
        "rss last",
        "children last",
        "own last",
        "children most",
        "cache code",
        "cache last",
    }
    assert all(served[k] > 0 for k in ("first", "prose edit", "code edit", "rss first", "rss code", "rss last"))
    assert 0 < served["own last"] <= served["rss last"]  # the serve process is part of its tree
    assert 0 < served["cache code"] <= served["cache last"]  # the edits' pages and parsed texts kept
    assert "Edited 1." in (site / "docs" / "page.md").read_text(encoding="utf-8")  # edits in turn: prose, code
    assert "_bench_edit_" in (site / "src" / "model.py").read_text(encoding="utf-8")  # the code edits
    assert served["children most"] <= served["children code"]  # each code edit ended the old build's processes


def test_the_code_edit_appends_a_function_and_replaces_its_own_last_one(bench, tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    return 1\n", encoding="utf-8")

    bench.edit_code(module, 1)
    bench.edit_code(module, 2)

    assert module.read_text(encoding="utf-8") == "def f():\n    return 1\n\n\ndef _bench_edit_2():\n    return 2\n"


def test_the_memory_of_a_process_tree_counts_its_children(bench):
    import os

    child = subprocess.Popen([sys.executable, "-c", "b = bytearray(60 * 2**20); import time; time.sleep(30)"])
    try:
        time.sleep(1.0)
        alone, _, own = bench.tree_rss(child.pid)
        total, children, _ = bench.tree_rss(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert alone >= 60 and own == alone  # the child's 60 MB; it has no children of its own
    assert children >= 1 and total >= alone


def test_each_speed_device_the_bench_turns_off_exists(bench):
    """--devices patches the generator by name; a device that moved must fail, not measure nothing."""
    for device in bench.DEVICES:
        env = {"BENCH_DOCS_WITHOUT": device, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
        proc = subprocess.run([sys.executable, "-c", bench.SITECUSTOMIZE], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, (device, proc.stdout + proc.stderr)


def test_the_floor_can_be_served_with_the_template_cache_the_plugin_gives_its_own_builds(bench, site):
    floor = bench.make_floor(site)

    served = bench.serve(site, floor, "page.md", 0, pause=0, templates=True)

    assert served["prose edit"] > 0
    assert served["templates reused"] > 0  # the rebuild after the prose edit compiled nothing again


def test_a_dirty_serve_run_edits_from_the_number_it_is_given(bench, site):
    served = bench.serve(site, "mkdocs.yml", "page.md", 0, first_edit=7000, dirty=True, pause=0)

    assert served["prose edit"] > 0 and served["code edit"] > 0
    assert served["code edit kept"] >= 1  # the appended function reaches no page: the page rendered is taken as is
    assert served["code edit plans kept"] >= 1  # nor what resolving the page read
    assert "Edited 7000." in (site / "docs" / "page.md").read_text(encoding="utf-8")
    assert "_bench_edit_7000" in (site / "src" / "model.py").read_text(encoding="utf-8")


def test_a_copy_without_katex_takes_this_checkouts_when_the_lock_is_the_same_and_else_the_bench_stops(bench, tmp_path):
    worktree = tmp_path / "worktree"  # another commit's checkout: no node_modules of its own
    worktree.mkdir()
    (worktree / "package-lock.json").write_bytes((REPO / "package-lock.json").read_bytes())

    assert bench.node_modules(worktree) == REPO / "node_modules"

    (worktree / "package-lock.json").write_text("{}")
    with pytest.raises(SystemExit, match="has no node_modules \\(KaTeX\\): run 'npm ci' there first"):
        bench.node_modules(worktree)
