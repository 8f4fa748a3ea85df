"""The derived SQLite FTS5 index: opening (or silently rebuilding) it, keeping it in step with
the files, and the lookups the rest of Kindling reads through.

The files under objects/ are the truth; this module only ever reads them. Freshness works as
git's index does: each file's stat data (size, mtime_ns, ctime_ns, inode) and content hash are
recorded; a sync walks the tree with stat only, re-reads what differs or what changed too
recently for its stat data to be trusted (the "racy" rule), and removes rows whose files are
gone by set difference. Writers take one short SQLite write transaction each (WAL mode), so
any number of processes may sync and write at once.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from kindling.errors import KindlingError
from kindling.fileio import inode_of
from kindling.index import bulk, fsclock, handoff, schema
from kindling.index.read import IndexReader
from kindling.index.scan import ObjectPaths, read_file_at
from kindling.index.schema import Problem, SyncReport
from kindling.index.sync import BUILDING, Syncer, building
from kindling.model import ENTITY_TYPES
from kindling.progress import ProgressFactory
from kindling.store import Store, WrittenFile


def _is_locked(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_corrupt(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def remove_index_files(path: str | os.PathLike) -> None:
    """Delete an index file with its -wal and -shm (a damaged index is rebuilt from nothing)."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{os.fspath(path)}{suffix}")


