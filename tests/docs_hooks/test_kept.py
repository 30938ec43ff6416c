"""Tests of docs_hooks.core.kept: a rendered page kept across builds, rendered again exactly when something it
is made from changed, never when it showed a problem, and a damaged store is only a miss."""

import shutil
import sqlite3

import pytest

from docs_hooks.core import site as site_module
from docs_hooks.core.kept import VERSIONS, KeptPages, digest, dump, load, page_key
from docs_hooks.render.segments import Html

from .conftest import FWD_ENTRY, build_site


def test_pieces_come_back_as_they_were_stored_and_anything_else_is_a_miss():
    parts = ["# Title\n\n", Html("<table>\n</table>\n", True), "text ", Html("<span>x</span>"), "\n"]

    assert load(dump(parts)) == parts
    assert isinstance(load(dump(parts))[1], Html)
    for damaged in (b"", b"{", b'{"a": 1}', b'[["html"]]', b'[["html", 1]]', b"[3]", b"\xff"):
        assert load(damaged) is None


def test_the_pages_of_a_build_are_found_at_once_and_written_in_one_go_when_it_is_done(tmp_path):
    parts = ["# Title\n", Html("<p>x</p>", True)]
    KeptPages(tmp_path).put("alone", parts)  # a front end that never says the build is done: written at once
    assert KeptPages(tmp_path).get_many(["alone"]) == {"alone": parts}
    kept = KeptPages(tmp_path)
    kept.batched = True
    kept.put("page", parts)
    assert kept.get_many(["page", "other"]) == {"page": parts}  # found in the same build, before it is written
    assert KeptPages(tmp_path).get_many(["page"]) == {}  # not yet in the store
    kept.flush()
    assert KeptPages(tmp_path).get_many(["page"]) == {"page": parts}
    kept.put("second", parts)
    kept.close()  # a build that ends writes what it kept
    assert KeptPages(tmp_path).get_many(["page", "second"]) == {"page": parts, "second": parts}


def test_only_the_renderings_of_a_page_written_last_are_kept(tmp_path):
    kept = KeptPages(tmp_path)  # written page by page, as under a front end that never says a build is done
    edits = [page_key("docs/a.md", "text", n) for n in range(VERSIONS + 3)]
    other = page_key("docs/b.md", "text", 0)
    kept.put(other, ["b"])
    for n, key in enumerate(edits):
        kept.put(key, [f"edit {n}"])
    found = KeptPages(tmp_path).get_many([*edits, other])
    assert sorted(found) == sorted([*edits[-VERSIONS:], other])  # the first three of a.md are gone, b.md stays
    assert found[edits[-1]] == [f"edit {VERSIONS + 2}"]
    rows = sqlite3.connect(tmp_path / "rendered.sqlite3").execute("SELECT count(*) FROM entries").fetchone()[0]
    assert rows == VERSIONS + 1


def test_a_digest_tells_pages_apart_by_every_piece_and_whether_generated_html_is_a_block():
    parts = ["# Title\n\n", Html("<p>x</p>", True)]

    assert digest(parts) == digest(list(parts))
    assert digest(parts) != digest(["# Title\n\n", Html("<p>x</p>", False)])
    assert digest(parts) != digest(["# Title\n\n", "<p>x</p>"])
    assert digest(parts) != digest(["# Title\n", Html("<p>x</p>", True)])


@pytest.fixture
def renders(monkeypatch):
    """The pages each build renders (not read back), in order."""
    seen: list[str] = []
    real = site_module.render_page

    def counting(plan, results, links):
        seen.append(plan.page)
        return real(plan, results, links)

    monkeypatch.setattr(site_module, "render_page", counting)
    return seen


SOURCE_PAGE = "```trace-source\nfile: {file}\n```\n"
PAGES = {
    "docs/index.md": "# Home\n\nProse only, and a formula $a^2$.\n",
    "docs/page.md": "# Layer norm\n\n" + FWD_ENTRY,
    "docs/ops-source.md": SOURCE_PAGE.format(file="src/ops.py"),
    "docs/model-source.md": SOURCE_PAGE.format(file="src/model.py"),
}


def test_a_second_build_renders_nothing_and_shows_the_same_pages(make_project, renders):
    root = make_project(PAGES)

    first = build_site(root)
    rendered_first = list(renders)
    renders.clear()
    second = build_site(root)

    assert sorted(rendered_first) == sorted(PAGES)
    assert renders == []
    assert {p: e.markdown for p, e in second.pages.items()} == {p: e.markdown for p, e in first.pages.items()}
    assert second.problems == first.problems == []


