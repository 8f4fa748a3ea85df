"""The export bundle format (formats.txt, "Export bundle"): versions, header, and a parser
that checks a whole bundle before anything is done with it.

Writing a bundle lives in `kindling.bundle.export`, reading one into a store in
`kindling.bundle.importer`.
"""

from __future__ import annotations

import os
import sys
import zlib
from typing import NamedTuple

from kindling import canonical
from kindling.bundle import original
from kindling.clock import format_utc
from kindling.errors import KindlingError, ValidationError
from kindling.fileio import read_regular
from kindling.model import (
    ENTITY_TYPES,
    SINGULAR,
    entity_errors,
    is_timestamp,
    is_valid_id,
    scope_errors,
)

BUNDLE_VERSION = "1.0"
DATASET_VERSION = "1.0"
DESCRIPTION = "Kindling memory export"
# Largest bundle read, after decompression: a gzip bomb stops here rather than filling memory.
MAX_BUNDLE_BYTES = 512 << 20
_GZIP_CHUNK = 1 << 16
_PIECES_FROM = 4 << 20  # bundles this big are parsed list by list when laid out as export writes
# Errors listed in one message before the rest are summarised as "and N more".
MAX_LISTED_ERRORS = 20

_TOP_KEYS = {"bundleVersion", "exportedAt", "dataset", "metadata"}
_DATASET_KEYS = {"version", "exportedAt", "scope", *ENTITY_TYPES}


class Dataset(NamedTuple):
    """A parsed, fully validated bundle: its header values and entities per type, in order."""

    exported_at: int
    scope: dict | None
    entities: dict[str, list[dict]]
    # What was normalised from the original Kindling's shape, and for how many entities.
    normalised: dict[str, int] = {}

    def __len__(self) -> int:
        return sum(len(items) for items in self.entities.values())


