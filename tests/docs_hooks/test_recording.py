"""The recorded data: project objects read their fields like attributes, and what ``pack`` writes ``unpack``
reads back as it was, or refuses when damaged."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docs_hooks.run import recording
from docs_hooks.run.recording import Opaque, pack, unpack


def test_a_recorded_project_object_reads_its_fields_as_attributes():
    cfg = Opaque("transformer.ModelConfig", "ModelConfig(n_layers=2)", {"n_layers": 2, "ln_eps": 1e-5})

    assert (cfg.n_layers, cfg.ln_eps) == (2, 1e-5)
    assert eval("cfg.n_layers * 2", {"cfg": cfg}) == 4


def test_a_field_that_was_not_recorded_is_named_in_the_error():
    cfg = Opaque("transformer.ModelConfig", "ModelConfig()", {"n_layers": 2})

    with pytest.raises(AttributeError, match="recorded transformer.ModelConfig has no field 'emb_dim'"):
        _ = cfg.emb_dim


def test_recorded_data_reads_back_as_it_was_written():
    value = {
        "a": np.arange(6.0).reshape(2, 3).T,
        "zero_d": np.array(2.5),
        "scalar": np.float32(1.5),
        "t": (1, "x", None, 2j, b"\x00", frozenset({3})),
        4: [{"nested": np.bool_(True)}],
        "object": Opaque("m.Config", "Config(d=4)", {"d": 4}),
    }

    back = unpack(pack(value))

    assert back["a"].shape == (3, 2) and back["a"].tolist() == value["a"].tolist()
    assert back["zero_d"].shape == () and back["zero_d"] == 2.5
    assert type(back["scalar"]) is np.float32 and back["scalar"] == 1.5
    assert back["t"] == value["t"] and back[4] == [{"nested": True}] and type(back[4][0]["nested"]) is np.bool_
    assert back["object"].type == "m.Config" and back["object"].d == 4


def test_damaged_recorded_data_is_refused_not_run():
    data = pack({"a": np.arange(3.0), "t": (1, "x", None)})
    assert unpack(data)["t"] == (1, "x", None) and list(unpack(data)["a"]) == [0.0, 1.0, 2.0]

    for damaged in (data[:-5], data[:30], b"\x80\x04garbage", data.replace(b'"<f8"', b'"|O8"')):
        with pytest.raises(ValueError):
            unpack(damaged)


def test_an_object_is_packed_as_the_project_object_it_stands_for_when_the_child_says_so_else_as_its_repr():
    class Config:
        def __repr__(self) -> str:
            return "Config(d=4)"

    def project_object(obj):  # as the recording child names the objects of the project's own classes
        return Opaque("model.Config", repr(obj), {"d": 4}) if isinstance(obj, Config) else None

    [as_project] = unpack(pack([Config()], project_object))
    [as_repr] = unpack(pack([Config()]))

    assert (as_project.type, as_project.text, as_project.fields, as_project.d) == (
        "model.Config",
        "Config(d=4)",
        {"d": 4},
        4,
    )
    assert as_repr.type.endswith("<locals>.Config") and (as_repr.text, as_repr.fields) == ("Config(d=4)", {})


TAGS = ["A", "N", "AO", "L", "T", "D", "S", "F", "C", "B", "R", "c", "M", "O", "K", "r"]

# JSON trees of the tagged values ``pack`` writes, of any shape: what a damaged entry may hold.
TAGGED = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 8) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.fixed_dictionaries({}, optional={tag: inner | st.lists(inner, max_size=5) for tag in TAGS})
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None, database=None)
@given(tree=TAGGED, blobs=st.binary(max_size=64))
def test_recorded_data_of_any_shape_reads_back_as_values_or_is_refused_never_another_error(tree, blobs):
    body = json.dumps(tree).encode()
    raw = recording._MAGIC + len(body).to_bytes(8, "little") + body + blobs

    try:
        unpack(raw)
    except ValueError:
        pass  # refused: the entry is made again


def test_recorded_data_nested_deeper_than_python_reads_is_refused():
    body = b'{"L":[' * 100_000 + b"]}" * 100_000

    with pytest.raises(ValueError, match="nested deeper than it is ever written"):
        unpack(recording._MAGIC + len(body).to_bytes(8, "little") + body)
