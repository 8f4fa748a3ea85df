"""Keeping the index in step with the files: full and per-folder syncs, the rebuild, and the
row changes they share.

Reading files happens outside any lock; each batch of row changes is one short write
transaction. The stat data recorded for a file is always taken before its bytes were read, so
a file changed during a sync differs on the next one and is picked up then.

Readers trust a live watcher (issue 5) through this contract:
- the watcher holds an exclusive `flock` on `Index.watch_lock_path` for its whole life (readers
  probe it with a non-blocking shared lock for an instant, so the watcher retries its own
  non-blocking exclusive lock for a second before deciding another watcher runs);
- right after taking the lock, before its first reconcile, it publishes
  `set_watcher_state({"pid": ..., "pending": True})`, and `"pending": False` only once the
  index reflects every change it has been told about (optionally with `heartbeatMs` and
  `staleAfterMs`, after which readers stop trusting it);
- it applies each batch of changed paths with `Index.refresh(paths)`.
A reader that finds the lock held and the state not pending skips the full walk and only
re-lists the fan-out folders whose mtime moved, so added, removed and renamed files are never
missed; otherwise it walks everything.
"""

from __future__ import annotations

import fcntl
import os
import stat as stat_module
import time
from typing import TYPE_CHECKING

from kindling import canonical
from kindling import index_schema as schema
from kindling.errors import CorruptFileError
from kindling.index_schema import FileRead, Problem, SyncReport
from kindling.model import ENTITY_TYPES
from kindling.store import Store, StoredFile

if TYPE_CHECKING:
    from kindling.index import Index

_FILE_COLUMNS = "path, size, mtime_ns, ctime_ns, ino, racy"


def parse(entity_type: str, path: str, data: bytes) -> tuple[dict | None, str | None]:
    """(entity, None) for a valid file, (None, reason) for a problem file."""
    try:
        return Store.parse(entity_type, path, data), None
    except CorruptFileError as exc:
        return None, exc.reason


def _entity_file_name(name: str) -> bool:
    # The same rule as Store.walk: `*.json`, not hidden (temp files of atomic writes are).
    return name.endswith(".json") and not name.startswith(".")


