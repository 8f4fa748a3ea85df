"""Read an export bundle into a store: everything checked first, then written in one pass.

Per entity id: absent here -> added; identical -> unchanged; different -> a field-level merge
with no common ancestor (`kindling.git.merge`): a clean merge is written ("merged"), a real conflict
keeps the local file (`--on-conflict keep`), takes the bundle's values for the conflicting fields
(`theirs`), or stops the import before anything is written (`fail`). Whatever the option, a
locally forgotten observation stays redacted, and a tombstone in the bundle redacts the local
observation. Secrets are masked on the way in, as on capture. A pin whose target is in neither
the bundle nor the store is skipped, never written dangling. Bundles of the original Kindling
arrive normalised (`kindling.bundle.original`); the report says what that changed.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kindling import canonical
from kindling.bundle.format import Dataset, entity_label, parse_bundle
from kindling.bundle.inbound import inbound_entity
from kindling.bundle.plan import Decision, ImportInterrupted
from kindling.bundle.recording import BackgroundRecorder
from kindling.bundle.report import ImportReport
from kindling.errors import CorruptFileError, KindlingError, ValidationError
from kindling.fileio import read_regular
from kindling.forgetting import forgotten
from kindling.git.merge import merge_entity
from kindling.model import (
    ENTITY_TYPES,
    PLURAL,
    SINGULAR,
    entity_errors,
    validate,
)
from kindling.progress import ProgressFactory, Step
from kindling.store import Store, WrittenFile

if TYPE_CHECKING:
    from kindling.memory import Memory
    from kindling.writer import Writer

ON_CONFLICT = ("keep", "theirs", "fail")
_WRITTEN: dict = {}  # what a final decision holds in place of the entity it wrote
MAX_LISTED_CONFLICTS = 20


# ---------------------------------------------------------------- deciding, one entity at a time


def decide(
    entity_type: str,
    theirs: dict,
    path: str | Path,
    local: bytes | None,
    on_conflict: str,
    masked: int = 0,
) -> Decision:
    """What to do with `theirs` given the local file's bytes (None when there is none)."""
    if local is None:
        return Decision(entity_type, theirs, "added", theirs, None, masked=masked)
    if canonical.encode(theirs) == local:
        return Decision(entity_type, theirs, "unchanged", expect=local)
    try:
        ours = Store.parse_entity(entity_type, path, local)
    except CorruptFileError as exc:
        reason = f"the local file is unreadable ({exc.reason}); left as it is"
        return Decision(entity_type, theirs, "skipped", expect=local, reason=reason)
    if ours == theirs:
        return Decision(entity_type, theirs, "unchanged", expect=local)
    if entity_type == "observations":
        if ours["redacted"] and not theirs["redacted"]:
            reason = "forgotten here; stays redacted"
            return Decision(entity_type, theirs, "skipped", expect=local, reason=reason)
        if theirs["redacted"] and not ours["redacted"]:
            return Decision(entity_type, theirs, "redacted", forgotten(entity_type, ours), local)

    clean = merge_entity(entity_type, None, ours, theirs)
    if clean.merged is not None:
        if clean.merged == ours:
            return Decision(entity_type, theirs, "unchanged", expect=local)
        return Decision(entity_type, theirs, "merged", clean.merged, local, masked=masked)
    fields = tuple(clean.conflicts)
    if on_conflict == "theirs":
        # With the local entity as the base, every field the bundle changed is taken from it,
        # while the merge's one-way rules (redacted stays, closed stays, lists only grow) hold.
        taken = merge_entity(entity_type, ours, ours, theirs)
        if taken.merged is not None:
            return Decision(
                entity_type, theirs, "conflicts", taken.merged, local, fields, "bundle", masked
            )
    return Decision(entity_type, theirs, "conflicts", None, local, fields, "local")


def _read_local(path: str | Path) -> bytes | None:
    return read_regular(path, follow_symlinks=False)


ABSENT_MEMBERS = "capsules: members in neither the bundle nor this store (forgotten), kept"


def _dangling_pin(store: Store, pin: dict, in_bundle: dict[str, set[str]]) -> str:
    """Why a pin cannot be written (its target is nowhere), or "" when it can."""
    target_type, target = PLURAL[pin["targetType"]], pin["targetId"]
    if target in in_bundle[target_type] or store.path_for(target_type, target).exists():
        return ""
    return f"its target {pin['targetType']} {target} is in neither the bundle nor this store"


