"""The public API: everything the CLI does, over the store (the truth) and the index (derived).

Every write goes file first, then index, in the same call, so what was just written is found
at once. Every read first brings the index up to date with the files.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from kindling.clock import now_ms
from kindling.errors import KindlingError, NotFoundError, ValidationError
from kindling.model import (
    ENTITY_TYPES,
    OBSERVATION_KINDS,
    PLURAL,
    REDACTED_CONTENT,
    SINGULAR,
    check_id,
    new_id,
    scope_errors,
    validate,
)
from kindling.secret_gate import json_might_hold_secret, might_hold_secret
from kindling.store import STORE_DIRNAME, Store, default_init_root, locate

MIN_PREFIX = 6


class Written(NamedTuple):
    """An entity just stored, where, and how many secrets were masked on the way in."""

    entity_type: str
    entity: dict
    path: Path
    masked: int = 0


class Found(NamedTuple):
    """An entity looked up by id or prefix, with the file it lives in."""

    entity_type: str
    entity: dict
    path: str


def _check_scope(scope: dict | None) -> dict:
    scope = dict(scope or {})
    errors = scope_errors(scope, "scope")
    if errors:
        raise ValidationError("; ".join(errors))
    return scope


# The masking patterns compile on import: text that cannot hold a secret never loads them.
def mask_text(text: str) -> tuple[str, int]:
    if not might_hold_secret(text):
        return text, 0
    from kindling.masking import mask_text as mask

    return mask(text)


def mask_json(value: object) -> tuple[object, int]:
    if not json_might_hold_secret(value):
        return value, 0
    from kindling.masking import mask_json as mask

    return mask(value)


def _mask_optional(text: str | None) -> tuple[str | None, int]:
    if text is None:
        return None, 0
    return mask_text(text)


def _one_sync(method):
    """Let every lookup in one public call share the call's first sync."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._one_call():
            return method(self, *args, **kwargs)

    return wrapper


