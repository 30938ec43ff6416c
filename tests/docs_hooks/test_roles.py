"""Tests of docs_hooks.roles: what a statement gives a value to, which symbol an equation's left side is, and
the message for an equation shown as computed by a line that does not compute it."""

from __future__ import annotations

import pytest

from docs_hooks.resolve.roles import computes_problem, left_side, lookup, outputs, symbol_names

from .conftest import expand_page, page, page_problems


@pytest.mark.parametrize(
    "statement, given",
    [
        ("mu = X.mean(axis=-1, keepdims=True)", ["mu"]),
        ("dX, dgamma, dbeta = layer_norm_backward(dY, cache, gamma)", ["dX", "dgamma", "dbeta"]),
        ("total += loss", ["total"]),
        ("grads[name] = g * scale", ["grads[name]", "grads"]),
        ("return gamma * Xhat + beta, (Xhat, s)", ["gamma * Xhat + beta", "Xhat", "s"]),
        ("return dX", ["dX"]),
        ("grads.update(block_grads)", ["grads"]),
        ("for row in range(3):", ["row"]),
        ("optimizer.step(params, grads, lr)", []),
        ("dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)\n          - Xhat)", ["dX"]),
    ],
)
def test_outputs_are_what_the_statement_assigns_or_returns(statement, given):
    assert outputs(statement) == given


def test_left_side_stops_at_the_first_equals_outside_braces():
    assert left_side(r"\mu_t = \frac{1}{d} \sum_{i=1} X_{ti}") == r"\mu_t"
    assert left_side(r"x_{i=0} = 1") == r"x_{i=0}"
    assert left_side(r"\hat{y} \sim P") is None


def test_a_symbol_is_found_with_or_without_its_indexes():
    table = symbol_names(
        [
            {"symbol": r"\sigma^2", "code": "var"},
            {"symbol": r"\hat{X},\, s", "code": "Xhat, s"},
            {"symbol": "dX_1", "code": "dX1"},
            {"symbol": "Y", "code": "none", "shape": "gamma * Xhat + beta"},
        ]
    )

    assert lookup(r"\sigma_t^2", table) == (r"\sigma^2", ["var"])
    assert lookup("s_t", table) == ("s", ["s"])
    assert lookup(r"\hat{X}_{ti}", table) == (r"\hat{X}", ["Xhat"])
    assert lookup("dX_{1,ti}", table) == ("dX_1", ["dX1"])
    assert lookup("Y_{ti}", table) == ("Y", ["gamma * Xhat + beta"])
    assert lookup(r"\mu_t", table) is None


def test_a_value_the_code_does_not_name_matches_the_expression_it_returns():
    table = symbol_names([{"symbol": "Y", "code": "none", "shape": "gamma*Xhat + beta"}])

    assert (
        computes_problem(
            "ln-out",
            r"Y_{ti} = \gamma_i \hat{X}_{ti} + \beta_i",
            table,
            [("ops.py:15", "return gamma * Xhat + beta, (Xhat, s)")],
        )
        is None
    )
    assert "assigns or returns Xhat" in computes_problem(
        "ln-out", r"Y_{ti} = \gamma_i \hat{X}_{ti} + \beta_i", table, [("ops.py:14", "Xhat = (X - mu) * s")]
    )


def test_several_values_on_the_left_are_each_checked():
    table = symbol_names([{"symbol": "L", "code": "loss"}, {"symbol": "g", "code": "grads"}])

    assert computes_problem("both", "L, g = f(x)", table, [("t.py:3", "loss, grads = f(x)")]) is None
    assert "is grads in the code" in computes_problem("both", "L, g = f(x)", table, [("t.py:3", "loss = f(x)")])


def test_conditions_and_unlisted_symbols_are_not_checked():
    table = symbol_names([{"symbol": "s", "code": "s"}])

    assert computes_problem("ndim", r"\operatorname{ndim}(x) = 1", table, [("t.py:2", "if x.ndim != 1:")]) is None
    assert computes_problem("w", r"W \sim \mathcal{N}(0, 1) = w", table, [("t.py:2", "w = rng.normal()")]) is None
    assert computes_problem("other", r"q = 2", table, [("t.py:2", "s = 1")]) is None  # q: not in the table
    assert computes_problem("none", r"s = 2", None, [("t.py:2", "q = 1")]) is None  # no table: nothing to go by


def test_a_tuple_on_the_left_is_checked_value_by_value():
    table = symbol_names([{"symbol": "dX", "code": "dX"}, {"symbol": r"d\gamma", "code": "dgamma"}])
    tex = r"\left(dX,\ d\gamma\right) = \overleftarrow{\mathrm{LN}}(dY)"

    assert computes_problem("t", tex, table, [("t.py:3", "dX, dgamma = backward(dY)")]) is None
    assert "is dgamma in the code" in computes_problem("t", tex, table, [("t.py:3", "dX, dbeta = backward(dY)")])