def _absent_members(store: Store, dataset: Dataset, in_bundle: dict[str, set[str]]) -> int:
    """Capsule members in neither the bundle nor the store: kept, as forgotten members are."""
    return sum(
        1
        for capsule in dataset.entities["capsules"]
        for member in capsule["observationIds"]
        if member not in in_bundle["observations"]
        and not store.path_for("observations", member).exists()
    )


def _ids(dataset: Dataset) -> dict[str, set[str]]:
    return {etype: {e["id"] for e in dataset.entities[etype]} for etype in ENTITY_TYPES}


def plan_import(
    store: Store,
    dataset: Dataset,
    *,
    on_conflict: str = "keep",
    progress: Step | None = None,
) -> list[Decision]:
    """Mask and decide every bundle entity against the store, writing nothing."""
    if on_conflict not in ON_CONFLICT:
        raise ValidationError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}")
    decisions = []
    errors = []
    in_bundle = _ids(dataset)
    # Fan-out folder -> absent when planned: nothing in it to read (a new store has none).
    absent: dict[str, bool] = {}
    for etype in ENTITY_TYPES:
        for i, raw in enumerate(dataset.entities[etype]):
            entity, masked = inbound_entity(etype, raw)
            problems = entity_errors(etype, entity) if masked else []
            if problems:
                label = entity_label(etype, i, raw)
                errors.append(f"{label} after masking: {'; '.join(problems)}")
                continue
            dangling = _dangling_pin(store, entity, in_bundle) if etype == "pins" else ""
            if dangling:
                decisions.append(Decision(etype, entity, "skipped", reason=dangling))
                if progress is not None:
                    progress(1)
                continue
            path = store.entity_path(etype, entity["id"])
            folder = os.path.dirname(path)
            missing = absent.get(folder)
            if missing is None:
                missing = absent[folder] = not os.path.lexists(folder)
            try:
                local = None if missing else _read_local(path)
            except OSError as exc:
                reason = f"the local file is unreadable ({exc.strerror}); left as it is"
                decisions.append(Decision(etype, entity, "skipped", reason=reason))
            else:
                decisions.append(decide(etype, entity, path, local, on_conflict, masked))
            if progress is not None:
                progress(1)
    if errors:
        raise ValidationError("invalid bundle; nothing was imported:\n  " + "\n  ".join(errors))
    if on_conflict == "fail":
        conflicts = [d for d in decisions if d.outcome == "conflicts"]
        if conflicts:
            listed = "\n  ".join(_conflict_line(d) for d in conflicts[:MAX_LISTED_CONFLICTS])
            more = len(conflicts) - MAX_LISTED_CONFLICTS
            tail = f"\n  ... and {more} more" if more > 0 else ""
            noun = "conflict" if len(conflicts) == 1 else "conflicts"
            raise KindlingError(
                f"{len(conflicts)} {noun} with local entities (--on-conflict fail); "
                f"nothing was imported:\n  {listed}{tail}"
            )
    return decisions


# ---------------------------------------------------------------- writing


def apply_plan(
    store: Store,
    decisions: list[Decision],
    *,
    on_conflict: str = "keep",
    progress: Step | None = None,
    record: Callable[[list[WrittenFile]], object] | None = None,
) -> list[Decision]:
    """Write what the plan decided (non-durably, one disk sync at the end); the final decisions.

    An entity whose local file changed since it was planned is decided again under its lock.
    `record`, when given, hears the files written in batches on a second thread
    (`kindling.bundle.recording`), so the index keeps up as they land and no sync reads them
    all back afterwards. That thread has ended when this returns or raises. Each decision is
    replaced, in place, by one that no longer holds the entity: a big import never keeps two
    copies of the bundle.
    """
    # Too late to stop now: a conflict that appears while writing keeps the local file.
    late_policy = "keep" if on_conflict == "fail" else on_conflict
    recorder = BackgroundRecorder(record).start() if record is not None else None

    real_folders: set[str] = set()  # folders of this import already checked not to be symlinks

    def write(entity_type: str, entity: dict, path: str, checked: bool = False) -> None:
        # `checked`: validated once already, by the bundle's check or after masking.
        if not checked:
            validate(entity_type, entity)
        stored = store.write_checked(path, entity, real_folders=real_folders)
        if recorder is not None:
            # The entity too, so the index need not decode the bytes: batches are recorded as
            # they come and only QUEUED_BATCHES (kindling.bundle.recording) wait, so few are
            # held at once.
            recorder.add(WrittenFile(entity_type, path, stored.data, entity, stored.stat))

    done = 0
    try:
        for i, d in enumerate(decisions):
            if d.write is None:
                decisions[i] = d._replace(theirs={"id": d.entity_id})
                done = i + 1
                continue
            path = store.entity_path(d.entity_type, d.entity_id)
            if d.expect is None and not os.path.exists(path):
                write(d.entity_type, d.write, path, checked=d.outcome == "added")
            else:
                with store.locked(d.entity_type, d.entity_id):
                    current = _read_local(path)
                    if current != d.expect:
                        d = decide(d.entity_type, d.theirs, path, current, late_policy, d.masked)
                    if d.write is not None:
                        write(d.entity_type, d.write, path)
            written = _WRITTEN if d.write is not None else None
            decisions[i] = d._replace(theirs={"id": d.entity_id}, write=written, expect=None)
            done = i + 1
            if progress is not None:
                progress(1)
    except (OSError, KindlingError) as exc:
        # Every write is whole and the plan is idempotent, so what was written stays and a
        # rerun finishes the rest; the report says exactly which entities those are.
        reason = f"{exc.strerror or exc} ({exc.filename})" if isinstance(exc, OSError) else exc
        failed = f"{SINGULAR[d.entity_type]} {d.entity_id}"
        raise ImportInterrupted(
            f"import stopped writing {failed}: {reason}",
            [x for x in decisions[:done] if x.write is not None],
        ) from None
    finally:
        try:
            store.sync_to_disk()  # while the thread records the last files
        finally:
            if recorder is not None:
                recorder.close()
    return decisions


