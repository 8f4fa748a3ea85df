"""The shipped JSON Schemas (kindling/schemas/) accept exactly what Kindling's own validation
accepts: fuzzed entities and bundles, near-valid and broken, get the same verdict from both.

The few rules no schema keyword can state (docs/formats.md, "JSON Schemas") are each pinned by
a test of their own, so the list of differences is exact.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import REPO_ROOT, fuzz_settings
from hypothesis import assume, given
from hypothesis import strategies as st

from kindling import schemas
from kindling.bundle.format import check_bundle
from kindling.errors import ValidationError
from kindling.model import (
    CAPSULE_STATUSES,
    CAPSULE_TYPES,
    ENTITY_TYPES,
    ID_PATTERN,
    MAX_CONTENT_BYTES,
    MAX_JSON_INT,
    MAX_TIMESTAMP_MS,
    OBSERVATION_KINDS,
    PIN_TARGET_TYPES,
    REDACTED_CONTENT,
    SCOPE_KEYS,
    entity_errors,
)

jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")
from referencing.jsonschema import DRAFT4  # noqa: E402

SCHEMA_OF = {etype: name for name, etype in schemas.NAMES.items() if etype}


def _validator(name: str):
    """A draft 4 validator for schema `name`, the entity schemas reachable by file name."""
    registry = referencing.Registry().with_resources(
        (schemas.file_name(n), DRAFT4.create_resource(schemas.load(n))) for n in schemas.NAMES
    )
    schema = schemas.load(name)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator({**schema, "id": schemas.file_name(name)}, registry=registry)


VALIDATORS = {name: _validator(name) for name in schemas.NAMES}


def schema_accepts(name: str, value: object) -> bool:
    return VALIDATORS[name].is_valid(value)


def kindling_accepts(etype: str, value: object) -> bool:
    return entity_errors(etype, value) == []


def bundle_accepted(value: object) -> bool:
    try:
        check_bundle(value)
    except ValidationError:
        return False
    return True


# ---------------------------------------------------------------- strategies

ids = st.from_regex(ID_PATTERN, fullmatch=True)
bad_ids = st.sampled_from(
    ["a\n", "x" * 201, "", "-lead", ".hidden", "_x", "a/b", "a b", "é", "a\x00", "a\\b"]
)
stamps = st.one_of(st.integers(0, MAX_TIMESTAMP_MS), st.sampled_from([0, MAX_TIMESTAMP_MS]))
bad_stamps = st.sampled_from(
    [1000.0, MAX_TIMESTAMP_MS + 1, -1, True, 1.5, False, "1000", None, 2**63]
)
texts = st.text(min_size=1).filter(lambda s: s.strip())
bad_texts = st.sampled_from(["", " ", "\t\n", "\u2003", "\u3000\u00a0", 5, None, ["x"]])
labels = texts
scopes = st.dictionaries(st.sampled_from(SCOPE_KEYS), labels, max_size=5)
bad_scopes = st.one_of(
    st.sampled_from([None, [], "s1", {"sessionid": "s1"}, {"sessionId": ""}, {"repoId": 3}]),
    st.dictionaries(st.text(max_size=8), labels, min_size=1, max_size=2),
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.sampled_from([MAX_JSON_INT, MAX_JSON_INT + 1, -MAX_JSON_INT - 1, -MAX_JSON_INT - 2]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=10),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
id_lists = st.lists(ids, max_size=4, unique=True)
bad_id_lists = st.one_of(
    st.lists(ids, min_size=1, max_size=2).map(lambda xs: xs + xs[:1]),  # a repeat
    st.lists(bad_ids, min_size=1, max_size=2),
    st.sampled_from([None, "abc", {}, [1]]),
)
confidences = st.one_of(st.floats(0, 1), st.sampled_from([0, 1]))
bad_confidences = st.sampled_from([-0.01, 1.01, 2, -1, True, "0.5", None])
junk = st.one_of(json_scalars, st.lists(json_scalars, max_size=2), st.just({}))

# Per field: values Kindling takes, and values it refuses.
FIELDS: dict[str, dict[str, tuple]] = {
    "observations": {
        "id": (ids, bad_ids),
        "kind": (st.sampled_from(OBSERVATION_KINDS), st.sampled_from(["Error", "note", ""])),
        "content": (texts | st.just(REDACTED_CONTENT), bad_texts),
        "provenance": (st.dictionaries(st.text(max_size=6), json_values), junk),
        "ts": (stamps, bad_stamps),
        "scopeIds": (scopes, bad_scopes),
        "redacted": (st.booleans(), st.sampled_from([0, 1, "true", None])),
    },
    "capsules": {
        "id": (ids, bad_ids),
        "type": (st.sampled_from(CAPSULE_TYPES), st.sampled_from(["Session", "node", None])),
        "intent": (texts, bad_texts),
        "status": (st.sampled_from(CAPSULE_STATUSES), st.sampled_from(["Open", "done", None])),
        "openedAt": (stamps, bad_stamps),
        "closedAt": (stamps, bad_stamps),
        "scopeIds": (scopes, bad_scopes),
        "observationIds": (id_lists, bad_id_lists),
        "summaryId": (ids, bad_ids),
    },
    "summaries": {
        "id": (ids, bad_ids),
        "content": (texts, bad_texts),
        "confidence": (confidences, bad_confidences),
        "evidenceRefs": (id_lists, bad_id_lists),
        "capsuleId": (ids, bad_ids),
        "ts": (stamps, bad_stamps),
        "scopeIds": (scopes, bad_scopes),
    },
    "pins": {
        "id": (ids, bad_ids),
        "targetType": (st.sampled_from(PIN_TARGET_TYPES), st.sampled_from(["capsule", None])),
        "targetId": (ids, bad_ids),
        "reason": (st.none() | st.text(max_size=20), st.sampled_from([3, [], {}])),
        "createdAt": (stamps, bad_stamps),
        "expiresAt": (stamps | st.none(), bad_stamps.filter(lambda v: v is not None)),
        "scopeIds": (scopes, bad_scopes),
    },
}


def _valid(draw, etype: str) -> dict:
    entity = {key: draw(good) for key, (good, _) in FIELDS[etype].items()}
    if etype == "observations" and entity["redacted"]:
        entity["content"] = REDACTED_CONTENT
    if etype == "capsules":
        if entity["status"] == "open":
            del entity["closedAt"]
        else:
            entity["closedAt"] = min(MAX_TIMESTAMP_MS, entity["openedAt"] + entity["closedAt"])
        if draw(st.booleans()):
            del entity["summaryId"]
    return entity


@st.composite
def entities(draw, etype: str, focus: str | None = None) -> dict:
    """A valid entity, then up to three changes: a field dropped, added, or given a value
    Kindling takes, refuses, or that has the wrong type altogether. With `focus`, that field
    first gets a value Kindling refuses (or none at all)."""
    entity = _valid(draw, etype)
    if focus is not None:
        good, bad = FIELDS[etype][focus]
        which = draw(st.sampled_from(["bad", "bad", "bad", "junk", "good", "drop"]))
        if which == "drop":
            entity.pop(focus, None)
        else:
            entity[focus] = draw({"good": good, "bad": bad, "junk": junk}[which])
    for _ in range(draw(st.sampled_from([0, 0, 1, 2] if focus else [0, 1, 1, 1, 2, 3]))):
        op = draw(st.sampled_from(["good", "bad", "bad", "bad", "junk", "drop", "extra"]))
        key = draw(st.sampled_from(sorted(FIELDS[etype])))
        if op == "drop":
            entity.pop(key, None)
        elif op == "extra":
            entity[draw(st.sampled_from(["note", "createdAt", "Id", "scope", "redacted"]))] = 1
        else:
            good, bad = FIELDS[etype][key]
            entity[key] = draw({"good": good, "bad": bad, "junk": junk}[op])
    return entity


def _closed_before_opened(entity: object) -> bool:
    """The one rule between two fields: true when closedAt is a timestamp before openedAt."""
    if not isinstance(entity, dict):
        return False
    opened, closed = entity.get("openedAt"), entity.get("closedAt")
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (opened, closed))
    return ints and closed < opened


# ---------------------------------------------------------------- the schemas themselves


def test_the_schemas_are_shipped_and_valid_draft_4():
    for name in schemas.NAMES:
        schema = schemas.load(name)
        assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
        jsonschema.Draft4Validator.check_schema(schema)
    with pytest.raises(KeyError):
        schemas.load("capsules")


def test_the_schemas_state_the_model_constants():
    obs = schemas.load("observation")
    assert obs["properties"]["kind"]["enum"] == list(OBSERVATION_KINDS)
    assert obs["definitions"]["timestamp"]["maximum"] == MAX_TIMESTAMP_MS
    assert set(obs["definitions"]["scopeIds"]["properties"]) == set(SCOPE_KEYS)
    assert schemas.load("capsule")["properties"]["type"]["enum"] == list(CAPSULE_TYPES)
    assert schemas.load("pin")["properties"]["targetType"]["enum"] == list(PIN_TARGET_TYPES)
    for name, etype in schemas.NAMES.items():
        if etype:
            assert set(schemas.load(name)["properties"]) == set(FIELDS[etype])


# ---------------------------------------------------------------- fuzzed: the same verdict


def _same_verdict(etype: str, entity: object) -> None:
    assume(not _closed_before_opened(entity))
    ours = kindling_accepts(etype, entity)
    assert schema_accepts(SCHEMA_OF[etype], entity) == ours, (entity, entity_errors(etype, entity))


@pytest.mark.parametrize("etype", ENTITY_TYPES)
@fuzz_settings(100)
@given(data=st.data())
def test_schema_and_validator_agree_on_fuzzed_entities(etype, data):
    _same_verdict(etype, data.draw(entities(etype)))


FOCUS = [(etype, key) for etype in ENTITY_TYPES for key in FIELDS[etype]]


@pytest.mark.parametrize("etype, key", FOCUS, ids=[f"{e}.{k}" for e, k in FOCUS])
@fuzz_settings(20)
@given(data=st.data())
def test_schema_and_validator_agree_field_by_field(etype, key, data):
    """Every field in turn gets a refused value, so each rule is exercised, not left to luck."""
    _same_verdict(etype, data.draw(entities(etype, key)))


@st.composite
def bundles(draw) -> dict:
    dataset: dict = {"version": "1.0", "exportedAt": draw(stamps)}
    for etype in ENTITY_TYPES:
        dataset[etype] = draw(st.lists(entities(etype), max_size=2))
    if draw(st.booleans()):
        dataset["scope"] = draw(scopes)
    bundle: dict = {"bundleVersion": "1.0", "exportedAt": draw(stamps), "dataset": dataset}
    if draw(st.booleans()):
        bundle["metadata"] = {"description": "Kindling memory export"}
    for _ in range(draw(st.integers(0, 2))):
        where = draw(st.sampled_from([bundle, dataset]))
        key = draw(st.sampled_from(sorted(where) + ["extra"]))
        op = draw(st.sampled_from(["drop", "junk", "scope"]))
        if op == "drop":
            where.pop(key, None)
        elif op == "scope":
            where[key] = draw(bad_scopes | scopes)
        else:
            where[key] = draw(junk | st.sampled_from(["1.0", "2.0", "1", 1.0]))
    return bundle


def _repeats_an_id(bundle: dict) -> bool:
    dataset = bundle.get("dataset")
    if not isinstance(dataset, dict):
        return False
    for etype in ENTITY_TYPES:
        items = dataset.get(etype)
        if isinstance(items, list):
            found = [i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)]
            if len(found) != len(set(found)):
                return True
    return False


def _any_closed_before_opened(bundle: dict) -> bool:
    dataset = bundle.get("dataset")
    caps = dataset.get("capsules") if isinstance(dataset, dict) else None
    return isinstance(caps, list) and any(_closed_before_opened(c) for c in caps)


@fuzz_settings(60)
@given(bundle=bundles())
def test_schema_and_check_bundle_agree_on_fuzzed_bundles(bundle):
    assume(not _repeats_an_id(bundle) and not _any_closed_before_opened(bundle))
    assert schema_accepts("bundle", bundle) == bundle_accepted(bundle), bundle


# ---------------------------------------------------------------- what a schema cannot say


def _capsule(**fields) -> dict:
    base = {
        "id": "cap_1",
        "type": "session",
        "intent": "fix login",
        "status": "closed",
        "openedAt": 2000,
        "closedAt": 3000,
        "scopeIds": {},
        "observationIds": [],
    }
    return {**base, **fields}


def _observation(**fields) -> dict:
    base = {
        "id": "o1",
        "kind": "error",
        "content": "token expired",
        "provenance": {},
        "ts": 1,
        "scopeIds": {"sessionId": "s1"},
        "redacted": False,
    }
    return {**base, **fields}


def test_gap_closed_before_opened_only_kindling_refuses():
    late = _capsule(closedAt=1000)
    assert not kindling_accepts("capsules", late)
    assert schema_accepts("capsule", late)
    assert schema_accepts("capsule", _capsule()) and kindling_accepts("capsules", _capsule())


def test_gap_content_limit_is_in_bytes():
    # 4-byte characters: under maxLength in characters, over 16 MiB in UTF-8.
    heavy = _observation(content="\U0001f525" * (MAX_CONTENT_BYTES // 4 + 1))
    assert not kindling_accepts("observations", heavy)
    assert schema_accepts("observation", heavy)
    # Past the limit in characters both refuse.
    long = _observation(content="a" * (MAX_CONTENT_BYTES + 1))
    assert not kindling_accepts("observations", long)
    assert not schema_accepts("observation", long)


def test_gap_nesting_depth():
    deep: object = "x"
    for _ in range(70):
        deep = [deep]
    nested = _observation(provenance={"deep": deep})
    assert not kindling_accepts("observations", nested)
    assert schema_accepts("observation", nested)


def test_gap_duplicate_ids_in_a_bundle():
    obs = _observation()
    bundle = {
        "bundleVersion": "1.0",
        "exportedAt": 5,
        "dataset": {
            "version": "1.0",
            "exportedAt": 5,
            "observations": [obs, obs],
            "capsules": [],
            "summaries": [],
            "pins": [],
        },
    }
    assert schema_accepts("bundle", bundle) and not bundle_accepted(bundle)
    bundle["dataset"]["observations"] = [obs]
    assert schema_accepts("bundle", bundle) and bundle_accepted(bundle)


def test_integers_are_written_without_a_fraction():
    assert not schema_accepts("observation", _observation(ts=1000.0))
    assert not kindling_accepts("observations", _observation(ts=1000.0))
    big = _observation(provenance={"n": 2**63})
    assert not schema_accepts("observation", big) and not kindling_accepts("observations", big)
    huge_float = _observation(provenance={"n": 1e300})
    assert schema_accepts("observation", huge_float)
    assert kindling_accepts("observations", huge_float)


# ---------------------------------------------------------------- real data


def test_the_example_store_and_its_export_match_the_schemas(tmp_path):
    example = REPO_ROOT / "kindling" / "example" / "objects"
    seen = 0
    for etype in ENTITY_TYPES:
        for path in sorted((example / etype).rglob("*.json")):
            entity = json.loads(path.read_text(encoding="utf-8"))
            assert schema_accepts(SCHEMA_OF[etype], entity), path
            seen += 1
    assert seen > 10
    store = tmp_path / ".kindling"
    shutil.copytree(REPO_ROOT / "kindling" / "example", store)
    out = tmp_path / "bundle.json"
    result = subprocess.run(
        [sys.executable, "-m", "kindling", "--store", str(store), "export", str(out)],
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    bundle = json.loads(out.read_text(encoding="utf-8"))
    assert sum(len(bundle["dataset"][t]) for t in ENTITY_TYPES) == seen
    assert schema_accepts("bundle", bundle) and bundle_accepted(bundle)
