"""Keeping the index in step with the files: full and per-folder syncs, and the row changes
they share (a rebuild from nothing is kindling.index_build).

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
import stat as stat_module
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kindling import canonical
from kindling import index_folders as folders
from kindling import index_schema as schema
from kindling.index_files import (
    S_IFMT,
    S_IFREG,
    buckets,
    full_key,
    parse,
    read_bytes,
    scan_folder,
    stat_key,
    walkable,
    winner,
)
from kindling.index_schema import FileRead, Problem, SyncReport
from kindling.model import ENTITY_TYPES

if TYPE_CHECKING:
    from kindling.index import Index


@dataclass
class Scan:
    """What a walk found to do: files to re-read, rows to drop, folder records to replace."""

    t0: int
    walked: int = 0
    changed: list[tuple[str, str, os.stat_result]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    folders: dict[str, tuple[int, int | None] | None] = field(default_factory=dict)
    # The fan-out folders walked, or None for the whole store: only their problem files
    # were counted in `walked`.
    within: set[str] | None = None


class Scanner:
    """The sync machinery of one Index."""

    def __init__(self, index: Index) -> None:
        self.index = index

    @property
    def conn(self):
        return self.index.conn

    # ------------------------------------------------------------ entry points

    def sync(self, *, trust_watcher: bool = True) -> SyncReport:
        """Trust a live, caught-up watcher and re-list moved folders; otherwise walk all."""
        lock = self.index.watch_lock_path
        if trust_watcher and folders.watcher_caught_up(self.index.watcher_state(), lock):
            moved = folders.moved_folders(self.conn, self.index.store.objects)
            if moved is not None:
                return self.sync_folders(*moved)
        return self.sync_all()

    def buckets(self) -> list[tuple[str, str]]:
        """Every fan-out folder as (relative path, absolute path)."""
        return buckets(self.index._objects)

    def files(self) -> list[tuple[str, str, os.stat_result]]:
        """Every entity file under objects/ as (relative path, type, stat), stat only."""
        out = []
        for rel_folder, path in self.buckets():
            etype = rel_folder.split("/", 1)[0]
            items, _ = scan_folder(path)
            out.extend((f"{rel_folder}/{name}", etype, st) for name, st in items)
        return out

    def _recorded_folders(self, where: str = "", params: tuple = ()) -> dict:
        rows = self.conn.execute(f"SELECT path, count, fingerprint FROM folders {where}", params)
        return {path: (count, fp) for path, count, fp in rows}

    def sync_all(self) -> SyncReport:
        """Stat every entity file; re-read what differs; drop rows of vanished files."""
        scan = Scan(time.time_ns())
        dirs = None
        if folders.watcher_alive(self.index.watch_lock_path):
            dirs = folders.stat_dirs(self.index.store.objects)
        recorded = self._recorded_folders()
        for rel_folder, path in self.buckets():
            self._scan_folder(scan, rel_folder, path, recorded.pop(rel_folder, None))
        for rel_folder in recorded:  # folders that are gone, with everything in them
            self._scan_folder(scan, rel_folder, None, recorded[rel_folder])
        return self._reconcile(scan, dirs, full=True)

    def sync_folders(
        self, moved: set[str], type_dirs: dict[str, int | None] | None = None
    ) -> SyncReport:
        """Reconcile only these fan-out folders (`<type>/<xx>`) with their recorded rows."""
        scan = Scan(time.time_ns(), within=set())
        dirs: dict[str, int | None] = dict(type_dirs or {})
        objects = self.index._objects
        for rel_folder in sorted(moved):
            etype, _, bucket = rel_folder.partition("/")
            if etype not in ENTITY_TYPES or not bucket or "/" in bucket:
                continue
            path: str | None = f"{objects}/{rel_folder}"
            try:
                st = os.lstat(path)  # before listing, as git does
            except (FileNotFoundError, NotADirectoryError):
                st = None
            if st is None or not stat_module.S_ISDIR(st.st_mode):
                dirs[rel_folder], path = None, None  # gone, or never a folder
            else:
                dirs[rel_folder] = st.st_mtime_ns
            scan.within.add(rel_folder)
            recorded = self._recorded_folders("WHERE path = ?", (rel_folder,))
            self._scan_folder(scan, rel_folder, path, recorded.get(rel_folder))
        return self._reconcile(scan, dirs, full=False)

    def _scan_folder(
        self, scan: Scan, rel_folder: str, path: str | None, recorded: tuple | None
    ) -> None:
        """Compare one folder with its records: by fingerprint, then (if needed) file by file."""
        items, fingerprint = scan_folder(path) if path is not None else ([], 0)
        scan.walked += len(items)
        if recorded == (len(items), fingerprint):
            return
        keys = dict(
            self.conn.execute(
                "SELECT path, statkey FROM files WHERE path > ? AND path < ?",
                (rel_folder + "/", rel_folder + "0"),  # '0' sorts right after '/'
            )
        )
        etype = rel_folder.split("/", 1)[0]
        pop = keys.pop
        recent = scan.t0 - schema.RACY_NS
        racy = False
        for name, st in items:
            rel = f"{rel_folder}/{name}"
            if pop(rel, None) != full_key(st):
                scan.changed.append((rel, etype, st))
            if st.st_mtime_ns >= recent or st.st_ctime_ns >= recent:
                racy = True
        # Vanished files: a set difference against what is recorded, never a count.
        scan.removed.extend(keys)
        record = None if path is None else (len(items), None if racy else fingerprint)
        if record != recorded:
            scan.folders[rel_folder] = record

    # ------------------------------------------------------------ the shared core

    def _reconcile(
        self, scan: Scan, dirs: dict[str, int | None] | None, *, full: bool
    ) -> SyncReport:
        t0 = scan.t0
        dirs_moved = dirs is not None and folders.dirs_differ(self.conn, dirs, t0)
        if not scan.changed and not scan.removed and not scan.folders and not dirs_moved:
            problems = self.index.problems()
            quiet = self._walked_problems(problems, scan.within, ())
            return SyncReport(unchanged=scan.walked - quiet, problems=problems)
        hashes = self._recorded_hashes([c[0] for c in scan.changed])
        reads = []
        removed = list(scan.removed)
        for rel, etype, st in scan.changed:
            read = self._read(rel, etype, st, t0, hashes.get(rel))
            if read is None:
                removed.append(rel)
            else:
                reads.append(read)
        with self.index.transaction():
            counts = self.apply(reads, removed)
            self._store_folders(scan.folders)
            if dirs is not None:
                folders.store_dirs(self.conn, dirs, t0, full=full)
            if full:
                self._sweep()
        problems = self.index.problems()
        changed_rels = {c[0] for c in scan.changed}
        quiet = self._walked_problems(problems, scan.within, changed_rels)
        unchanged = scan.walked - len(scan.changed) - quiet + counts[3]
        return SyncReport(counts[0], counts[1], counts[2], unchanged, problems)

    def _store_folders(self, records: dict[str, tuple[int, int | None] | None]) -> None:
        for rel_folder, record in records.items():
            if record is None:
                self.conn.execute("DELETE FROM folders WHERE path = ?", (rel_folder,))
            else:
                self.conn.execute(
                    "INSERT OR REPLACE INTO folders(path, count, fingerprint) VALUES (?, ?, ?)",
                    (rel_folder, *record),
                )

    def _walked_problems(self, problems: list[Problem], within: set[str] | None, changed) -> int:
        """Problem files this sync walked (in `within`, or anywhere if None) but did not change."""
        rels = [p.path[self.index._cut :] for p in problems]
        walked = [r for r in rels if within is None or r.rpartition("/")[0] in within]
        return sum(r not in changed for r in walked)

    def read_file(
        self,
        rel: str,
        entity_type: str,
        *,
        st: os.stat_result | None = None,
        t0: int | None = None,
        recorded_hash: str | None = None,
        known: tuple[bytes, dict] | None = None,
    ) -> FileRead | None:
        """Read one file (stat first); None when it is gone or is not an entity file."""
        if not walkable(rel) or rel.split("/", 1)[0] != entity_type:
            return None
        if t0 is None:
            t0 = time.time_ns()
        if st is None:
            try:
                st = os.lstat(self.index.abspath(rel))
            except (FileNotFoundError, NotADirectoryError):
                return None
            if st.st_mode & S_IFMT != S_IFREG:
                return None
        return self._read(rel, entity_type, st, t0, recorded_hash, known)

    def _read(
        self,
        rel: str,
        entity_type: str,
        st: os.stat_result,
        t0: int,
        recorded_hash: str | None = None,
        known: tuple[bytes, dict] | None = None,
    ) -> FileRead | None:
        path = self.index.abspath(rel)
        problem = entity = None
        try:
            data = read_bytes(path, st.st_size)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            data, problem = b"", f"unreadable ({exc.strerror})"
        digest = canonical.content_hash(data)
        if problem is None:
            if known is not None and known[0] == data:
                entity = known[1]
            elif recorded_hash != digest:
                entity, problem = parse(entity_type, path, data)
        stat = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        return FileRead(rel, entity_type, stat, stat_key(st, t0), digest, data, entity, problem)

    def apply(self, reads: list[FileRead], removed: list[str]) -> list[int]:
        """Write row changes inside the caller's transaction: [added, updated, removed, same]."""
        conn = self.conn
        counts = [0, 0, 0, 0]
        touched: set[tuple[str, str]] = set()
        for rel in removed:
            if self._still_there(rel):
                continue  # came back since the walk; the next sync reads it
            row = conn.execute("SELECT id FROM files WHERE path = ?", (rel,)).fetchone()
            if row is None:
                continue
            counts[2] += self._drop_entity(row[0], touched)
            conn.execute("DELETE FROM files WHERE id = ?", row)
        for read in reads:
            row = conn.execute(
                "SELECT id, hash, problem FROM files WHERE path = ?", (read.rel,)
            ).fetchone()
            if row is not None and row[1] == read.hash:
                conn.execute(
                    "UPDATE files SET size = ?, mtime_ns = ?, ctime_ns = ?, ino = ?, statkey = ? "
                    "WHERE id = ?",
                    (*read.stat, read.statkey, row[0]),
                )
                counts[3] += row[2] is None
                continue
            entity, problem = read.entity, read.problem
            if entity is None and problem is None:
                entity, problem = parse(read.entity_type, self.index.abspath(read.rel), read.data)
            values = (read.entity_type, *read.stat, read.statkey, read.hash, problem)
            if row is None:
                fid = conn.execute(
                    "INSERT INTO files(type, size, mtime_ns, ctime_ns, ino, statkey, hash, "
                    "problem, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*values, read.rel),
                ).lastrowid
                was_entity = False
            else:
                fid = row[0]
                conn.execute(
                    "UPDATE files SET type = ?, size = ?, mtime_ns = ?, ctime_ns = ?, ino = ?, "
                    "statkey = ?, hash = ?, problem = ? WHERE id = ?",
                    (*values, fid),
                )
                was_entity = bool(self._drop_entity(fid, touched))
            if entity is None:
                counts[2] += was_entity
                continue
            conn.execute(schema.INSERT_ENTITY, schema.entity_row(fid, read.entity_type, entity))
            text = schema.searchable_text(read.entity_type, entity)
            if text is not None:
                conn.execute("INSERT INTO fts(rowid, body) VALUES (?, ?)", (fid, text))
            touched.add((read.entity_type, entity["id"]))
            counts[1 if was_entity else 0] += 1
        self._reshadow(touched)
        # Rows changed outside a full walk: those folders are compared file by file next time.
        for rel_folder in {rel.rsplit("/", 1)[0] for rel in [*removed, *(r.rel for r in reads)]}:
            conn.execute(
                "INSERT INTO folders(path, count, fingerprint) VALUES (?, 0, NULL) "
                "ON CONFLICT(path) DO UPDATE SET fingerprint = NULL",
                (rel_folder,),
            )
        return counts

    def _drop_entity(self, fid: int, touched: set) -> int:
        old = self.conn.execute("SELECT type, id FROM entities WHERE rowid = ?", (fid,)).fetchone()
        if old is None:
            return 0
        touched.add(tuple(old))
        self.conn.execute("DELETE FROM fts WHERE rowid = ?", (fid,))
        self.conn.execute("DELETE FROM entities WHERE rowid = ?", (fid,))
        return 1

    def _still_there(self, rel: str) -> bool:
        try:
            st = os.lstat(self.index.abspath(rel))
        except OSError:
            return False
        return st.st_mode & S_IFMT == S_IFREG and walkable(rel)

    def _reshadow(self, touched: set[tuple[str, str]]) -> None:
        """When files share an id, the one at the id's own path (else the first path) wins."""
        for etype, eid in touched:
            rows = self.conn.execute(
                "SELECT e.rowid, f.path, e.shadowed FROM entities e JOIN files f "
                "ON f.id = e.rowid WHERE e.id = ? AND e.type = ?",
                (eid, etype),
            ).fetchall()
            if not rows:
                continue
            winner_id = winner(etype, eid, [(path, rowid) for rowid, path, _ in rows])
            for rowid, _, shadowed in rows:
                want = int(rowid != winner_id)
                if shadowed != want:
                    self.conn.execute(
                        "UPDATE entities SET shadowed = ? WHERE rowid = ?", (want, rowid)
                    )

    def _recorded_hashes(self, rels: list[str]) -> dict[str, str]:
        if not rels:
            return {}
        if len(rels) > 2000:
            return dict(self.conn.execute("SELECT path, hash FROM files"))
        out: dict[str, str] = {}
        for i in range(0, len(rels), 500):
            chunk = rels[i : i + 500]
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT path, hash FROM files WHERE path IN ({marks})"
            out.update(self.conn.execute(sql, chunk))
        return out

    def _sweep(self) -> None:
        """Remove rows that point at nothing: none should exist, and a sync never trusts that.

        Counting first (a few index scans) keeps this cheap; the deletes only run on a mismatch.
        """
        conn = self.conn
        entity_files, entities, fts_rows, searchable = conn.execute(
            "SELECT (SELECT count(*) FROM files) "
            "- (SELECT count(*) FROM files WHERE problem IS NOT NULL), "
            "(SELECT count(*) FROM entities), (SELECT count(*) FROM fts_docsize), "
            "(SELECT count(*) FROM entities WHERE type IN ('summaries', 'observations')) "
            "- (SELECT count(*) FROM entities INDEXED BY entities_redacted "
            "WHERE redacted = 1 AND type = 'observations')"
        ).fetchone()
        if entity_files == entities and fts_rows == searchable:
            return
        conn.execute(
            "DELETE FROM entities WHERE rowid NOT IN (SELECT id FROM files WHERE problem IS NULL)"
        )
        conn.execute(
            "DELETE FROM fts WHERE rowid NOT IN (SELECT rowid FROM entities WHERE "
            "type = 'summaries' OR (type = 'observations' AND redacted = 0))"
        )
        # A file row without its entity row: make the next sync re-read and re-parse it.
        conn.execute(
            "UPDATE files SET hash = '', statkey = '' WHERE problem IS NULL "
            "AND id NOT IN (SELECT rowid FROM entities)"
        )