DERIVATION_ENTRY = """\
```trace-entry
title: Deriving the backward formula
function: [ops.layer_norm_forward, ops.layer_norm_backward]
status: derived
```

```trace-symbols
rows:
  - {symbol: '\\mu', meaning: Mean of each row, code: mu}
  - {symbol: '\\delta_{ij}', meaning: "1 when i equals j, otherwise 0", code: none, shape: scalar}
```
"""


LN_STEP2 = """\
```trace-equation
id: ln-step2
title: "Step 2: the derivative of the mean"
tex: \\frac{\\partial \\mu_t}{\\partial X_{tj}} = \\frac{1}{d}
code: "ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)"
```
"""


def role_problems(root) -> list[str]:
    """The page's problems about equation roles (a trace-symbols table has others in a project without a model run)."""
    return [m for m in page_problems(root) if "role:" in m]


def test_a_derivation_step_shown_as_computed_by_the_line_it_explains_fails(make_project):
    root = make_project({"docs/page.md": DERIVATION_ENTRY + "\n" + LN_STEP2})

    assert role_problems(root) == [
        "docs/page.md:13: equation 'ln-step2' is shown as computed by its code (role: computes, the default), but its "
        "left-hand side \\frac{\\partial \\mu_t}{\\partial X_{tj}} is an expression (a derivative, a sum, a function "
        "applied), not a symbol of this entry's trace-symbols table, so no statement can assign it; add a row naming "
        "it in the code to trace-symbols, or declare 'role: derived' if the equation is worked out from these lines, "
        "or 'role: contrast' if the code does something else there; or point 'code:' at the statement that assigns it"
    ]


def test_a_derivation_step_declared_derived_passes_and_says_so(make_project):
    root = make_project(
        {"docs/page.md": DERIVATION_ENTRY + "\n" + LN_STEP2.replace("id: ln-step2\n", "id: ln-step2\nrole: derived\n")}
    )

    result = expand_page(root)

    assert not [str(p) for p in result.problems if "role:" in str(p)]
    assert '<p class="trace-eq-code">Derived from <a href="../source/src/ops.py/#L8"' in result.markdown
    assert "Computed at" not in result.markdown
    assert (
        result.markdown.count(
            '<td><a href="#eq-ln-step2">Step 2: the derivative of the mean</a></td><td>Derived from</td>'
        )
        == 1
    )
    implemented_in = result.markdown.split("{#deriving-the-backward-formula-implemented-in}", 1)[1]
    assert "eq-ln-step2" not in implemented_in  # a derivation implements nothing


def test_a_computes_equation_whose_symbol_the_line_does_not_assign_names_both(make_project):
    root = make_project(
        {
            "docs/page.md": DERIVATION_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of one row
        tex: \\mu_t = \\frac{1}{d} \\sum_i X_{ti}
        code: "ops.layer_norm_forward: s = 1.0 / np.sqrt(var + epsilon)"
        ```
        """)
        }
    )

    assert role_problems(root) == [
        "docs/page.md:13: equation 'ln-mean' is shown as computed by its code (role: computes, the default), but its "
        "left-hand side \\mu_t is mu in the code, and ops.py:13 's = 1.0 / np.sqrt(var + epsilon)' assigns or returns "
        "s; declare 'role: derived' if the equation is worked out from these lines, or 'role: contrast' if the code "
        "does something else there; or point 'code:' at the statement that assigns it"
    ]


def test_a_computes_equation_at_the_line_that_assigns_its_symbol_passes(make_project):
    root = make_project(
        {
            "docs/page.md": DERIVATION_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of one row
        tex: \\mu_t = \\frac{1}{d} \\sum_i X_{ti}
        code: "ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)"
        ```

        ```trace-equation
        id: ln-contrast
        title: "Not the code: the unbiased variance"
        role: contrast
        tex: \\tilde{\\sigma}^2 = \\frac{1}{d - 1} \\sum_i (X_i - \\mu)^2
        code: "ops.layer_norm_forward: var = ((X - mu) ** 2).mean("
        ```
        """)
        }
    )

    result = expand_page(root)

    assert not [str(p) for p in result.problems if "role:" in str(p)]
    assert '<p class="trace-eq-code">Contrast, not in the code. What the code does instead: <a ' in result.markdown
    assert "<td>Contrast, not in the code</td>" in result.markdown
    implemented_in = result.markdown.split("{#deriving-the-backward-formula-implemented-in}", 1)[1]
    assert "eq-ln-mean" in implemented_in and "eq-ln-contrast" not in implemented_in
