"""Tests of docs_hooks.kinds.symbols: trace-symbols, what each symbol is in the code and its recorded shape.

Each test writes the tiny project of test_shapes.py into ``tmp_path`` (code, settings, a model run helper and
one page) and expands the page.
"""

from __future__ import annotations

from pathlib import Path

from .test_shapes import ENTRY, MODEL_RUN, build, line_of, link, table_rows, tiny_project


def page_line(root: Path, needle: str) -> int:
    return line_of((root / "docs/page.md").read_text(encoding="utf-8"), needle)


# ----------------------------------------------------------------------------- trace-symbols


def test_symbols_table_shows_recorded_shapes(tmp_path):
    root = tiny_project(
        tmp_path,
        ENTRY,
        r"""
        ```trace-symbols
        rows:
          - {symbol: X, meaning: Input, code: X}
          - {symbol: \gamma, meaning: Scale, code: gamma}
          - {symbol: \epsilon, meaning: Keeps s finite, code: epsilon}
          - {symbol: \mu, meaning: Mean of each row, code: mu}
          - {symbol: '\hat{X},\, s', meaning: The cache, code: "Xhat, s"}
          - {symbol: '\operatorname{mean}_i', meaning: Mean over the last axis, code: ".mean(axis=-1, keepdims=True)"}
          - {symbol: Y, meaning: Output, code: none, shape: gamma * Xhat + beta}
          - {symbol: "i", meaning: A feature index, code: none, shape: scalar}
          - {symbol: "<b>", meaning: "a & b", code: none}
        ```
        """,
    )
    markdown, problems, _ = build(root)
    assert problems == []
    rows = table_rows(markdown, "trace-symbols")
    assert [r[1:] for r in rows] == [
        ["Input", "<code>X</code>", "<code>(T, d)</code> <code>(4, 4)</code>"],
        ["Scale", "<code>gamma</code>", "<code>(d,)</code> <code>(4,)</code>"],
        ["Keeps s finite", "<code>epsilon</code>", "scalar"],
        ["Mean of each row", "<code>mu</code>", "<code>(T, 1)</code> <code>(4, 1)</code>"],
        ["The cache", "<code>Xhat, s</code>", "<code>(T, d) and (T, 1)</code> <code>(4, 4) and (4, 1)</code>"],
        [
            "Mean over the last axis",
            "<code>.mean(axis=-1, keepdims=True)</code>",
            "<code>(T, 1)</code> <code>(4, 1)</code>",
        ],
        ["Output", "not named in the code", "<code>(T, d)</code> <code>(4, 4)</code>"],
        ["A feature index", "not named in the code", "scalar"],
        ["a &amp; b", "not named in the code", "not recorded"],
    ]
    assert [r[0] for r in rows[:2]] == ["<m>X</m>", "<m>\\gamma</m>"]
    assert rows[-1][0] == "<m>&lt;b&gt;</m>"  # the TeX goes to the math renderer as written


def test_symbols_in_another_function_and_one_the_run_never_reaches(tmp_path):
    root = tiny_project(
        tmp_path,
        ENTRY,
        """
        ```trace-symbols
        function: [model.block, model.never_run]
        rows:
          - {symbol: H, meaning: Hidden, code: H}
          - {symbol: Y, meaning: Never computed by the run, code: Y}
        ```
        """,
    )
    markdown, problems, _ = build(root)
    assert problems == []
    assert [r[3] for r in table_rows(markdown, "trace-symbols")] == [
        "<code>(T, F)</code> <code>(4, 6)</code>",
        "not reached by the model run",
    ]


def test_a_symbol_whose_name_is_not_a_local_fails(tmp_path):
    root = tiny_project(
        tmp_path,
        ENTRY,
        r"""
        ```trace-symbols
        rows:
          - {symbol: \gamma, meaning: Scale, code: gama}
        ```
        """,
    )
    markdown, problems, _ = build(root)
    assert problems == [
        "docs/page.md:7: symbol '\\gamma': 'gama' is not a local name of ops.layer_norm_forward; did you mean "
        "'gamma'?; its locals are: X, Xhat, beta, epsilon, gamma, mu, s, var. Write the name the code uses, or "
        "'none' when the code does not name it"
    ]
    assert "trace-error" in markdown


def test_an_expression_not_in_the_code_fails(tmp_path):
    root = tiny_project(
        tmp_path,
        ENTRY,
        """
        ```trace-symbols
        rows:
          - {symbol: m, meaning: A sum, code: ".sum(axis=0)"}
        ```
        """,
    )
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:7: symbol 'm': '.sum(axis=0)' is neither a local name nor an expression in the code of "
        "ops.layer_norm_forward; write a local name, an expression copied from the function, or 'none'"
    ]


def test_a_row_without_code_fails(tmp_path):
    root = tiny_project(
        tmp_path,
        ENTRY,
        """
        ```trace-symbols
        rows:
          - {symbol: X, meaning: Input}
        ```
        """,
    )
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:7: row 1 of trace-symbols has no 'code' (a local name of the function, or 'none' when "
        "the code does not name it)"
    ]


