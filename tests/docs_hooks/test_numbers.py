"""docs_hooks.render.numbers: how a recorded value reads on a page, and as a widget's JSON data."""

from __future__ import annotations

import json
import math

import numpy as np

from docs_hooks.render.numbers import format_gap, format_scalar, format_value, jsonable


def test_a_number_is_rounded_to_four_places_without_trailing_zeros():
    assert [format_scalar(x) for x in (1.0, 0.75, -1.06912, 2.00004, -0.00001, 1.23e-7, 0.0, -0.0)] == [
        "1",
        "0.75",
        "-1.0691",
        "2",
        "-1e-05",
        "1.23e-07",
        "0",
        "0",
    ]
    assert [format_scalar(x) for x in (math.inf, -math.inf, math.nan)] == ["inf", "-inf", "nan"]


def test_an_array_shows_four_decimals_and_no_negative_zero():
    assert format_value(np.array([[1.0, -0.00001], [0.123456, 2.5]])) == "[[1.0000, 0.0000],\n [0.1235, 2.5000]]"
    assert format_value(np.array([1, 2, 3])) == "[1, 2, 3]"
    assert format_value(np.array(0.5)) == "0.5"  # a 0-d array is its number


def test_other_values_show_plainly():
    assert format_value(np.float32(0.1)) == "0.1"
    assert format_value(np.int64(7)) == "7"
    assert format_value(np.bool_(True)) == "True"
    assert format_value((1.0,)) == "(1,)"
    assert format_value((1.0, np.array([2.0]))) == "(1, [2.0000])"
    assert format_value([0.25, "a"]) == "[0.25, 'a']"


def test_a_gap_is_zero_or_in_scientific_notation():
    assert (format_gap(0.0), format_gap(3.14159e-9)) == ("0", "3.1e-09")


def test_jsonable_keeps_shape_and_dtype_and_writes_what_json_cannot_hold_as_text():
    data = jsonable({"x": np.arange(6, dtype=np.float32).reshape(2, 3), "n": np.int64(3), "bad": (math.nan, None)})
    assert data == {
        "x": {"shape": [2, 3], "dtype": "float32", "values": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]},
        "n": 3,
        "bad": ["nan", None],
    }
    json.dumps(data, allow_nan=False)  # no NaN left for a strict reader
