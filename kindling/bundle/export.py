"""Write a store (or one scope of it) as an export bundle, streaming.

Two passes over the files: the first keeps only (sort key, id, path) per entity, the second
reads each entity again in bundle order and writes it out at once, so memory holds the sort
keys, never the store.

Scope filters follow search: observations, capsules and summaries match when their scopeIds
carry every requested value exactly (`model.scope_matches`); pins also match a scope field they
do not carry at all (`model.pin_scope_matches`), as pins do in search.

`format="original"` writes the bundle the original Kindling (TypeScript and Rust) imports
whole: entities in its shape (`original.to_original`), and only references its importers can
keep (they enforce foreign keys): capsule members that are in the bundle, and summaries whose
capsule is.
"""

from __future__ import annotations

import os
from typing import BinaryIO, NamedTuple

from kindling import canonical
from kindling.bundle import original
from kindling.bundle.format import BUNDLE_VERSION, DATASET_VERSION, DESCRIPTION, iso_utc
from kindling.clock import now_ms
from kindling.errors import CorruptFileError, ValidationError
from kindling.fileio import atomic_output, check_output_path, read_regular
from kindling.model import (
    ENTITY_TYPES,
    SINGULAR,
    entity_time,
    pin_scope_matches,
    scope_errors,
    scope_matches,
)
from kindling.store import Problem, Store, fanout


class ExportReport(NamedTuple):
    """What an export wrote: entity counts per type, and the files it had to leave out."""

    exported_at: int
    counts: dict[str, int]
    problems: list[Problem]


def _matches(entity_type: str, entity: dict, scope: dict) -> bool:
    if not scope:
        return True
    if entity_type == "pins":
        return pin_scope_matches(entity["scopeIds"], scope)
    return scope_matches(entity["scopeIds"], scope)


class _Filter:
    """Which entities belong in this export; learns redacted ids as observations go by."""

    def __init__(self, scope: dict, include_redacted: bool) -> None:
        self.scope = scope
        self.include_redacted = include_redacted
        self.redacted: set[str] = set()

    def keep(self, entity_type: str, entity: dict) -> bool:
        if entity_type == "observations" and entity["redacted"]:
            self.redacted.add(entity["id"])
            if not self.include_redacted:
                return False
        if (
            entity_type == "pins"
            and not self.include_redacted
            and entity["targetType"] == "observation"
            and entity["targetId"] in self.redacted
        ):
            return False
        return _matches(entity_type, entity, self.scope)


class _Shape:
    """How entities are written: as stored, or as the original Kindling reads them."""

    def __init__(self, fmt: str) -> None:
        if fmt not in original.FORMATS:
            raise ValidationError(f"format must be one of {', '.join(original.FORMATS)}")
        self.original = fmt == "original"
        self.written: dict[str, set[str]] = {etype: set() for etype in ENTITY_TYPES}

    def __call__(self, entity_type: str, entity: dict) -> dict | None:
        """The entity to write, or None to leave it out."""
        if not self.original:
            return entity
        if entity_type == "capsules":
            members = self.written["observations"]
            kept = [m for m in entity["observationIds"] if m in members]
            if len(kept) != len(entity["observationIds"]):
                entity = {**entity, "observationIds": kept}
        elif entity_type == "summaries" and entity["capsuleId"] not in self.written["capsules"]:
            return None
        self.written[entity_type].add(entity["id"])
        return original.to_original(entity_type, entity)


def _peek(entity_type: str, path: str, data: bytes) -> dict:
    """Parse and validate a file in the first pass, checking it sits where its id belongs."""
    entity = Store.parse_entity(entity_type, path, data)
    name = os.path.basename(path)[: -len(".json")]
    if entity["id"] != name or os.path.basename(os.path.dirname(path)) != fanout(name):
        raise CorruptFileError(path, f"holds id {entity['id']!r}, which belongs elsewhere")
    return entity


def _read(path: str) -> bytes:
    data = read_regular(path, follow_symlinks=False)
    if data is None:
        raise FileNotFoundError(2, "No such file or directory", path)
    return data


def _sorted_keys(
    store: Store, entity_type: str, keep: _Filter, problems: list[Problem]
) -> list[tuple[int, str, int]]:
    """The first pass for one type: (sort key, id, hash of the bytes) of each kept file.

    Paths are not kept: `_peek` checked that each file sits where its id says.
    """
    keys = []
    for found in store.walk(entity_type):
        try:
            data = _read(found.path)
            entity = _peek(entity_type, found.path, data)
        except FileNotFoundError:
            continue  # removed since the walk saw it (unpin)
        except OSError as exc:
            problems.append(Problem(found.path, f"unreadable ({exc.strerror})"))
            continue
        except CorruptFileError as exc:
            problems.append(Problem(exc.path, exc.reason))
            continue
        if keep.keep(entity_type, entity):
            keys.append((entity_time(entity_type, entity), entity["id"], hash(data)))
    keys.sort()
    return keys


