"""docs_hooks.kinds.checkline: expressions evaluated on recorded values, and a worked example's check line filled
in and verified. (A check line on a real page, through a recorded test: test_example.py.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from docs_hooks.kinds.checkline import check_line, evaluate, names_in
from docs_hooks.run.recording import Call


@dataclass
class Shown:
    label: str
    code: str
    value: Any
    name: str | None = None


def call_with(**locals_: Any) -> Call:
    return Call("m.f", None, 0, {}, dict(locals_), None)


def fail(message: str) -> ValueError:
    return ValueError(message)


def test_check_line_keeps_the_grouping_of_the_formula():
    a, b, c = 2.0, -0.5, 3.0
    call = call_with(a=a, b=b, c=c, y=(a - (b - c)) * -(a + b) / c**-b)
    line = check_line("y = (a - (b - c)) * -(a + b) / c ** -b", call, [], "the call", AssertionError)
    assert line.filled == "(2 - ((-0.5) - 3)) × -(2 + (-0.5)) / 3 ** (-(-0.5))"
    assert eval(line.filled.replace("×", "*")) == pytest.approx(line.lhs_value)


def test_a_row_s_name_and_a_shown_code_are_read_as_the_rows_show_them():
    """``s`` is read from the row named ``s``, not from the local; ``x`` as the row showing ``x`` has it."""
    call = call_with(x=np.array([[1.0, 2.0]]), s=100.0, y=np.array([[3.0, 6.0]]))
    rows = [Shown("scale", "1.5 * 2", 3.0, name="s"), Shown("input", "x", np.array([[1.0, 2.0]]))]
    line = check_line("y[0, 1] = s * x[0, 1]", call, rows, "the call", fail)
    assert (line.lhs, line.filled, line.lhs_value) == ("y[0, 1]", "3 × 2", 6.0)


def test_a_line_that_does_not_hold_names_both_numbers():
    call = call_with(a=2.0, y=5.0)
    with pytest.raises(ValueError) as err:
        check_line("y = a * a", call, [], "the call", fail)
    assert str(err.value) == (
        "check 'y = a * a' does not hold for the recorded values: the right-hand side gives 4, but y is 5. "
        "Fix the formula, or the code it describes."
    )


def test_an_array_where_a_number_is_wanted_says_which_entry_to_take():
    call = call_with(x=np.zeros((2, 3)), y=0.0)
    with pytest.raises(ValueError, match=r"check: 'x' is an array of shape \(2, 3\), not one number; index one entry"):
        check_line("y = x", call, [], "the call", fail)


def test_a_name_neither_recorded_nor_shown_lists_the_known_ones():
    call = call_with(a=1.0)
    with pytest.raises(
        ValueError, match="check uses 'b', which is neither recorded in the call nor the name of a show"
    ):
        check_line("a = b", call, [Shown("A", "a", 1.0, name="first")], "the call", fail)


def test_two_rows_showing_the_same_code_must_be_told_apart_by_a_name():
    call = call_with(a=1.0)
    rows = [Shown("before", "a", 1.0), Shown("after", "a", 2.0)]
    with pytest.raises(ValueError, match="check uses 'a', which 2 show rows show .'before', 'after'.; give the one"):
        check_line("a = a", call, rows, "the call", fail)


def test_evaluate_works_on_copies_and_knows_numpy():
    x = np.ones(3)
    import ast

    assert evaluate(ast.parse("np.sum(x.__iadd__(1))", mode="eval"), {"x": x}) == 6.0
    assert x.tolist() == [1.0, 1.0, 1.0]  # the recorded value is as it was


def test_names_in_reads_each_name_once():
    import ast

    tree = ast.parse("y = a * b + a - np.sum(c)")
    assert sorted(names_in(tree)) == ["a", "b", "c", "np"]
    assert sorted(names_in(tree, loads_only=False)) == ["a", "b", "c", "np", "y"]
