"""docs_hooks.run.coverage_run: line coverage per test, measured in a child process: which tests actually ran the
lines an equation references, and how a run that fails says so."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import hypothesis
import pytest
from hypothesis import strategies as st

from docs_hooks.base.cachedir import write_entry
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.session import Session
from docs_hooks.core.site import check_site, expand_site, index_for, make_build
from docs_hooks.run import coverage_map
from docs_hooks.run.coverage_map import index_modules, read_map
from docs_hooks.run.coverage_run import Measurement, measure

from .conftest import mutated, run_cli, write_tree
from .test_fromtext import stale_cache
from .test_observed import NET_TESTS as NET_TESTS_TEXT

TESTS_OF_NET = ["test_net", "test_module_level_instance", "test_made_by_a_factory", "test_through_a_dict"]

BRANCHY = """\
def clip(x, limit):
    if x > limit:
        return limit
    return x
"""

TESTS = """\
from branchy import clip


def test_small_values_pass_through():
    assert clip(1, 5) == 1


def test_large_values_are_clipped():
    assert clip(9, 5) == 5
"""


def project(make_project) -> Path:
    return make_project(
        {
            "src/branchy.py": BRANCHY,
            "tests/test_branchy.py": TESTS,
            "pyproject.toml": '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\n'
            'coverage_tests = ["tests/test_branchy.py"]\n',
        }
    )


def test_each_line_knows_the_tests_that_ran_it(make_project, tmp_path):
    root = project(make_project)
    settings = load_settings(root)
    index = index_for(settings)

    cov = measure(root, settings.source_root, settings.coverage_tests, index.file_digests, tmp_path / "cache")

    clipped = cov.tests_running("src/branchy.py", 3, 3)
    passed = cov.tests_running("src/branchy.py", 4, 4)
    assert clipped == ["tests.test_branchy.test_large_values_are_clipped"]
    assert passed == ["tests.test_branchy.test_small_values_pass_through"]


# BRANCHY with its branches the other way round, the same size: small values now run line 3, large ones line 4.
SWAPPED = BRANCHY.replace("x > limit", "x < limit").replace("return limit\n    return x", "return x\n    return limit")


def test_the_run_measures_the_code_as_it_is_now_not_a_bytecode_cache_python_would_take_for_it(make_project, tmp_path):
    root = project(make_project)
    stale_cache(root / "src/branchy.py", BRANCHY, SWAPPED)  # an edit saved within the second, its size kept
    settings = load_settings(root)

    cov = measure(root, settings.source_root, settings.coverage_tests, index_for(settings).file_digests, tmp_path)

    assert cov.tests_running("src/branchy.py", 3, 3) == ["tests.test_branchy.test_small_values_pass_through"]
    assert cov.tests_running("src/branchy.py", 4, 4) == ["tests.test_branchy.test_large_values_are_clipped"]


def test_a_test_that_hypothesis_runs_is_counted_under_its_own_name(make_project, tmp_path):
    root = project(make_project)
    (root / "tests/test_branchy.py").write_text(
        TESTS
        + """

from hypothesis import given, settings, strategies as st


@settings(max_examples=5, deadline=None, database=None)
@given(st.integers(6, 100))
def test_every_large_value_is_clipped(x):
    assert clip(x, 5) == 5
