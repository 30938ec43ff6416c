"""docs_hooks.run.central: what the recorder's child runs for a gradient check, and the form the forward's recorded
inputs travel in; the module imports nothing of the generator, so that a recording of central differences
depends on the project's code alone."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from docs_hooks.run.central import central_differences, decode, encode
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


def test_the_child_s_module_imports_nothing_of_the_generator():
    """What a recording loads is what it depends on: importing the generator's kinds here made every recording of
    central differences depend on the generator's files, and one of them lists a namespace, so a function
    appended to a module it loaded recorded them all again."""
    code = "import sys, docs_hooks.run.central; print(sorted(m for m in sys.modules if m.startswith('docs_hooks')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['docs_hooks', 'docs_hooks.run', 'docs_hooks.run.central']"
