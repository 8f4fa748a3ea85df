"""Three-way field-level merge of one entity: exact results for every rule."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from kindling.git.merge import MergeResult, merge_entity, ordered_union
from kindling.model import entity_errors

OBS = {
    "id": "9c20f3a1-2b4d-4f8e-9a1c-7e0d5b6f2a33",
    "kind": "error",
    "content": "JWT validation failed",
    "provenance": {"stack": "at validateToken.ts:42"},
    "ts": 1750416064123,
    "scopeIds": {"sessionId": "s1"},
    "redacted": False,
}
CAP = {
    "id": "cap_8a3f",
    "type": "session",
    "intent": "investigating the memory leak",
    "status": "open",
    "openedAt": 1750416000000,
    "scopeIds": {"repoId": "my-project"},
    "observationIds": ["o1", "o2"],
}
SUM = {
    "id": "sum_1b2c",
    "content": "Fixed JWT expiration check",
    "confidence": 0.85,
    "evidenceRefs": ["o1"],
    "capsuleId": "cap_8a3f",
    "ts": 1750416600000,
    "scopeIds": {"repoId": "my-project"},
}
PIN = {
    "id": "pin_4d5e",
    "targetType": "observation",
    "targetId": "o1",
    "reason": "root cause",
    "createdAt": 1750416100000,
    "expiresAt": None,
    "scopeIds": {"sessionId": "s1"},
}


def edit(entity: dict, **changes) -> dict:
    out = copy.deepcopy(entity)
    for key, value in changes.items():
        if value is ...:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def test_fixtures_are_valid():
    assert entity_errors("observations", OBS) == []
    assert entity_errors("capsules", CAP) == []
    assert entity_errors("summaries", SUM) == []
    assert entity_errors("pins", PIN) == []


def test_identical_sides_give_that_side():
    ours = edit(CAP, intent="new intent")
    assert merge_entity("capsules", CAP, ours, copy.deepcopy(ours)) == MergeResult(ours, [])


def test_one_side_changed_takes_the_change():
    theirs = edit(PIN, reason="still the root cause", expiresAt=1750500000000)
    result = merge_entity("pins", PIN, PIN, theirs)
    assert result == MergeResult(theirs, [])
    result = merge_entity("pins", PIN, theirs, PIN)
    assert result == MergeResult(theirs, [])


def test_disjoint_changes_combine():
    ours = edit(PIN, reason="mine")
    theirs = edit(PIN, expiresAt=1750500000000)
    result = merge_entity("pins", PIN, ours, theirs)
    assert result.conflicts == []
    assert result.merged == edit(PIN, reason="mine", expiresAt=1750500000000)


def test_both_changed_differently_is_a_conflict():
    ours = edit(PIN, reason="mine", expiresAt=1)
    theirs = edit(PIN, reason="theirs", expiresAt=2)
    assert merge_entity("pins", PIN, ours, theirs) == MergeResult(None, ["expiresAt", "reason"])


def test_observation_ids_ordered_union():
    ours = edit(CAP, observationIds=["o1", "o2", "a1", "a2"])
    theirs = edit(CAP, observationIds=["o1", "o2", "b1", "a2", "b2"])
    result = merge_entity("capsules", CAP, ours, theirs)
    assert result.conflicts == []
    assert result.merged["observationIds"] == ["o1", "o2", "a1", "a2", "b1", "b2"]


def test_observation_ids_keep_base_members_one_side_lacks():
    ours = edit(CAP, observationIds=["o2", "a1"])
    theirs = edit(CAP, observationIds=["o1", "o2", "b1"])
    result = merge_entity("capsules", CAP, ours, theirs)
    assert result.merged["observationIds"] == ["o1", "o2", "a1", "b1"]


def test_closed_beats_open_and_closed_at_comes_from_the_closer():
    ours = edit(CAP, observationIds=["o1", "o2", "a1"])
    theirs = edit(CAP, status="closed", closedAt=1750416600000, summaryId="sum_1b2c")
    result = merge_entity("capsules", CAP, ours, theirs)
    assert result == MergeResult(
        {
            **CAP,
            "observationIds": ["o1", "o2", "a1"],
            "status": "closed",
            "closedAt": 1750416600000,
            "summaryId": "sum_1b2c",
        },
        [],
    )
    # symmetric
    assert merge_entity("capsules", CAP, theirs, ours) == result


def test_both_closed_at_different_times_keeps_the_later_close():
    ours = edit(CAP, status="closed", closedAt=1750416500000)
    theirs = edit(CAP, status="closed", closedAt=1750416700000)
    result = merge_entity("capsules", CAP, ours, theirs)
    assert result.conflicts == []
    assert result.merged["status"] == "closed"
    assert result.merged["closedAt"] == 1750416700000
    assert merge_entity("capsules", CAP, theirs, ours) == result


def test_closed_base_stays_closed_when_one_side_is_open():
    base = edit(CAP, status="closed", closedAt=1750416500000)
    ours = edit(CAP)  # a hand edit that reopened it
    result = merge_entity("capsules", base, ours, base)
    assert result.merged["status"] == "closed"
    assert result.merged["closedAt"] == 1750416500000


def test_two_different_summaries_conflict():
    ours = edit(CAP, status="closed", closedAt=1750416600000, summaryId="sum_a")
    theirs = edit(CAP, status="closed", closedAt=1750416600000, summaryId="sum_b")
    assert merge_entity("capsules", CAP, ours, theirs) == MergeResult(None, ["summaryId"])


def test_summary_id_set_on_one_side_wins():
    ours = edit(CAP, status="closed", closedAt=1750416600000, summaryId="sum_a")
    theirs = edit(CAP, status="closed", closedAt=1750416600000)
    result = merge_entity("capsules", CAP, ours, theirs)
    assert result.merged["summaryId"] == "sum_a"


def test_intent_changed_on_both_sides_conflicts_even_when_lists_merge():
    ours = edit(CAP, intent="A", observationIds=["o1", "o2", "a1"])
    theirs = edit(CAP, intent="B", observationIds=["o1", "o2", "b1"])
    assert merge_entity("capsules", CAP, ours, theirs) == MergeResult(None, ["intent"])


def test_redacted_wins():
    theirs = edit(OBS, redacted=True, content="[redacted]", provenance={})
    ours = edit(OBS, scopeIds={"sessionId": "s1", "taskId": "t9"})
    result = merge_entity("observations", OBS, ours, theirs)
    assert result == MergeResult(
        {
            **OBS,
            "redacted": True,
            "content": "[redacted]",
            "provenance": {},
            "scopeIds": {"sessionId": "s1", "taskId": "t9"},
        },
        [],
    )


def test_redacted_wins_over_a_content_edit_and_clears_provenance():
    ours = edit(OBS, content="edited by hand", provenance={"x": 1})
    theirs = edit(OBS, redacted=True, content="[redacted]", provenance={"kept": "by mistake"})
    result = merge_entity("observations", OBS, ours, theirs)
    assert result.conflicts == []
    assert result.merged["content"] == "[redacted]"
    assert result.merged["provenance"] == {}
    assert result.merged["redacted"] is True


def test_observation_content_edited_on_both_sides_conflicts():
    ours = edit(OBS, content="A")
    theirs = edit(OBS, content="B")
    assert merge_entity("observations", OBS, ours, theirs) == MergeResult(None, ["content"])


def test_evidence_refs_ordered_union():
    ours = edit(SUM, evidenceRefs=["o1", "o3"])
    theirs = edit(SUM, evidenceRefs=["o2", "o1"])
    result = merge_entity("summaries", SUM, ours, theirs)
    assert result.merged["evidenceRefs"] == ["o1", "o3", "o2"]


def test_summary_confidence_conflict():
    ours = edit(SUM, confidence=0.5)
    theirs = edit(SUM, confidence=0.9)
    assert merge_entity("summaries", SUM, ours, theirs) == MergeResult(None, ["confidence"])


def test_scope_ids_merge_key_by_key():
    ours = edit(PIN, scopeIds={"sessionId": "s1", "repoId": "r"})
    theirs = edit(PIN, scopeIds={"sessionId": "s1", "taskId": "t"})
    result = merge_entity("pins", PIN, ours, theirs)
    assert result.merged["scopeIds"] == {"repoId": "r", "sessionId": "s1", "taskId": "t"}
    ours = edit(PIN, scopeIds={"sessionId": "s2"})
    theirs = edit(PIN, scopeIds={"sessionId": "s3"})
    assert merge_entity("pins", PIN, ours, theirs) == MergeResult(None, ["scopeIds.sessionId"])


def test_no_base_two_way_merge():
    ours = edit(CAP, observationIds=["o1", "a1"])
    theirs = edit(CAP, observationIds=["o1", "b1"], status="closed", closedAt=1750416600001)
    result = merge_entity("capsules", None, ours, theirs)
    assert result.merged["observationIds"] == ["o1", "a1", "b1"]
    assert result.merged["status"] == "closed"
    assert merge_entity("pins", None, edit(PIN, reason="a"), edit(PIN, reason="b")) == (
        MergeResult(None, ["reason"])
    )


def test_different_ids_conflict():
    assert merge_entity("pins", PIN, edit(PIN, id="pin_x"), edit(PIN, id="pin_y")) == (
        MergeResult(None, ["id"])
    )


def test_merged_entity_that_would_be_invalid_is_a_conflict():
    # Each side's change is fine alone; together the capsule closes before it opened.
    ours = edit(CAP, openedAt=1750416700000)
    theirs = edit(CAP, status="closed", closedAt=1750416600000)
    result = merge_entity("capsules", CAP, ours, theirs)
    assert result.merged is None
    assert result.conflicts == ["closedAt"]


def test_inputs_are_not_modified():
    ours = edit(CAP, observationIds=["o1", "o2", "a1"])
    theirs = edit(CAP, status="closed", closedAt=1750416600000)
    snapshot = copy.deepcopy((CAP, ours, theirs))
    result = merge_entity("capsules", CAP, ours, theirs)
    result.merged["observationIds"].append("zzz")
    assert (CAP, ours, theirs) == snapshot


def test_non_dict_sides_conflict():
    assert merge_entity("pins", None, [], PIN).merged is None  # type: ignore[arg-type]


def test_ordered_union():
    assert ordered_union(["a", "b"], None, ["b", "c", "a", "d"], ["e"]) == ["a", "b", "c", "d", "e"]


ids = st.lists(st.sampled_from([f"o{i}" for i in range(12)]), unique=True, max_size=8)


@given(base=ids, extra_ours=ids, extra_theirs=ids, closed_ours=st.booleans())
def test_capsule_merge_never_loses_a_member(base, extra_ours, extra_theirs, closed_ours):
    b = edit(CAP, observationIds=base)
    o = edit(CAP, observationIds=ordered_union(base, extra_ours))
    t = edit(CAP, observationIds=ordered_union(base, extra_theirs))
    if closed_ours:
        o = edit(o, status="closed", closedAt=1750416600000)
    result = merge_entity("capsules", b, o, t)
    assert result.conflicts == []
    assert set(result.merged["observationIds"]) == set(base) | set(extra_ours) | set(extra_theirs)
    assert result.merged["observationIds"][: len(base)] == base
    assert result.merged["status"] == ("closed" if closed_ours else "open")
    assert entity_errors("capsules", result.merged) == []
    # The merge is symmetric apart from the order of additions.
    swapped = merge_entity("capsules", b, t, o)
    assert set(swapped.merged["observationIds"]) == set(result.merged["observationIds"])


def test_a_capsules_summary_written_twice_keeps_the_later_one_in_every_clone():
    from kindling.model import REDACTED_CONTENT, derived_id

    sid = derived_id("summaries", "cap_1")
    digest = {
        "id": sid,
        "content": "Interrupted: the session never ended",
        "confidence": 0.5,
        "evidenceRefs": ["o1"],
        "capsuleId": "cap_1",
        "ts": 1000,
        "scopeIds": {},
    }
    owner = {**digest, "content": "Did it all", "confidence": 0.9, "evidenceRefs": ["o2"], "ts": 5}
    owner["ts"] = 2000
    for ours, theirs in ((digest, owner), (owner, digest)):
        assert merge_entity("summaries", None, ours, theirs) == MergeResult(owner, [])
    forgotten = {**digest, "content": REDACTED_CONTENT}
    for ours, theirs in ((forgotten, owner), (owner, forgotten)):
        kept = merge_entity("summaries", None, ours, theirs).merged
        assert kept == {**owner, "content": REDACTED_CONTENT}  # forgotten stays forgotten
    random_ids = {**digest, "id": "sum_" + "a" * 32}
    clash = {**random_ids, "content": "other"}
    assert merge_entity("summaries", None, random_ids, clash).conflicts == ["content"]