""",
        encoding="utf-8",
    )
    settings_ = load_settings(root)
    index = index_for(settings_)

    cov = measure(root, settings_.source_root, settings_.coverage_tests, index.file_digests, tmp_path / "cache")

    assert cov.tests_running("src/branchy.py", 3, 3) == [
        "tests.test_branchy.test_every_large_value_is_clipped",
        "tests.test_branchy.test_large_values_are_clipped",
    ]


def test_the_result_is_cached_until_the_code_changes(make_project, tmp_path):
    root = project(make_project)
    settings = load_settings(root)
    cache = tmp_path / "cache"
    measure(root, settings.source_root, settings.coverage_tests, index_for(settings).file_digests, cache)
    stored = list((cache / "coverage").glob("*.json"))
    assert len(stored) == 1

    measure(root, settings.source_root, settings.coverage_tests, index_for(settings).file_digests, cache)
    assert list((cache / "coverage").glob("*.json")) == stored  # same code: read back, nothing new

    (root / "src/branchy.py").write_text(BRANCHY.replace("return limit", "return limit  # the cap"))
    measure(root, settings.source_root, settings.coverage_tests, index_for(settings).file_digests, cache)
    assert len(list((cache / "coverage").glob("*.json"))) == 2  # edited code: measured again


def net_project(make_project) -> Path:
    from .test_observed import NET, NET_TESTS

    return make_project(
        {
            "src/net.py": NET,
            "tests/test_net.py": NET_TESTS,
            "pyproject.toml": '[tool.docs_hooks]\ncoverage_tests = ["tests/test_net.py"]\n',
        }
    )


def test_the_coverage_run_notes_the_calls_each_test_made_that_the_code_index_cannot_follow(make_project, tmp_path):
    from .test_observed import NET, line_of

    root = net_project(make_project)
    settings = load_settings(root)
    index = index_for(settings)
    modules = index_modules(index)

    cov = measure(root, settings.source_root, settings.coverage_tests, index.file_digests, tmp_path / "c", 120, modules)

    calls = {(c.test.rsplit(".", 1)[-1], c.caller, c.callee, c.line, c.via) for c in cov.observed()}
    loop = line_of(NET, "x = layer.forward(x)")
    assert ("test_net", "net.Net.forward_pass", "net.Scale.forward", loop, "") in calls  # through a list
    instance = line_of(NET_TESTS_TEXT, "assert shift(1.0) == 2.0")
    assert (
        "test_module_level_instance",
        "tests.test_net.test_module_level_instance",
        "net.Shift.forward",
        instance,
        "net.Layer.__call__",
    ) in calls  # a module-level instance, called: through its __call__
    factory = line_of(NET_TESTS_TEXT, "assert layer.forward(1.0) == 2.0")
    assert (
        "test_made_by_a_factory",
        "tests.test_net.test_made_by_a_factory",
        "net.Scale.forward",
        factory,
        "",
    ) in calls
    by_dict = line_of(NET, "return build_layer(ACTIVATIONS[name])(x)")
    assert ("test_through_a_dict", "net.activate", "net.Shift.forward", by_dict, "net.Layer.__call__") in calls
    assert {c.test for c in cov.observed()} == {f"tests.test_net.{t}" for t in TESTS_OF_NET}

    again = measure(
        root, settings.source_root, settings.coverage_tests, index.file_digests, tmp_path / "c", 120, modules
    )
    assert again.observed() == cov.observed()  # kept with the line map, read back as they were


def test_a_map_measured_with_other_module_names_is_not_read_back(make_project, tmp_path):
    root = net_project(make_project)
    settings = load_settings(root)
    index = index_for(settings)
    cache = tmp_path / "cache"
    modules = index_modules(index)
    measure(root, settings.source_root, settings.coverage_tests, index.file_digests, cache, 120, modules)

    renamed = {f: f"src.{m}" for f, m in modules.items()}
    again = measure(root, settings.source_root, settings.coverage_tests, index.file_digests, cache, 120, renamed)

    assert len(list((cache / "coverage").glob("*.json"))) == 2  # measured again
    assert {c.callee for c in again.observed()} >= {"src.net.Scale.forward", "src.net.Shift.forward"}


def test_the_builder_lists_only_indexed_tests(make_project):
    root = project(make_project)
    builder = make_build(load_settings(root))
    fn = builder.project.index.functions["branchy.clip"]

    from docs_hooks.resolve.anchors import Ref, Resolved

    stmt = next(s for s in fn.statements if s.text == "return limit")
    assert builder.workers.tests_running([Resolved(Ref(fn.name, "return limit"), fn, stmt)]) == [
        "tests.test_branchy.test_large_values_are_clipped"
    ]


@pytest.mark.parametrize(
    ("layout", "module"),
    [
        ({"tests/__init__.py": None}, "test_branchy"),  # pytest's default layout: tests/ is no package
        (
            {"tests/__init__.py": None, "pytest.ini": "[pytest]\naddopts = --import-mode=importlib\n"},
            "tests.test_branchy",
        ),
        ({}, "tests.test_branchy"),  # a package (make_project writes tests/__init__.py)
    ],
    ids=["prepend", "importlib", "package"],
)
def test_the_map_names_each_test_as_the_index_does_in_each_import_mode(make_project, tmp_path, layout, module):
    root = project(make_project)
    for rel, text in layout.items():
        if text is None:
            (root / rel).unlink()
        else:
            (root / rel).write_text(text, encoding="utf-8")
    settings = load_settings(root)
    index = index_for(settings)

    cov = measure(root, settings.source_root, settings.coverage_tests, index.file_digests, tmp_path / "cache")

    ran = cov.tests_running("src/branchy.py", 1, 4)
    assert ran == [f"{module}.test_large_values_are_clipped", f"{module}.test_small_values_pass_through"]
    assert all(index.functions[name].is_test for name in ran)


def test_failing_tests_are_a_clear_error_every_time_it_is_asked_and_nothing_is_cached(make_project, tmp_path):
    root = project(make_project)
    (root / "tests/test_branchy.py").write_text(TESTS.replace("== 5", "== 6"), encoding="utf-8")
    settings = load_settings(root)
    cache = tmp_path / "cache"
    run = Measurement(root, settings.source_root, settings.coverage_tests, index_for(settings).file_digests, cache)

    for _ in range(2):
        with pytest.raises(TraceError) as err:
            run.result()
        assert str(err.value).startswith(
            "pyproject.toml: coverage_tests: while measuring which test runs which line, the test "
            "tests/test_branchy.py::test_large_values_are_clipped failed: tests/test_branchy.py:9: AssertionError; fix the "
            "test (or leave it out of coverage_tests in [tool.docs_hooks]). pytest reported:\n"
        )
    assert not (cache / "coverage").exists()


WARNS = """\
import warnings

