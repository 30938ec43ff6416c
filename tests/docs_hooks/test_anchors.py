"""Tests of docs_hooks.anchors: a symbolic reference resolves to exactly one statement span, or fails
saying why and what to write instead.

Each test writes a tiny project (see conftest.py: ``src/ops.py`` holds a layer
norm, lines 6-15 forward and 18-27 backward), a page, and asserts the exact
message the author sees, page and line included.
"""

from __future__ import annotations

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.resolve.anchors import parse_ref, resolve

from .conftest import FWD_ENTRY, expand_page, page, page_problems


def resolved_label(root, ref: str, scope: list[str] | None = None) -> str:
    """The ``file.py:A-B`` label a reference resolves to, straight from the core."""
    settings = load_settings(root)
    return resolve(index_for(settings), parse_ref(ref), scope).label


@pytest.mark.parametrize(
    ("ref", "label"),
    [
        # one line
        ("ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)", "ops.py:8"),
        # a statement over several lines, quoted by its first line or whole
        ("ops.layer_norm_forward: var = ((X - mu) ** 2).mean(", "ops.py:9-12"),
        ("ops.layer_norm_forward: var = ((X - mu) ** 2).mean(axis=-1, keepdims=True,)", "ops.py:9-12"),
        ("ops.layer_norm_backward: - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))", "ops.py:25-26"),
        # a compound statement's header is a statement of its own, its body another
        ("ops.layer_norm_backward: for row in range(dY.shape[0]):", "ops.py:23"),
        ("ops.layer_norm_backward: for row in range(dY.shape[0])", "ops.py:23"),
        ("ops.layer_norm_backward: dXhat[row] = dXhat[row] - dXhat[row].mean()", "ops.py:24"),
        # comments and spacing do not matter
        ("ops.layer_norm_forward: s=1.0/np.sqrt( var+epsilon )", "ops.py:13"),
        ("ops.layer_norm_forward: s = 1.0 / np.sqrt(var + epsilon)  # another comment", "ops.py:13"),
        # a leading part of a statement
        ("model.build: cfg = Config(", "model.py:26-29"),
        ("ops.layer_norm_forward: return gamma * Xhat", "ops.py:15"),
        # a method, by module.Class.method
        ("model.Block.norm: return layer_norm_forward(", "model.py:18"),
        # the whole function
        ("ops.layer_norm_backward", "ops.py:18-27"),
        # a test function, by its dotted name from the project root
        ("tests.test_ops.test_rows_have_zero_mean: Y, _ = layer_norm_forward(", "tests/test_ops.py:8"),
    ],
)
def test_reference_resolves_to_its_statement_span(make_project, ref, label):
    assert resolved_label(make_project(), ref) == label


@pytest.mark.parametrize(
    ("ref", "label"), [("extra.total: t += x", "extra.py:3"), ("extra.total: b = 2", "extra.py:4")]
)
def test_reference_into_a_line_holding_two_statements(make_project, ref, label):
    root = make_project(
        {"src/extra.py": "def total(xs):\n    t = 0\n    for x in xs: t += x\n    a = 1; b = 2\n    return t\n"}
    )

    assert resolved_label(root, ref) == label


def test_the_def_line_can_be_referenced_for_a_default_value(make_project):
    assert (
        resolved_label(make_project(), "ops.layer_norm_forward: def layer_norm_forward(X, gamma, beta, epsilon=1e-5):")
        == "ops.py:6"
    )


def test_the_docstring_is_not_a_statement(make_project):
    with pytest.raises(TraceError) as caught:
        resolved_label(make_project(), 'ops.layer_norm_forward: """Normalise each row of X, then scale and shift."""')

    assert str(caught.value) == (
        "no statement of ops.layer_norm_forward (ops.py:6-15) matches "
        '\'"""Normalise each row of X, then scale and shift."""\'. Copy the statement\'s text from the code.'
    )


def test_a_statement_text_equal_to_one_statement_wins_over_longer_ones(make_project):
    # `b = a` is all of line 2 and a part of line 3: the whole statement wins.
    root = make_project(
        {
            "src/extra.py": "def f(a):\n    b = a\n    c = b = a\n    return c\n",
            "docs/page.md": "See [[extra.f: b = a]].\n",
        }
    )

    expanded = expand_page(root)

    assert expanded.problems == []
    assert "<code>extra.py:2</code>" in expanded.markdown


def test_missing_statement_names_the_function_span_and_the_closest_candidate(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\nThe mean is [[ops.layer_norm_forward: mu = X.sum()]].\n"})

    assert page_problems(root) == [
        "docs/page.md:7: reference 'ops.layer_norm_forward: mu = X.sum()': no statement of "
        "ops.layer_norm_forward (ops.py:6-15) matches 'mu = X.sum()'; "
        "did you mean 'mu = X.mean(axis=-1, keepdims=True)' (ops.py:8)? Copy the statement's text from the code."
    ]


def test_ambiguous_statement_names_every_line_that_matches(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\nSee [[ops.layer_norm_forward: keepdims=True]].\n"})

    assert page_problems(root) == [
        "docs/page.md:7: reference 'ops.layer_norm_forward: keepdims=True': 'keepdims=True' matches 2 statements "
        "of ops.layer_norm_forward (ops.py:8, ops.py:9); quote more of the statement so that exactly one matches."
    ]


def test_bare_statement_outside_an_entry_asks_for_the_function(make_project):
    root = make_project({"docs/page.md": "See [[mu = X.mean(axis=-1, keepdims=True)]].\n"})

    assert page_problems(root) == [
        "docs/page.md:1: reference 'mu = X.mean(axis=-1, keepdims=True)': names no function, "
        "and no entry is open; write 'module.function: mu = X.mean(axis=-1, keepdims=True)'"
    ]


def test_reference_with_only_a_comment_after_the_colon(make_project):
    root = make_project({"docs/page.md": "See [[ops.layer_norm_forward: # the mean]].\n"})

    assert page_problems(root) == [
        "docs/page.md:1: reference 'ops.layer_norm_forward: # the mean': "
        "has no code after the ':'; write a statement from the function"
    ]


def test_bare_statement_inside_an_entry_is_looked_up_in_its_functions(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        ```trace-entry
        title: Layer norm
        function: [ops.layer_norm_forward, ops.layer_norm_backward]
        status: implemented
        ```

        Forward [[Xhat = (X - mu) * s]], backward [[dgamma = (dY * Xhat).sum(axis=0)]].
        """)
        }
    )

    expanded = expand_page(root)

    assert [str(p) for p in expanded.problems] == []
    assert "<code>ops.py:14</code>" in expanded.markdown
    assert "<code>ops.py:21</code>" in expanded.markdown
