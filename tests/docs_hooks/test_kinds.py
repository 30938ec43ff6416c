"""Tests of docs_hooks.kinds: one kind for every block blockspec.py declares, each with the three steps of the
interface (resolve, needs, render), and a block the build has no kind for is an error at its block."""

from __future__ import annotations

import inspect

from docs_hooks import kinds
from docs_hooks.kinds import KINDS, STRUCTURE
from docs_hooks.kinds.base import BlockKind
from docs_hooks.read.blockspec import BLOCK_KINDS

from .conftest import expand_page, page

EXCERPT_PAGE = page("""
    # Layer norm

    ```trace-excerpt
    code: "ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)"
    ```
    """)


def test_every_block_kind_has_one_kind_with_its_fields():
    assert sorted([*KINDS, *STRUCTURE]) == sorted(BLOCK_KINDS)
    for name, kind in KINDS.items():
        assert kind.name == name
        assert kind.spec is BLOCK_KINDS[name], name


def test_every_kind_has_the_three_steps_of_the_interface_with_its_arguments():
    steps = {
        name: list(inspect.signature(getattr(BlockKind, name)).parameters) for name in ("resolve", "needs", "render")
    }
    for name, kind in KINDS.items():
        for step, params in steps.items():
            method = getattr(kind, step)
            assert list(inspect.signature(method).parameters) == params[1:], (name, step)


def test_a_block_the_build_has_no_kind_for_is_an_error_at_its_block(make_project, monkeypatch):
    monkeypatch.delitem(kinds.KINDS, "excerpt")
    root = make_project({"docs/page.md": EXCERPT_PAGE})

    expanded = expand_page(root)

    assert [str(p) for p in expanded.problems] == [
        "docs/page.md:3: block 'trace-excerpt' cannot be shown: this build has no kind for it"
    ]


def test_the_same_page_shows_the_excerpt_with_its_kind(make_project):
    expanded = expand_page(make_project({"docs/page.md": EXCERPT_PAGE}))

    assert expanded.problems == []
    assert "mu = X.mean(axis=-1, keepdims=True)" in expanded.markdown
