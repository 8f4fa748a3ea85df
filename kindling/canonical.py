"""The only code that turns entities into bytes and back.

Canonical form: UTF-8, keys sorted, 2-space indent, `": "` after keys, LF line ends, one
trailing newline, non-ASCII kept as-is, no NaN/Infinity. The same entity gives the same bytes
on every machine, so a diff of the store shows only real changes.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from kindling import hashing
from kindling.errors import KindlingError, ValidationError

_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
_CONFLICT_PREFIXES = (b"<<<<<<<", b"=======", b">>>>>>>")


class DecodeError(KindlingError, ValueError):
    """Bytes that are not a JSON object; the message is a one-line reason."""


class EncodeError(ValidationError):
    """A value that cannot be stored as canonical JSON; nothing was written."""


def encode(entity: Any) -> bytes:
    """Canonical bytes of an already-validated entity (or any JSON value); no NaN/Infinity."""
    try:
        data = orjson.dumps(entity, option=_OPTIONS)
    except (orjson.JSONEncodeError, TypeError) as exc:
        raise EncodeError(f"cannot be stored as JSON: {exc}") from None
    # orjson writes NaN and Infinity as null; only output holding a null can hide one.
    if b"null" in data and _has_non_finite(entity):
        raise EncodeError("cannot be stored as JSON: NaN and Infinity are not JSON numbers")
    return data


def _has_non_finite(value: Any) -> bool:
    """True when a float anywhere in `value` is NaN or an infinity."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_non_finite(v) for v in value)
    return False


def encode_compact(value: Any) -> bytes:
    """Compact JSON (no indent, keys sorted) for the index and token estimates."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def has_conflict_markers(data: bytes) -> bool:
    """True when the bytes hold a line that starts like a git merge conflict marker."""
    for line in data.splitlines():
        if line.startswith(_CONFLICT_PREFIXES):
            return True
    return False


def decode(data: bytes) -> dict:
    """Parse stored bytes into a dict, or raise DecodeError with a reason for a person."""
    if not data.strip():
        raise DecodeError("empty file")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if has_conflict_markers(data):
            raise DecodeError(
                "holds git merge conflict markers (<<<<<<< ======= >>>>>>>)"
            ) from None
        raise DecodeError(f"not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise DecodeError(f"not a JSON object (found {type(value).__name__})")
    return value


def loads(data: bytes | str) -> Any:
    """Parse any JSON value (bundles, --provenance), raising DecodeError on bad input."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"not valid JSON ({exc})") from None


def content_hash(data: bytes) -> str:
    """The hash the index records for a file's bytes."""
    return hashing.hexdigest(data)
