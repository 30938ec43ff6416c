"""Tests of docs_hooks.entries: a page's trace-entry and trace-equation blocks read as data, each
reference resolved; the messages for equations that cannot be placed or resolved.
"""

from __future__ import annotations

from .conftest import FWD_ENTRY, page, page_problems


def test_missing_statement_in_an_equation_points_at_its_code_field(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-var
        title: Variance of a row
        tex: \\sigma^2 = \\frac{1}{d} \\sum_i (X_i - \\mu)^2
        code: var = X.var(axis=-1)
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:11: reference 'var = X.var(axis=-1)': no statement of ops.layer_norm_forward (ops.py:6-15) "
        "matches 'var = X.var(axis=-1)'; did you mean 'var = ((X - mu) ** 2).mean(' (ops.py:9)? "
        "Copy the statement's text from the code."
    ]


def test_equation_outside_an_entry(make_project):
    root = make_project({"docs/page.md": page("""
        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:1: trace-equation outside an entry; put a trace-entry block above it"
    ]


def test_duplicate_equation_id_is_an_error(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-mean
        title: Mean
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```

        ```trace-equation
        id: ln-mean
        title: Normalised row
        tex: \\hat{x}
        code: Xhat = (X - mu) * s
        ```
        """)})

    messages = page_problems(root)

    assert len(messages) == 1 and messages[0].startswith("docs/page.md:15: ") and "ln-mean" in messages[0]
