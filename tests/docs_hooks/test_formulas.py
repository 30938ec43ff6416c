"""Tests of docs_hooks.read.formulas: the formulas of a page, found as it is read, before anything is resolved."""

from __future__ import annotations

from docs_hooks.read.blocks import parse_page
from docs_hooks.read.formulas import page_formulas, split_formulas

from .conftest import FWD_ENTRY, page


def test_page_formulas_finds_every_formula_of_a_page_before_it_is_expanded():
    text = (
        FWD_ENTRY
        + "\n"
        + page("""
        The mean $\\mu_t$ of a row, and `$not math$` in code.

        ```python
        cost = "$5"
        ```

        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu = \\frac{1}{d} \\sum_i X_i
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)
    )

    formulas = page_formulas(parse_page(text, "docs/page.md"))

    assert formulas == [("\\mu_t", False), ("\\mu = \\frac{1}{d} \\sum_i X_i", True)]


def test_a_line_splits_into_text_and_the_tex_of_each_formula_outside_code():
    assert list(split_formulas("The mean $\\mu_t$, `$x$` in code, and $5 and $6.")) == [
        ("The mean ", False),
        ("\\mu_t", True),
        (", ", False),
        ("`$x$`", False),
        (" in code, and $5 and $6.", False),
    ]


def test_a_symbols_row_s_symbol_is_a_formula_written_with_or_without_dollars():
    # the symbols kind typesets each symbol as inline math; record renders them ahead of the build with the rest
    text = (
        FWD_ENTRY
        + "\n"
        + page("""
        ```trace-symbols
        rows:
          - {symbol: '\\hat{X}', meaning: "The normalised row, $X$ scaled", code: xhat}
          - {symbol: '$\\sigma$', meaning: Its deviation, code: none}
          - {symbol: 2, meaning: A number, code: none}
        ```
        """)
    )

    formulas = page_formulas(parse_page(text, "docs/page.md"))

    assert sorted(set(formulas)) == [("2", False), ("X", False), ("\\hat{X}", False), ("\\sigma", False)]