class Index(IndexReader):
    """The SQLite FTS5 cache of one store, opened (and built when needed) on construction."""

    def __init__(
        self,
        store: Store,
        *,
        path: str | os.PathLike | None = None,
        deadline: float | None = None,
    ) -> None:
        """Open (and fill when new or of an older schema) the index of `store`.

        With `deadline` (a time.monotonic() value), an index that has to be built from
        nothing is only created here; every sync fills it until the deadline, keeping what it
        applied, and `building` says whether it holds every file yet.
        """
        self.store = store
        self.deadline = deadline
        self.path = Path(path) if path is not None else store.index_path
        self.paths = ObjectPaths(store.objects, store.state / fsclock.CLOCK_NAME)
        self._conn: sqlite3.Connection | None = None
        self._ino: int | None = None
        self.walked = 0  # files the last sync stat'ed
        self.watcher = False  # whether a watcher was running during the last sync
        self.stopped = False  # whether its walk stopped at the deadline, short of some folders
        self._open()

    # ------------------------------------------------------------ opening

    def _connect(self, target: str) -> int:
        """Open `target` in WAL mode; returns its PRAGMA user_version."""
        conn = sqlite3.connect(
            target, timeout=schema.BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal" and target != ":memory:":
                self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            conn.execute("PRAGMA synchronous=NORMAL")
            # Views and triggers never run functions with side effects.
            conn.execute("PRAGMA trusted_schema=OFF")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return version

    def _open(self, *, build: bool = True) -> None:
        """Connect; a corrupt file is replaced, no usable place falls back to memory."""
        if str(self.path) == ":memory:":  # asked for: nothing on disk
            if self._connect(":memory:") != schema.SCHEMA_VERSION and build:
                self._start_build()
            return
        try:
            if self.path == self.store.index_path:
                self.store.ensure_state()
                if self.store.writable:
                    self.store.remove_legacy()
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                version = self._connect(str(self.path))
            except sqlite3.DatabaseError as exc:
                if not _is_corrupt(exc):
                    raise
                self._discard_file()
                version = self._connect(str(self.path))
            self._ino = inode_of(self.path)
        except (OSError, sqlite3.OperationalError) as exc:
            if isinstance(exc, sqlite3.OperationalError) and _is_locked(exc):
                raise KindlingError(_BUSY_MESSAGE) from None
            # Nowhere to keep an index (no writable git directory or cache): build one in memory.
            self.close()
            version = self._connect(":memory:")
            self.path = Path(":memory:")
            self._ino = None
        if version != schema.SCHEMA_VERSION and build:
            self._start_build()

    def _start_build(self) -> None:
        """Replace an index of another schema (or none) with empty tables marked `building`,
        then fill them unless there is a deadline (the caller's syncs will)."""
        with self.transaction() as conn:
            if conn.execute("PRAGMA user_version").fetchone()[0] != schema.SCHEMA_VERSION:
                schema.create(conn)
                schema.create_indexes(conn)
                conn.execute("INSERT INTO meta(key, value) VALUES (?, '1')", (BUILDING,))
                conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION}")
        if self.deadline is None:
            self._sync_once(False, None)

    @property
    def building(self) -> bool:
        """True while the index is still being filled for the first time (see __init__)."""
        return building(self.conn)

    def _discard_file(self) -> None:
        remove_index_files(self.path)

    def _reopen_if_replaced(self) -> None:
        """Reconnect when the index file was deleted or replaced under this connection."""
        if self._ino is None or inode_of(self.path) == self._ino:
            return
        self.close()
        self._open()

    def close(self) -> None:
        """Close the connection; the object is unusable afterwards."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise KindlingError("the index is closed")
        return self._conn

    # ------------------------------------------------------------ transactions

    def _retry(self, action):
        deadline = time.monotonic() + schema.BUSY_TIMEOUT_S
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_locked(exc):
                    raise
                if time.monotonic() > deadline:
                    raise KindlingError(_BUSY_MESSAGE) from None
                time.sleep(0.02)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, waiting for other writers rather than failing."""
        conn = self.conn
        self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            yield conn
            self._retry(lambda: conn.execute("COMMIT"))
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the same state of the index."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("COMMIT")

    # ------------------------------------------------------------ paths

    def rel(self, path: str | os.PathLike) -> str:
        """A path under objects/ as the index records it (relative, '/'-separated)."""
        return self.paths.rel(path)

    def syncer(self) -> Syncer:
        """The sync machinery over the current connection."""
        return Syncer(self.conn, self.paths, self.transaction, self.watch_lock_path, self.deadline)

    # ------------------------------------------------------------ keeping current

    def sync(
        self, *, trust_watcher: bool = True, types: tuple[str, ...] | None = None
    ) -> SyncReport:
        """Bring the index in step with the files (cheap when nothing changed).

        With `types`, only the files of those types are checked. Afterwards `walked` says how
        many files were stat'ed and `watcher` whether a watcher was running.
        """
        self._reopen_if_replaced()
        if (
            self.deadline is not None
            and self.building
            and handoff.watcher_alive(self.watch_lock_path)
        ):
            # A watcher is filling a new index: answer from what it holds, walk nothing.
            self.walked, self.watcher, self.stopped = 0, True, False
            return SyncReport(problems=self.problems())
        try:
            return self._sync_once(trust_watcher, types)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self.close()
            self._discard_file()
            self._open()
            return self._sync_once(trust_watcher, types)

    def _sync_once(self, trust_watcher: bool, types: tuple[str, ...] | None) -> SyncReport:
        syncer = self.syncer()
        if types is not None:
            report = syncer.sync_types(types)
        else:
            report = syncer.sync(trust_watcher=trust_watcher)
        self.walked, self.watcher, self.stopped = syncer.walked, syncer.watcher, syncer.stopped
        return report

    def rebuild(self, *, progress: ProgressFactory | None = None) -> SyncReport:
        """Rebuild every row from the files in one transaction (readers see old or new, whole).

        `progress(label, total)`, when given, returns the function that hears each step.
        """
        self._reopen_if_replaced()
        try:
            return self._build(only_if_stale=False, progress=progress)
        except sqlite3.DatabaseError as exc:
            if _is_locked(exc) or str(self.path) == ":memory:":
                raise
            # A table or shadow table is gone or broken: the file cannot be rebuilt in place,
            # so start from an empty one, as every "reindex --full" hint promises.
            self.close()
            self._discard_file()
            self._open(build=False)
            return self._build(only_if_stale=False, progress=progress)

    def refresh(self, paths: Iterable[str | os.PathLike]) -> SyncReport:
        """Re-check the fan-out folders holding `paths` (hints, e.g. from a watcher).

        Paths outside objects/ are ignored; a type folder (or objects/ itself) means a full sync.
        """
        self._reopen_if_replaced()
        moved: set[str] = set()
        for path in paths:
            try:
                parts = self.rel(path).split("/")
            except KindlingError:
                continue
            if parts[0] not in ENTITY_TYPES:
                if parts[0] in (".", ""):
                    return self.syncer().sync_all()
                continue
            if len(parts) == 1:
                return self.syncer().sync_all()
            moved.add(f"{parts[0]}/{parts[1]}")
        return self.syncer().sync_folders(moved)

    def record(self, entity_type: str, path: str | Path, data: bytes, entity: dict) -> None:
        """Index a file Kindling itself just wrote with `data` (what is on disk now wins)."""
        self._recheck(self.rel(path), entity_type, known=(data, entity))

    def record_many(self, written: Iterable[WrittenFile]) -> None:
        """Index files Kindling just wrote, in one transaction.

        A file whose stat data is still the one taken right after its rename is recorded from
        the bytes in hand. Any other is read back and hash-checked (what is on disk now wins)
        but parsed only when it differs. Files older than the racy window get stat keys a
        later sync trusts.
        """
        reads = []
        racy_from = self.paths.racy_from()  # one clock reading, before every stat below
        for entity_type, path, data, entity, stat in written:
            if entity is None:  # bytes Kindling validated and wrote: decoding them is enough
                entity = orjson.loads(data)
            rel = self.rel(path)
            read = None
            if stat is not None:
                read = bulk.written_read(
                    self.paths, rel, entity_type, data, entity, stat, racy_from
                )
            if read is None:
                read = read_file_at(self.paths, rel, entity_type, known=(data, entity))
            if read is not None:
                reads.append(read)
        self.syncer().commit(reads, [])

    def recheck(self, path: str | Path) -> None:
        """Bring one file's rows in step with the disk (after Kindling deleted or moved it)."""
        rel = self.rel(path)
        self._recheck(rel, rel.split("/", 1)[0])

    def _recheck(self, rel: str, entity_type: str, known: tuple[bytes, dict] | None = None) -> None:
        read = None
        if entity_type in ENTITY_TYPES:
            read = read_file_at(self.paths, rel, entity_type, known)
        if read is None:
            self.syncer().commit([], [rel])
        else:
            self.syncer().commit([read], [])

    def _build(self, *, only_if_stale: bool, progress: ProgressFactory | None = None) -> SyncReport:
        with self.transaction() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if only_if_stale and version == schema.SCHEMA_VERSION:
                return SyncReport(problems=self.problems())
            from kindling.index import rebuild  # only a rebuild needs it

            report = rebuild.build(
                self.syncer(), had_schema=version == schema.SCHEMA_VERSION, progress=progress
            )
            return report

    @contextlib.contextmanager
    def scrubbing(self) -> Iterator[None]:
        """Rows deleted inside leave no trace in the index files (fsck's rebuild after damage;
        a sync or a record scrubs forgotten rows by itself, kindling.index.scrub).

        Freed space is zeroed (PRAGMA secure_delete); full-text segments are rewritten, since
        before SQLite 3.44 a deleted document's terms stay in the old segments until a merge;
        and the WAL, which holds copies of old pages, is checkpointed and truncated.
        """
        conn = self.conn
        conn.execute("PRAGMA secure_delete = ON")
        try:
            yield
            with self.transaction():
                if sqlite3.sqlite_version_info >= (3, 44, 0):
                    conn.execute("INSERT INTO fts(fts, rank) VALUES ('secure-delete', 1)")
                conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
            # Best effort: a reader in another process keeps the WAL until it finishes.
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("PRAGMA secure_delete = OFF")

    # ------------------------------------------------------------ lookups

    def verify(self) -> list[Problem]:
        """Ways the index disagrees with the files or is internally damaged; writes nothing."""
        from kindling.index import rebuild

        return rebuild.verify(self.syncer(), str(self.path))

    # ------------------------------------------------------------ watcher hand-off

    def watcher_state(self) -> dict | None:
        """What a running `kindling watch` last published (see kindling.index.handoff)."""
        return handoff.watcher_state(self.conn)

    def set_watcher_state(self, state: dict | None) -> None:
        """Publish (or with None, withdraw) the watcher's state for readers."""
        with self.transaction() as conn:
            if state is None:
                conn.execute("DELETE FROM meta WHERE key = 'watcher'")
            else:
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('watcher', ?)",
                    (orjson.dumps(state).decode(),),
                )

    @property
    def watch_lock_path(self) -> Path | None:
        """The file a running watcher holds an exclusive flock on, next to the index."""
        return None if str(self.path) == ":memory:" else self.path.with_name("watch.lock")


_BUSY_MESSAGE = "the index is busy: another Kindling process held it for over a minute; try again"
