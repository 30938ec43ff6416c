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


def test_a_block_reads_a_file_only_through_the_project_or_where_the_pages_key_holds_what_it_read():
    """Under ``mkdocs serve`` a page is kept across a code edit while every read it made of the code gets the same
    answer (``base.reads``): a file read around ``Project.text`` would not be noted, and the page would show the old
    file. The only other reads: the source kind's text (a source page's key holds it) and the training results'
    history and record (files outside the code index, in every page's key)."""
    import ast
    from pathlib import Path

    import docs_hooks

    root = Path(docs_hooks.__file__).parent
    found = set()
    for path in [
        *sorted((root / "kinds").glob("*.py")),
        *sorted((root / "render").glob("*.py")),
        root / "core/page.py",
    ]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Call):
                        called = (
                            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                        )
                        if called in ("read_text", "read_bytes", "open"):
                            found.add((path.relative_to(root).as_posix(), fn.name))
    assert found == {
        ("kinds/base.py", "text"),
        ("kinds/source.py", "resolve"),
        ("kinds/results.py", "stamp"),
        ("kinds/results.py", "load"),
    }
