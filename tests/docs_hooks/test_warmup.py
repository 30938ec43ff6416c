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
