"""The warm-up of a serve build (core.warmup): the pages read back rendered once while serve waits."""

from __future__ import annotations

import threading

from docs_hooks.base.settings import load_settings
from docs_hooks.core import page as page_module
from docs_hooks.core import site
from docs_hooks.core.site import expand_site, make_build
from docs_hooks.kinds.example import ExampleKind

from .conftest import build_site
from .test_kept import BACKWARD_PAGE, DYNAMIC_TEST, EXAMPLE_PAGE


def _kept_build(make_project):
    """A build of a site whose pages an earlier build rendered and kept, expanded: every page read back."""
    files = {"tests/test_dynamic.py": DYNAMIC_TEST, "docs/a.md": EXAMPLE_PAGE, "docs/b.md": BACKWARD_PAGE}
    root = make_project({**files, "docs/c.md": EXAMPLE_PAGE.replace("# Forward", "# Forward again")})
    build_site(root)
    settings = load_settings(root)
    build = make_build(settings, coverage=False)
    expand_site(settings, build)
    return build


def test_warming_up_renders_once_each_kept_page_that_shows_code_and_the_facts_it_reads_are_there_for_the_next_edit(
    make_project, monkeypatch
):
    rendered, made = [], []

    def counted(plan, *args):
        rendered.append(plan.page)
        return page_module.render_page(plan, *args)

    def reading_a_fact(self, plan, results, links, _render=ExampleKind.render):
        results.derived("a fact of the build", lambda: made.append(plan) or len(made))
        return _render(self, plan, results, links)

    build = _kept_build(make_project)
    monkeypatch.setattr(site, "render_page", counted)  # the warm-up renders through the build, as an edit does
    monkeypatch.setattr(ExampleKind, "render", reading_a_fact)
    try:
        assert rendered == []  # every page read back
        build.warm_up()
        build.await_background()
        assert rendered == ["docs/a.md", "docs/b.md", "docs/c.md"]  # b has an entry only: its trace is kept too
        assert len(made) == 1

        build.warm_up()  # after the next rebuild: those pages were rendered once already
        build.await_background()
        assert rendered == ["docs/a.md", "docs/b.md", "docs/c.md"]
        edited = EXAMPLE_PAGE.replace("# Forward", "# Forward, edited")
        assert "Forward, edited" in build.expand("docs/a.md", edited).markdown
        assert rendered[-1] == "docs/a.md" and len(made) == 1  # the edited page rendered, the fact not made again
    finally:
        build.close()


def test_a_rebuild_stops_the_warm_up_once_the_page_it_renders_is_done(make_project, monkeypatch):

    started, release, rendered = threading.Event(), threading.Event(), []

    def slow(plan, *args):
        rendered.append(plan.page)
        started.set()
        release.wait(30)
        return page_module.render_page(plan, *args)

    build = _kept_build(make_project)
    monkeypatch.setattr(site, "render_page", slow)
    try:
        build.warm_up()
        assert started.wait(30)
        stopping = threading.Thread(target=build.warming.stop)
        stopping.start()
        stopping.join(0.3)
        assert stopping.is_alive()  # it waits for the page under way
        release.set()
        stopping.join(30)
        assert not stopping.is_alive()
        build.await_background()
        assert rendered == ["docs/a.md"]  # docs/c.md was not started
    finally:
        release.set()
        build.close()