def walkable(rel: str) -> bool:
    """True when a relative path is where a walk could find an entity file."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[0] in ENTITY_TYPES and _entity_file_name(parts[2])


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
        if trust_watcher and self.watcher_caught_up():
            moved = self.moved_folders()
            if moved is not None:
                folders, type_dirs = moved
                return self.sync_folders(folders, type_dirs)
        return self.sync_all()

    def sync_all(self) -> SyncReport:
        """Stat every entity file, re-read what differs, drop rows of vanished files."""
        t0 = time.time_ns()
        dirs = self.stat_dirs() if self.watcher_alive() else None
        cut = self.index._cut
        seen = {f.path[cut:]: f for f in self.index.store.walk()}
        recorded = {
            row[0]: row[1:] for row in self.conn.execute(f"SELECT {_FILE_COLUMNS} FROM files")
        }
        return self._reconcile(seen, recorded, t0, dirs, full=True)

    def sync_folders(
        self, folders: set[str], type_dirs: dict[str, int | None] | None = None
    ) -> SyncReport:
        """Reconcile only these fan-out folders (`<type>/<xx>`) with their recorded rows."""
        t0 = time.time_ns()
        dirs: dict[str, int | None] = dict(type_dirs or {})
        seen: dict[str, StoredFile] = {}
        recorded: dict[str, tuple] = {}
        objects = self.index.store.objects
        for folder in sorted(folders):
            parts = folder.split("/")
            if len(parts) != 2 or parts[0] not in ENTITY_TYPES:
                continue
            path = objects / folder
            try:
                dirs[folder] = os.lstat(path).st_mtime_ns  # before listing, as git does
                entries = list(os.scandir(path))
            except (FileNotFoundError, NotADirectoryError):
                dirs[folder] = None
                entries = []
            for entry in entries:
                if not _entity_file_name(entry.name):
                    continue
                st = entry.stat(follow_symlinks=False)
                if stat_module.S_ISREG(st.st_mode):
                    seen[f"{folder}/{entry.name}"] = StoredFile(parts[0], entry.path, st)
            rows = self.conn.execute(
                f"SELECT {_FILE_COLUMNS} FROM files WHERE path > ? AND path < ?",
                (folder + "/", folder + "0"),  # '0' sorts right after '/'
            )
            recorded.update((row[0], row[1:]) for row in rows)
        return self._reconcile(seen, recorded, t0, dirs, full=False)

    # ------------------------------------------------------------ the shared core

    def _reconcile(
        self,
        seen: dict[str, StoredFile],
        recorded: dict[str, tuple],
        t0: int,
        dirs: dict[str, int | None] | None,
        *,
        full: bool,
    ) -> SyncReport:
        changed = []
        for rel, f in seen.items():
            st = f.stat
            if recorded.get(rel) != (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, 0):
                changed.append((rel, f))
        # Vanished files: a set difference against what is recorded, never a count.
        removed = [rel for rel in recorded if rel not in seen]
        dirs_moved = dirs is not None and self._dirs_differ(dirs, t0)
        counts = [0, 0, 0, 0]
        if changed or removed or dirs_moved:
            hashes = self._recorded_hashes([rel for rel, _ in changed])
            reads = []
            for rel, f in changed:
                read = self.read_file(
                    rel, f.entity_type, st=f.stat, t0=t0, recorded_hash=hashes.get(rel)
                )
                if read is None:
                    removed.append(rel)
                else:
                    reads.append(read)
            with self.index.transaction():
                counts = self.apply(reads, removed)
                if dirs is not None:
                    self._store_dirs(dirs, t0, full=full)
                if full:
                    self._sweep()
        problems = self.index.problems()
        changed_rels = {rel for rel, _ in changed}
        cut = self.index._cut
        quiet_problems = sum(
            1 for p in problems if p.path[cut:] in seen and p.path[cut:] not in changed_rels
        )
        unchanged = len(seen) - len(changed) - quiet_problems + counts[3]
        return SyncReport(counts[0], counts[1], counts[2], unchanged, problems)

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
        path = self.index.abspath(rel)
        if t0 is None:
            t0 = time.time_ns()
        if st is None:
            try:
                st = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                return None
            if not stat_module.S_ISREG(st.st_mode):
                return None
        problem = entity = None
        try:
            with open(path, "rb") as fh:
                data = fh.read()
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
        racy = int(max(st.st_mtime_ns, st.st_ctime_ns) >= t0 - schema.RACY_NS)
        stat = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        return FileRead(rel, entity_type, stat, racy, digest, data, entity, problem)

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
            old = self._drop_entity(row[0], touched)
            conn.execute("DELETE FROM files WHERE id = ?", row)
            counts[2] += old
        for read in reads:
            row = conn.execute(
                "SELECT id, hash, problem FROM files WHERE path = ?", (read.rel,)
            ).fetchone()
            if row is not None and row[1] == read.hash:
                conn.execute(
                    "UPDATE files SET size = ?, mtime_ns = ?, ctime_ns = ?, ino = ?, racy = ? "
                    "WHERE id = ?",
                    (*read.stat, read.racy, row[0]),
                )
                counts[3] += row[2] is None
                continue
            entity, problem = read.entity, read.problem
            if entity is None and problem is None:
                entity, problem = parse(read.entity_type, self.index.abspath(read.rel), read.data)
            values = (read.entity_type, *read.stat, read.racy, read.hash, problem)
            if row is None:
                fid = conn.execute(
                    "INSERT INTO files(type, size, mtime_ns, ctime_ns, ino, racy, hash, problem, "
                    "path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*values, read.rel),
                ).lastrowid
                was_entity = False
            else:
                fid = row[0]
                conn.execute(
                    "UPDATE files SET type = ?, size = ?, mtime_ns = ?, ctime_ns = ?, ino = ?, "
                    "racy = ?, hash = ?, problem = ? WHERE id = ?",
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
        return stat_module.S_ISREG(st.st_mode) and walkable(rel)

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
            home = schema.canonical_rel(etype, eid)
            winner = min(rows, key=lambda r: (r[1] != home, r[1]))[0]
            for rowid, _, shadowed in rows:
                want = int(rowid != winner)
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
            out.update(
                self.conn.execute(f"SELECT path, hash FROM files WHERE path IN ({marks})", chunk)
            )
        return out

    def _sweep(self) -> None:
        """Remove rows that point at nothing (none should exist; a sync never trusts that)."""
        conn = self.conn
        conn.execute(
            "DELETE FROM entities WHERE rowid NOT IN (SELECT id FROM files WHERE problem IS NULL)"
        )
        conn.execute(
            "DELETE FROM fts WHERE rowid NOT IN (SELECT rowid FROM entities WHERE "
            "type = 'summaries' OR (type = 'observations' AND redacted = 0))"
        )
        # A file row without its entity row: force a re-read on the next sync.
        conn.execute(
            "UPDATE files SET hash = '', racy = 1 WHERE problem IS NULL "
            "AND id NOT IN (SELECT rowid FROM entities)"
        )

    # ------------------------------------------------------------ rebuild

    def build(self, *, had_schema: bool) -> SyncReport:
        """Replace every table from a fresh read of all files (inside the caller's transaction)."""
        conn = self.conn
        old = {}
        if had_schema:
            old = dict(conn.execute("SELECT path, hash FROM files WHERE problem IS NULL"))
        t0 = time.time_ns()
        dirs = self.stat_dirs() if self.watcher_alive() else None
        cut = self.index._cut
        file_rows, entity_rows, fts_rows = [], [], []
        owners: dict[tuple[str, str], list[tuple[str, int]]] = {}
        report = SyncReport()
        indexed = set()
        for fid, f in enumerate(self.index.store.walk(), 1):
            rel = f.path[cut:]
            read = self.read_file(rel, f.entity_type, st=f.stat, t0=t0)
            if read is None:
                continue
            entity, problem = read.entity, read.problem
            file_rows.append((fid, rel, f.entity_type, *read.stat, read.racy, read.hash, problem))
            if entity is None:
                continue
            entity_rows.append(schema.entity_row(fid, f.entity_type, entity))
            text = schema.searchable_text(f.entity_type, entity)
            if text is not None:
                fts_rows.append((fid, text))
            owners.setdefault((f.entity_type, entity["id"]), []).append((rel, fid))
            indexed.add(rel)
            if rel not in old:
                report.added += 1
            elif old[rel] != read.hash:
                report.updated += 1
            else:
                report.unchanged += 1
        report.removed = len(old.keys() - indexed)
        schema.create(conn)
        conn.executemany(
            "INSERT INTO files(id, path, type, size, mtime_ns, ctime_ns, ino, racy, hash, problem) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            file_rows,
        )
        conn.executemany(schema.INSERT_ENTITY, entity_rows)
        conn.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)", fts_rows)
        losers = []
        for (etype, eid), held in owners.items():
            if len(held) > 1:
                home = schema.canonical_rel(etype, eid)
                winner = min(held, key=lambda h: (h[0] != home, h[0]))
                losers.extend((fid,) for _, fid in held if fid != winner[1])
        conn.executemany("UPDATE entities SET shadowed = 1 WHERE rowid = ?", losers)
        schema.create_indexes(conn)
        if dirs is not None:
            self._store_dirs(dirs, t0, full=True)
        conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION}")
        report.problems = self.index.problems()
        return report

    # ------------------------------------------------------------ folders and the watcher

    def stat_dirs(self) -> dict[str, int | None]:
        """mtime_ns of every type folder and fan-out folder, each taken before it is listed."""
        out: dict[str, int | None] = {}
        objects = self.index.store.objects
        for etype in ENTITY_TYPES:
            try:
                out[etype] = os.lstat(objects / etype).st_mtime_ns
                entries = list(os.scandir(objects / etype))
            except (FileNotFoundError, NotADirectoryError):
                out[etype] = None
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    out[f"{etype}/{entry.name}"] = entry.stat(follow_symlinks=False).st_mtime_ns
        return out

    def _dirs_differ(self, dirs: dict[str, int | None], t0: int) -> bool:
        recorded = {p: (m, r) for p, m, r in self.conn.execute("SELECT * FROM dirs")}
        for rel, mtime in dirs.items():
            want = None if mtime is None else (mtime, int(mtime >= t0 - schema.RACY_NS))
            if recorded.get(rel) != want:
                return True
        return False

    def _store_dirs(self, dirs: dict[str, int | None], t0: int, *, full: bool) -> None:
        if full:
            self.conn.execute("DELETE FROM dirs")
        for rel, mtime in dirs.items():
            if mtime is None:
                self.conn.execute(
                    "DELETE FROM dirs WHERE path = ? OR path LIKE ?", (rel, rel + "/%")
                )
            else:
                racy = int(mtime >= t0 - schema.RACY_NS)
                self.conn.execute(
                    "INSERT OR REPLACE INTO dirs(path, mtime_ns, racy) VALUES (?, ?, ?)",
                    (rel, mtime, racy),
                )

    def moved_folders(self) -> tuple[set[str], dict[str, int | None]] | None:
        """Fan-out folders whose mtime moved since recorded (None when nothing is recorded)."""
        recorded = {p: (m, r) for p, m, r in self.conn.execute("SELECT * FROM dirs")}
        if not recorded:
            return None
        objects = self.index.store.objects
        folders: set[str] = set()
        type_dirs: dict[str, int | None] = {}
        for etype in ENTITY_TYPES:
            try:
                mtime: int | None = os.lstat(objects / etype).st_mtime_ns
            except (FileNotFoundError, NotADirectoryError):
                mtime = None
            candidates = {p for p in recorded if p.startswith(etype + "/")}
            if recorded.get(etype) != (None if mtime is None else (mtime, 0)):
                type_dirs[etype] = mtime
                if mtime is not None:
                    with os.scandir(objects / etype) as entries:
                        candidates.update(
                            f"{etype}/{e.name}" for e in entries if e.is_dir(follow_symlinks=False)
                        )
            for folder in candidates:
                try:
                    now = os.lstat(objects / folder).st_mtime_ns
                except (FileNotFoundError, NotADirectoryError):
                    folders.add(folder)
                    continue
                if recorded.get(folder) != (now, 0):
                    folders.add(folder)
        return folders, type_dirs

    def watcher_alive(self) -> bool:
        """True when some process holds the watcher's lock."""
        lock = self.index.watch_lock_path
        if lock is None:
            return False
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
        return False

    def watcher_caught_up(self) -> bool:
        """True when a live watcher says it has applied every change it knows of."""
        state = self.index.watcher_state()
        if not isinstance(state, dict) or state.get("pending", True):
            return False
        beat, stale = state.get("heartbeatMs"), state.get("staleAfterMs")
        if isinstance(beat, int) and isinstance(stale, int):
            if time.time_ns() // 1_000_000 - beat > stale:
                return False
        return self.watcher_alive()

    # ------------------------------------------------------------ checking

    def verify(self) -> list[Problem]:
        """Compare every row with a fresh read of the files, plus FTS5's own integrity check."""
        out: list[Problem] = []
        conn = self.conn
        try:
            with self.index.transaction():
                conn.execute("INSERT INTO fts(fts, rank) VALUES ('integrity-check', 1)")
                raise _Rollback
        except _Rollback:
            pass
        except Exception as exc:  # noqa: BLE001 - any failure here is the finding
            out.append(Problem(str(self.index.path), f"full-text index damaged ({exc})"))
        rows = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT f.path, f.hash, f.problem, e.json, e.shadowed FROM files f "
                "LEFT JOIN entities e ON e.rowid = f.id"
            )
        }
        cut = self.index._cut
        for f in self.index.store.walk():
            rel = f.path[cut:]
            read = self.read_file(rel, f.entity_type, st=f.stat)
            if read is None:
                continue
            row = rows.pop(rel, None)
            if row is None:
                out.append(Problem(f.path, "not in the index"))
            elif row[0] != read.hash:
                out.append(Problem(f.path, "the index holds an older version of this file"))
            elif read.entity is not None and (
                row[2] is None or canonical.loads(row[2]) != read.entity
            ):
                out.append(Problem(f.path, "the index holds a different entity for this file"))
        for rel in sorted(rows):
            out.append(Problem(self.index.abspath(rel), "in the index but no longer on disk"))
        orphans = conn.execute(
            "SELECT (SELECT count(*) FROM entities WHERE rowid NOT IN (SELECT id FROM files)) + "
            "(SELECT count(*) FROM fts WHERE rowid NOT IN (SELECT rowid FROM entities))"
        ).fetchone()[0]
        if orphans:
            out.append(Problem(str(self.index.path), f"{orphans} orphan rows"))
        return out


class _Rollback(Exception):
    pass