def test_an_edit_of_one_file_renders_its_source_page_and_the_pages_that_show_the_code_again(make_project, renders):
    root = make_project(PAGES)
    build_site(root)
    renders.clear()

    model = root / "src/model.py"
    model.write_text(model.read_text() + "\n\ndef appended():\n    return 1\n")
    after = build_site(root)

    # the page of an entry shows callers and tests from any file; the prose page and ops.py's page show none
    assert sorted(renders) == ["docs/model-source.md", "docs/page.md"]
    assert "appended" in after.pages["docs/model-source.md"].markdown


def test_a_prose_edit_renders_that_page_only(make_project, renders):
    root = make_project(PAGES)
    build_site(root)
    renders.clear()

    (root / "docs/index.md").write_text(PAGES["docs/index.md"] + "\nOne more sentence.\n")
    after = build_site(root)

    assert renders == ["docs/index.md"]
    assert "One more sentence." in after.pages["docs/index.md"].markdown


def test_an_entry_retitled_renders_the_source_page_that_cites_it_again(make_project, renders):
    root = make_project(PAGES)
    build_site(root)
    renders.clear()

    (root / "docs/page.md").write_text(
        PAGES["docs/page.md"].replace("title: Layer norm forward", "title: The forward pass")
    )
    after = build_site(root)

    assert sorted(renders) == ["docs/ops-source.md", "docs/page.md"]  # ops.py's page lists its citations
    assert "The forward pass" in after.pages["docs/ops-source.md"].markdown


def test_a_page_that_showed_a_problem_is_rendered_again_on_every_build(make_project, renders):
    """A problem met while rendering (KaTeX refusing a formula here) may come from outside the page's inputs."""
    broken = "# Broken\n\nA formula KaTeX refuses: $\\frac{1$.\n"
    root = make_project({**PAGES, "docs/broken.md": broken})
    first = build_site(root)
    assert [p.path for p in first.problems] == ["docs/broken.md"]
    renders.clear()

    second = build_site(root)

    assert renders == ["docs/broken.md"]
    assert [str(p) for p in second.problems] == [str(p) for p in first.problems]


def test_a_damaged_store_is_a_miss_and_the_pages_are_rendered_again(make_project, renders):
    root = make_project(PAGES)
    first = build_site(root)
    store = root / ".cache/docs_hooks/rendered.sqlite3"
    with sqlite3.connect(store) as db:
        db.execute("UPDATE entries SET value = substr(value, 1, 40)")
    renders.clear()

    second = build_site(root)

    assert sorted(renders) == sorted(PAGES)
    assert {p: e.markdown for p, e in second.pages.items()} == {p: e.markdown for p, e in first.pages.items()}


DYNAMIC_TEST = """\
import numpy as np

import ops


def test_dynamic():
    backward = getattr(ops, "_".join(["layer", "norm", "backward"][i] for i in range(3)))
    _, cache = ops.layer_norm_forward(np.eye(4), np.ones(4), np.zeros(4))
    dX, dgamma, dbeta = backward(np.ones((4, 4)), cache, np.ones(4))
    assert dX.shape == (4, 4)
"""
EXAMPLE_PAGE = """\
# Forward

```trace-entry
title: Forward
function: ops.layer_norm_forward
status: implemented
```

```trace-example
title: Through a name made at run time
test: tests/test_dynamic.py::test_dynamic
function: ops.layer_norm_backward
show:
  - {label: Gradient on the input, code: dX}
```
"""
BACKWARD_PAGE = "# Backward\n\nProse.\n\n```trace-entry\ntitle: Backward\nfunction: ops.layer_norm_backward\nstatus: implemented\n```\n"


def test_a_page_rendered_again_beside_kept_ones_shows_the_calls_their_recordings_saw(make_project, renders):
    root = make_project({"tests/test_dynamic.py": DYNAMIC_TEST, "docs/a.md": EXAMPLE_PAGE, "docs/b.md": BACKWARD_PAGE})
    first = build_site(root).pages["docs/b.md"].markdown
    assert "tests.test_dynamic.test_dynamic" in first  # only the example's recording saw that call

    (root / "docs/b.md").write_text(BACKWARD_PAGE.replace("Prose.", "Prose, edited."), encoding="utf-8")
    renders.clear()
    again = build_site(root).pages["docs/b.md"].markdown  # docs/a.md is kept: its recording is read back

    assert renders == ["docs/b.md"]
    shutil.rmtree(root / ".cache")
    assert again == build_site(root).pages["docs/b.md"].markdown  # as a build with nothing kept shows it
    assert "tests.test_dynamic.test_dynamic" in again


