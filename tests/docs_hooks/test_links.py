"""Tests of docs_hooks.links: where the rendered pages point (source pages, GitHub, other pages of the
site, tests).
"""

from __future__ import annotations

import pytest

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.render.links import Links
from docs_hooks.resolve.codeindex import CodeIndex

from .conftest import expand_page


def test_inline_reference_renders_as_a_permanent_link(make_project):
    root = make_project({"docs/page.md": "Built by [[model.build: cfg = Config(]] here.\n"})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert expanded.markdown == (
        'Built by <a href="../source/src/model.py/#L26" title="model.build"><code>model.py:26-29</code></a> here.\n'
    )


def links_for(root) -> tuple[Links, CodeIndex]:
    settings = load_settings(root)
    index = index_for(settings)
    return Links(settings, index), index


NO_REPO = '[project]\nname = "tiny"\nversion = "0.0.0"\n'


@pytest.mark.parametrize(
    ("page", "url", "to_source", "to_guide"),
    [
        ("docs/index.md", "", "source/src/ops.py/", "guide/"),
        ("docs/page.md", "page/", "../source/src/ops.py/", "../guide/"),
        ("docs/guide/index.md", "guide/", "../source/src/ops.py/", "./"),
        ("docs/guide/layer-norm.md", "guide/layer-norm/", "../../source/src/ops.py/", "../"),
    ],
)
def test_without_the_adapter_pages_have_directory_urls_and_links_are_relative_to_them(
    make_project, page, url, to_source, to_guide
):
    links, _ = links_for(make_project())

    assert links.page_url(page) == url
    assert links.relative_url(page, "source/src/ops.py/") == to_source
    assert links.relative_url(page, "guide/") == to_guide


def test_the_urls_the_adapter_sets_win_over_directory_urls(make_project):
    links, _ = links_for(make_project())
    links.place({"docs/guide/layer-norm.md": "guide/layer-norm.html", "docs/index.md": "index.html"}, {})

    assert links.page_url("docs/guide/layer-norm.md") == "guide/layer-norm.html"
    assert links.relative_url("docs/guide/layer-norm.md", "index.html") == "../index.html"
    assert links.relative_url("docs/index.md", "guide/layer-norm.html") == "guide/layer-norm.html"


def test_a_source_link_is_made_relative_to_the_page_that_shows_it(make_project):
    links, _ = links_for(make_project())
    html = '<a href="docs-hooks-source:src/ops.py#L9-L12">x</a>'

    assert links.source_links("docs/guide/layer-norm.md", html) == '<a href="../../source/src/ops.py/#L9">x</a>'
    links.place({}, {"src/ops.py": "code/ops.html"})
    assert links.source_links("docs/page.md", html) == '<a href="../code/ops.html#L9">x</a>'
    assert links.source_links_at("guide/layer-norm/", html) == '<a href="../../code/ops.html#L9">x</a>'


def test_a_link_to_a_file_without_a_source_page_goes_to_the_repository_or_has_no_target(make_project):
    html = '<a href="docs-hooks-source:src/model.py#L3-L4">x</a> <a href="docs-hooks-source:src/ops.py#L9">y</a>'
    links, _ = links_for(make_project())
    links.place({}, {"src/ops.py": "source/src/ops.py/"})  # the pages cite ops.py only

    assert links.source_links("docs/page.md", html) == (
        '<a href="https://example.com/repo/blob/abc123/src/model.py#L3-L4">x</a> '
        '<a href="../source/src/ops.py/#L9">y</a>'
    )

    bare, _ = links_for(make_project({"pyproject.toml": NO_REPO}, root=links.settings.project_root.parent / "bare"))
    bare.between_files = True  # Zensical: the files 'python -m docs_hooks pages' wrote
    bare.only_sources(["src/ops.py"])
    assert bare.source_links("docs/page.md", html) == '<a>x</a> <a href="source/src/ops.py.md#L9">y</a>'


def test_with_repo_url_code_links_to_its_source_page_and_to_the_repository_at_the_ref(make_project):
    links, index = links_for(make_project())
    fn = index.functions["ops.layer_norm_forward"]

    assert links.code_links(fn, 9, 12) == (
        '<a href="docs-hooks-source:src/ops.py#L9-L12">Source</a> '
        '<a href="https://example.com/repo/blob/abc123/src/ops.py#L9-L12">GitHub</a>'
    )
    assert links.url(fn, 9, 12) == "https://example.com/repo/blob/abc123/src/ops.py#L9-L12"
    assert links.function_link(fn) == (
        '<a href="https://example.com/repo/blob/abc123/src/ops.py#L6-L15"><code>ops.layer_norm_forward</code></a>'
    )


def test_without_repo_url_code_links_only_to_its_source_page(make_project):
    links, index = links_for(make_project({"pyproject.toml": NO_REPO}))
    fn = index.functions["ops.layer_norm_forward"]

    assert links.code_links(fn, 9, 12) == '<a href="docs-hooks-source:src/ops.py#L9-L12">Source</a>'
    assert links.url(fn, 9, 12) == "docs-hooks-source:src/ops.py#L9-L12"
    assert links.function_link(fn) == (
        '<a href="docs-hooks-source:src/ops.py#L6-L15"><code>ops.layer_norm_forward</code></a>'
    )


def test_tests_are_listed_by_their_file_linked_once(make_project):
    links, _ = links_for(make_project())

    assert links.test_names(
        [
            "tests.test_ops.test_rows_have_zero_mean",
            "tests.test_ops.test_backward_returns_three_gradients",
            "tests.test_model.test_backward_through_model",
        ]
    ) == (
        '<a href="https://example.com/repo/blob/abc123/tests/test_ops.py"><code>tests/test_ops.py</code></a>: '
        "<code>test_rows_have_zero_mean</code>, <code>test_backward_returns_three_gradients</code><br>"
        '<a href="https://example.com/repo/blob/abc123/tests/test_model.py"><code>tests/test_model.py</code></a>: '
        "<code>test_backward_through_model</code>"
    )


def test_without_repo_url_a_test_file_is_named_without_a_link(make_project):
    links, _ = links_for(make_project({"pyproject.toml": NO_REPO}))

    assert links.test_names(["tests.test_ops.test_rows_have_zero_mean"]) == (
        "<code>tests/test_ops.py</code>: <code>test_rows_have_zero_mean</code>"
    )


def test_the_state_of_the_links_changes_with_where_the_pages_are_and_only_then(make_project):
    links, _ = links_for(make_project())
    first = links.state()
    links.place({"docs/page.md": "page/"}, {"src/ops.py": "source/src/ops.py/"})
    placed = links.state()
    links.place({"docs/page.md": "page/"}, {"src/ops.py": "source/src/ops.py/"})
    assert links.state() == placed != first
    links.place({"docs/page.md": "page.html"}, {"src/ops.py": "source/src/ops.py/"})
    assert links.state() not in (placed, first)
    moved = links.state()
    links.between_files = True
    assert links.state() != moved
    links.between_files = False
    assert links.state() == moved