# ---------------------------------------------------------------- the report


def _conflict_line(d: Decision) -> str:
    return f"{SINGULAR[d.entity_type]} {d.entity_id}: {', '.join(d.fields) or 'differs'}"


# ---------------------------------------------------------------- the whole import


class Handover:
    """A bundle's bytes (or its parsed Dataset) given to `import_into`, which takes them out.

    Python keeps a function's arguments alive until it returns, so bytes passed on through
    `Memory.import_bundle` would stay in memory for the whole import. Handed over in this box,
    the importer holds the only reference, and frees the bytes once they are parsed and the
    Dataset once it is planned.
    """

    def __init__(self, source: bytes | Dataset) -> None:
        self._source: bytes | Dataset | None = source

    def take(self) -> bytes | Dataset:
        source, self._source = self._source, None
        if source is None:
            raise ValueError("this bundle was handed over already")
        return source


def import_bundle(memory: Memory, source: bytes | Dataset, **options: Any) -> ImportReport:
    """`memory.import_bundle(source, **options)`, for callers that hold this module."""
    handed = Handover(source)
    del source  # see Handover
    return memory.import_bundle(handed, **options)


def import_into(
    writer: Writer,
    source: bytes | Dataset | Handover,
    *,
    sync: Callable[[], object],
    on_conflict: str = "keep",
    dry_run: bool = False,
    progress: ProgressFactory | None = None,
) -> ImportReport:
    """Import a bundle (bytes or a parsed Dataset) through `writer`, indexing as it writes.

    `sync` brings the index up to date when a write error stops the import part way.
    `progress(label, total)`, when given, is called as each stage starts and returns the
    function that hears each step of it.
    """
    store = writer.store
    if isinstance(source, Handover):
        source = source.take()
    dataset = source if isinstance(source, Dataset) else parse_bundle(source)
    del source  # bytes given here are no longer needed once parsed
    normalised = dict(dataset.normalised)
    if normalised:  # the original's bundle: say how many forgotten members its capsules list
        absent = _absent_members(store, dataset, _ids(dataset))
        if absent:
            normalised[ABSENT_MEMBERS] = absent
    stage = progress("Checking", len(dataset)) if progress else None
    decisions = plan_import(store, dataset, on_conflict=on_conflict, progress=stage)
    del dataset
    options = {"dry_run": dry_run, "on_conflict": on_conflict, "normalised": normalised}
    to_write = sum(1 for d in decisions if d.write is not None)
    if dry_run or not to_write:
        return ImportReport.from_decisions(decisions, **options)
    writer.open_index()
    stage = progress("Writing", to_write) if progress else None
    try:
        decisions = apply_plan(
            store, decisions, on_conflict=on_conflict, progress=stage, record=writer.record_many
        )
    except ImportInterrupted:
        with contextlib.suppress(sqlite3.Error, KindlingError):
            sync()  # what was written is searchable at once, as on success
        raise
    # Every file written is recorded in the index already: no sync reads them back.
    return ImportReport.from_decisions(decisions, **options)
