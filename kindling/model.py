"""Entity types, id rules and validation. No I/O.

Entities are plain dicts shaped exactly as formats.txt shows them (camelCase keys), so what
is validated is byte for byte what is stored, exported and printed.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

from kindling.errors import ValidationError

OBSERVATION_KINDS = (
    "tool_call",
    "command",
    "file_diff",
    "error",
    "message",
    "node_start",
    "node_end",
    "node_output",
    "node_error",
)
CAPSULE_TYPES = ("session", "pocketflow_node")
CAPSULE_STATUSES = ("open", "closed")
PIN_TARGET_TYPES = ("observation", "summary")
# scopeIds key -> its short name (the CLI option and the index column).
SCOPE_NAMES = {
    "sessionId": "session",
    "repoId": "repo",
    "agentId": "agent",
    "userId": "user",
    "taskId": "task",
}
SCOPE_KEYS = tuple(SCOPE_NAMES)
REDACTED_CONTENT = "[redacted]"

# Folder name under objects/ for each entity type, in the order a walk visits them.
ENTITY_TYPES = ("observations", "capsules", "summaries", "pins")
# Singular names (pin targetType, `kindling show` output) and their folders.
SINGULAR = {
    "observations": "observation",
    "capsules": "capsule",
    "summaries": "summary",
    "pins": "pin",
}
PLURAL = {v: k for k, v in SINGULAR.items()}

# Largest observation or summary content stored, in UTF-8 bytes: big enough for a long log or
# diff, small enough that the index and every reader stay responsive.
MAX_CONTENT_BYTES = 16 * 1024 * 1024
ID_MAX_LEN = 200
# Safe as a file name on every OS: no separators, no leading dot, no NUL, bounded length.
ID_PATTERN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.\-]{{0,{ID_MAX_LEN - 1}}}")
ID_RULE = "letters, digits, '_', '.', '-', starting with a letter or digit, at most 200 characters"

# Latest timestamp stored: 9999-12-31T23:59:59.999Z. Every later bound holds below it: a
# calendar date (datetime stops at year 9999), a JSON-safe integer (2^53) and a signed 64-bit
# SQLite integer (2^63), so no stored time can wedge the index or a date printer.
MAX_TIMESTAMP_MS = 253_402_300_799_999
# Largest count an option takes (--max, --limit, --max-tokens): far above any real store,
# far below where SQLite's LIMIT or a token sum could overflow.
MAX_COUNT = 2**31 - 1
# Integers inside provenance stay within what SQLite and every JSON reader can hold exactly.
MAX_JSON_INT = 2**63 - 1

_ID_PREFIXES = {"capsules": "cap_", "summaries": "sum_", "pins": "pin_"}

# Every field each type may hold, and which of them may be absent.
_FIELDS = {
    "observations": (
        {"id", "kind", "content", "provenance", "ts", "scopeIds", "redacted"},
        set(),
    ),
    "capsules": (
        {
            "id",
            "type",
            "intent",
            "status",
            "openedAt",
            "closedAt",
            "scopeIds",
            "observationIds",
            "summaryId",
        },
        {"closedAt", "summaryId"},
    ),
    "summaries": (
        {"id", "content", "confidence", "evidenceRefs", "capsuleId", "ts", "scopeIds"},
        set(),
    ),
    "pins": (
        {"id", "targetType", "targetId", "reason", "createdAt", "expiresAt", "scopeIds"},
        set(),
    ),
}


def is_valid_id(value: object) -> bool:
    """True when `value` is a string that is safe to use as an id and a file name."""
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


def check_id(value: object, what: str = "id") -> str:
    """Return `value` when it is a valid id, else raise a ValidationError naming `what`."""
    if not is_valid_id(value):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise ValidationError(f"invalid {what} {shown}: ids use {ID_RULE}")
    return value  # type: ignore[return-value]


def derived_id(entity_type: str, key: str) -> str:
    """A capsule, summary or pin id every writer derives alike from `key` (32 hex of its
    SHA-256), for an entity two clones may each write for the same reason."""
    from kindling.hashing import hexdigest

    return _ID_PREFIXES[entity_type] + hexdigest(f"{entity_type}:{key}".encode())[:32]


def pin_id(target_type: str, target_id: str, scope: dict) -> str:
    """The one id of a pin of this target with this scope (pinning again is the same pin)."""
    from kindling import canonical

    key = canonical.encode([target_type, target_id, scope]).decode("utf-8")
    return derived_id("pins", key)


def new_id(entity_type: str) -> str:
    """A fresh id: lowercase UUIDv4 for observations, `cap_`/`sum_`/`pin_` + 32 hex otherwise."""
    raw = bytearray(os.urandom(16))
    if entity_type != "observations":
        return _ID_PREFIXES[entity_type] + raw.hex()
    # RFC 4122 version 4 (random), built here because the uuid module imports `platform`,
    # which costs a write command more time than the whole write.
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def type_of_new_id(entity_id: str) -> str | None:
    """The entity type a Kindling-made id announces by its prefix, when it has one."""
    for etype, prefix in _ID_PREFIXES.items():
        if entity_id.startswith(prefix):
            return etype
    return None


# ---------------------------------------------------------------- validation


def is_count(value: object, lo: int = 0, hi: int = MAX_COUNT) -> bool:
    """True for an int (never a bool, though Python counts True as 1) from `lo` to `hi`."""
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def kind_errors(kinds: object) -> list[str]:
    """Problems with a list of observation kinds: each must be one of the spec's."""
    if kinds is None:
        return []
    if not isinstance(kinds, (list, tuple)):
        return ["kinds must be a list of observation kinds"]
    use = ", ".join(OBSERVATION_KINDS)
    return [f"invalid kind {k!r}: use one of {use}" for k in kinds if k not in OBSERVATION_KINDS]


