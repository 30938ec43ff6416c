"""Tests of docs_hooks.kinds: one row for every block kind blocks.py reads, and a kind the build cannot show is
an error at its block, not a block left out."""

from __future__ import annotations

from docs_hooks import kinds
from docs_hooks.kinds import KINDS, Kind
from docs_hooks.read.blocks import BLOCK_KINDS

from .conftest import expand_page, page

EXCERPT_PAGE = page("""
    # Layer norm

    ```trace-excerpt
    code: "ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)"
    ```
    """)


def test_every_block_kind_has_one_row_with_its_fields():
    assert sorted(KINDS) == sorted(BLOCK_KINDS)
    for name, kind in KINDS.items():
        assert kind.spec is BLOCK_KINDS[name], name


def test_every_kind_but_entry_and_equation_renders_itself():
    """The builder renders entries and equations; every other kind is shown by its row's render."""
    assert sorted(name for name, kind in KINDS.items() if kind.render is None) == ["entry", "equation"]


def test_inventory_offers_a_table_for_each_value_of_of():
    assert {"parameters", "config"} <= set(KINDS["inventory"].tables)
    assert all(callable(table) for table in KINDS["inventory"].tables.values())


def test_a_kind_without_render_cannot_be_shown(make_project, monkeypatch):
    monkeypatch.setitem(kinds.KINDS, "excerpt", Kind(BLOCK_KINDS["excerpt"]))
    root = make_project({"docs/page.md": EXCERPT_PAGE})

    expanded = expand_page(root)

    assert [str(p) for p in expanded.problems] == [
        "docs/page.md:3: block 'trace-excerpt' cannot be shown: this build has no handler for it"
    ]


def test_the_same_page_shows_the_excerpt_with_its_row(make_project):
    expanded = expand_page(make_project({"docs/page.md": EXCERPT_PAGE}))

    assert expanded.problems == []
    assert "mu = X.mean(axis=-1, keepdims=True)" in expanded.markdown