for n in range(20):  # a summary of warnings longer than the last lines of output a message shows
    warnings.warn_explicit(f"old API number {n}", DeprecationWarning, "tests/test_a_warns.py", n + 1)


def test_ok():
    assert True
"""


def test_a_test_file_that_cannot_be_imported_is_named_whole_with_the_import_that_failed(make_project):
    root = project(make_project)
    (root / "tests/test_a_warns.py").write_text(WARNS, encoding="utf-8")
    (root / "tests/test_branchy.py").write_text(TESTS.replace("import clip", "import clip, saturate"))
    settings = load_settings(root)
    settings.coverage_tests = ["tests"]  # the warnings come first
    run = Measurement(root, settings.source_root, settings.coverage_tests, index_for(settings).file_digests, None)

    with pytest.raises(TraceError) as err:
        run.result()

    lines = str(err.value).splitlines()
    assert lines[0] == (
        "pyproject.toml: coverage_tests: while measuring which test runs which line, the test tests/test_branchy.py "
        "could not be collected: tests/test_branchy.py:1: ImportError: cannot import name 'saturate' from 'branchy' "
        f"({root / 'src/branchy.py'}); fix the test (or leave it out of coverage_tests in [tool.docs_hooks]). "
        "pytest reported:"
    )
    assert re.fullmatch(r"_+ ERROR collecting tests/test_branchy.py _+", lines[1])
    assert lines[-3:] == [
        "tests/test_branchy.py:1: in <module>",
        "    from branchy import clip, saturate",
        f"E   ImportError: cannot import name 'saturate' from 'branchy' ({root / 'src/branchy.py'})",
    ]


def test_the_builder_starts_the_coverage_run_when_it_is_made(make_project):
    root = project(make_project)
    builder = make_build(load_settings(root))

    run = builder.workers._coverage_run
    assert run is not None and run._proc is not None  # running in the background already
    assert builder.workers.coverage.tests_running("src/branchy.py", 3, 3) == [
        "tests.test_branchy.test_large_values_are_clipped"
    ]


@pytest.mark.skipif(not hasattr(__import__("os"), "getpriority"), reason="process priorities are POSIX only")
def test_the_coverage_run_has_the_lowest_priority_and_the_build_keeps_its_own(make_project):
    import os

    from docs_hooks.run.coverage_run import COVERAGE_NICENESS

    root = project(make_project)
    before = os.getpriority(os.PRIO_PROCESS, 0)
    builder = make_build(load_settings(root))
    proc = builder.workers._coverage_run._proc
    niceness = os.getpriority(os.PRIO_PROCESS, proc.pid) if proc.poll() is None else None
    assert builder.workers.coverage is not None  # the run still ends and is read as usual
    assert niceness in (COVERAGE_NICENESS, None)  # None: it had ended before it could be asked
    assert os.getpriority(os.PRIO_PROCESS, 0) == before


CLIP_PAGE = """\
# Clip

