"""Keeping the index in step with the files: full and per-folder syncs, and the row changes
they share (a rebuild from nothing is kindling.index.rebuild).

Every file's stat data is recorded as one key, `size:mtime_ns:ctime_ns:inode`, or as "" when
the file changed too recently for its stat data to be trusted (git's racy rule), which makes
the next sync re-read it. Each fan-out folder also records how many entity files it held and a
fingerprint of their stat data (the sum of each file's stat hash); a sync that finds both
unchanged skips that folder's files, so an unchanged store costs one stat per file and no
per-file lookups. The stat data is always taken before the bytes are read, so a file changed
during a sync differs on the next one. Files are read outside any lock; each batch of row
changes is one short write transaction.
"""

from __future__ import annotations

import os
import sqlite3
import stat as stat_module
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from kindling import hashing
from kindling.index import handoff
from kindling.index.gained import only_added
from kindling.index.read import problem_files
from kindling.index.rows import RowCounts, Rows
from kindling.index.scan import (
    ObjectPaths,
    buckets,
    read_entity_file,
    real_types,
    scan_folder,
    stat_key,
)
from kindling.index.schema import FileRead, Problem, SyncReport
from kindling.index.scrub import Scrub
from kindling.index.sweep import sweep
from kindling.model import ENTITY_TYPES

CHUNK = 2_000  # files re-read and applied per write transaction
# With a deadline, smaller transactions: a sync stops at the first chunk boundary past it.
DEADLINE_CHUNK = 200
# Page cache (negative: KiB) while a sync applies thousands of files, and SQLite's default.
BULK_CACHE_KIB, DEFAULT_CACHE_KIB = -32768, -2000
BUILDING = "building"  # meta key: set while an index built from nothing is being filled
# meta key: where the next walk cut short by a deadline starts, and how many folders walked in
# a row before it left no file unindexed ('<folder number> <count>')
CURSOR = "walk_cursor"

# rebuild.py judges its rows with the same two tests as a sync.
__all__ = ["RowCounts", "SyncPlan", "Syncer"]


