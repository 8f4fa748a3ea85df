"""Three-way, field-level merge of one entity (and of one entity file's bytes): the rules git's
merge driver, `kindling resolve` and `kindling import` share. Pure: no I/O, inputs are never
modified.

Rules, field by field (a field absent from a side counts as a value of its own):
- both sides agree, or only one side changed the field: take that value;
- `observationIds` (capsules) and `evidenceRefs` (summaries): ordered union of base, then
  ours' additions, then theirs'. Kindling only ever appends to these lists, so an id missing
  on one side was never removed on purpose and is kept;
- capsule `status`: closed beats open. `closedAt` comes from the side that closed it; when
  both sides closed it at different times the later one is kept, so the merged capsule's
  [openedAt, closedAt] window covers the work of both branches;
- observation `redacted`: true on either side wins, and the merge then carries content
  `[redacted]` and provenance `{}` whatever the other side held;
- `scopeIds` merges key by key (a conflict is named `scopeIds.<key>`);
- a summary or pin whose id derives from what it is about (its capsule; its target and
  scope), written differently on both sides, is settled the same way in every clone
  (`_settled`): the later one is kept;
- anything else both sides changed differently is a conflict.
The merged entity must validate; when it does not, its bad fields are reported as conflicts.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from kindling import canonical
from kindling.errors import ValidationError
from kindling.model import (
    ENTITY_TYPES,
    REDACTED_CONTENT,
    derived_id,
    entity_errors,
    pin_id,
    type_of_new_id,
)

_LIST_UNIONS = {"capsules": ("observationIds",), "summaries": ("evidenceRefs",)}
_MISSING: Any = object()


class MergeResult(NamedTuple):
    """The merged entity (None when anything conflicts) and the conflicting field names."""

    merged: dict | None
    conflicts: list[str]


def ordered_union(*lists: object) -> list:
    """Items of each list in turn, each kept once at its first position; non-lists skipped."""
    seen: set = set()
    out: list = []
    for items in lists:
        if not isinstance(items, list):
            continue
        for item in items:
            key = _hashable(item)
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out


def _hashable(value: object) -> object:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return (type(value).__name__, value)


def _pick(base: Any, ours: Any, theirs: Any) -> tuple[Any, bool]:
    """The plain three-way rule for one value: (result, conflicted)."""
    if ours == theirs:
        return ours, False
    if ours == base:
        return theirs, False
    if theirs == base:
        return ours, False
    return _MISSING, True


def _merge_scope(base: Any, ours: Any, theirs: Any, conflicts: list[str]) -> Any:
    if not all(isinstance(v, dict) or v is _MISSING for v in (base, ours, theirs)):
        value, conflicted = _pick(base, ours, theirs)
        if conflicted:
            conflicts.append("scopeIds")
        return value
    b = base if isinstance(base, dict) else {}
    o = ours if isinstance(ours, dict) else {}
    t = theirs if isinstance(theirs, dict) else {}
    merged = {}
    for key in sorted(b.keys() | o.keys() | t.keys()):
        value, conflicted = _pick(b.get(key, _MISSING), o.get(key, _MISSING), t.get(key, _MISSING))
        if conflicted:
            conflicts.append(f"scopeIds.{key}")
        elif value is not _MISSING:
            merged[key] = value
    return merged


def _merge_capsule_close(base: dict, ours: dict, theirs: dict, merged: dict) -> None:
    """Closed beats open; closedAt from the closing side, the later one when both closed."""
    closers = [side for side in (ours, theirs) if side.get("status") == "closed"]
    if not closers:
        status, _ = _pick(
            base.get("status", _MISSING),
            ours.get("status", _MISSING),
            theirs.get("status", _MISSING),
        )
        if status is not _MISSING:
            merged["status"] = status  # anything but "open" here fails validation
        return
    merged["status"] = "closed"
    times = [side.get("closedAt") for side in closers]
    ints = [t for t in times if isinstance(t, int) and not isinstance(t, bool)]
    if ints:
        merged["closedAt"] = max(ints)
    elif "closedAt" in closers[0]:
        merged["closedAt"] = closers[0]["closedAt"]


def merge_entity(entity_type: str, base: dict | None, ours: dict, theirs: dict) -> MergeResult:
    """Merge two edits of one entity against their common ancestor (None when there is none)."""
    if entity_type not in ENTITY_TYPES:
        raise ValidationError(f"unknown entity type {entity_type!r}")
    if not isinstance(ours, dict) or not isinstance(theirs, dict):
        return MergeResult(None, ["<not an object>"])
    b = base if isinstance(base, dict) else {}
    if ours == theirs:
        merged = copy.deepcopy(ours)
        return _checked(entity_type, merged, [])
    if ours.get("id") != theirs.get("id"):
        return MergeResult(None, ["id"])
    conflicts: list[str] = []
    merged: dict = {}
    _merge_plain_fields(entity_type, b, ours, theirs, merged, conflicts)
    _merge_lists(entity_type, b, ours, theirs, merged, conflicts)
    if any("scopeIds" in side for side in (b, ours, theirs)):
        scope = _merge_scope(
            b.get("scopeIds", _MISSING),
            ours.get("scopeIds", _MISSING),
            theirs.get("scopeIds", _MISSING),
            conflicts,
        )
        if scope is not _MISSING:
            merged["scopeIds"] = copy.deepcopy(scope)
    if entity_type == "capsules":
        _merge_capsule_close(b, ours, theirs, merged)
    if entity_type == "observations":
        conflicts = _merge_redaction(b, ours, theirs, merged, conflicts)
    conflicts = _settled(entity_type, ours, theirs, merged, conflicts)
    return _checked(entity_type, merged, conflicts)


def _merge_plain_fields(
    entity_type: str, base: dict, ours: dict, theirs: dict, merged: dict, conflicts: list[str]
) -> None:
    """Every field without a rule of its own: the plain three-way pick."""
    special = set(_LIST_UNIONS.get(entity_type, ())) | {"scopeIds"}
    if entity_type == "capsules":
        special |= {"status", "closedAt"}
    if entity_type == "observations":
        special |= {"redacted"}
    for key in sorted(base.keys() | ours.keys() | theirs.keys(), key=str):
        if key in special:
            continue
        value, conflicted = _pick(
            base.get(key, _MISSING), ours.get(key, _MISSING), theirs.get(key, _MISSING)
        )
        if conflicted:
            conflicts.append(key)
        elif value is not _MISSING:
            merged[key] = copy.deepcopy(value)


def _merge_lists(
    entity_type: str, base: dict, ours: dict, theirs: dict, merged: dict, conflicts: list[str]
) -> None:
    """Member and evidence lists: the ordered union of both sides (base order first)."""
    for key in _LIST_UNIONS.get(entity_type, ()):
        sides = [s.get(key, _MISSING) for s in (base, ours, theirs)]
        if all(v is _MISSING for v in sides[1:]):
            continue
        if any(v is not _MISSING and not isinstance(v, list) for v in sides):
            value, conflicted = _pick(*sides)
            if conflicted:
                conflicts.append(key)
            elif value is not _MISSING:
                merged[key] = copy.deepcopy(value)
        else:
            merged[key] = copy.deepcopy(ordered_union(*sides))


def _merge_redaction(
    base: dict, ours: dict, theirs: dict, merged: dict, conflicts: list[str]
) -> list[str]:
    """A forgotten observation stays forgotten, whatever the other side did to its content."""
    if ours.get("redacted") is True or theirs.get("redacted") is True:
        merged["redacted"] = True
        merged["content"] = REDACTED_CONTENT
        merged["provenance"] = {}
        return [c for c in conflicts if c not in ("content", "provenance")]
    value, conflicted = _pick(
        base.get("redacted", _MISSING),
        ours.get("redacted", _MISSING),
        theirs.get("redacted", _MISSING),
    )
    if conflicted:
        conflicts.append("redacted")
    elif value is not _MISSING:
        merged["redacted"] = value
    return conflicts


def _settled(entity_type: str, ours: dict, theirs: dict, merged: dict, conflicts: list[str]):
    """Conflicts every clone settles alike, whichever side it stands on (so two clones that
    merge the same pair write the same bytes); the rest stay conflicts.

    Only entities whose id derives from what they are about, so both sides are one thing:
    - the summary of a capsule (id derived from the capsule's) written twice: the later one
      is kept whole, so the owner's summary at its session's end wins over a digest of the
      capsule made earlier by a clone that saw it abandoned;
    - the pin of a target and scope (id derived from them) made twice: the later one, then
      the one whose bytes sort last.
    """
    if not conflicts or not _derived(entity_type, ours) or ours.get("id") != theirs.get("id"):
        return conflicts
    key = "ts" if entity_type == "summaries" else "createdAt"
    sides = sorted((ours, theirs), key=lambda side: (_int(side.get(key)), _bytes(side)))
    merged.clear()
    merged.update(copy.deepcopy(sides[-1]))
    text = "content" if entity_type == "summaries" else "reason"
    if sides[0].get(text) == REDACTED_CONTENT:
        merged[text] = REDACTED_CONTENT  # forgotten on one side: forgotten
    return []


def _derived(entity_type: str, entity: dict) -> bool:
    """True when the entity's id is the one Kindling derives from what it is about."""
    try:
        if entity_type == "summaries":
            return entity["id"] == derived_id("summaries", entity["capsuleId"])
        if entity_type == "pins":
            about = (entity["targetType"], entity["targetId"], entity["scopeIds"])
            return entity["id"] == pin_id(*about)
    except (KeyError, TypeError, canonical.EncodeError):
        return False
    return False


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _bytes(entity: dict) -> bytes:
    try:
        return canonical.encode(entity)
    except canonical.EncodeError:
        return repr(entity).encode("utf-8", "replace")


def _checked(entity_type: str, merged: dict, conflicts: list[str]) -> MergeResult:
    if conflicts:
        return MergeResult(None, sorted(set(conflicts)))
    errors = entity_errors(entity_type, merged)
    if errors:
        fields = sorted({error.split(" ", 1)[0] for error in errors})
        return MergeResult(None, fields)
    return MergeResult(merged, [])


# ---------------------------------------------------------------- whole files

_TYPE_MARKERS = (
    ("capsules", "observationIds"),
    ("pins", "targetType"),
    ("summaries", "evidenceRefs"),
    ("observations", "kind"),
)


class FileMerge(NamedTuple):
    """A merged entity file: its bytes, whether it is clean, and what needs a human."""

    data: bytes
    clean: bool
    conflicts: list[str]


def type_from_path(path: str | None) -> str | None:
    """The entity type an `objects/<type>/...` path names, when it names one."""
    if not path:
        return None
    parts = path.replace("\\", "/").split("/")
    for i, part in enumerate(parts[:-1]):
        if part == "objects" and i + 1 < len(parts) and parts[i + 1] in ENTITY_TYPES:
            return parts[i + 1]
    return None


def type_from_content(*entities: object) -> str | None:
    """The entity type the fields (or, failing that, the id prefix) of the entities announce."""
    for entity in entities:
        if not isinstance(entity, dict):
            continue
        for etype, key in _TYPE_MARKERS:
            if key in entity:
                return etype
        ident = entity.get("id")
        if isinstance(ident, str):
            found = type_of_new_id(ident)
            if found:
                return found
    return None


def _parse(data: bytes | None) -> dict | None:
    if data is None:
        return None
    try:
        return canonical.decode(data)
    except canonical.DecodeError:
        return None


def _section(data: bytes | None, entity: dict | None) -> bytes:
    if entity is not None:
        try:
            return canonical.encode(entity)
        except canonical.EncodeError:
            pass
    if not data:
        return b""
    return data if data.endswith(b"\n") else data + b"\n"


def conflict_bytes(
    ours: bytes | None,
    theirs: bytes | None,
    *,
    ours_label: str = "ours",
    theirs_label: str = "theirs",
    marker_size: int = 7,
) -> bytes:
    """Git-style conflict markers around both sides (canonical JSON when a side parses)."""
    size = max(7, marker_size)
    return b"".join(
        [
            b"<" * size + b" " + ours_label.encode("utf-8", "replace") + b"\n",
            _section(ours, _parse(ours)),
            b"=" * size + b"\n",
            _section(theirs, _parse(theirs)),
            b">" * size + b" " + theirs_label.encode("utf-8", "replace") + b"\n",
        ]
    )


def merge_files(
    base: bytes | None,
    ours: bytes | None,
    theirs: bytes | None,
    *,
    path: str | None = None,
    ours_label: str = "ours",
    theirs_label: str = "theirs",
    marker_size: int = 7,
) -> FileMerge:
    """Merge three versions of an entity file; never raises on bad bytes (they conflict)."""

    def conflict(fields: list[str]) -> FileMerge:
        data = conflict_bytes(
            ours, theirs, ours_label=ours_label, theirs_label=theirs_label, marker_size=marker_size
        )
        return FileMerge(data, False, fields)

    o, t = _parse(ours), _parse(theirs)
    unparsed = [name for name, side in (("ours", o), ("theirs", t)) if side is None]
    if unparsed:
        return conflict([f"<{name} does not parse as a JSON object>" for name in unparsed])
    b = _parse(base) if base else None
    entity_type = type_from_path(path) or type_from_content(o, t, b)
    if entity_type is None:
        return conflict(["<not a Kindling entity>"])
    if type_from_content(o) not in (None, entity_type) or type_from_content(t) not in (
        None,
        entity_type,
    ):
        return conflict(["<sides hold different entity types>"])
    result = merge_entity(entity_type, b, o, t)
    if result.merged is None:
        return conflict(result.conflicts)
    return FileMerge(canonical.encode(result.merged), True, [])