def _check_timestamp(errors: list[str], data: dict, key: str, *, nullable: bool = False) -> None:
    v = data.get(key)
    if v is None and nullable:
        return
    if not is_timestamp(v):
        errors.append(
            f"{key} must be an integer from 0 to {MAX_TIMESTAMP_MS} (epoch milliseconds, "
            "up to year 9999)"
        )


def is_timestamp(value: object) -> bool:
    """True for epoch milliseconds Kindling can store: an int from 0 to MAX_TIMESTAMP_MS."""
    return is_count(value, 0, MAX_TIMESTAMP_MS)


def _check_text(errors: list[str], data: dict, key: str) -> None:
    v = data.get(key)
    if not isinstance(v, str) or not v.strip():
        errors.append(f"{key} must be a non-empty string")
    elif len(v) > MAX_CONTENT_BYTES // 4:  # only long text can be over the limit: skip encoding
        size = len(v.encode("utf-8", "surrogatepass"))
        if size > MAX_CONTENT_BYTES:
            errors.append(f"{key} is {size:,} bytes, over the 16 MiB limit")


def _check_id_field(errors: list[str], data: dict, key: str) -> None:
    if not is_valid_id(data.get(key)):
        errors.append(f"{key} must be an id ({ID_RULE})")


def _check_id_list(errors: list[str], data: dict, key: str) -> None:
    v = data.get(key)
    if not isinstance(v, list) or not all(is_valid_id(x) for x in v):
        errors.append(f"{key} must be a list of ids")
    elif len(set(v)) != len(v):
        errors.append(f"{key} must not repeat an id")


def _check_enum(errors: list[str], data: dict, key: str, allowed: tuple[str, ...]) -> None:
    if data.get(key) not in allowed:
        errors.append(f"{key} must be one of {', '.join(allowed)} (got {data.get(key)!r})")


def scope_errors(scope: object, key: str = "scopeIds") -> list[str]:
    """Problems with a scopeIds object: only the five known keys, each a non-empty string."""
    if not isinstance(scope, dict):
        return [f"{key} must be an object"]
    errors = []
    for k, v in scope.items():
        if k not in SCOPE_KEYS:
            errors.append(f"{key}.{k} is not a scope field (use {', '.join(SCOPE_KEYS)})")
        elif not isinstance(v, str) or not v.strip():
            errors.append(f"{key}.{k} must be a non-empty string")
    return errors


