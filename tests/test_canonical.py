"""Canonical bytes: one encoding for every writer on every machine."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kindling import canonical

GOLDEN = (
    b"{\n"
    b'  "content": "caf\xc3\xa9 \xe2\x80\x94 keep",\n'
    b'  "id": "x1",\n'
    b'  "nested": {\n'
    b'    "a": [\n'
    b"      1,\n"
    b"      2.5\n"
    b"    ],\n"
    b'    "b": null\n'
    b"  }\n"
    b"}\n"
)


def test_golden_bytes():
    value = {"nested": {"b": None, "a": [1, 2.5]}, "id": "x1", "content": "café — keep"}
    assert canonical.encode(value) == GOLDEN


def test_decode_reports_conflict_markers():
    data = b'{\n<<<<<<< HEAD\n  "a": 1\n=======\n  "a": 2\n>>>>>>> other\n}\n'
    with pytest.raises(canonical.DecodeError, match="conflict markers"):
        canonical.decode(data)


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "empty file"),
        (b"   \n", "empty file"),
        (b'{"a": ', "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b'{"a": NaN}', "not valid JSON"),
    ],
)
def test_decode_errors(data, reason):
    with pytest.raises(canonical.DecodeError, match=reason):
        canonical.decode(data)


@pytest.mark.parametrize(
    "value",
    [
        {"a": math.nan},
        {"a": math.inf},
        {"a": -math.inf},
        {"a": None, "deep": [1, {"b": [math.nan]}]},
        {"text": "null", "b": (1.0, -math.inf)},
    ],
)
def test_nan_and_infinity_cannot_be_encoded_silently(value):
    # orjson alone would write each of these as null.
    with pytest.raises(canonical.EncodeError, match="NaN and Infinity"):
        canonical.encode(value)


def test_null_and_finite_floats_still_encode():
    assert canonical.encode({"a": None, "b": 1.5, "c": "null"}) == (
        b'{\n  "a": null,\n  "b": 1.5,\n  "c": "null"\n}\n'
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), json_values, max_size=6))
def test_round_trip_is_stable(value):
    data = canonical.encode(value)
    assert canonical.decode(data) == value
    assert canonical.encode(canonical.decode(data)) == data
    assert data.endswith(b"\n") and not data.endswith(b"\n\n")
    assert b"\r" not in data