def _write_entities(
    out: BinaryIO,
    store: Store,
    entity_type: str,
    keys: list[tuple[int, str, int]],
    keep: _Filter,
    problems: list[Problem],
    step=None,
    shape: _Shape | None = None,
) -> int:
    """The second pass for one type: re-read in order and write; returns how many were written."""
    out.write(f'    "{entity_type}": ['.encode())
    written = 0
    folder = os.path.join(store.objects, entity_type)
    for _, entity_id, checked in keys:
        if step is not None:
            step(1)
        path = os.path.join(folder, fanout(entity_id), entity_id + ".json")
        try:
            data = _read(path)
            if hash(data) == checked:
                entity = canonical.decode(data)  # the very bytes the first pass validated
            else:
                # Changed since the first pass (forgotten, say): check it all again.
                entity = _peek(entity_type, path, data)
                if not keep.keep(entity_type, entity):
                    continue
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(Problem(path, f"unreadable ({exc.strerror})"))
            continue
        except CorruptFileError as exc:
            problems.append(Problem(exc.path, exc.reason))
            continue
        if shape is not None:
            entity = shape(entity_type, entity)
            if entity is None:
                continue
        out.write(b"\n      " if written == 0 else b",\n      ")
        out.write(canonical.encode_compact(entity))
        written += 1
    out.write(b"\n    ]" if written else b"]")
    return written


def export_bundle(
    store: Store,
    out: BinaryIO,
    *,
    scope: dict | None = None,
    include_redacted: bool = False,
    exported_at: int | None = None,
    progress=None,
    format: str = "kindling",
) -> ExportReport:
    """Write a bundle of `store` to the binary stream `out`; byte-identical for the same store."""
    scope = dict(scope or {})
    errors = scope_errors(scope, "scope")
    if errors:
        raise ValidationError("; ".join(errors))
    shape = _Shape(format)
    stamp = now_ms() if exported_at is None else exported_at
    keep = _Filter(scope, include_redacted)
    problems: list[Problem] = []
    counts: dict[str, int] = {}

    head = f'{{\n  "bundleVersion": "{BUNDLE_VERSION}",\n  "exportedAt": {stamp},\n'
    head += f'  "dataset": {{\n    "version": "{DATASET_VERSION}",\n    "exportedAt": {stamp},\n'
    out.write(head.encode())
    if scope:
        out.write(b'    "scope": ' + canonical.encode_compact(scope) + b",\n")
    for n, etype in enumerate(ENTITY_TYPES):
        # Keys for one type at a time; observations go first, so every redacted id is known
        # before the pins that may point at them are filtered.
        keys = _sorted_keys(store, etype, keep, problems)
        step = progress(f"Exporting {etype}", len(keys)) if progress else None
        counts[etype] = _write_entities(out, store, etype, keys, keep, problems, step, shape)
        del keys
        out.write(b",\n" if n < len(ENTITY_TYPES) - 1 else b"\n")
    metadata = canonical.encode_compact(DESCRIPTION).decode()
    out.write(
        (
            f'  }},\n  "metadata": {{\n    "description": {metadata},\n'
            f'    "exportedAt": "{iso_utc(stamp)}"\n  }}\n}}\n'
        ).encode()
    )
    out.flush()
    problems.sort()
    return ExportReport(stamp, counts, problems)


def export_to_path(store: Store, path: str | os.PathLike, **options) -> ExportReport:
    """Export into a file atomically: a temp file beside it, fsync, then rename over it.

    The file's folder must exist: a mistyped path is an error, not a new tree of folders.
    """
    check_output_path(path)
    with atomic_output(path, make_parents=False) as fh:
        return export_bundle(store, fh, **options)


def describe(report: ExportReport) -> str:
    """One line for people: `Exported 3 observations, 1 capsule, 0 summaries and 1 pin.`"""
    parts = []
    for etype in ENTITY_TYPES:
        n = report.counts.get(etype, 0)
        parts.append(f"{n} {etype if n != 1 else SINGULAR[etype]}")
    return f"Exported {', '.join(parts[:-1])} and {parts[-1]}."