def test_a_row_with_an_unknown_key_fails_naming_the_keys_a_row_has(tmp_path):
    table = "```trace-symbols\nrows:\n  - {symbol: X, meaning: Input, code: X, shpe: scalar}\n```\n"

    _, problems, _ = build(tiny_project(tmp_path, ENTRY, table))

    assert problems == [
        "docs/page.md:7: row 1 of trace-symbols has the unknown key 'shpe'; did you mean 'shape'?; a row has: "
        "symbol, meaning, code, shape, after"
    ]


def test_symbols_above_every_entry_fail_unless_they_name_their_function(tmp_path):
    table = """
        ```trace-symbols
        {function}rows:
          - {{symbol: X, meaning: Input, code: X}}
        ```
        """
    root = tiny_project(tmp_path, table.format(function=""), ENTRY)
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:1: trace-symbols outside an entry; put it below a trace-entry block, or name the function "
        "with function:"
    ]
    root = tiny_project(tmp_path / "named", table.format(function="function: ops.layer_norm_forward\n        "), ENTRY)
    markdown, problems, _ = build(root)
    assert problems == []
    assert [r[3] for r in table_rows(markdown, "trace-symbols")] == ["<code>(T, d)</code> <code>(4, 4)</code>"]


# ----------------------------------------------------------------------------- which value a row shows

BACK = """\
import numpy as np


def back(dY, W):
    dW = dY.T @ dY
    dW = dW + np.sign(dW)
    dY = dY @ W.T
    return dY, dW
"""

BACK_RUN = MODEL_RUN.replace(
    "from model import forward, init_params", "from back import back\nfrom model import forward, init_params"
) + ("    back(np.ones((cfg.seq_len, cfg.hidden)), np.ones((cfg.width, cfg.hidden)))\n")

BACK_ENTRY = """
```trace-entry
title: A backward that reassigns its argument
function: back.back
status: illustrative
```
"""


def back_project(tmp_path: Path, *rows: str) -> Path:
    table = "```trace-symbols\nrows:\n" + "".join(f"  - {r}\n" for r in rows) + "```\n"
    return tiny_project(tmp_path, BACK_ENTRY, table, src__back_py=BACK, docs__examples__model_run_py=BACK_RUN)


def test_an_argument_is_shaped_on_entry_and_after_names_the_statement_that_reassigns_it(tmp_path):
    root = back_project(
        tmp_path,
        "{symbol: G, meaning: Gradient on the output, code: dY}",
        "{symbol: dX, meaning: Gradient on the input, code: dY, after: 'dY = dY @ W.T'}",
        "{symbol: P, meaning: Through the weights, code: none, shape: dY @ W.T}",
    )
    markdown, problems, _ = build(root)
    assert problems == []
    line = line_of(BACK, "dY = dY @ W.T")
    assert table_rows(markdown, "trace-symbols") == [
        ["<m>G</m>", "Gradient on the output", "<code>dY</code>, on entry", "<code>(T, F)</code> <code>(4, 6)</code>"],
        [
            "<m>dX</m>",
            "Gradient on the input",
            f"<code>dY</code> after {link('src/back.py', line, 'back.back')}",
            "<code>(T, d)</code> <code>(4, 4)</code>",
        ],
        # the expression reads dY where the statement reads it: the dY the function was given
        ["<m>P</m>", "Through the weights", "not named in the code", "<code>(T, d)</code> <code>(4, 4)</code>"],
    ]


def test_a_symbol_bound_by_two_statements_is_refused_with_both_lines_and_what_to_write(tmp_path):
    root = back_project(tmp_path, "{symbol: dW, meaning: Gradient of the weights, code: dW}")
    _, problems, _ = build(root)
    first, second = line_of(BACK, "dW = dY.T @ dY"), line_of(BACK, "dW = dW + np.sign(dW)")
    assert problems == [
        f"docs/page.md:{page_line(root, '```trace-symbols')}: symbol 'dW': 'dW' is bound at back.py:{first} and again at back.py:{second}, and the "
        "recording holds only its value on return; say which value you mean with the statement it follows, e.g. "
        f'after: "dW = dW + np.sign(dW)" (back.py:{second}) for the value on return (a value bound again later is '
        "not recorded)"
    ]


def test_after_a_statement_followed_by_a_change_is_refused(tmp_path):
    root = back_project(tmp_path, "{symbol: dW, meaning: The data part, code: dW, after: 'dW = dY.T @ dY'}")
    _, problems, _ = build(root)
    first, second = line_of(BACK, "dW = dY.T @ dY"), line_of(BACK, "dW = dW + np.sign(dW)")
    assert problems == [
        f"docs/page.md:{page_line(root, '```trace-symbols')}: symbol 'dW': 'dW' is changed at back.py:{second}, after back.py:{first}, so its recorded "
        f"value (on return) is not its value after back.py:{first}; show it after the last statement that changes "
        f'it, after: "dW = dW + np.sign(dW)" (back.py:{second}), or an expression that reads it at back.py:{first}'
    ]
