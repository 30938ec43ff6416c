"""Tests of docs_hooks.core.site: every page resolved before any is rendered, a site-wide table that follows
the other pages, and each page keyed once per build."""

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import Shown, expand_site, make_build

from .conftest import build_site, page
from .test_kept import BACKWARD_PAGE, DYNAMIC_TEST, EXAMPLE_PAGE

ENTRY_PAGE = "```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n"


def test_an_unchanged_page_is_expanded_once_and_a_site_wide_table_follows_the_other_pages(make_project):
    root = make_project({"docs/page.md": ENTRY_PAGE, "docs/pages.md": "```trace-inventory\nof: pages\n```\n"})
    build = make_build(load_settings(root), coverage=False)
    try:
        entry, table = (root / "docs/page.md").read_text(), (root / "docs/pages.md").read_text()
        assert build.expand("docs/page.md", entry) is build.expand("docs/page.md", entry)
        first = build.expand("docs/pages.md", table)
        assert build.expand("docs/pages.md", table) is first
        assert first.problems == [] and "Forward" in first.markdown

        build.expand("docs/page.md", entry.replace("Forward", "The forward pass"))  # an edit while serving
        again = build.expand("docs/pages.md", table)
        assert again is not first
        assert "The forward pass" in again.markdown and ">Forward<" not in again.markdown
    finally:
        build.close()


def test_the_pages_a_build_expanded_already_start_no_work_again_when_the_site_is_resolved_after_an_edit(
    make_project, monkeypatch
):
    root = make_project({"docs/a.md": EXAMPLE_PAGE, "docs/b.md": BACKWARD_PAGE})
    build = make_build(load_settings(root), coverage=False)
    prefetched: list[list[str]] = []
    real = build._prefetch
    monkeypatch.setattr(
        build, "_prefetch", lambda plans, pages: (prefetched.append([p.page for p in plans]), real(plans, pages))
    )
    try:
        pages = {"docs/a.md": (root / "docs/a.md").read_text(), "docs/b.md": (root / "docs/b.md").read_text()}
        build.plan_site(pages)
        for page, text in pages.items():
            build.expand(page, text)
        pages["docs/b.md"] += "\nOne more sentence.\n"  # a prose edit while serving
        build.plan_site(pages)
    finally:
        build.close()

    assert prefetched == [["docs/a.md", "docs/b.md"], ["docs/b.md"]]


def test_a_page_is_keyed_once_per_build_and_after_a_prose_edit_only_that_page_again(make_project, monkeypatch):
    from docs_hooks.core import kept

    root = make_project({"docs/a.md": EXAMPLE_PAGE, "docs/b.md": BACKWARD_PAGE})
    build = make_build(load_settings(root), coverage=False)
    keyed: list[str] = []
    real = kept.page_key
    monkeypatch.setattr(kept, "page_key", lambda page, *inputs: keyed.append(page) or real(page, *inputs))
    try:
        pages = {"docs/a.md": (root / "docs/a.md").read_text(), "docs/b.md": (root / "docs/b.md").read_text()}
        build.plan_site(pages)  # keyed to look for kept pages
        first = {page: build.expansion_key(page) for page in pages}  # as a dirty build asks
        for page, text in pages.items():
            build.expand(page, text)
        assert keyed == ["docs/a.md", "docs/b.md"]
        pages["docs/b.md"] += "\nOne more sentence.\n"  # a prose edit while serving
        build.plan_site(pages)
        again = {page: build.expansion_key(page) for page in pages}
    finally:
        build.close()

    assert keyed == ["docs/a.md", "docs/b.md", "docs/b.md"]
    assert again["docs/a.md"] == first["docs/a.md"] and again["docs/b.md"] != first["docs/b.md"]


def test_a_site_wide_table_reads_every_page_even_one_rendered_before_the_others(make_project):
    """The table is on the first page in build order; the entries it lists come from pages after it."""
    root = make_project(
        {
            "docs/index.md": "# Home\n\n```trace-inventory\nof: pages\n```\n",
            "docs/page.md": ENTRY_PAGE,
        }
    )

    site = expand_site(load_settings(root), make_build(load_settings(root), coverage=False))

    assert site.problems == []
    assert "Forward" in site.pages["docs/index.md"].markdown


def test_a_site_wide_table_that_fails_is_an_error_box_reported_at_its_block(make_project, monkeypatch):
    from docs_hooks.base.errors import TraceError
    from docs_hooks.kinds import inventory

    def broken(plan, results, links):
        raise TraceError("no table today")

    monkeypatch.setitem(inventory.TABLES, "pages", (lambda project: {}, broken))
    root = make_project({"docs/pages.md": page("# Pages\n\n```trace-inventory\nof: pages\n```\n")})
    settings = load_settings(root)

    site = expand_site(settings, make_build(settings, coverage=False))

    assert [str(p) for p in site.problems] == ["docs/pages.md:3: no table today"]
    assert "docs/pages.md:3: no table today" in site.pages["docs/pages.md"].markdown


def test_a_build_that_kept_every_page_reads_every_recording_back_when_warmed_up(make_project):
    root = make_project({"tests/test_dynamic.py": DYNAMIC_TEST, "docs/a.md": EXAMPLE_PAGE, "docs/b.md": BACKWARD_PAGE})
    build_site(root)  # every page rendered, and kept
    settings = load_settings(root)
    build = make_build(settings, coverage=False)
    try:
        expand_site(settings, build)
        recorder = build.workers.recorder
        assert recorder.recordings() == []  # every page kept: nothing read, no graph made

        build.warm_up()
        build.await_background()

        assert [rec.target for rec in recorder.recordings()] == ["tests.test_dynamic.test_dynamic"]
        backward = build.project.index.functions["ops.layer_norm_backward"]
        assert build.results.graph.tested_only_at_run_time([backward]) == ["tests.test_dynamic.test_dynamic"]
    finally:
        build.close()


def test_a_page_shows_each_problem_it_met_once_and_a_problem_of_the_build_on_the_first_page_that_met_it():
    """Two blocks of one page meeting the same problem show it once; a problem placed elsewhere (the coverage
    run's failure, at its setting) shows on the first page the front end takes that met it, and again in its
    next pass."""
    run = TraceError("coverage_tests: the run failed", "pyproject.toml", 3)
    own = TraceError("an unresolved reference", "docs/b.md", 7)
    unplaced = TraceError("KaTeX is missing")
    for _ in range(2):  # two passes of a front end over the pages
        shown = Shown()
        assert shown.on("docs/b.md", [run, own, own, run, unplaced]) == [run, own, unplaced]
        assert shown.on("docs/a.md", [run, unplaced]) == [unplaced]
        assert shown.on("docs/b.md", [run]) == [run]  # the same page taken again
