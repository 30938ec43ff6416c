"""Tests of docs_hooks.roles: what a statement gives a value to, and which symbol an equation's left side is."""

from __future__ import annotations

import pytest

from docs_hooks.roles import computes_problem, left_side, lookup, outputs, symbol_names


@pytest.mark.parametrize("statement, given", [
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
])
def test_outputs_are_what_the_statement_assigns_or_returns(statement, given):
    assert outputs(statement) == given


def test_left_side_stops_at_the_first_equals_outside_braces():
    assert left_side(r"\mu_t = \frac{1}{d} \sum_{i=1} X_{ti}") == r"\mu_t"
    assert left_side(r"x_{i=0} = 1") == r"x_{i=0}"
    assert left_side(r"\hat{y} \sim P") is None


def test_a_symbol_is_found_with_or_without_its_indexes():
    table = symbol_names([
        {"symbol": r"\sigma^2", "code": "var"},
        {"symbol": r"\hat{X},\, s", "code": "Xhat, s"},
        {"symbol": "dX_1", "code": "dX1"},
        {"symbol": "Y", "code": "none", "shape": "gamma * Xhat + beta"},
    ])

    assert lookup(r"\sigma_t^2", table) == (r"\sigma^2", ["var"])
    assert lookup("s_t", table) == ("s", ["s"])
    assert lookup(r"\hat{X}_{ti}", table) == (r"\hat{X}", ["Xhat"])
    assert lookup("dX_{1,ti}", table) == ("dX_1", ["dX1"])
    assert lookup("Y_{ti}", table) == ("Y", ["gamma * Xhat + beta"])
    assert lookup(r"\mu_t", table) is None


def test_a_value_the_code_does_not_name_matches_the_expression_it_returns():
    table = symbol_names([{"symbol": "Y", "code": "none", "shape": "gamma*Xhat + beta"}])

    assert computes_problem("ln-out", r"Y_{ti} = \gamma_i \hat{X}_{ti} + \beta_i", table,
                            [("ops.py:15", "return gamma * Xhat + beta, (Xhat, s)")]) is None
    assert "assigns or returns Xhat" in computes_problem(
        "ln-out", r"Y_{ti} = \gamma_i \hat{X}_{ti} + \beta_i", table, [("ops.py:14", "Xhat = (X - mu) * s")])


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
