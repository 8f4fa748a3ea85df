"""The committed record of retired observations: `.kindling/retired/<hash>.json`.

Each gc run that retires something writes the ids it retired (sorted, at most MAX_IDS a
file) with the policy and horizon it applied, named by the hash of its bytes. Two clones that
make the same run write the same file, so their pushes merge cleanly; records are never
changed, only added. A record only ever *explains* an absent observation (show, browse, fsck):
nothing is deleted because a record says so, so a hostile record can at worst mislabel.

Why a record rather than "named by a capsule but absent": a file deleted by a merge or by
hand is absent too, and must not be passed off as retired; and a record costs about 40 bytes
per observation against the 1.6 KB file it replaces.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from kindling import canonical, hashing
from kindling.fileio import is_real_dir, read_regular, write_atomic
from kindling.model import is_valid_id
from kindling.store import Store

RECORD_DIR = "retired"
RECORD_VERSION = 1
MAX_IDS = 50_000
MAX_RECORD_BYTES = 16 * 1024 * 1024


class Retired(NamedTuple):
    """A retired observation id and the record (store-relative path) that names it."""

    id: str
    record: str
    policy: dict


class BadRecord(NamedTuple):
    path: str
    reason: str


def record_dir(store: Store) -> Path:
    return store.root / RECORD_DIR


def write_records(store: Store, ids: list[str], policy: dict, horizon: int) -> list[Path]:
    """Write the record(s) of one run retiring `ids`; the paths written."""
    folder = record_dir(store)
    if folder.is_symlink():
        raise OSError(f"{folder} is a symlink; Kindling never writes through one")
    folder.mkdir(exist_ok=True)
    ordered = sorted(ids)
    written = []
    for start in range(0, len(ordered), MAX_IDS):
        body = {
            "version": RECORD_VERSION,
            "policy": policy,
            "horizon": horizon,
            "retired": ordered[start : start + MAX_IDS],
        }
        data = canonical.encode(body)
        path = folder / f"{hashing.hexdigest(data)[:16]}.json"
        if read_regular(path, follow_symlinks=False) != data:
            write_atomic(path, data)
        written.append(path)
    return written


def read_records(store: Store) -> tuple[dict[str, Retired], list[BadRecord]]:
    """Every retired id the store's records name, and the records that could not be read."""
    folder = record_dir(store)
    found: dict[str, Retired] = {}
    bad: list[BadRecord] = []
    if not is_real_dir(folder):
        return found, bad
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        rel = f"{RECORD_DIR}/{name}"
        body, reason = _read_one(folder / name)
        if body is None:
            bad.append(BadRecord(rel, reason))
            continue
        for ident in body["retired"]:
            found.setdefault(ident, Retired(ident, rel, body["policy"]))
    return found, bad


def _read_one(path: Path) -> tuple[dict | None, str]:
    try:
        raw = read_regular(path, follow_symlinks=False, limit=MAX_RECORD_BYTES)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    if raw is None:
        return None, "unreadable (no such file)"
    if len(raw) > MAX_RECORD_BYTES:
        return None, f"over {MAX_RECORD_BYTES >> 20} MiB"
    try:
        body = canonical.decode(raw)
    except canonical.DecodeError as exc:
        return None, str(exc)
    ids = body.get("retired")
    if body.get("version") != RECORD_VERSION or not isinstance(ids, list):
        return None, "not a retirement record (version 1 with a `retired` list)"
    if not all(is_valid_id(i) for i in ids) or not isinstance(body.get("policy"), dict):
        return None, "a retirement record holds an invalid id or policy"
    return body, ""


def find_retired(store: Store, ref: str, min_prefix: int = 6) -> list[Retired]:
    """Retired ids equal to `ref`, else starting with it (when it is long enough)."""
    found, _ = read_records(store)
    if ref in found:
        return [found[ref]]
    if len(ref) < min_prefix:
        return []
    return [found[i] for i in sorted(found) if i.startswith(ref)]
