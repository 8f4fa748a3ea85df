"""The capture rules: what logging, capsules, pins and forgetting do to the files.

- an observation logged with a session joins that session's open capsule;
- a session has at most one open session capsule (opens are serialised per session);
- a capsule closes once, writing its summary first;
- a pin points at an observation or a summary and may expire;
- forgetting keeps the record and drops its words, and those of copies quoting them
  (kindling.forgetting).

Every text that reaches a file is masked first. Writes go through a `kindling.writer.Writer`,
which stores the file and then indexes it, so what was just written is found at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kindling import hashing
from kindling.clock import now_ms
from kindling.errors import CorruptFileError, KindlingError, ValidationError
from kindling.lookup import Lookup
from kindling.masking import mask_json, mask_scope_ids, mask_text
from kindling.model import (
    MAX_TIMESTAMP_MS,
    PLURAL,
    REDACTED_CONTENT,
    derived_id,
    entity_time,
    kind_errors,
    new_id,
    pin_id,
    scope_errors,
    validate,
)
from kindling.store import Store
from kindling.writer import Writer, Written

if TYPE_CHECKING:
    from kindling.forgetting import ForgetReport, Plan, Step


def check_scope(scope: dict | None) -> dict:
    """A copy of `scope` after checking its keys and values; a ValidationError otherwise."""
    scope = dict(scope or {})
    errors = scope_errors(scope, "scope")
    if errors:
        raise ValidationError("; ".join(errors))
    return scope


def check_kinds(kinds: list[str] | tuple[str, ...] | None) -> None:
    """Raise for any observation kind that is not one of the spec's."""
    errors = kind_errors(kinds)
    if errors:
        raise ValidationError("; ".join(errors))