def _finite_json(value: Any, path: str, errors: list[str], depth: int = 0) -> None:
    if depth > 64:
        errors.append(f"{path} is nested too deeply (more than 64 levels)")
    elif isinstance(value, float) and not math.isfinite(value):
        errors.append(f"{path} must not hold NaN or Infinity")
    elif isinstance(value, int) and not -MAX_JSON_INT - 1 <= value <= MAX_JSON_INT:  # bools pass
        errors.append(f"{path} holds an integer outside the signed 64-bit range")
    elif isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                errors.append(f"{path} keys must be strings")
                return
            _finite_json(v, f"{path}.{k}", errors, depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _finite_json(v, f"{path}[{i}]", errors, depth + 1)
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        errors.append(f"{path} holds a {type(value).__name__}, which JSON cannot store")


def _observation_errors(d: dict, errors: list[str]) -> None:
    _check_enum(errors, d, "kind", OBSERVATION_KINDS)
    _check_text(errors, d, "content")
    if not isinstance(d.get("provenance"), dict):
        errors.append("provenance must be an object")
    else:
        _finite_json(d["provenance"], "provenance", errors)
    _check_timestamp(errors, d, "ts")
    if not isinstance(d.get("redacted"), bool):
        errors.append("redacted must be true or false")
    elif d["redacted"] and d.get("content") != REDACTED_CONTENT:
        errors.append(f"content of a redacted observation must be {REDACTED_CONTENT!r}")


def _capsule_errors(d: dict, errors: list[str]) -> None:
    _check_enum(errors, d, "type", CAPSULE_TYPES)
    _check_text(errors, d, "intent")
    _check_enum(errors, d, "status", CAPSULE_STATUSES)
    _check_timestamp(errors, d, "openedAt")
    if d.get("status") == "closed":
        if "closedAt" not in d:
            errors.append("closedAt is required once status is closed")
        else:
            _check_timestamp(errors, d, "closedAt")
            if is_timestamp(d.get("openedAt")) and is_timestamp(d["closedAt"]):
                if d["closedAt"] < d["openedAt"]:
                    errors.append("closedAt must not be before openedAt")
    elif "closedAt" in d:
        errors.append("closedAt is only present once status is closed")
    _check_id_list(errors, d, "observationIds")
    if "summaryId" in d:
        _check_id_field(errors, d, "summaryId")


def _summary_errors(d: dict, errors: list[str]) -> None:
    _check_text(errors, d, "content")
    c = d.get("confidence")
    if (
        isinstance(c, bool)
        or not isinstance(c, (int, float))
        or not math.isfinite(c)
        or not 0 <= c <= 1
    ):
        errors.append("confidence must be a number from 0 to 1")
    _check_id_list(errors, d, "evidenceRefs")
    _check_id_field(errors, d, "capsuleId")
    _check_timestamp(errors, d, "ts")


def _pin_errors(d: dict, errors: list[str]) -> None:
    _check_enum(errors, d, "targetType", PIN_TARGET_TYPES)
    _check_id_field(errors, d, "targetId")
    if d.get("reason") is not None and not isinstance(d.get("reason"), str):
        errors.append("reason must be a string or null")
    _check_timestamp(errors, d, "createdAt")
    _check_timestamp(errors, d, "expiresAt", nullable=True)


_CHECKS = {
    "observations": _observation_errors,
    "capsules": _capsule_errors,
    "summaries": _summary_errors,
    "pins": _pin_errors,
}


def entity_errors(entity_type: str, data: object) -> list[str]:
    """Every problem with `data` as an entity of `entity_type`; empty when it is valid."""
    noun = SINGULAR[entity_type]
    a_noun = f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"
    if not isinstance(data, dict):
        return [f"{a_noun} must be a JSON object"]
    allowed, optional = _FIELDS[entity_type]
    errors = []
    for key in sorted(allowed - optional - data.keys()):
        errors.append(f"{key} is missing")
    for key in sorted(data.keys() - allowed, key=str):
        errors.append(f"{key} is not a field of {a_noun}")
    if "id" in data:
        _check_id_field(errors, data, "id")
    if "scopeIds" in data:
        errors.extend(scope_errors(data["scopeIds"]))
    present = {k: v for k, v in data.items() if k in allowed}
    field_errors: list[str] = []
    _CHECKS[entity_type](present, field_errors)
    missing = {k for k in allowed - optional if k not in data}
    # A missing field is already reported once; don't repeat it as "must be ...".
    errors.extend(e for e in field_errors if e.split(" ", 1)[0] not in missing)
    return errors


def validate(entity_type: str, data: object) -> dict:
    """Return `data` when it is a valid entity; else raise one error naming every bad field."""
    errors = entity_errors(entity_type, data)
    if errors:
        label = SINGULAR[entity_type]
        ident = data.get("id") if isinstance(data, dict) else None
        if is_valid_id(ident):
            label = f"{label} {ident}"
        raise ValidationError(f"invalid {label}: " + "; ".join(errors))
    return data  # type: ignore[return-value]


def scope_matches(scope_ids: dict, scope: dict) -> bool:
    """True when `scope_ids` has exactly each value that `scope` asks for."""
    return all(scope_ids.get(k) == v for k, v in scope.items())


def pin_scope_matches(scope_ids: dict, scope: dict) -> bool:
    """Pins match a scope field they share, or one they do not carry at all."""
    return all(k not in scope_ids or scope_ids[k] == v for k, v in scope.items())


def entity_time(entity_type: str, entity: dict) -> int:
    """The timestamp an entity is ordered by: ts, openedAt or createdAt."""
    if entity_type == "capsules":
        return entity["openedAt"]
    if entity_type == "pins":
        return entity["createdAt"]
    return entity["ts"]
