"""docs_hooks.kinds.gradcheck: what travels to the recorder's child, what it runs there, and the names a backward
returns. (A gradient check on a real page, through a recorded test: test_examples.py.)"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest

from docs_hooks.kinds.gradcheck import central_differences, decode, encode, returned_names
from docs_hooks.run.recording import Opaque


@dataclass
class Scale:
    k: float
    name: str = "scale"


def square(X, params):
    return X * X * params["w"]


def test_a_recorded_argument_goes_to_the_child_exactly_and_hashably():
    value = {
        "X": np.array([[0.1, -2.0]], dtype=np.float32),
        "n": np.int64(3),
        "pair": (1.5, None),
        "cfg": Opaque(f"{__name__}.Scale", "Scale(k=2.0)", {"k": 2.0, "name": "twice"}),
    }
    sent = encode(value)
    hash(sent)
    back = decode(sent)
    assert back["X"].dtype == np.float32 and back["X"].tolist() == value["X"].tolist()
    assert back["n"] == 3 and type(back["n"]) is np.int64
    assert back["pair"] == (1.5, None)
    assert back["cfg"] == Scale(2.0, "twice")


def test_what_cannot_be_sent_is_refused_by_name():
    with pytest.raises(TypeError, match="cannot pass a recorded set to the central-difference run"):
        encode({1, 2})


def test_the_child_nudges_an_input_and_an_entry_of_a_dictionary_argument():
    X = np.array([[1.0, -2.0]])
    w = np.array([[3.0, 0.5]])
    dY = np.array([[1.0, 2.0]])
    out = central_differences(
        "gradcheck:numerical_grad",  # the project's own (src/gradcheck.py), as a site names it
        f"{__name__}:square",
        (("X", encode(X)), ("params", encode({"w": w}))),
        encode(dY),
        ("X", ("params", "w")),
    )
    np.testing.assert_allclose(out["X"], 2 * X * w * dY, rtol=1e-6)
    np.testing.assert_allclose(out[("params", "w")], X * X * dY, rtol=1e-6)


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
    module = ast.parse(source)
    node = module.body[0]
    where = SimpleNamespace(start=node.lineno, end=node.end_lineno)  # all of a Function it reads
    assert returned_names(module, where) == names