def iso_utc(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds, e.g. 2025-06-20T11:05:00.000Z."""
    text = format_utc(ms, "%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}Z" if is_timestamp(ms) else text


def entity_label(entity_type: str, index: int, entity: object) -> str:
    """How an error names a bundle entity: `observations[3] (id 9c20f3a1-...)`."""
    label = f"{entity_type}[{index}]"
    ident = entity.get("id") if isinstance(entity, dict) else None
    if is_valid_id(ident):
        label += f" (id {ident})"
    elif isinstance(ident, str):
        shown = repr(ident) if len(ident) <= 60 else repr(ident[:57] + "...")
        label += f" (id {shown})"
    return label


def _raise_all(errors: list[str]) -> None:
    if not errors:
        return
    shown = errors[:MAX_LISTED_ERRORS]
    more = len(errors) - len(shown)
    lines = "\n  ".join(shown)
    tail = f"\n  ... and {more} more" if more else ""
    noun = "problem" if len(errors) == 1 else "problems"
    raise ValidationError(
        f"invalid bundle ({len(errors)} {noun}; nothing was imported):\n  {lines}{tail}"
    )


def _check_version(where: str, value: object, expected: str) -> None:
    if value is None:
        raise ValidationError(f"invalid bundle: {where} is missing; nothing was imported")
    if value != expected:
        raise ValidationError(
            f"unsupported bundle version: {where} is {value!r}, this Kindling reads {expected!r}; "
            "nothing was imported"
        )


def decode_bundle(data: bytes) -> object:
    """Bytes (plain or gzip-compressed JSON) to a JSON value, or a ValidationError."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gunzip(data, MAX_BUNDLE_BYTES)
        except zlib.error as exc:
            raise ValidationError(f"invalid bundle: broken gzip data ({exc})") from None
    elif len(data) > MAX_BUNDLE_BYTES:
        raise ValidationError(_too_big())
    if not data.strip():
        raise ValidationError("invalid bundle: the input is empty")
    value = _loads_in_pieces(data) if len(data) >= _PIECES_FROM else None
    if value is not None:
        return value
    try:
        return canonical.loads(data)
    except canonical.DecodeError as exc:
        raise ValidationError(f"invalid bundle: {exc}") from None


def _loads_in_pieces(data: bytes | bytearray) -> object | None:
    """A bundle with one entity per line (as export writes it), parsed line by line.

    The parser's own tree then never spans the whole file, so the peak memory is the parsed
    entities, not those plus a tree of them. A raw newline is never inside a JSON string, so
    each line that is an object (`{...}` or `{...},`) is a whole value; the runs of them are
    put back into the dataset's entity lists. None when the layout is any other, or anything
    fails: the whole input is then parsed at once, which says exactly what is wrong.
    """
    nonce = os.urandom(8).hex()
    skeleton: list[bytes] = []
    runs: list[list] = []
    run: list | None = None
    pos, end = 0, len(data)
    try:
        while pos < end:
            nl = data.find(b"\n", pos)
            stop = end if nl < 0 else nl
            line = bytes(data[pos:stop]).strip(b" \t\r")  # JSON's whitespace, no other
            pos = stop + 1
            if line[:1] == b"{" and (line[-1:] == b"}" or line[-2:] == b"},"):
                if line[-1:] == b"," and run is None:
                    run = []
                    runs.append(run)
                    skeleton.append(b'"%s-%d"' % (nonce.encode(), len(runs) - 1))
                if run is not None:
                    run.append(canonical.loads(line[:-1] if line[-1:] == b"," else line))
                    if line[-1:] != b",":
                        run = None  # the list's last entity
                    continue
            if run is not None:
                return None  # a run that ends with a comma: another layout
            skeleton.append(line)
        if run is not None or not runs:
            return None
        value = canonical.loads(b"\n".join(skeleton))
    except canonical.DecodeError:
        return None
    return _put_back(value, runs, nonce)


def _put_back(value: object, runs: list[list], nonce: str) -> object | None:
    """Each entity list that holds just a run's marker gets the run; None if any is elsewhere."""
    dataset = value.get("dataset") if isinstance(value, dict) else None
    if not isinstance(dataset, dict):
        return None
    used = 0
    for key, items in dataset.items():
        if isinstance(items, list) and len(items) == 1 and isinstance(items[0], str):
            head, _, number = items[0].partition("-")
            if head == nonce and number == str(used) and key in ENTITY_TYPES:
                dataset[key] = runs[used]
                used += 1
    return value if used == len(runs) else None


def _too_big() -> str:
    return f"invalid bundle: over {MAX_BUNDLE_BYTES >> 20} MiB of JSON; nothing was imported"


def gunzip(data: bytes, limit: int) -> bytearray:
    """Decompress gzip data (every member) into one buffer, refusing more than `limit` bytes.

    Streamed in chunks, so memory holds the output once, and never more than `limit`.
    """
    out = bytearray()
    view = memoryview(data)
    end = len(data.rstrip(b"\0"))  # gzip tolerates zero padding after the last member
    start = 0
    while start < end:
        inflater = zlib.decompressobj(wbits=31)
        pos = start
        while not inflater.eof:
            if pos >= end:
                raise zlib.error("the data ends before the compressed stream does")
            pending: bytes | memoryview = view[pos : pos + _GZIP_CHUNK]
            pos += len(pending)
            while not inflater.eof:
                # Small output steps: one chunk of compressed input can inflate a thousandfold.
                piece = inflater.decompress(pending, _GZIP_CHUNK * 16)
                out += piece
                if len(out) > limit:
                    raise ValidationError(_too_big())
                pending = inflater.unconsumed_tail
                if not pending and len(piece) < _GZIP_CHUNK * 16:
                    break  # this input is used up and nothing more is waiting to come out
        start = pos - len(inflater.unused_data)
    return out


def parse_bundle(data: bytes) -> Dataset:
    """Parse and check a whole bundle; any problem raises one error that lists them all.

    A bundle written by the original Kindling is read too: `original.normalise` brings it to
    the canonical shape first, and the Dataset says what that changed.
    """
    value, normalised = original.normalise(decode_bundle(data))
    exported_at, scope, entities, _ = check_bundle(value)
    return Dataset(exported_at, scope, entities, normalised)


def check_bundle(value: object) -> Dataset:
    """Check a decoded bundle field by field, every entity with the store's own validation."""
    if not isinstance(value, dict):
        raise ValidationError(
            f"invalid bundle: expected a JSON object, found {type(value).__name__}"
        )
    _check_version("bundleVersion", value.get("bundleVersion"), BUNDLE_VERSION)
    dataset = value.get("dataset")
    if not isinstance(dataset, dict):
        what = "missing" if dataset is None else "not an object"
        raise ValidationError(f"invalid bundle: dataset is {what}; nothing was imported")
    _check_version("dataset.version", dataset.get("version"), DATASET_VERSION)

    errors: list[str] = []
    for key in sorted(value.keys() - _TOP_KEYS):
        errors.append(f"{key} is not a bundle field")
    for key in sorted(dataset.keys() - _DATASET_KEYS):
        errors.append(f"dataset.{key} is not a dataset field")
    if not is_timestamp(value.get("exportedAt")):
        errors.append("exportedAt must be an integer from 0 to year 9999 (epoch milliseconds)")
    if not is_timestamp(dataset.get("exportedAt")):
        errors.append(
            "dataset.exportedAt must be an integer from 0 to year 9999 (epoch milliseconds)"
        )
    if "metadata" in value and not isinstance(value["metadata"], dict):
        errors.append("metadata must be an object")
    scope = dataset.get("scope")
    if "scope" in dataset:
        errors.extend(scope_errors(scope, "dataset.scope"))

    entities: dict[str, list[dict]] = {}
    for etype in ENTITY_TYPES:
        items = dataset.get(etype)
        if not isinstance(items, list):
            what = "missing" if items is None else "not a list"
            errors.append(f"dataset.{etype} is {what}")
            entities[etype] = []
            continue
        entities[etype] = items
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            for problem in entity_errors(etype, item):
                errors.append(f"{entity_label(etype, i, item)}: {problem}")
            ident = item.get("id") if isinstance(item, dict) else None
            if is_valid_id(ident):
                if ident in seen:
                    errors.append(
                        f"{entity_label(etype, i, item)}: id is a duplicate of "
                        f"{etype}[{seen[ident]}] "
                        f"(each {SINGULAR[etype]} id may appear once)"
                    )
                else:
                    seen[ident] = i
    _raise_all(errors)
    return Dataset(value["exportedAt"], scope if "scope" in dataset else None, entities)


def read_source(source: str) -> bytes:
    """The bytes of a bundle file, or of stdin when `source` is `-`."""
    if source == "-":
        data = sys.stdin.buffer.read(MAX_BUNDLE_BYTES + 1)
    else:
        try:
            data = read_regular(source, limit=MAX_BUNDLE_BYTES)
        except OSError as exc:
            raise KindlingError(f"cannot read {source}: {exc.strerror}") from None
        if data is None:
            raise KindlingError(f"cannot read {source}: no such file")
    if len(data) > MAX_BUNDLE_BYTES:
        raise KindlingError(f"{source} is over {MAX_BUNDLE_BYTES >> 20} MiB; nothing was imported")
    return data