@dataclass
class SyncPlan:
    """What a walk found to do: files to re-read, rows to drop, folder records to replace."""

    racy_from: int  # stat times at or after this are too recent to trust
    walked: int = 0
    changed: list[tuple[str, str, os.stat_result]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    folders: dict[str, tuple[int, int | None] | None] = field(default_factory=dict)
    new: set[str] = field(default_factory=set)  # changed files the index has no row for
    # The fan-out folders walked, or None for the whole store: only their problem files
    # were counted in `walked`.
    within: set[str] | None = None


class Syncer:
    """The sync machinery over one open index database.

    It holds what it needs and nothing more: the connection, where the files are, how to
    open a write transaction, and where a running watcher's lock lives.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        paths: ObjectPaths,
        transaction: Callable[[], AbstractContextManager],
        watch_lock: Path | None,
        deadline: float | None = None,
    ) -> None:
        self.conn = conn
        # time.monotonic() past which a sync stops after the chunk it is on (None: never)
        self.deadline = deadline
        self.paths = paths
        self.transaction = transaction
        self.watch_lock = watch_lock
        self.walked = 0  # files the last sync stat'ed
        self.stopped = False  # whether its walk stopped at the deadline, short of every folder
        self.watcher = False  # whether a watcher held the lock during the last sync
        # Files whose rows held words a forget took from the file (one that reached the file
        # but not the index, or one pulled in): scrubbed from the index as they were replaced.
        self.scrubbed: list[str] = []
        self._scrub = Scrub(conn)
        self._rows = Rows(conn, paths, self._scrub, self.scrubbed)

    def problems(self) -> list[Problem]:
        return problem_files(self.conn, self.paths)

    # ------------------------------------------------------------ entry points

    def sync(self, *, trust_watcher: bool = True) -> SyncReport:
        """Trust a live, caught-up watcher and re-list moved folders; otherwise walk all."""
        lock = self.watch_lock
        if trust_watcher and handoff.trusted_watcher(self.conn, lock):
            self.watcher = True
            handoff.mark_used(lock)
            moved = handoff.moved_folders(self.conn, self.paths.objects)
            if moved is not None:
                return self.sync_folders(*moved)
        return self.sync_all()

    def files(self) -> list[tuple[str, str, os.stat_result]]:
        """Every entity file under objects/ as (relative path, type, stat), stat only."""
        out = []
        for rel_folder, path in buckets(self.paths.objects):
            etype = rel_folder.split("/", 1)[0]
            items, _ = scan_folder(path)
            out.extend((f"{rel_folder}/{name}", etype, st) for name, st in items)
        return out

    def _recorded_folders(self, where: str = "", params: tuple = ()) -> dict:
        rows = self.conn.execute(
            f"SELECT path, count, fingerprint FROM folder_fingerprints {where}", params
        )
        return {path: (count, fp) for path, count, fp in rows}

    def sync_all(self) -> SyncReport:
        """Stat every entity file; re-read what differs; drop rows of vanished files."""
        plan = SyncPlan(self.paths.racy_from())
        dirs = None
        self.watcher = handoff.watcher_alive(self.watch_lock)
        if self.watcher:
            handoff.mark_used(self.watch_lock)
            dirs = handoff.stat_dirs(self.paths.root)
        recorded = self._recorded_folders()
        folders = buckets(self.paths.objects)
        if self.deadline is not None:
            return self._walk_until_deadline(plan, folders, recorded, dirs)
        for rel_folder, path in folders:
            self._scan_folder(plan, rel_folder, path, recorded.pop(rel_folder, None))
        for rel_folder in recorded:  # folders that are gone, with everything in them
            self._scan_folder(plan, rel_folder, None, recorded[rel_folder])
        self.walked = plan.walked
        return self._reconcile(plan, dirs, full=True)

    def _walk_until_deadline(
        self, plan: SyncPlan, folders: list, recorded: dict, dirs: dict | None
    ) -> SyncReport:
        """A whole walk when it fits before the deadline; else the folders walked by then, each
        reconciled as a folder-limited sync does, and the next such walk starts after them,
        so that walks cut short in turn still cover the whole store."""
        folders = sorted(folders)
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (CURSOR,)).fetchone()
        first, clean = (int(v) for v in row[0].split()) if row else (0, 0)
        first = first % len(folders) if folders else 0
        order = folders[first:] + folders[:first]
        for done, (rel_folder, path) in enumerate(order, 1):
            self._scan_folder(plan, rel_folder, path, recorded.pop(rel_folder, None))
            if done < len(order) and time.monotonic() >= self.deadline:
                plan.within = {rel for rel, _ in order[:done]}
                self.walked, self.stopped = plan.walked, True
                report = self._reconcile(plan, None, full=False)
                # Folders walked in a row whose every file the index now has: once they are
                # all of them, an index being built holds every file.
                clean = clean + done if not report.missing else 0
                with self.transaction():
                    self.conn.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                        (CURSOR, f"{(first + done) % len(folders)} {clean}"),
                    )
                    if clean >= len(folders):
                        finish_building(self.conn)
                return report
        for rel_folder in recorded:  # folders that are gone, with everything in them
            self._scan_folder(plan, rel_folder, None, recorded[rel_folder])
        self.walked = plan.walked
        return self._reconcile(plan, dirs, full=True)

    def sync_types(self, types: tuple[str, ...]) -> SyncReport:
        """Stat the files of these types only (capsules are few where observations are many)."""
        plan = SyncPlan(self.paths.racy_from())
        recorded = {}
        for etype in types:
            where = "WHERE path > ? AND path < ?"  # '0' sorts right after '/'
            recorded.update(self._recorded_folders(where, (etype + "/", etype + "0")))
        for rel_folder, path in buckets(self.paths.objects, types):
            self._scan_folder(plan, rel_folder, path, recorded.pop(rel_folder, None))
        for rel_folder in recorded:  # folders that are gone, with everything in them
            self._scan_folder(plan, rel_folder, None, recorded[rel_folder])
        return self._reconcile(plan, None, full=False)

    def sync_folders(
        self, moved: set[str], type_dirs: dict[str, int | None] | None = None
    ) -> SyncReport:
        """Reconcile only these fan-out folders (`<type>/<xx>`) with their recorded rows."""
        plan = SyncPlan(self.paths.racy_from(), within=set())
        dirs: dict[str, int | None] = dict(type_dirs or {})
        objects = self.paths.objects
        types = real_types(objects)
        for rel_folder in sorted(moved):
            etype, _, bucket = rel_folder.partition("/")
            if etype not in ENTITY_TYPES or not bucket or "/" in bucket:
                continue
            path: str | None = f"{objects}/{rel_folder}"
            try:
                # Before listing, as git does; under a symlinked type folder: never entered.
                st = os.lstat(path) if etype in types else None
            except (FileNotFoundError, NotADirectoryError):
                st = None
            if st is None or not stat_module.S_ISDIR(st.st_mode):
                dirs[rel_folder], path = None, None  # gone, or never a folder
            else:
                dirs[rel_folder] = st.st_mtime_ns
            plan.within.add(rel_folder)
            recorded = self._recorded_folders("WHERE path = ?", (rel_folder,))
            self._scan_folder(plan, rel_folder, path, recorded.get(rel_folder))
        return self._reconcile(plan, dirs, full=False)

    def _scan_folder(
        self, plan: SyncPlan, rel_folder: str, path: str | None, recorded: tuple | None
    ) -> None:
        """Compare one folder with its records: by fingerprint, then (if needed) file by file."""
        items, fingerprint = scan_folder(path) if path is not None else ([], 0)
        plan.walked += len(items)
        if recorded == (len(items), fingerprint):
            return
        if recorded is not None and recorded[1] is not None and len(items) > recorded[0]:
            gained = only_added(self.conn, rel_folder, items, fingerprint, recorded)
            if gained is not None:  # what a pull or a checkout does: only those are read
                etype = rel_folder.split("/", 1)[0]
                for name, st in gained:
                    rel = f"{rel_folder}/{name}"
                    plan.changed.append((rel, etype, st))
                    plan.new.add(rel)
                recent = plan.racy_from
                racy = any(st.st_mtime_ns >= recent or st.st_ctime_ns >= recent for _, st in items)
                plan.folders[rel_folder] = (len(items), None if racy else fingerprint)
                return
        keys = dict(
            self.conn.execute(
                "SELECT path, statkey FROM files WHERE path > ? AND path < ?",
                (rel_folder + "/", rel_folder + "0"),  # '0' sorts right after '/'
            )
        )
        etype = rel_folder.split("/", 1)[0]
        pop = keys.pop
        recent = plan.racy_from
        racy = False
        for name, st in items:
            rel = f"{rel_folder}/{name}"
            recorded = pop(rel, None)
            if recorded != stat_key(st):
                plan.changed.append((rel, etype, st))
                if recorded is None:
                    plan.new.add(rel)
            if st.st_mtime_ns >= recent or st.st_ctime_ns >= recent:
                racy = True
        # Vanished files: a set difference against what is recorded, never a count.
        plan.removed.extend(keys)
        record = None if path is None else (len(items), None if racy else fingerprint)
        if record != recorded:
            plan.folders[rel_folder] = record

    # ------------------------------------------------------------ the shared core

    def _reconcile(
        self, plan: SyncPlan, dirs: dict[str, int | None] | None, *, full: bool
    ) -> SyncReport:
        if len(plan.changed) < hashing.BULK_FILES:
            return self._reconcile_plan(plan, dirs, full=full)
        # Thousands of rows land at random places in every index's B-tree: a bigger page
        # cache for this sync keeps those pages from being read and spilled over and over.
        self.conn.execute(f"PRAGMA cache_size = {BULK_CACHE_KIB}")
        try:
            return self._reconcile_plan(plan, dirs, full=full)
        finally:
            self.conn.execute(f"PRAGMA cache_size = {DEFAULT_CACHE_KIB}")

    def _reconcile_plan(
        self, plan: SyncPlan, dirs: dict[str, int | None] | None, *, full: bool
    ) -> SyncReport:
        racy_from = plan.racy_from
        dirs_moved = dirs is not None and handoff.dirs_differ(self.conn, dirs, racy_from)
        if not plan.changed and not plan.removed and not plan.folders and not dirs_moved:
            if full and building(self.conn):
                with self.transaction():
                    finish_building(self.conn)
            problems = self.problems()
            quiet = self._walked_problems(problems, plan.within, ())
            return SyncReport(unchanged=plan.walked - quiet, problems=problems)
        removed = list(plan.removed)
        # Files the index lacks first: a sync stopped at its deadline then always makes
        # progress, never spending its time re-reading files too recent to trust.
        changed = sorted(plan.changed, key=lambda c: c[0] not in plan.new)
        missing = len(plan.new)  # changed[:missing]: once applied by a full walk, none lacks
        totals: Counter[str] = Counter()
        many = len(changed) >= hashing.BULK_FILES  # a checkout or a pull: OpenSSL pays
        # In chunks, each its own transaction: a sync of a whole checkout or import never
        # holds every file's bytes and entity at once, and one stopped (killed, or at its
        # deadline) keeps what it applied; the next sync finds the rest changed still.
        size = CHUNK if self.deadline is None else DEADLINE_CHUNK
        pending = 0
        for start in range(0, max(len(changed), 1), size):
            chunk = changed[start : start + size]
            hashes = self._rows.recorded_hashes([c[0] for c in chunk])
            reads = []
            for rel, etype, st in chunk:
                recorded = hashes.get(rel)
                read = read_entity_file(self.paths, rel, etype, st, racy_from, recorded, bulk=many)
                if read is None:
                    removed.append(rel)
                else:
                    reads.append(read)
            last = start + size >= len(changed)
            with self.transaction():
                done = self.apply(reads, removed if last else [])
                if last:
                    self._store_folders(plan.folders)
                    if dirs is not None:
                        handoff.store_dirs(self.conn, dirs, racy_from, full=full)
                    if full:
                        sweep(self.conn, self._scrub)
                if full and start + size >= missing:
                    finish_building(self.conn)  # what is left is re-reads, as in any sync
            self._scrub.checkpoint()
            totals.update(done._asdict())
            del reads
            if not last and self.deadline is not None and time.monotonic() >= self.deadline:
                # What it leaves that the index lacks (changed files it holds an older copy of).
                pending = len(changed) - start - size
                break
        counts = RowCounts(**totals)
        problems = self.problems()
        # Not walked, or not quiet: changed files, and vanished ones (a sync stopped at its
        # deadline has not dropped their rows yet).
        changed_rels = {c[0] for c in plan.changed}.union(plan.removed)
        quiet = self._walked_problems(problems, plan.within, changed_rels)
        unchanged = plan.walked - len(plan.changed) - quiet + counts.same
        report = SyncReport(counts.added, counts.updated, counts.removed, unchanged, problems)
        report.pending = pending
        report.missing = max(0, min(pending, missing - (len(changed) - pending)))
        return report

    def _store_folders(self, records: dict[str, tuple[int, int | None] | None]) -> None:
        for rel_folder, record in records.items():
            if record is None:
                self.conn.execute("DELETE FROM folder_fingerprints WHERE path = ?", (rel_folder,))
            else:
                self.conn.execute(
                    "INSERT OR REPLACE INTO folder_fingerprints(path, count, fingerprint) "
                    "VALUES (?, ?, ?)",
                    (rel_folder, *record),
                )

    def _walked_problems(self, problems: list[Problem], within: set[str] | None, changed) -> int:
        """Problem files this sync walked (in `within`, or anywhere if None) but did not change."""
        rels = [self.paths.rel_of_abspath(p.path) for p in problems]
        walked = [r for r in rels if within is None or r.rpartition("/")[0] in within]
        return sum(r not in changed for r in walked)

    def commit(self, reads: list[FileRead], removed: list[str]) -> RowCounts:
        """`apply` in a transaction of its own, then the WAL truncated if it scrubbed."""
        with self.transaction():
            counts = self.apply(reads, removed)
        self._scrub.checkpoint()
        return counts

    def apply(self, reads: list[FileRead], removed: list[str]) -> RowCounts:
        """Write row changes inside the caller's transaction (kindling.index.rows)."""
        return self._rows.apply(reads, removed)


def building(conn: sqlite3.Connection) -> bool:
    """True while an index built from nothing has not yet been filled by a whole sync."""
    return conn.execute("SELECT 1 FROM meta WHERE key = ?", (BUILDING,)).fetchone() is not None


def finish_building(conn: sqlite3.Connection) -> None:
    """A whole sync went through: the index holds every file (in the caller's transaction)."""
    conn.execute("DELETE FROM meta WHERE key = ?", (BUILDING,))
