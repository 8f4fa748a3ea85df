"""The public API: everything the CLI does, over the store (the truth) and the index (derived).

`Memory` is a facade: the capture rules live in kindling.capture, lookups in kindling.lookup,
retrieval in kindling.search, bundles in kindling.bundle. Every write goes through one
kindling.writer.Writer, file first, then index, in the same call, so what was just written is
found at once. Every read first brings the index up to date with the files; inside `batch()`,
one sync serves every call.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from kindling.capture import Capture, check_kinds, check_scope
from kindling.clock import now_ms
from kindling.errors import KindlingError, ValidationError
from kindling.lookup import Lookup
from kindling.masking import custom
from kindling.model import ENTITY_TYPES, MAX_COUNT, is_count
from kindling.progress import ProgressFactory
from kindling.settings import Settings
from kindling.store import STORE_DIRNAME, Found, Store, default_init_root, locate
from kindling.writer import Writer, Written

if TYPE_CHECKING:
    from kindling.bundle.export import ExportReport
    from kindling.bundle.importer import Handover, ImportReport
    from kindling.forgetting import ForgetReport
    from kindling.fsck import FsckReport
    from kindling.git.resolve import ResolveReport
    from kindling.index import Index, Problem, SyncReport
    from kindling.retention import GcReport
    from kindling.search.request import SearchRequest


class Memory:
    """One Kindling store: capture, lookup and (through the index) retrieval."""

    def __init__(
        self,
        store: str | os.PathLike | None = None,
        *,
        cwd: str | os.PathLike | None = None,
        autowatch: bool = False,
        settings: Settings | None = None,
        index_budget_s: float | None = None,
    ) -> None:
        """Open a store: `store`, else KINDLING_STORE, else the nearest `.kindling/`.

        With `autowatch`, a read that had to walk a big store starts a background watcher
        for the next ones (kindling.watch.daemon), as `settings` allow; never otherwise.
        `settings` default to what the environment says now. With `index_budget_s`, bringing
        the index up to date stops about that many seconds from now, and reads answer from
        what it holds then (`indexing` says what is missing).
        """
        self.settings = settings if settings is not None else Settings.from_environ()
        self.store = Store.open(locate(store if store is not None else self.settings.store, cwd))
        self.autowatch = autowatch
        self._deadline = None if index_budget_s is None else time.monotonic() + index_budget_s
        self._index: Index | None = None
        # Inside batch(), the first sync serves every lookup that follows.
        self._batch_sync: SyncReport | None = None
        self._batch_depth = 0
        self._last_sync: SyncReport | None = None
        # The index is opened on first use, and again after close(): so asked for each time.
        self._writer = Writer(self.store, lambda: self.index)
        self._lookup = Lookup(self.store, lambda: self.index, self.sync)
        self._capture = Capture(self.store, self._lookup, self._writer)

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
    def index(self) -> Index:
        """The store's index, opened on first use (callers outside Kindling: prefer the API)."""
        if self._index is None:
            from kindling.index import Index

            self._index = Index(self.store, deadline=self._deadline)
        return self._index

    def close(self) -> None:
        """Close the index connection."""
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sync(self, types: tuple[str, ...] | None = None) -> SyncReport:
        """Bring the index up to date with the files (once per batch); the sync report.

        With `types`, only files of those types are checked, every time (capsules are few).
        With `autowatch`, a full walk of a big store starts a background watcher
        (kindling.watch.daemon) so that the next reader can skip it.
        """
        if types is not None:
            return self.index.sync(types=types)
        if self._batch_depth and self._batch_sync is not None:
            return self._batch_sync
        index = self.index
        report = index.sync()
        self._last_sync = report
        if self._batch_depth:
            self._batch_sync = report
        if self.autowatch and index.walked and not index.watcher:
            from kindling.watch.daemon import maybe_start

            # A watcher's first reconcile also finishes an index still being built; a walk
            # cut short at its deadline was of a store too big to walk in time.
            walked = max(index.walked, self.settings.min_files) if index.stopped else index.walked
            maybe_start(self.store, index.watch_lock_path, walked, self.settings)
        return report

    def indexing(self) -> dict | None:
        """None when the index holds every file as of the last sync; else what is missing:
        {"indexed": entities indexed, "pending": files it lacks still (0: not known), "watcher": pid
        of the watcher filling it, or None}."""
        report = self._last_sync
        pending = report.missing if report is not None else 0
        index = self.index
        if not pending and not index.building:
            return None
        from kindling.watch.daemon import running_pid

        indexed = sum(index.counts()[t] for t in ENTITY_TYPES)
        return {
            "indexed": indexed,
            "pending": pending,
            "watcher": running_pid(index.watch_lock_path),
        }

    @contextlib.contextmanager
    def batch(self) -> Iterator[Memory]:
        """Calls inside share one sync of the index: the first one's.

        Writes made inside are indexed as they happen, so they stay visible; only changes
        made by other processes meanwhile wait for the next batch.
        """
        self._batch_depth += 1
        try:
            if self._batch_depth > 1:
                yield self
            else:  # writes inside mask with the store's own patterns too (.kindling/masking.json)
                with custom.applied(custom.load(self.store.root)):
                    yield self
        finally:
            self._batch_depth -= 1
            if not self._batch_depth:
                self._batch_sync = None

    def problems(self) -> list[Problem]:
        """Files the index could not read, as of this object's last sync (syncing if none)."""
        report = self._last_sync if self._last_sync is not None else self.sync()
        return report.problems

    # ------------------------------------------------------------ lookup

    def resolve(self, ref: str, entity_type: str | None = None) -> Found:
        """Find an entity by full id or by a unique prefix of at least 6 characters."""
        with self.batch():
            return self._lookup.resolve(ref, entity_type)

    def get(self, ref: str) -> Found:
        """Any entity by full id (from its file) or unique prefix (from the synced index)."""
        return self.resolve(ref)

    def open_session_capsule(self, session_id: str) -> dict | None:
        """The open session capsule of a session, when there is one."""
        with self.batch():
            return self._lookup.open_session_capsule(session_id)

    def last_activity(self, capsule: dict) -> int:
        """When a capsule last recorded: its latest observation still there, else its opening."""
        with self.batch():
            return self._capture.last_activity(capsule)

    def open_capsules(self, session_id: str | None = None) -> list[dict]:
        """Every open capsule (of one session, when given), as the synced index has them."""
        self.sync()
        return self.index.open_capsules(session_id)

    # ------------------------------------------------------------ capture

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
        with self.batch():
            return self._capture.log(
                content, kind=kind, scope=scope, provenance=provenance, capsule_id=capsule_id, ts=ts
            )

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
        with self.batch():
            return self._capture.open_capsule(
                intent, type=type, scope=scope, observation_ids=observation_ids
            )

    def restore_capsule(self, copy: dict, *, rewind: bool = False) -> Written | None:
        """Write back an open session capsule whose file a `git switch` took away; None when
        its file is there or its session has another open capsule. `rewind`: put an open
        capsule back to an earlier state of itself (as it was pushed)."""
        with self.batch():
            return self._capture.restore_capsule(copy, rewind=rewind)

    def set_intent(self, capsule_id: str, intent: str) -> Written:
        """Give an open capsule a new intent (masked), e.g. once its first prompt is known."""
        with self.batch():
            return self._capture.set_intent(capsule_id, intent)

    def close_capsule(
        self,
        capsule_id: str,
        *,
        summary: str | None = None,
        confidence: float = 1.0,
        evidence: tuple[str, ...] | list[str] = (),
        settled: bool = False,
    ) -> Written:
        """Close a capsule, writing its summary first when one is given; `settled`: as every
        clone would (dated at its last activity, the summary's id derived from the capsule's)."""
        with self.batch():
            return self._capture.close_capsule(
                capsule_id,
                summary=summary,
                confidence=confidence,
                evidence=evidence,
                settled=settled,
            )

    def replace_summary(
        self,
        summary_id: str,
        *,
        content: str,
        confidence: float,
        evidence: tuple[str, ...] | list[str] = (),
    ) -> Written:
        """Rewrite a summary in place (same id, capsule, time and scope), e.g. one the hooks
        derive again (`kindling summarize --rebuild`); a forgotten one stays forgotten."""
        with self.batch():
            return self._capture.replace_summary(
                summary_id, content=content, confidence=confidence, evidence=evidence
            )

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
        with self.batch():
            return self._capture.pin(target_type, target_id, note=note, ttl=ttl, scope=scope)

    def unpin(self, pin_id: str) -> dict:
        """Remove a pin's file; returns the pin that was removed."""
        with self.batch():
            pin, path = self._capture.unpin(pin_id)
        try:
            self.index.recheck(path)
        except (sqlite3.Error, KindlingError):
            pass  # the file is gone; the next sync drops its row
        return pin

    def forget(self, ref: str) -> Written:
        """Forget an observation, capsule, summary or pin by id or unique prefix (for an
        observation, with its copies in capsule intents and summaries); the entity as stored."""
        return self.forget_report(ref)[0]

    def forget_report(self, ref: str, *, dry_run: bool = False) -> tuple[Written, ForgetReport]:
        """`forget`, with the report of every entity changed (or, in a dry run, to change)."""
        # Each row that loses words is scrubbed as it changes (kindling.index.scrub).
        with self.batch():
            written, report = self._capture.forget(ref, dry_run=dry_run)
            self._recheck(report.touched)
        return written, report

    def forget_matching(self, text: str, *, dry_run: bool = False) -> ForgetReport:
        """Forget every entity whose words hold `text` (exact, case-sensitive), found in the
        files themselves, not the index; the report (in a dry run, of what would go)."""
        with self.batch():
            report = self._capture.forget_matching(text, dry_run=dry_run)
            self._recheck(report.touched)
        return report

    def _recheck(self, paths: list[Path]) -> None:
        for path in paths:
            try:
                self.index.recheck(path)
            except (sqlite3.Error, KindlingError):
                pass  # the file is redacted or gone; the next sync brings its row in step

    # ------------------------------------------------------------ reading

    def list(
        self,
        entity_type: str,
        *,
        scope: dict | None = None,
        kinds: list[str] | None = None,
        limit: int | None = 20,
        include_expired: bool = False,
        since: int | None = None,
    ) -> list[dict]:
        """Stored entities of one type, newest first; expired pins hidden unless asked for."""
        if entity_type not in ENTITY_TYPES:
            raise ValidationError(f"unknown entity type {entity_type!r}")
        check_kinds(kinds)
        scope = check_scope(scope)
        if limit is not None and not is_count(limit, 1):
            raise ValidationError(f"limit must be an integer from 1 to {MAX_COUNT}")
        self.sync()
        if entity_type != "pins" or include_expired:
            return self.index.entities(
                entity_type, scope=scope, kinds=kinds, since=since, limit=limit
            )
        now = now_ms()
        active = [
            p
            for p in self.index.entities("pins", scope=scope, since=since)
            if p["expiresAt"] is None or p["expiresAt"] > now
        ]
        return active[:limit] if limit is not None else active

    def fixed_errors(self, ids: Iterable[str]) -> dict[str, str]:
        """Of these observation ids, the errors a later success fixed: id -> the success's id
        (on the same subject, or on that of a later error with the same signature, in the
        same repository). Search, prompt recall and the session context share this rule."""
        self.sync()
        with self.index.snapshot():
            return self.index.fixed_errors(ids)

    def scope_in_use(self, scope: dict) -> bool:
        """True when some observation, capsule or summary carries every id of `scope`."""
        scope = check_scope(scope)
        self.sync()
        # Pins are left out: one without a field matches every filter on it.
        return any(
            self.index.entities(etype, scope=scope, limit=1)
            for etype in ("observations", "capsules", "summaries")
        )

    def status(self) -> dict[str, Any]:
        """Store path, counts by type, redacted count, open capsules and problem files."""
        report = self.sync()
        counts = self.index.counts()
        return {
            "store": str(self.store.root),
            "index": str(self.index.path),
            "watcher": self.watcher(),
            "autowatchOff": self.autowatch_off(),
            "counts": {t: counts[t] for t in ENTITY_TYPES},
            "redacted": counts["redacted"],
            "openCapsules": [
                {"id": c["id"], "type": c["type"], "intent": c["intent"], "scopeIds": c["scopeIds"]}
                for c in self.index.open_capsules()
            ],
            "problems": [{"path": p.path, "reason": p.reason} for p in report.problems],
            "capture": self.capture_activity(),
        }

    def capture_activity(self) -> dict[str, Any]:
        """What agent hooks last recorded per event, their recent errors and unknown events."""
        from kindling.activity import read_activity

        return read_activity(self.store)

    def export(
        self,
        out: str | os.PathLike | BinaryIO,
        *,
        scope: dict | None = None,
        include_redacted: bool = False,
        progress: ProgressFactory | None = None,
        format: str = "kindling",
    ) -> ExportReport:
        """Write a bundle to a binary stream, or atomically to a file path; an ExportReport.

        `format="original"` writes what the original Kindling (TypeScript, Rust) imports.
        """
        from kindling.bundle.export import export_bundle, export_to_path

        options = {"scope": scope, "include_redacted": include_redacted, "progress": progress}
        options["format"] = format
        if isinstance(out, (str, os.PathLike)):
            return export_to_path(self.store, out, **options)
        return export_bundle(self.store, out, **options)

    def import_bundle(
        self,
        source: bytes | Handover,
        *,
        on_conflict: str = "keep",
        dry_run: bool = False,
        progress: ProgressFactory | None = None,
    ) -> ImportReport:
        """Import a bundle's bytes: all validated before any write; an ImportReport."""
        from kindling.bundle.importer import Handover, import_into

        handed = source if isinstance(source, Handover) else Handover(source)
        del source  # the importer frees the bytes once parsed (kindling.bundle.importer.Handover)
        with custom.applied(custom.load(self.store.root)):  # as every write: batch()
            return import_into(
                self._writer,
                handed,
                sync=self.sync,
                on_conflict=on_conflict,
                dry_run=dry_run,
                progress=progress,
            )

    def search(self, request: SearchRequest | str, **options: Any) -> dict:
        """Pins, the current summary and ranked candidates: a RetrieveResult dict.

        `request` is a SearchRequest, or a query whose keyword options (scope, kinds, since,
        max_results, max_tokens, include_redacted, explain) build one.
        """
        from kindling.search.request import as_request
        from kindling.search.retrieve import retrieve

        request = as_request(request, options)  # bad options fail before any sync
        self.sync()
        return retrieve(self.index, request)

    def reindex(self, full: bool = False, *, progress: ProgressFactory | None = None) -> SyncReport:
        """Walk every file and bring the index up to date, or rebuild it whole; a SyncReport."""
        if full:
            report = self.index.rebuild(progress=progress)
        else:
            report = self.index.sync(trust_watcher=False)
        self._last_sync = report
        return report

    # ------------------------------------------------------------ upkeep

    def fsck(self, *, fix: bool = False, progress: ProgressFactory | None = None) -> FsckReport:
        """Check every file and the index against each other; with fix, repair what is safe."""
        from kindling.fsck import fsck

        self.close()  # fsck may replace the index file
        return fsck(self.store, fix=fix, progress=progress)

    def gc(self, *, dry_run: bool = False, confirm: bool = False) -> GcReport:
        """Apply the store's retention policy (kindling.retention): retire old raw tool output
        no summary, pin or fix needs; a policy new to this clone only with `confirm`."""
        from kindling.retention import gc

        report = gc(self.store, dry_run=dry_run, confirm=confirm)
        if report.removed:
            self.sync()  # the retired files' rows leave the index now, not at the next read
        return report

    def retired(self, ref: str) -> dict | None:
        """What is known of a retired observation (its record and the commit that last held
        it), or None when `ref` names none; NotFoundError saying so when a capsule names the
        id but gc never retired it (deleted some other way)."""
        from kindling.errors import NotFoundError
        from kindling.model import is_valid_id
        from kindling.retention.show import absent_member, retired_info

        found = retired_info(self.store, ref)
        if found is None and is_valid_id(ref) and len(ref) >= 32:
            capsules = self.list("capsules", limit=None)
            note = absent_member(self.store, capsules, ref)
            if note is not None:
                raise NotFoundError(note)
        return found

    def git_setup(self, command: str | None = None) -> list[str]:
        """Route this store's entity files to the Kindling merge driver; what was done."""
        from kindling.git.setup import DRIVER_COMMAND, git_setup

        return git_setup(self.store.root, command or DRIVER_COMMAND)

    def resolve_conflicts(self, ids: Iterable[str] = ()) -> ResolveReport:
        """Settle conflicted entity files of a pending git merge (all, or these ids)."""
        from kindling.git.resolve import resolve_conflicts

        return resolve_conflicts(self.store.root, ids)

    def watch(
        self,
        *,
        debounce_ms: int,
        reconcile_every: float,
        on_event: Callable[[dict], None],
        idle_exit: float | None = None,
    ) -> None:
        """Keep the index current as files change, until SIGINT, SIGTERM or idle_exit s unused."""
        from kindling.watch.watcher import Watcher, run_until_signalled

        self.close()
        watcher = Watcher(
            self.store,
            debounce_ms=debounce_ms,
            reconcile_every=reconcile_every,
            on_event=on_event,
            idle_exit=idle_exit,
        )
        run_until_signalled(watcher)

    def watcher(self) -> dict | None:
        """The running watcher (pid, whether caught up, idle exit), or None."""
        from kindling.watch.daemon import running_pid

        pid = running_pid(self.index.watch_lock_path)
        if pid is None:
            return None
        state = self.index.watcher_state() or {}
        return {
            "pid": pid,
            "caughtUp": state.get("pending") is False,
            "idleExitS": state.get("idleExitS"),
        }

    def autowatch_off(self) -> str | None:
        """Why no watcher is started for this store by itself, or None when one may be."""
        from kindling.watch.daemon import disabled_by

        return disabled_by(self.store, self.settings)

    def stop_watcher(self) -> int | None:
        """Stop the store's running watcher and start none by itself in this clone until
        `start_watcher`; the pid stopped, or None when none was running."""
        from kindling.watch import daemon

        try:
            daemon.pause(self.store)
        except OSError as exc:
            raise KindlingError(f"cannot keep the watcher stopped: {exc.strerror or exc}") from None
        return daemon.stop(self.index.watch_lock_path)

    def start_watcher(self) -> int | None:
        """Let watchers start by themselves again in this clone, and start one now unless
        one runs; the pid started, or None when one was running already."""
        from kindling.watch import daemon

        daemon.resume(self.store)
        lock = self.index.watch_lock_path
        if lock is None:
            raise KindlingError(
                f"cannot watch {self.store.root}: there is nowhere to keep its index"
            )
        if daemon.running_pid(lock) is not None:
            return None
        try:
            return daemon.start(self.store, lock)
        except OSError as exc:
            raise KindlingError(f"cannot start a watcher: {exc.strerror or exc}") from None


__all__ = ["Found", "Memory", "Written"]
