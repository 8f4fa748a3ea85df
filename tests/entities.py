"""Valid entities for tests, one builder per type.

Each takes an id (an int n gives `obs-000n`, `cap_000n`, `sum_000n`, `pin_000n`) and keyword
fields: a scope name (`sessionId`, `repoId`, ...) goes into `scopeIds`, any other name sets that
top-level field, so a test can also make an entity invalid on purpose.
"""

from __future__ import annotations

import copy

from kindling.model import SCOPE_KEYS

NOW = 1_750_000_000_000


def _entity(base: dict, fields: dict) -> dict:
    fields = copy.deepcopy(fields)  # a partial() of a builder must not share its dicts
    scope = {k: fields.pop(k) for k in SCOPE_KEYS if k in fields}
    if scope:
        base["scopeIds"] = {**base["scopeIds"], **scope}
    base.update(fields)
    return base


def _id(value: str | int, prefix: str) -> str:
    return f"{prefix}{value:04d}" if isinstance(value, int) else value


def observation(oid: str | int = 1, content: str = "hello", **fields) -> dict:
    """An observation (kind message, empty provenance, ts NOW) unless `fields` say otherwise."""
    base = {
        "id": _id(oid, "obs-"),
        "kind": "message",
        "content": content,
        "provenance": {},
        "ts": NOW,
        "scopeIds": {},
        "redacted": False,
    }
    return _entity(base, fields)


def capsule(cid: str | int = 1, **fields) -> dict:
    """A session capsule; closed (at openedAt + 1 unless given) when `closedAt` or status says."""
    base = {
        "id": _id(cid, "cap_"),
        "type": "session",
        "intent": "work",
        "status": "closed" if "closedAt" in fields else "open",
        "openedAt": NOW,
        "scopeIds": {},
        "observationIds": [],
    }
    entity = _entity(base, fields)
    if entity["status"] == "closed" and "closedAt" not in entity:
        entity["closedAt"] = entity["openedAt"] + 1
    return entity


def summary(sid: str | int = 1, content: str = "a summary", **fields) -> dict:
    """A summary of capsule `cap_0001` with no evidence, made at NOW."""
    base = {
        "id": _id(sid, "sum_"),
        "content": content,
        "confidence": 0.8,
        "evidenceRefs": [],
        "capsuleId": "cap_0001",
        "ts": NOW,
        "scopeIds": {},
    }
    return _entity(base, fields)


def pin(pid: str | int = 1, target: str = "obs-0001", **fields) -> dict:
    """A pin of observation `target`, made at NOW, with no reason and no expiry."""
    base = {
        "id": _id(pid, "pin_"),
        "targetType": "observation",
        "targetId": target,
        "reason": None,
        "createdAt": NOW,
        "expiresAt": None,
        "scopeIds": {},
    }
    return _entity(base, fields)


def bundle(exported_at: int = 1, **entities: list[dict]) -> dict:
    """An export bundle (as a dict) holding the given entity lists; the others empty."""
    dataset: dict = {"version": "1.0", "exportedAt": exported_at}
    for entity_type in ("observations", "capsules", "summaries", "pins"):
        dataset[entity_type] = list(entities.get(entity_type, []))
    return {"bundleVersion": "1.0", "exportedAt": exported_at, "dataset": dataset}