```trace-entry
title: Clip
function: branchy.clip
status: implemented
```

```trace-equation
id: cap
title: The cap
tex: y = \\min(x, c)
code: return limit
```
"""


def test_the_coverage_row_names_the_tests_that_ran_the_equations_lines(make_project):
    root = project(make_project)
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs/clip.md").write_text(CLIP_PAGE, encoding="utf-8")
    builder = make_build(load_settings(root))

    expanded = builder.expand("docs/clip.md", CLIP_PAGE)
    assert expanded.problems == []
    html = expanded.markdown
    row = re.search(r"<tr><td>Tests that run these equations' lines \(line coverage\)</td><td>(.*?)</td></tr>", html)
    assert row and "test_large_values_are_clipped" in row.group(1)
    assert "test_small_values_pass_through" not in row.group(1)  # it never reaches `return limit`


def test_check_does_not_wait_for_the_coverage_run_and_a_build_reports_its_failure_once(make_project, monkeypatch):
    root = project(make_project)
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs/clip.md").write_text(CLIP_PAGE, encoding="utf-8")
    (root / "docs/again.md").write_text(CLIP_PAGE.replace("id: cap", "id: cap-again"), encoding="utf-8")
    (root / "tests/test_branchy.py").write_text(TESTS.replace("== 5", "== 6"), encoding="utf-8")
    settings = load_settings(root)
    asked, started = [], []
    result, init = Measurement.result, Measurement.__init__
    monkeypatch.setattr(Measurement, "result", lambda self: asked.append(1) or result(self))
    monkeypatch.setattr(Measurement, "__init__", lambda self, *a: started.append(1) or init(self, *a))

    checked = [str(p) for p in check_site(settings)]
    assert checked and all("not reviewed yet" in p for p in checked)  # nothing of the failing test
    assert asked == [] and started == []  # check neither starts nor waits for the coverage run: the failing
    # test is make test's to report

    site = expand_site(settings)
    [problem] = site.problems  # once for the build, at the setting, not once per page
    assert str(problem).startswith(
        "pyproject.toml: coverage_tests: while measuring which test runs which line, the test "
        "tests/test_branchy.py::test_large_values_are_clipped failed: tests/test_branchy.py:9: AssertionError; fix the "
        "test (or leave it out of coverage_tests in [tool.docs_hooks]). pytest reported:\n"
    )
    for name in ("docs/clip.md", "docs/again.md"):
        markdown = site.pages[name].markdown
        assert '<code class="trace-error">coverage_tests: while measuring' in markdown
        assert "trace-late" not in markdown


def test_a_builder_kept_for_the_next_build_reports_the_failed_coverage_run_again_once(make_project):
    """mkdocs serve keeps the builder while no code changes: each build reports the failure once, on the first
    page the front end takes that meets it, whichever page was expanded first (a dirty build expands the pages
    whose inputs changed ahead, to compare them; serve renders pages while it waits)."""
    root = project(make_project)
    (root / "tests/test_branchy.py").write_text(TESTS.replace("== 5", "== 6"), encoding="utf-8")
    pages = {"docs/clip.md": CLIP_PAGE, "docs/again.md": CLIP_PAGE.replace("id: cap", "id: cap-again")}
    write_tree(root, pages)
    assert run_cli(root, "relock") == 0  # the pages' references reviewed: only the run's failure is left
    reports: list[str] = []
    session = Session(root, lambda problem: reports.append(str(problem)[:40]))
    builds = []
    try:
        for _ in range(2):  # two builds: the pages are expanded (or read back) again, each time
            builds.append(session.refresh())
            assert session.comes_out_as("docs/again.md", pages["docs/again.md"]) is None  # it meets the problem
            shown = {name: [str(p)[:40] for p in session.expand(name, text).problems] for name, text in pages.items()}
            assert shown == {"docs/clip.md": ["pyproject.toml: coverage_tests: while me"], "docs/again.md": []}
        assert builds[0] is builds[1]
        assert reports == ["pyproject.toml: coverage_tests: while me"] * 2
        # A front end that refreshes for every page it converts (the extension under Zensical) takes no new
        # pass: the page that showed the problem keeps it, whichever page comes first.
        for name in ("docs/again.md", "docs/clip.md"):
            assert session.refresh(new_pass=False) is builds[0]
            assert [str(p)[:40] for p in session.expand(name, pages[name]).problems] == shown[name]
    finally:
        session.close()


COVERAGE_MISBEHAVES = (
    TESTS
    + """