class Memory:
    """One Kindling store: capture, lookup and (through the index) retrieval."""

    def __init__(
        self, store: str | os.PathLike | None = None, *, cwd: str | os.PathLike | None = None
    ) -> None:
        self.store = Store.open(locate(store, cwd))
        self._index = None
        # Inside one public call, the first sync serves every lookup that follows.
        self._call_sync = None
        self._in_call = False

    @classmethod
    def init(
        cls, path: str | os.PathLike | None = None, *, store: str | os.PathLike | None = None
    ) -> Memory:
        """Create a store (`store` is the store dir itself; `path` gets `.kindling/` inside)."""
        if store is not None:
            root = Path(store).expanduser().absolute()
        else:
            base = Path(path).expanduser().absolute() if path is not None else default_init_root()
            root = base / STORE_DIRNAME
        Store.create(root)
        return cls(root)

    # ------------------------------------------------------------ index plumbing

    @property
    def index(self):
        if self._index is None:
            from kindling.index import Index

            self._index = Index(self.store)
        return self._index

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fresh(self):
        """Bring the index up to date with the files; returns the sync report."""
        if self._in_call and self._call_sync is not None:
            return self._call_sync
        report = self.index.sync()
        if self._in_call:
            self._call_sync = report
        return report

    @contextlib.contextmanager
    def _one_call(self) -> Iterator[None]:
        """Scope of one public call: lookups inside it share a single sync."""
        if self._in_call:
            yield
            return
        self._in_call = True
        try:
            yield
        finally:
            self._in_call = False
            self._call_sync = None

    def _record(self, entity_type: str, path: Path, data: bytes, entity: dict) -> None:
        try:
            self.index.record(entity_type, path, data, entity)
        except (sqlite3.Error, KindlingError):
            # The file is the truth and is already written; the next sync heals the index.
            pass

    def _write(self, entity_type: str, entity: dict, masked: int = 0) -> Written:
        path, data = self.store.write(entity_type, entity)
        self._record(entity_type, path, data, entity)
        return Written(entity_type, entity, path, masked)

    # ------------------------------------------------------------ lookup

    def resolve(self, ref: str, entity_type: str | None = None) -> Found:
        """Find an entity by full id or by a unique prefix of at least 6 characters."""
        check_id(ref)
        what = SINGULAR[entity_type] if entity_type else "entity"
        # A full id is found by its path alone: no sync, no index.
        for etype in (entity_type,) if entity_type else ENTITY_TYPES:
            entity = self.store.load(etype, ref)
            if entity is not None:
                return Found(etype, entity, str(self.store.path_for(etype, ref)))
        if len(ref) < MIN_PREFIX:
            raise NotFoundError(
                f"no {what} with id {ref!r} (id prefixes need {MIN_PREFIX}+ characters)"
            )
        self.fresh()
        matches = [
            m
            for m in self.index.match_prefix(ref, limit=11)
            if entity_type is None or m.entity_type == entity_type
        ]
        if not matches:
            raise NotFoundError(f"no {what} with id or prefix {ref!r}")
        if len(matches) > 1:
            shown = ", ".join(f"{m.entity['id']} ({SINGULAR[m.entity_type]})" for m in matches[:10])
            more = " and more" if len(matches) > 10 else ""
            raise KindlingError(f"id prefix {ref!r} is ambiguous: {shown}{more}")
        return Found(*matches[0])

    @_one_sync
    def get(self, ref: str) -> Found:
        """Any entity by full id (from its file) or unique prefix (from the synced index)."""
        return self.resolve(ref)

    def _load_for_update(self, entity_type: str, entity_id: str) -> dict:
        entity = self.store.load(entity_type, entity_id)
        if entity is None:
            raise NotFoundError(f"no {SINGULAR[entity_type]} with id {entity_id!r}")
        return entity

    def open_session_capsule(self, session_id: str) -> dict | None:
        """The open session capsule of a session, when there is one."""
        self.fresh()
        for capsule in self.index.open_capsules(session_id):
            if capsule["type"] == "session":
                current = self.store.load("capsules", capsule["id"])
                if current is not None and current["status"] == "open":
                    return current
        return None

    # ------------------------------------------------------------ capture

    @_one_sync
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
        scope = _check_scope(scope)
        if kind not in OBSERVATION_KINDS:
            raise ValidationError(
                f"invalid kind {kind!r}: use one of {', '.join(OBSERVATION_KINDS)}"
            )
        if not isinstance(content, str) or not content.strip():
            raise ValidationError("content must be a non-empty string")
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
        masked += masked_prov

        if capsule_id is not None:
            target = self.resolve(capsule_id, "capsules").entity["id"]
        elif "sessionId" in scope:
            capsule = self.open_session_capsule(scope["sessionId"])
            target = capsule["id"] if capsule else None
        else:
            target = None
        if target is None:
            return self._write("observations", observation, masked)

        with self.store.locked("capsules", target):
            capsule = self._load_for_update("capsules", target)
            if capsule["status"] != "open":
                raise KindlingError(f"capsule {target} is closed; nothing was logged")
            written = self._write("observations", observation, masked)
            capsule["observationIds"].append(observation["id"])
            self._write("capsules", capsule)
        return written

    @_one_sync
    def open_capsule(
        self, intent: str, *, type: str = "session", scope: dict | None = None
    ) -> Written:
        """Open a capsule; a session may have only one open session capsule."""
        scope = _check_scope(scope)
        if not isinstance(intent, str) or not intent.strip():
            raise ValidationError("intent must be a non-empty string")
        text, masked = mask_text(intent)
        capsule = {
            "id": new_id("capsules"),
            "type": type,
            "intent": text,
            "status": "open",
            "openedAt": now_ms(),
            "scopeIds": scope,
            "observationIds": [],
        }
        validate("capsules", capsule)
        session = scope.get("sessionId") if type == "session" else None
        if session is None:
            return self._write("capsules", capsule, masked)
        # Serialise opens per session so two agents cannot both open one.
        with self.store.locked("sessions", hashlib.sha256(session.encode()).hexdigest()):
            existing = self.open_session_capsule(session)
            if existing is not None:
                raise KindlingError(
                    f"session {session!r} already has an open session capsule "
                    f"{existing['id']}; close it first"
                )
            return self._write("capsules", capsule, masked)

    @_one_sync
    def close_capsule(
        self,
        capsule_id: str,
        *,
        summary: str | None = None,
        confidence: float = 1.0,
        evidence: tuple[str, ...] | list[str] = (),
    ) -> Written:
        """Close a capsule, writing its summary first when one is given."""
        target = self.resolve(capsule_id, "capsules").entity["id"]
        evidence_ids = [self.resolve(ref, "observations").entity["id"] for ref in evidence]
        evidence_ids = list(dict.fromkeys(evidence_ids))
        if summary is None and evidence_ids:
            raise ValidationError("--evidence needs --summary")
        masked = 0
        with self.store.locked("capsules", target):
            capsule = self._load_for_update("capsules", target)
            if capsule["status"] != "open":
                raise KindlingError(f"capsule {target} is already closed")
            closed_at = max(now_ms(), capsule["openedAt"])
            capsule.update(status="closed", closedAt=closed_at)
            summary_entity = None
            if summary is not None:
                if not isinstance(summary, str) or not summary.strip():
                    raise ValidationError("summary must be a non-empty string")
                text, masked = mask_text(summary)
                summary_entity = {
                    "id": new_id("summaries"),
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
                self._write("summaries", summary_entity, masked)
            return self._write("capsules", capsule, masked)

    @_one_sync
    def pin(
        self,
        target_type: str,
        target_id: str,
        *,
        note: str | None = None,
        ttl: int | None = None,
        scope: dict | None = None,
    ) -> Written:
        """Pin an observation or summary so retrieval always returns it first."""
        if target_type not in ("observation", "summary"):
            raise ValidationError(f"can only pin an observation or a summary, not {target_type!r}")
        target = self.resolve(target_id, PLURAL[target_type]).entity
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ValidationError("ttl must be a positive number of milliseconds")
        reason, masked = _mask_optional(note)
        created = now_ms()
        pin = {
            "id": new_id("pins"),
            "targetType": target_type,
            "targetId": target["id"],
            "reason": reason,
            "createdAt": created,
            "expiresAt": created + ttl if ttl is not None else None,
            "scopeIds": _check_scope(scope) if scope else dict(target["scopeIds"]),
        }
        validate("pins", pin)
        return self._write("pins", pin, masked)

    @_one_sync
    def unpin(self, pin_id: str) -> dict:
        """Remove a pin's file; returns the pin that was removed."""
        found = self.resolve(pin_id, "pins")
        path = self.store.path_for("pins", found.entity["id"])
        self.store.remove("pins", found.entity["id"])
        try:
            self.index.drop(path)
        except (sqlite3.Error, KindlingError):
            pass  # the file is gone; the next sync drops its row
        return found.entity

    @_one_sync
    def forget(self, observation_id: str) -> Written:
        """Redact an observation: the record stays, its content and provenance go."""
        target = self.resolve(observation_id, "observations").entity["id"]
        with self.store.locked("observations", target):
            observation = self._load_for_update("observations", target)
            if observation["redacted"]:
                return Written(
                    "observations", observation, self.store.path_for("observations", target)
                )
            observation.update(content=REDACTED_CONTENT, provenance={}, redacted=True)
            return self._write("observations", observation)

    # ------------------------------------------------------------ reading

    def list(
        self,
        entity_type: str,
        *,
        scope: dict | None = None,
        kinds: list[str] | None = None,
        limit: int | None = 20,
        include_expired: bool = False,
    ) -> list[dict]:
        """Stored entities of one type, newest first; expired pins hidden unless asked for."""
        if entity_type not in ENTITY_TYPES:
            raise ValidationError(f"unknown entity type {entity_type!r}")
        for k in kinds or ():
            if k not in OBSERVATION_KINDS:
                raise ValidationError(
                    f"invalid kind {k!r}: use one of {', '.join(OBSERVATION_KINDS)}"
                )
        scope = _check_scope(scope)
        self.fresh()
        if entity_type != "pins" or include_expired:
            return self.index.entities(entity_type, scope=scope, kinds=kinds, limit=limit)
        now = now_ms()
        active = [
            p
            for p in self.index.entities("pins", scope=scope)
            if p["expiresAt"] is None or p["expiresAt"] > now
        ]
        return active[:limit] if limit is not None else active

    def status(self) -> dict[str, Any]:
        """Store path, counts by type, redacted count, open capsules and problem files."""
        report = self.fresh()
        counts = self.index.counts()
        return {
            "store": str(self.store.root),
            "index": str(self.store.index_path),
            "counts": {t: counts[t] for t in ENTITY_TYPES},
            "redacted": counts["redacted"],
            "openCapsules": [
                {"id": c["id"], "type": c["type"], "intent": c["intent"], "scopeIds": c["scopeIds"]}
                for c in self.index.open_capsules()
            ],
            "problems": [{"path": p.path, "reason": p.reason} for p in report.problems],
        }

    def export(
        self,
        out: str | os.PathLike | BinaryIO,
        *,
        scope: dict | None = None,
        include_redacted: bool = False,
        progress=None,
        format: str = "kindling",
    ):
        """Write a bundle to a binary stream, or atomically to a file path; an ExportReport.

        `format="original"` writes what the original Kindling (TypeScript, Rust) imports.
        """
        from kindling.export import export_bundle, export_to_path

        options = {"scope": scope, "include_redacted": include_redacted, "progress": progress}
        options["format"] = format
        if isinstance(out, (str, os.PathLike)):
            return export_to_path(self.store, out, **options)
        return export_bundle(self.store, out, **options)

    def import_bundle(
        self, source: bytes, *, on_conflict: str = "keep", dry_run: bool = False, progress=None
    ):
        """Import a bundle's bytes: all validated before any write; an ImportReport."""
        from kindling.importer import import_bundle

        return import_bundle(
            self, source, on_conflict=on_conflict, dry_run=dry_run, progress=progress
        )

    def search(
        self,
        query: str,
        *,
        scope: dict | None = None,
        kinds: list[str] | None = None,
        since: int | None = None,
        max_results: int = 10,
        max_tokens: int | None = None,
        include_redacted: bool = False,
    ) -> dict:
        """Pins, the current summary and ranked candidates for `query`: a RetrieveResult dict."""
        from kindling.retrieve import check_options, retrieve

        check_options(query, scope, kinds, since, max_results, max_tokens)
        self.fresh()
        return retrieve(
            self.index,
            query,
            scope=scope,
            kinds=kinds,
            since=since,
            max_results=max_results,
            max_tokens=max_tokens,
            include_redacted=include_redacted,
        )

    def reindex(self, full: bool = False, *, progress=None):
        """Walk every file and bring the index up to date, or rebuild it whole; a SyncReport."""
        if full:
            return self.index.rebuild(progress=progress)
        return self.index.sync(trust_watcher=False)


__all__ = ["Found", "Memory", "Written"]
