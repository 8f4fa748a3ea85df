"""The original Kindling's bundle dialect (its TypeScript and Rust versions): read it liberally,
write it strictly.

Both originals write the same `bundleVersion` 1.0 envelope as formats.txt, with entities that
differ in a few places: summaries carry `createdAt` and no `ts`/`scopeIds`; pins leave out
`reason` and `expiresAt` when they are null; capsules never name their summary (the summary
points at its capsule through `capsuleId`); an absent optional value may be written as null.

`normalise` turns a decoded bundle of either shape into this Kindling's canonical one and
counts each change for the import report; a canonical bundle passes through untouched.
`to_original` gives an entity in the shape both originals' importers read.
"""

from __future__ import annotations

from collections import Counter

from kindling.model import REDACTED_CONTENT

FORMATS = ("kindling", "original")

# What each normalisation is called in the import report.
SUMMARY_TS = "summaries: createdAt read as ts"
SUMMARY_SCOPE = "summaries: scopeIds taken from their capsule"
SUMMARY_NO_SCOPE = "summaries: no scopeIds and their capsule is not in the bundle; empty scope"
PIN_REASON = "pins: missing reason set to null"
PIN_EXPIRES = "pins: missing expiresAt set to null"
CAPSULE_SUMMARY = "capsules: summaryId set from the summary that names the capsule"
NULL_DROPPED = "null optional fields left out (closedAt, summaryId, scope ids)"
REDACTED = "forgotten observations: content and provenance emptied"


def _items(dataset: dict, entity_type: str) -> list:
    items = dataset.get(entity_type)
    return items if isinstance(items, list) else []


def _drop_nulls(entity: dict, keys: tuple[str, ...], notes: Counter) -> dict:
    """The entity without the given keys when they hold null, and null scope ids."""
    scope = entity.get("scopeIds")
    if not any(entity.get(k, 0) is None for k in keys) and not (
        isinstance(scope, dict) and None in scope.values()
    ):
        return entity  # the usual case: no copy made, nothing compared
    changed = {k: v for k, v in entity.items() if not (k in keys and v is None)}
    scope = changed.get("scopeIds")
    if isinstance(scope, dict) and any(v is None for v in scope.values()):
        changed["scopeIds"] = {k: v for k, v in scope.items() if v is not None}
    if changed != entity:
        notes[NULL_DROPPED] += 1
    return changed


def _observation(obs: dict, notes: Counter) -> dict:
    obs = _drop_nulls(obs, (), notes)
    if obs.get("redacted") is True and (
        obs.get("content") != REDACTED_CONTENT or obs.get("provenance") != {}
    ):
        # The original may keep text or provenance on a forgotten observation; here it stays
        # forgotten, whatever it held.
        notes[REDACTED] += 1
        obs = {**obs, "content": REDACTED_CONTENT, "provenance": {}}
    return obs


def _summary(summary: dict, capsules: dict[str, dict], notes: Counter) -> dict:
    summary = dict(summary)
    if "createdAt" in summary:
        created = summary.pop("createdAt")
        summary.setdefault("ts", created)
        notes[SUMMARY_TS] += 1
    if "scopeIds" not in summary:
        cap_id = summary.get("capsuleId")
        capsule = capsules.get(cap_id) if isinstance(cap_id, str) else None
        if capsule is not None and isinstance(capsule.get("scopeIds"), dict):
            summary["scopeIds"] = dict(capsule["scopeIds"])
            notes[SUMMARY_SCOPE] += 1
        else:
            summary["scopeIds"] = {}
            notes[SUMMARY_NO_SCOPE] += 1
    return summary


def _pin(pin: dict, notes: Counter) -> dict:
    pin = _drop_nulls(pin, (), notes)
    for key, note in (("reason", PIN_REASON), ("expiresAt", PIN_EXPIRES)):
        if key not in pin:
            pin = {**pin, key: None}
            notes[note] += 1
    return pin


def _latest_summaries(summaries: list) -> dict[str, str]:
    """capsule id -> id of the newest summary naming it (by ts, then id)."""
    best: dict[str, tuple] = {}
    for s in summaries:
        if not isinstance(s, dict):
            continue
        cap, ident, ts = s.get("capsuleId"), s.get("id"), s.get("ts")
        if not isinstance(cap, str) or not isinstance(ident, str):
            continue
        key = (ts if isinstance(ts, int) else 0, ident)
        if cap not in best or key > best[cap]:
            best[cap] = key
    return {cap: key[1] for cap, key in best.items()}


def normalise(value: object) -> tuple[object, dict[str, int]]:
    """A decoded bundle in canonical shape, and how many entities each normalisation changed.

    Anything that is not shaped like a bundle is returned as it is, for validation to report.
    """
    notes: Counter = Counter()
    if not isinstance(value, dict) or not isinstance(value.get("dataset"), dict):
        return value, {}
    dataset = dict(value["dataset"])
    # Only lists are rewritten: anything else is left for validation to report as it is.
    if isinstance(dataset.get("observations"), list):
        dataset["observations"] = [
            _observation(o, notes) if isinstance(o, dict) else o for o in dataset["observations"]
        ]
    capsules = [
        _drop_nulls(c, ("closedAt", "summaryId"), notes) if isinstance(c, dict) else c
        for c in _items(dataset, "capsules")
    ]
    by_id = {c["id"]: c for c in capsules if isinstance(c, dict) and isinstance(c.get("id"), str)}
    if isinstance(dataset.get("summaries"), list):
        dataset["summaries"] = [
            _summary(s, by_id, notes) if isinstance(s, dict) else s for s in dataset["summaries"]
        ]
    latest = _latest_summaries(_items(dataset, "summaries"))
    for i, capsule in enumerate(capsules):
        if not isinstance(capsule, dict) or "summaryId" in capsule:
            continue
        ident = capsule.get("id")
        if isinstance(ident, str) and ident in latest:
            capsules[i] = {**capsule, "summaryId": latest[ident]}
            notes[CAPSULE_SUMMARY] += 1
    if isinstance(dataset.get("capsules"), list):
        dataset["capsules"] = capsules
    if isinstance(dataset.get("pins"), list):
        dataset["pins"] = [_pin(p, notes) if isinstance(p, dict) else p for p in dataset["pins"]]
    if not notes:
        return value, {}
    return {**value, "dataset": dataset}, dict(sorted(notes.items()))


# ---------------------------------------------------------------- writing for the original


def to_original(entity_type: str, entity: dict) -> dict:
    """An entity as both originals write it, so both of their importers read it whole."""
    if entity_type == "summaries":
        return {
            "id": entity["id"],
            "capsuleId": entity["capsuleId"],
            "content": entity["content"],
            "confidence": entity["confidence"],
            "createdAt": entity["ts"],
            "evidenceRefs": entity["evidenceRefs"],
        }
    if entity_type == "pins":
        return {k: v for k, v in entity.items() if not (k in ("reason", "expiresAt") and v is None)}
    return entity