def test_hangs():
    import time
    time.sleep(10000)


def test_leaves():
    import os
    os._exit(0)
"""
)


def misbehaving_run(make_project, test: str, timeout: float = 120.0) -> Measurement:
    root = project(make_project)
    (root / "tests/test_branchy.py").write_text(COVERAGE_MISBEHAVES, encoding="utf-8")
    settings = load_settings(root)
    return Measurement(
        root, settings.source_root, [f"tests/test_branchy.py::{test}"], index_for(settings).file_digests, None, timeout
    )


def test_a_coverage_test_that_hangs_is_stopped_at_test_timeout(make_project):
    run = misbehaving_run(make_project, "test_hangs", timeout=2)

    with pytest.raises(TraceError) as err:
        run.result()
    assert str(err.value) == (
        "pyproject.toml: coverage_tests: while measuring which test runs which line, the test "
        "tests/test_branchy.py::test_hangs did not finish within test_timeout = 2 s, so the run was stopped; "
        "make the test finish sooner, or raise test_timeout (or leave it out of coverage_tests in "
        "[tool.docs_hooks]). It printed nothing."
    )
    assert run._proc.poll() is not None


def test_a_coverage_test_that_ends_the_run_is_named(make_project):
    run = misbehaving_run(make_project, "test_leaves")

    with pytest.raises(TraceError) as err:
        run.result()
    assert str(err.value) == (
        "pyproject.toml: coverage_tests: while measuring which test runs which line, the test "
        "tests/test_branchy.py::test_leaves ended the run (exit code 0) before the line map was written "
        "(os._exit, say); fix the test (or leave it out of coverage_tests in [tool.docs_hooks]). "
        "It printed nothing."
    )


def measured_once(make_project, tmp_path):
    """The branchy project measured once, its line map cached: (root, settings, file digests, cache folder)."""
    root = project(make_project)
    settings = load_settings(root)
    digests = index_for(settings).file_digests
    cache = tmp_path / "cache"
    measure(root, settings.source_root, settings.coverage_tests, digests, cache)
    return root, settings, digests, cache


def test_a_cached_line_map_is_read_as_a_map_only_when_something_asks_for_it(make_project, tmp_path, monkeypatch):
    """A build whose pages are all kept never asks: it does not pay for reading a large map."""
    root, settings, digests, cache = measured_once(make_project, tmp_path)
    read = []
    monkeypatch.setattr(coverage_map, "read_map", lambda text: read.append(text) or read_map(text))

    cached = Measurement(root, settings.source_root, settings.coverage_tests, digests, cache)

    assert cached.done() and read == []  # nothing started, nothing read as a map
    first = cached.result()
    assert cached.result() is first and len(read) == 1
    assert first.tests_running("src/branchy.py", 3, 3) == ["tests.test_branchy.test_large_values_are_clipped"]


def test_a_cached_line_map_cut_short_is_measured_again(make_project, tmp_path):
    root, settings, digests, cache = measured_once(make_project, tmp_path)
    [cached] = (cache / "coverage").iterdir()
    whole = cached.read_bytes()
    cached.write_bytes(whole[: len(whole) // 2])

    again = measure(root, settings.source_root, settings.coverage_tests, digests, cache)

    assert again.tests_running("src/branchy.py", 3, 3) == ["tests.test_branchy.test_large_values_are_clipped"]
    assert cached.read_bytes() == whole  # written whole again


def test_a_page_expanded_again_while_serving_reads_the_same_coverage_run(make_project, monkeypatch):
    root = project(make_project)
    started = []
    init = Measurement.__init__
    monkeypatch.setattr(Measurement, "__init__", lambda self, *a: started.append(1) or init(self, *a))
    builder = make_build(load_settings(root))

    first = builder.expand("docs/clip.md", CLIP_PAGE)
    edited = builder.expand("docs/clip.md", CLIP_PAGE + "\nA new sentence.\n")  # a prose edit: expanded again

    assert started == [1]
    row = "Tests that run these equations' lines (line coverage)"
    assert row in first.markdown and row in edited.markdown


# ------------------------------------------------------------------ no page is written before the run has ended

SLOW_TESTS = (
    TESTS
    + '''

def test_slowly():
    """Outlasts the build's pages; then leaves a mark, so the build can tell when the run had ended."""
    import time
    from pathlib import Path

    time.sleep(3)
    Path("run-ended").write_text("")