def _non_empty(value: object, what: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be a non-empty string")


class Capture:
    """The capture rules over one store."""

    def __init__(self, store: Store, lookup: Lookup, writer: Writer) -> None:
        self.store = store
        self.lookup = lookup
        self.write = writer.write

    def log(
        self,
        content: str,
        *,
        kind: str = "message",
        scope: dict | None = None,
        provenance: dict | None = None,
        capsule_id: str | None = None,
        ts: int | None = None,
    ) -> Written:
        """Record an observation, appending it to the open capsule it belongs to."""
        scope, masked_scope = mask_scope_ids(check_scope(scope))
        check_kinds([kind])
        _non_empty(content, "content")
        if provenance is not None and not isinstance(provenance, dict):
            raise ValidationError("provenance must be a JSON object")
        text, masked = mask_text(content)
        prov, masked_prov = mask_json(provenance or {})
        observation = {
            "id": new_id("observations"),
            "kind": kind,
            "content": text,
            "provenance": prov,
            "ts": now_ms() if ts is None else ts,
            "scopeIds": scope,
            "redacted": False,
        }
        validate("observations", observation)
        masked += masked_prov + masked_scope

        if capsule_id is not None:
            target = self.lookup.resolve(capsule_id, "capsules").entity["id"]
        elif "sessionId" in scope:
            capsule = self.lookup.open_session_capsule(scope["sessionId"])
            target = capsule["id"] if capsule else None
        else:
            target = None
        if target is None:
            return self.write("observations", observation, masked)

        with self.store.locked("capsules", target):
            capsule = self.lookup.load_for_update("capsules", target)
            if capsule["status"] != "open":
                raise KindlingError(f"capsule {target} is closed; nothing was logged")
            written = self.write("observations", observation, masked)
            capsule["observationIds"].append(observation["id"])
            self.write("capsules", capsule, 0)
        return written

    def open_capsule(
        self,
        intent: str,
        *,
        type: str = "session",
        scope: dict | None = None,
        observation_ids: tuple[str, ...] | list[str] = (),
    ) -> Written:
        """Open a capsule (holding `observation_ids` already, when it goes on from another);
        a session may have only one open session capsule."""
        scope, masked_scope = mask_scope_ids(check_scope(scope))
        _non_empty(intent, "intent")
        text, masked = mask_text(intent)
        masked += masked_scope
        capsule = {
            "id": new_id("capsules"),
            "type": type,
            "intent": text,
            "status": "open",
            "openedAt": now_ms(),
            "scopeIds": scope,
            "observationIds": list(dict.fromkeys(observation_ids)),
        }
        validate("capsules", capsule)
        session = scope.get("sessionId") if type == "session" else None
        if session is None:
            return self.write("capsules", capsule, masked)
        # Serialise opens per session so two agents cannot both open one.
        with self.store.locked("sessions", hashing.hexdigest(session.encode())):
            existing = self.lookup.open_session_capsule(session)
            if existing is not None:
                raise KindlingError(
                    f"session {session!r} already has an open session capsule "
                    f"{existing['id']}; close it first"
                )
            return self.write("capsules", capsule, masked)

    def restore_capsule(self, copy: dict, *, rewind: bool = False) -> Written | None:
        """Write back an open session capsule whose file is gone from the work tree (a
        `git switch` to a branch without it); None when its file is there or its session
        has another open capsule.

        `rewind`: put an open capsule's file back to an earlier state of itself (`copy`'s
        members a prefix of its own), e.g. as it was pushed; None when it is not that.
        """
        validate("capsules", copy)
        session = copy["scopeIds"].get("sessionId")
        if copy["status"] != "open" or copy["type"] != "session" or session is None:
            raise ValidationError("only an open session capsule is restored")
        with self.store.locked("sessions", hashing.hexdigest(session.encode())):
            if not rewind and self.lookup.open_session_capsule(session) is not None:
                return None
            with self.store.locked("capsules", copy["id"]):
                current = self.store.load("capsules", copy["id"])
                if not rewind and current is None:
                    return self.write("capsules", copy, 0)
                if not rewind or current is None or current["status"] != "open":
                    return None
                members = current["observationIds"]
                if members[: len(copy["observationIds"])] != copy["observationIds"]:
                    return None
                return self.write("capsules", copy, 0)

    def replace_summary(
        self,
        summary_id: str,
        *,
        content: str,
        confidence: float,
        evidence: tuple[str, ...] | list[str] = (),
    ) -> Written:
        """Rewrite a summary in place: same id, capsule, time and scope; new text, confidence
        and evidence. A forgotten summary stays forgotten."""
        target = self.lookup.resolve(summary_id, "summaries").entity["id"]
        refs = [self.lookup.resolve(ref, "observations").entity["id"] for ref in evidence]
        text, masked = mask_text(content)
        if not text.strip():
            raise ValidationError("summary must be a non-empty string")
        with self.store.locked("summaries", target):
            summary = self.lookup.load_for_update("summaries", target)
            if summary["content"] == REDACTED_CONTENT:
                raise KindlingError(f"summary {target} was forgotten; it stays forgotten")
            changed = {
                **summary,
                "content": text,
                "confidence": confidence,
                "evidenceRefs": list(dict.fromkeys(refs)),
            }
            validate("summaries", changed)
            return self.write("summaries", changed, masked)

    def set_intent(self, capsule_id: str, intent: str) -> Written:
        """Give an open capsule a new intent (masked), e.g. once its first prompt is known."""
        _non_empty(intent, "intent")
        text, masked = mask_text(intent)
        target = self.lookup.resolve(capsule_id, "capsules").entity["id"]
        with self.store.locked("capsules", target):
            capsule = self.lookup.load_for_update("capsules", target)
            if capsule["status"] != "open":
                raise KindlingError(f"capsule {target} is closed; its intent stays")
            capsule["intent"] = text
            validate("capsules", capsule)
            return self.write("capsules", capsule, masked)

    def close_capsule(
        self,
        capsule_id: str,
        *,
        summary: str | None = None,
        confidence: float = 1.0,
        evidence: tuple[str, ...] | list[str] = (),
        settled: bool = False,
    ) -> Written:
        """Close a capsule, writing its summary first when one is given.

        A capsule has one summary id, derived from its own, so whoever closes it writes
        the summary to the same file. `settled`: the close depends only on what the capsule
        holds, so every clone that makes it writes the same bytes (git merges them without a
        conflict): it is dated at the capsule's last activity, not now.
        """
        target = self.lookup.resolve(capsule_id, "capsules").entity["id"]
        evidence_ids = [self.lookup.resolve(ref, "observations").entity["id"] for ref in evidence]
        evidence_ids = list(dict.fromkeys(evidence_ids))
        if summary is None and evidence_ids:
            raise ValidationError("--evidence needs --summary")
        if summary is not None:
            _non_empty(summary, "summary")
        masked = 0
        with self.store.locked("capsules", target):
            capsule = self.lookup.load_for_update("capsules", target)
            if capsule["status"] != "open":
                raise KindlingError(f"capsule {target} is already closed")
            last = self.last_activity(capsule) if settled else now_ms()
            closed_at = max(last, capsule["openedAt"])
            capsule.update(status="closed", closedAt=closed_at)
            summary_entity = None
            if summary is not None:
                text, masked = mask_text(summary)
                summary_entity = {
                    "id": derived_id("summaries", target),
                    "content": text,
                    "confidence": confidence,
                    "evidenceRefs": evidence_ids,
                    "capsuleId": target,
                    "ts": closed_at,
                    "scopeIds": dict(capsule["scopeIds"]),
                }
                validate("summaries", summary_entity)
                capsule["summaryId"] = summary_entity["id"]
            validate("capsules", capsule)
            if summary_entity is not None:
                self.write("summaries", summary_entity, masked)
            return self.write("capsules", capsule, masked)

    def last_activity(self, capsule: dict) -> int:
        """The time of the capsule's latest observation that is still there, else its opening."""
        for obs_id in reversed(capsule["observationIds"]):
            try:
                return self.lookup.resolve(obs_id, "observations").entity["ts"]
            except KindlingError:
                continue
        return capsule["openedAt"]

    def pin(
        self,
        target_type: str,
        target_id: str,
        *,
        note: str | None = None,
        ttl: int | None = None,
        scope: dict | None = None,
    ) -> Written:
        """Pin an observation or summary so retrieval always returns it first.

        A target and scope have one pin: its id derives from them, so pinning again (here or
        in another clone) updates that pin instead of adding one. It is dated at its target's
        time, so two clones pinning the same thing alike write the same bytes.
        """
        if target_type not in ("observation", "summary"):
            raise ValidationError(f"can only pin an observation or a summary, not {target_type!r}")
        target = self.lookup.resolve(target_id, PLURAL[target_type]).entity
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ValidationError("ttl must be a positive number of milliseconds")
        if note is not None:
            _non_empty(note, "note")
        reason, masked = mask_text(note) if note is not None else (None, 0)
        pin_scope, masked_scope = mask_scope_ids(
            check_scope(scope) if scope else dict(target["scopeIds"])
        )
        masked += masked_scope
        now = now_ms()
        if ttl is not None and now + ttl > MAX_TIMESTAMP_MS:
            raise ValidationError(
                f"ttl of {ttl} ms would expire after year 9999 "
                f"(at most {MAX_TIMESTAMP_MS - now} ms from now)"
            )
        one_id = pin_id(target_type, target["id"], pin_scope)
        with self.store.locked("pins", one_id):
            before = self.store.load("pins", one_id)
            created = before["createdAt"] if before else entity_time(PLURAL[target_type], target)
            pin = {
                "id": one_id,
                "targetType": target_type,
                "targetId": target["id"],
                "reason": reason if reason is not None or before is None else before["reason"],
                "createdAt": created,
                "expiresAt": now + ttl if ttl is not None else None,
                "scopeIds": pin_scope,
            }
            validate("pins", pin)
            return self.write("pins", pin, masked)

    def unpin(self, pin_id: str) -> tuple[dict, Path]:
        """Remove a pin's file; returns the pin that was removed and where it was."""
        found = self.lookup.resolve(pin_id, "pins")
        path = self.store.path_for("pins", found.entity["id"])
        self.store.remove("pins", found.entity["id"])
        return found.entity, path

    def forget(self, ref: str, *, dry_run: bool = False) -> tuple[Written, ForgetReport]:
        """Forget an observation, capsule, summary or pin (id or unique prefix); for an
        observation, also the copies of its text in its capsules' intents and summaries.

        Returns the entity as stored afterwards (as it is, in a dry run) and the report.
        """
        from kindling.forgetting import plan_forget  # only forgetting pays for its import

        found = self.lookup.resolve(ref)
        plan = plan_forget(self.store, found.entity_type, found.entity, found.path)
        report, done = self._carry_out(plan, dry_run)
        if found.path in done:
            return done[found.path], report
        etype, target = found.entity_type, found.entity["id"]
        home = self.store.path_for(etype, target)
        entity = self.store.load(etype, target) if not dry_run else None
        if entity is not None:
            return Written(etype, entity, home), report
        return Written(etype, found.entity, Path(found.path)), report

    def forget_matching(self, needle: str, *, dry_run: bool = False) -> ForgetReport:
        """Forget every entity whose words hold `needle` (exact, case-sensitive), found by
        reading every file, and what quotes the observations among them."""
        from kindling.forgetting import plan_matching

        return self._carry_out(plan_matching(self.store, needle), dry_run)[0]

    def _carry_out(self, plan: Plan, dry_run: bool) -> tuple[ForgetReport, dict[str, Written]]:
        from kindling.forgetting import ForgetReport

        report = ForgetReport(dry_run=dry_run, problems=list(plan.problems))
        done: dict[str, Written] = {}
        for step in plan.ordered():
            if dry_run:
                report.forgotten.append(step)
                continue
            written, touched = self._rewrite(step)
            report.touched.extend(touched)
            if written is not None:
                report.forgotten.append(step)
                done[step.path] = written
        return report, done

    def _rewrite(self, step: Step) -> tuple[Written | None, list[Path]]:
        """Apply one step to the file it names, under the entity's lock; what was written
        (None: nothing left to change) and the misplaced files rewritten or removed.

        A misplaced copy (search finds such a file, so forget must reach it) is redacted at
        the place its id names and removed, or, when a file is there already, redacted where
        it lies: both copies stay, neither with the text.
        """
        etype, target = step.entity_type, step.entity_id
        home = self.store.path_for(etype, target)
        found = Path(step.path)
        with self.store.locked(etype, target):
            if found == home:
                entity = self.store.load(etype, target)
                if entity is None:
                    return None, []  # removed since the plan: no text left there
                changed = step.edit(entity)
                return (self.write(etype, changed, 0) if changed else None), []
            try:
                entity = self.store.load_path(etype, found)[0]
            except CorruptFileError:
                if not found.exists():
                    return None, []
                raise
            if entity["id"] != target:
                raise KindlingError(f"{found} changed while forgetting; it was left as it is")
            changed = step.edit(entity)
            if self.store.load(etype, target) is None:
                written = self.write(etype, changed or entity, 0)
                found.unlink(missing_ok=True)
                return written, [found]
            if changed is None:
                return None, []
            validate(etype, changed)
            self.store.write_checked(str(found), changed, durable=True)
            return Written(etype, changed, found), [found]
