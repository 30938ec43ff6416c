"""docs_hooks.kinds.gradcheck: the names a backward returns, nested as written. (What the recorder's child runs for
a gradient check: test_central.py; a gradient check on a real page, through a recorded test: test_example.py.)"""

from __future__ import annotations

import ast

import pytest

from docs_hooks.kinds.gradcheck import returned_names


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ("return dX, (dW, db)", ["dX", ["dW", "db"]]),
        ("return dX", "dX"),
        ("return dX * 2", None),  # not names
        ("if x:\n        return dX\n    return dY", None),  # more than one return
    ],
)
def test_the_names_a_backward_returns_keep_their_nesting(body, names):
    source = f"def backward(dY, x):\n    def inner():\n        return 1\n    {body}\n"
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert returned_names(node) == names