'''
)

# Listed after docs_hooks, so it sees each page as docs_hooks hands it on (and as MkDocs writes it).
WATCHER = """\
from pathlib import Path


def on_post_page(output, page, config, **kwargs):
    if page.file.src_uri != "page.md":  # the site's other pages (its source pages) hold no placeholder
        return output
    ended = Path(config.config_file_path).parent.joinpath("run-ended").exists()
    Path(config.config_file_path).parent.joinpath("seen.txt").write_text(
        f"run ended: {ended}; placeholder: {'trace-late' in output}\\n")
    return output
"""


def slow_site(make_project, watcher: str = WATCHER) -> Path:
    from .test_cli import MKDOCS_YML

    root = project(make_project)
    (root / "tests/test_branchy.py").write_text(SLOW_TESTS, encoding="utf-8")
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs/page.md").write_text(CLIP_PAGE, encoding="utf-8")
    (root / "watcher.py").write_text(watcher, encoding="utf-8")
    plugins = "plugins:\n  - search\n  - docs_hooks\n"
    assert plugins in MKDOCS_YML
    (root / "mkdocs.yml").write_text(
        MKDOCS_YML.replace(plugins, plugins + "hooks:\n  - watcher.py\n"), encoding="utf-8"
    )
    return root


def test_the_page_other_plugins_and_the_theme_see_is_complete_though_the_run_outlasts_the_pages(make_project):
    from .conftest import run_cli
    from .test_cli import mkdocs_build

    root = slow_site(make_project)
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    # The page was filled in (after waiting for the run) before any later plugin saw it ...
    assert (root / "seen.txt").read_text() == "run ended: True; placeholder: False\n"
    # ... and MkDocs wrote it whole: no file is rewritten after the build.
    html = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert "trace-late" not in html
    row = re.search(r"<tr><td>Tests that run these equations' lines \(line coverage\)</td><td>(.*?)</td></tr>", html)
    assert row and "test_large_values_are_clipped" in row.group(1)
    assert "test_small_values_pass_through" not in row.group(1)


def test_a_plugin_that_removes_html_comments_cannot_take_the_generated_rows_away(make_project):
    from .conftest import run_cli
    from .test_cli import mkdocs_build

    head, _ = WATCHER.rsplit("\n    return output\n", 1)
    stripper = head + "\n    import re\n\n    return re.sub(r'<!--.*?-->', '', output)\n"
    root = slow_site(make_project, stripper)
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    html = (root / "site/page/index.html").read_text(encoding="utf-8")
    row = re.search(r"<tr><td>Tests that run these equations' lines \(line coverage\)</td><td>(.*?)</td></tr>", html)
    assert row and "test_large_values_are_clipped" in row.group(1)


@pytest.mark.parametrize(
    "entry",
    [b'{"src/branchy.py": {"3": 5}}', b'{"src/branchy.py": {"x": []}}', b"[]", b"[" * 100_000, b"\xff"],
    ids=["tests that are a number", "a line that is no number", "a list", "nested too deep", "not UTF-8"],
)
def test_a_cached_line_map_that_is_not_a_line_map_is_measured_again(make_project, tmp_path, entry):
    root, settings, digests, cache = measured_once(make_project, tmp_path)
    [cached] = (cache / "coverage").iterdir()
    whole = cached.read_bytes()
    write_entry(cached, entry)  # sealed as the build seals it: the reader's own check decides

    again = measure(root, settings.source_root, settings.coverage_tests, digests, cache)

    assert again.tests_running("src/branchy.py", 3, 3) == ["tests.test_branchy.test_large_values_are_clipped"]
    assert cached.read_bytes() == whole  # measured again, and written whole


@hypothesis.settings(max_examples=300, deadline=None, database=None)
@hypothesis.given(data=st.data())
def test_a_line_map_of_nearly_the_right_form_reads_back_or_is_refused_never_another_error(data):
    text = json.dumps(mutated(data, {"src/a.py": {"3": ["tests.test_a.test_x"], "4": []}, "src/b.py": {}}))

    try:
        lines = read_map(text)
    except ValueError:
        return  # refused: measured again
    assert all(type(n) is int and all(type(t) is str for t in tests) for f in lines.values() for n, tests in f.items())


def test_a_package_the_coverage_run_needs_is_named_with_the_setting_and_what_to_install(make_project, monkeypatch):
    from docs_hooks.run import coverage_run

    root = project(make_project)
    settings = load_settings(root)
    digests = index_for(settings).file_digests
    # coverage.py as a Python without it sees it: a module no finder finds
    monkeypatch.setattr(coverage_run, "NEEDED", {"docs_hooks_test_no_such_module": "coverage", "pytest": "pytest"})
    run = Measurement(root, settings.source_root, settings.coverage_tests, digests, None)
    assert run.done()
    with pytest.raises(TraceError) as err:
        run.result()
    assert str(err.value) == (
        "pyproject.toml:4: coverage_tests needs the coverage package to measure which test runs which line, and "
        f"{sys.executable} cannot import it: pip install coverage; or set coverage_tests = [] in [tool.docs_hooks] "
        "to build without line coverage"
    )
    assert (root / "pyproject.toml").read_text().splitlines()[3].startswith("coverage_tests = ")

    # the default (the setting not written) names what it measures; two packages at once
    (root / "pyproject.toml").write_text('[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\n', encoding="utf-8")
    monkeypatch.setattr(
        coverage_run, "NEEDED", {"docs_hooks_test_no_cov": "coverage", "docs_hooks_test_no_pt": "pytest"}
    )
    settings = load_settings(root)
    with pytest.raises(TraceError) as err:
        Measurement(root, settings.source_root, settings.coverage_tests, digests, None).result()
    assert str(err.value) == (
        "pyproject.toml: coverage_tests (by default, the tests in tests/) needs the coverage package and the pytest "
        f"package to measure which test runs which line, and {sys.executable} cannot import them: pip install "
        "coverage pytest; or set coverage_tests = [] in [tool.docs_hooks] to build without line coverage"
    )


def test_the_line_of_a_setting_in_its_table():
    from docs_hooks.run.coverage_run import setting_line

    assert setting_line(Path("/nonexistent/pyproject.toml"), "coverage_tests") is None


def test_how_a_run_that_wrote_no_line_map_ended_is_told_by_its_exit_code():
    from docs_hooks.run.coverage_run import how_it_ended

    assert [how_it_ended(code) for code in (-9, 1, 2)] == ["was killed by signal 9", "failed", "ended with exit code 2"]
    assert how_it_ended(0) == "ended the run (exit code 0) before the line map was written (os._exit, say)"


def test_a_failed_runs_report_is_the_same_whatever_address_its_objects_had():
    """pytest prints an object by Python's default repr, whose address differs from run to run: two builds of
    the same failing run write the same page."""
    from docs_hooks.run.coverage_run import run_failure

    def failing(address: str) -> str:
        report = [
            "___ test_forward ___",
            f"E   AssertionError: assert <layers.Linear object at {address}> is None",
            "tests/test_layers.py:7: AssertionError",
            "FAILED tests/test_layers.py::test_forward - AssertionError: assert <layers.Linear object at "
            f"{address}> is None",
        ]
        return str(run_failure(report, None, "failed", "fix the test"))

    first, second = failing("0x7f3a2c1b9d50"), failing("0x7f11e0a2b3c0")
    assert first == second
    assert "AssertionError: assert <layers.Linear object at 0x...> is None" in first


def test_a_failed_run_names_the_test_pytest_reported_else_the_one_running_else_its_last_output():
    from docs_hooks.run.coverage_run import run_failure

    report = [
        "F",
        "=== FAILURES ===",
        "___ test_large ___",
        "tests/test_b.py:9: in test_large",
        "E   AssertionError",
        "=== short test summary info ===",
        "FAILED tests/test_b.py::test_large - AssertionError",
    ]
    reported = run_failure(report, "3 tests/test_b.py::test_other", "failed", "fix the test")
    stopped = run_failure(["collected 2 items"], "2 tests/test_b.py::test_slow", "did not finish", "make it finish")
    silent = run_failure([], None, "was killed by signal 9", "fix the test")

    assert str(reported) == (
        "pyproject.toml: coverage_tests: while measuring which test runs which line, the test "
        "tests/test_b.py::test_large failed: tests/test_b.py:9: AssertionError; fix the test (or leave it out of "
        "coverage_tests in [tool.docs_hooks]). pytest reported:\n___ test_large ___\ntests/test_b.py:9: in test_large\n"
        "E   AssertionError"
    )
    assert str(stopped).endswith(
        "the test tests/test_b.py::test_slow did not finish; make it finish (or leave it out of coverage_tests in "
        "[tool.docs_hooks]). Last lines of its output:\ncollected 2 items"
    )
    assert str(silent).endswith(
        "the run of pytest was killed by signal 9; fix the test (or leave it out of "
        "coverage_tests in [tool.docs_hooks]). It printed nothing."
    )
