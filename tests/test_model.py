"""Entity validation and id rules."""

from __future__ import annotations

import re
from functools import partial

import entities
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kindling.errors import ValidationError
from kindling.model import (
    MAX_COUNT,
    OBSERVATION_KINDS,
    entity_errors,
    is_count,
    is_valid_id,
    kind_errors,
    new_id,
    validate,
)

# The spec's example observation; keywords change or add fields.
observation = partial(
    entities.observation,
    "9c20f3a1-2b4d-4f8e-9a1c-7e0d5b6f2a33",
    content="JWT validation failed: token expired",
    kind="error",
    provenance={"stack": "Error: Token expired\n  at validateToken.ts:42"},
    ts=1750416064123,
    sessionId="session-1",
    repoId="my-project",
)


SPEC_EXAMPLES = [
    ("observations", observation()),
    (
        "capsules",
        {
            "id": "cap_8a3f",
            "type": "session",
            "intent": "investigating the memory leak",
            "status": "closed",
            "openedAt": 1750416000000,
            "closedAt": 1750416600000,
            "scopeIds": {"repoId": "my-project"},
            "observationIds": ["9c20f3a1-x", "5f1c"],
            "summaryId": "sum_1b2c",
        },
    ),
    (
        "summaries",
        {
            "id": "sum_1b2c",
            "content": "Fixed JWT expiration check in middleware",
            "confidence": 0.85,
            "evidenceRefs": ["9c20f3a1-x"],
            "capsuleId": "cap_8a3f",
            "ts": 1750416600000,
            "scopeIds": {"repoId": "my-project"},
        },
    ),
    (
        "pins",
        {
            "id": "pin_4d5e",
            "targetType": "observation",
            "targetId": "9c20f3a1-x",
            "reason": "root cause — keep handy",
            "createdAt": 1750416100000,
            "expiresAt": None,
            "scopeIds": {"sessionId": "session-1"},
        },
    ),
]


@pytest.mark.parametrize("entity_type, entity", SPEC_EXAMPLES, ids=[t for t, _ in SPEC_EXAMPLES])
def test_spec_examples_are_valid(entity_type, entity):
    assert entity_errors(entity_type, entity) == []
    validate(entity_type, entity)


def test_every_bad_field_is_named_in_one_message():
    bad = observation(kind="oops", content="", ts=-1, redacted="no", scopeIds={"branch": "x"})
    with pytest.raises(ValidationError) as err:
        validate("observations", bad)
    message = str(err.value)
    for field in ("kind", "content", "ts", "redacted", "scopeIds.branch"):
        assert field in message
    assert message.startswith("invalid observation 9c20f3a1-2b4d-4f8e-9a1c-7e0d5b6f2a33: ")


def test_missing_and_unknown_fields():
    bad = observation(extra=1)
    del bad["provenance"]
    errors = entity_errors("observations", bad)
    assert len(errors) == 2
    assert errors[0] == "provenance is missing"
    assert errors[1].startswith("extra ") and "is not a field" in errors[1]


@pytest.mark.parametrize("value", [True, 1.5, "1", None])
def test_timestamps_must_be_integers(value):
    assert any(
        "ts must be an integer" in e for e in entity_errors("observations", observation(ts=value))
    )


def test_redacted_observation_must_hold_the_marker():
    assert entity_errors("observations", observation(redacted=True)) == [
        "content of a redacted observation must be '[redacted]'"
    ]
    assert entity_errors("observations", observation(redacted=True, content="[redacted]")) == []


def test_capsule_closed_at_rules():
    cap = {
        "id": "cap_1",
        "type": "session",
        "intent": "x",
        "status": "open",
        "openedAt": 5,
        "scopeIds": {},
        "observationIds": [],
    }
    assert entity_errors("capsules", cap) == []
    assert entity_errors("capsules", {**cap, "closedAt": 9}) == [
        "closedAt is only present once status is closed"
    ]
    assert entity_errors("capsules", {**cap, "status": "closed"}) == [
        "closedAt is required once status is closed"
    ]
    assert entity_errors("capsules", {**cap, "status": "closed", "closedAt": 4}) == [
        "closedAt must not be before openedAt"
    ]
    assert entity_errors("capsules", {**cap, "observationIds": ["a", "a"]}) == [
        "observationIds must not repeat an id"
    ]


@pytest.mark.parametrize("confidence", [-0.1, 1.01, float("nan"), True, "1"])
def test_confidence_range(confidence):
    summary = {
        "id": "sum_1",
        "content": "x",
        "confidence": confidence,
        "evidenceRefs": [],
        "capsuleId": "cap_1",
        "ts": 1,
        "scopeIds": {},
    }
    assert entity_errors("summaries", summary) == ["confidence must be a number from 0 to 1"]


def test_provenance_must_be_plain_finite_json():
    errors = entity_errors("observations", observation(provenance={"a": [float("inf")]}))
    assert errors == ["provenance.a[0] must not hold NaN or Infinity"]


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "../x",
        "../../etc/passwd",
        "a/b",
        ".hidden",
        "-x",
        "a b",
        "a\x00b",
        "x" * 201,
        "é",
        "a\\b",
        "C:",
        None,
        5,
    ],
)
def test_unsafe_ids_are_rejected(bad):
    assert not is_valid_id(bad)


@pytest.mark.parametrize("good", ["a", "9c20f3a1-2b4d", "cap_8a3f...", "x" * 200, "A.b_c-D"])
def test_safe_ids_are_accepted(good):
    assert is_valid_id(good)


def test_new_ids_follow_the_house_patterns():
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        new_id("observations"),
    )
    for etype, prefix in (("capsules", "cap_"), ("summaries", "sum_"), ("pins", "pin_")):
        assert re.fullmatch(prefix + r"[0-9a-f]{32}", new_id(etype))


@given(st.text(max_size=300))
def test_a_valid_id_is_always_a_plain_file_name(text):
    if is_valid_id(text):
        assert "/" not in text and "\\" not in text and "\x00" not in text
        assert not text.startswith(".") and len(text) <= 200


@pytest.mark.parametrize(
    ("value", "lo", "hi", "expected"),
    [
        (0, 0, 10, True),
        (10, 0, 10, True),
        (11, 0, 10, False),
        (-1, 0, 10, False),
        (0, 1, 10, False),
        (True, 0, 10, False),  # Python counts True as 1; a count never is
        (False, 0, 10, False),
        (1.0, 0, 10, False),
        ("1", 0, 10, False),
        (None, 0, 10, False),
        (MAX_COUNT, 0, MAX_COUNT, True),
        (MAX_COUNT + 1, 0, MAX_COUNT, False),
    ],
)
def test_is_count(value, lo, hi, expected):
    assert is_count(value, lo, hi) is expected


def test_is_count_defaults_to_the_option_range():
    assert is_count(0) and is_count(MAX_COUNT) and not is_count(MAX_COUNT + 1)


def test_kind_errors_name_each_bad_kind_once_per_entry():
    assert kind_errors(None) == [] and kind_errors([]) == [] and kind_errors(("error",)) == []
    errors = kind_errors(["error", "shout", ["x"]])
    assert [e.split(":")[0] for e in errors] == ["invalid kind 'shout'", "invalid kind ['x']"]
    assert all(e.endswith("use one of " + ", ".join(OBSERVATION_KINDS)) for e in errors)
    assert kind_errors("error") == ["kinds must be a list of observation kinds"]