def test_the_pages_a_code_edit_took_as_they_were_are_written_while_serve_waits_and_a_new_process_renders_none(
    make_project, monkeypatch
):
    """Under serve, a code edit takes a page whose reads of the code held as it was, under its new key; it is
    written to the cache folder by the warm-up, not in the rebuild (or when serve stops, if it stops first), and
    a process started afterwards reads it back rather than rendering it."""
    from docs_hooks.core.session import Session

    from .test_session import TWO_ENTRIES, expand_all, relocked

    pages = TWO_ENTRIES
    root = relocked(make_project, pages)
    rendered = []

    def counted(plan, *args):
        rendered.append(plan.page)
        return page_module.render_page(plan, *args)

    monkeypatch.setattr(site, "render_page", counted)
    serve = Session(root)
    serve.settles = True
    try:
        first = expand_all(serve)
        ops = root / "src/ops.py"
        ops.write_text(ops.read_text() + "\n\ndef appended():\n    return 1\n")
        rendered.clear()
        assert expand_all(serve) == first
        assert rendered == [] and serve.traces.reused == 2  # both taken as they were
        build = serve.build
        build.await_background()  # what the front end waits for once the pages are written out
        keys = [build.expansion_key(page) for page in pages]
        assert build.kept.store.get_many(keys) == {}  # not written in the rebuild
        build.warm_up()
        build.await_background()
        assert set(build.kept.store.get_many(keys)) == set(keys)
        ops.write_text(ops.read_text() + "\n\ndef appended_too():\n    return 2\n")
        assert expand_all(serve) == first and rendered == []  # and serve stops before it waits: written then
    finally:
        serve.close()

    restarted = Session(root)
    try:
        assert expand_all(restarted) == first
    finally:
        restarted.close()
    assert rendered == []  # read back


def test_the_line_map_a_code_edit_carried_over_is_written_while_serve_waits_and_found_meanwhile(make_project):
    """Under serve, a code edit no test's lines reach carries the last line map over to the new code; the map is
    kept in the process and written to the cache folder by the warm-up, not in the rebuild (or when serve stops, if
    it stops first). Until then the builds of the process find it there, and a process started afterwards reads
    it back rather than measuring the tests again."""
    from docs_hooks.base.cachedir import read_entry
    from docs_hooks.core.session import Session
    from docs_hooks.run.coverage_map import map_text
    from docs_hooks.run.coverage_run import Measurement

    from .conftest import PYPROJECT, run_cli
    from .test_pytest_linemap import map_path
    from .test_session import TWO_ENTRIES, expand_all

    pages = TWO_ENTRIES
    root = make_project(
        {**pages, "pyproject.toml": PYPROJECT.replace("coverage_tests = []", 'coverage_tests = ["tests"]')}
    )
    assert run_cli(root, "relock") == 0
    serve = Session(root)
    serve.settles = True
    try:
        first = expand_all(serve)
        measured = serve.build.workers.coverage
        ops = root / "src/ops.py"
        ops.write_text(ops.read_text() + "\n\ndef appended():\n    return 1\n")
        assert expand_all(serve) == first
        build = serve.build
        run = build.workers._coverage_run
        assert run._proc is None  # carried over: no test measured again
        carried = map_path(root)[1]
        assert not carried.exists()  # not written in the rebuild
        assert map_text(run.result()) == map_text(measured)
        # Found in the process meanwhile: another build of this code reads it as stored, not carried over again.
        again = Measurement(
            root,
            run._source_root,
            run._pytest_args,
            run._of.file_digests,
            run._of.cache_dir,
            maps=run._of.maps,
            modules=run._modules,
            functions=run._functions,
        )
        assert again._stored is not None and again._proc is None
        assert map_text(again.result()) == map_text(measured)
        build.warm_up()
        build.await_background()
        assert map_text(read_map_entry(carried)) == map_text(measured)
        ops.write_text(ops.read_text() + "\n\ndef appended_too():\n    return 2\n")
        assert expand_all(serve) == first
        carried_again = map_path(root)[1]
        assert carried_again != carried and not carried_again.exists()
    finally:
        serve.close()
    assert read_entry(carried_again) is not None  # serve stopped before it waited: written then

    restarted = Session(root)
    try:
        assert expand_all(restarted) == first
        assert restarted.build.workers.coverage is not None
        assert restarted.build.workers._coverage_run._proc is None  # read back, not measured
    finally:
        restarted.close()


def read_map_entry(path):
    from docs_hooks.base.cachedir import read_entry
    from docs_hooks.run.coverage_map import read_map

    return read_map(read_entry(path).decode("utf-8"))