def test_a_page_s_key_follows_the_code_only_when_it_shows_the_code_and_is_worked_out_once_per_state(make_project):
    from docs_hooks.base.settings import load_settings
    from docs_hooks.core.kept import PageKeys

    root = make_project(PAGES)
    build = site_module.make_build(load_settings(root), coverage=False)
    try:
        texts = {page: (root / page).read_text() for page in ("docs/index.md", "docs/page.md", "docs/ops-source.md")}
        plans = {page: build.plan(page, text) for page, text in texts.items()}

        def keys(files: str) -> tuple[PageKeys, dict[str, str]]:
            made = PageKeys("settings", None, files, lambda: "katex")
            return made, {
                page: made.key(page, texts[page], plans[page], (texts[page],), build.results, build.links, build.site)
                for page in texts
            }

        one, before = keys("the code as it was")
        _, after = keys("the code edited")
        assert before["docs/page.md"] != after["docs/page.md"]  # an entry shows the code: its key follows it
        assert before["docs/index.md"] == after["docs/index.md"]  # prose only
        assert before["docs/ops-source.md"] == after["docs/ops-source.md"]  # a source page names its file
        assert len(set(before.values())) == 3

        # Worked out once for what a page was made from: asked again with the same state, the same key
        # without digesting anything; with another state, worked out again.
        page, text = "docs/index.md", texts["docs/index.md"]
        assert one.key(page, text, plans[page], (text,), build.results, build.links, build.site) == before[page]
        edited = text + "\nOne more sentence.\n"
        plan = build.plan(page, edited)
        assert one.key(page, edited, plan, (edited,), build.results, build.links, build.site) != before[page]
    finally:
        build.close()


def test_a_traced_page_is_reused_only_under_its_key_and_while_every_read_it_made_holds():
    from docs_hooks.base.reads import Reads, WatchedDict, ask_again
    from docs_hooks.core.kept import TracedPages

    reads = Reads()
    table = WatchedDict({"f": "def f(): ...", "g": "def g(): ..."}, reads, "index.functions")
    with reads.tracing() as trace:
        table["f"]
    parts = ["# Page\n", Html("<p>f</p>", True)]
    traces = TracedPages()
    traces.keep("docs/a.md", "key", trace, parts)

    def asking(now: dict):
        later = WatchedDict(now, Reads(), "index.functions")
        return lambda read: ask_again(Reads(), later, read, lambda a: a)

    assert traces.reuse("docs/a.md", "key", asking({"f": "def f(): ...", "h": "new"})) == parts
    assert traces.reuse("docs/a.md", "other key", asking({"f": "def f(): ..."})) is None  # text or plan changed
    assert traces.reuse("docs/a.md", "key", asking({"f": "def f(): return 1"})) is None
    assert traces.reuse("docs/b.md", "key", asking({"f": "def f(): ..."})) is None  # never rendered here
    assert traces.reused == 1

    with reads.tracing() as incomplete:
        WatchedDict({"f": object()}, reads, "index.functions")["f"]  # an answer it cannot digest
    traces.keep("docs/a.md", "key", incomplete, parts)
    assert traces.reuse("docs/a.md", "key", asking({"f": "def f(): ..."})) is None  # the page is dropped


def test_a_traced_block_is_reused_only_under_its_page_s_key_while_its_reads_hold_and_when_it_had_no_problem():
    from docs_hooks.base.errors import TraceError
    from docs_hooks.base.reads import Reads, WatchedDict, ask_again
    from docs_hooks.core.kept import TracedPages
    from docs_hooks.kinds.base import Rendered

    reads = Reads()
    table = WatchedDict({"f": "def f(): ...", "g": "def g(): ..."}, reads, "index.functions")
    with reads.tracing() as reads_f:
        table["f"]
    with reads.tracing() as reads_g:
        table["g"]
    traces = TracedPages()
    traces.keep_block("docs/a.md", "key", 1, reads_f, Rendered("<p>f</p>"))
    traces.keep_block("docs/a.md", "key", 3, reads_g, Rendered("<p>g</p>"))

    def asking(now: dict):
        later = WatchedDict(now, Reads(), "index.functions")
        return lambda read: ask_again(Reads(), later, read, lambda a: a)

    g_edited = asking({"f": "def f(): ...", "g": "def g(): return 1"})
    assert traces.block("docs/a.md", "key", 1, g_edited) == (reads_f, Rendered("<p>f</p>"))
    assert traces.block("docs/a.md", "key", 3, g_edited) is None  # it read g
    assert traces.block("docs/a.md", "other key", 1, g_edited) is None
    assert traces.blocks_reused == 1

    traces.keep_block("docs/a.md", "key", 1, reads_f, Rendered("<p>f</p>", (TraceError("slow", "docs/a.md", 1),)))
    assert traces.block("docs/a.md", "key", 1, g_edited) is None  # a block with a problem is rendered again
    traces.keep_block("docs/a.md", "new key", 5, reads_f, Rendered("<p>f</p>"))
    assert traces.block("docs/a.md", "key", 3, asking({"f": "def f(): ...", "g": "def g(): ..."})) is None  # dropped


def test_every_plan_of_this_site_detached_holds_no_object_of_its_build(tmp_path):
    """A plan kept under serve (``TracedPages.keep_plan``) holds its build's objects as roles, which
    ``base.reads.detached_within`` finds only in lists, tuples, dicts and dataclasses. A kind whose plan held the
    project, the index or the graph in another kind of object would keep the old build alive and be read through
    it: walked here, as the collector sees them, for every page this site has (every kind is on one)."""
    import ast
    import gc
    import shutil
    import types

    from docs_hooks.base.reads import detached_within
    from docs_hooks.base.settings import load_settings
    from docs_hooks.core.site import make_build, site_pages
    from docs_hooks.kinds import KINDS

    from .conftest import REPO

    for name in ["src", "tests", "docs", "spec", "mkdocs.yml", "pyproject.toml"]:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, tmp_path / name)
    settings = load_settings(tmp_path)
    build = make_build(settings, static=True)
    pages = site_pages(settings)
    cited = build.source_files(pages)[0]
    pages[f"docs/source/{cited}.md"] = f"```trace-source\nfile: {cited}\n```\n"  # as the front ends make them
    build.plan_site(pages)
    kinds_seen: set[str] = set()
    skipped = (str, bytes, int, float, type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, ast.AST)
    for page, text in pages.items():
        plan = build.plan(page, text)
        kinds_seen.update(type(part.kind).__name__ for part in plan.parts if hasattr(part, "kind"))
        away, _ = detached_within(plan)
        seen, todo = {id(away)}, [away]
        while todo:
            obj = todo.pop()
            assert not isinstance(getattr(type(obj), "trace_token", None), str), (page, type(obj).__name__)
            for ref in gc.get_referents(obj):
                if id(ref) not in seen and not isinstance(ref, skipped) and ref is not plan.project.settings:
                    seen.add(id(ref))
                    todo.append(ref)
    assert kinds_seen == {type(kind).__name__ for kind in KINDS.values()}  # the walk met every kind's plans


EQUATION_PAGE = (
    "# Forward\n\n"
    + FWD_ENTRY
    + "\n```trace-equation\nid: ln-mean\ntitle: Mean of a row\ntex: \\mu\ncode: mu = X.mean(axis=-1, keepdims=True)\n```\n"
)


def test_a_kept_page_s_tests_by_line_are_taken_from_the_last_build_while_the_line_map_is_the_same(
    make_project, tmp_path
):
    """A kept page's question of line coverage (the tests that ran its equations' lines) is answered from an
    earlier build while the line map is the same and so are the tests (``kept.CoverageAnswers``): after a function
    appended that no test runs, whose map carries over whole, and not after a new test of the shown function,
    which the page then lists. Each time, the page comes out as a fresh build of the same code makes it."""
    from .conftest import PYPROJECT, run_cli
    from .test_session import answers_taken_over_edits

    pages = {"docs/fwd.md": EQUATION_PAGE}
    measured = PYPROJECT.replace("coverage_tests = []", 'coverage_tests = ["tests"]')
    root = make_project({**pages, "pyproject.toml": measured})
    assert run_cli(root, "relock") == 0

    taken, seen, made = answers_taken_over_edits(root, pages, lambda serve: serve.traces.coverage, tmp_path)

    assert seen == made
    assert "test_added_here" in seen[1]["docs/fwd.md"] and "test_added_here" not in seen[0]["docs/fwd.md"]
    assert taken[0] > 0 and taken[1] == 0 and taken[2] > 0


def test_line_coverage_answers_are_dropped_when_the_map_or_the_tests_change():
    from docs_hooks.core.kept import CoverageAnswers
    from docs_hooks.run.coverage_map import CoverageMap

    kept, measured = CoverageAnswers(), CoverageMap({"src/ops.py": {8: ["tests.test_ops.test_a"]}})
    tests = frozenset({"tests.test_ops.test_a"})
    kept.of(measured, tests)[("results", "tests_running", "x")] = "answer"

    assert kept.of(measured, tests) == {("results", "tests_running", "x"): "answer"}
    same_text = CoverageMap({"src/ops.py": {8: ["tests.test_ops.test_a"]}})
    assert kept.of(same_text, tests) == {}  # another map (its answers are not compared): asked again
    kept.of(same_text, tests)["k"] = "answer"
    assert kept.of(same_text, tests | {"tests.test_ops.test_b"}) == {}  # a function became a test
