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

from kindling import index_schema as schema
from kindling.errors import KindlingError
from kindling.index_schema import FileRead, Indexed, Problem, RankKey, SyncReport
from kindling.index_sync import Scanner
from kindling.model import ENTITY_TYPES
from kindling.store import Store

__all__ = ["FileRead", "Index", "Indexed", "Problem", "RankKey", "SyncReport"]


def _is_locked(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_corrupt(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


class Index:
    """The SQLite FTS5 cache of one store, opened (and built when needed) on construction."""

    def __init__(self, store: Store, *, path: str | os.PathLike | None = None) -> None:
        self.store = store
        self.path = Path(path) if path is not None else store.index_path
        self._objects = str(store.objects)
        self._cut = len(self._objects) + 1
        self._conn: sqlite3.Connection | None = None
        self._ino: int | None = None
        self.scanner = Scanner(self)
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
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return version

    def _open(self) -> None:
        """Connect; a corrupt file is replaced, an unwritable place falls back to memory."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                version = self._connect(str(self.path))
            except sqlite3.DatabaseError as exc:
                if not _is_corrupt(exc):
                    raise
                self._discard_file()
                version = self._connect(str(self.path))
            self._ino = self._file_ino()
        except (OSError, sqlite3.OperationalError) as exc:
            if isinstance(exc, sqlite3.OperationalError) and _is_locked(exc):
                raise KindlingError(_BUSY_MESSAGE) from None
            # Nowhere to keep an index (read-only store and cache): build one in memory.
            version = self._connect(":memory:")
            self.path = Path(":memory:")
            self._ino = None
        if version != schema.SCHEMA_VERSION:
            self._build(only_if_stale=True)

    def _discard_file(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    def _file_ino(self) -> int | None:
        try:
            return os.stat(self.path).st_ino
        except OSError:
            return None

    def _reopen_if_replaced(self) -> None:
        """Reconnect when the index file was deleted or replaced under this connection."""
        if self._ino is None or self._file_ino() == self._ino:
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
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        self._retry(lambda: conn.execute("COMMIT"))

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
        text = os.fspath(path)
        if text.startswith(self._objects) and text[len(self._objects) : self._cut] == os.sep:
            rel = text[self._cut :]
        else:
            rel = os.path.relpath(os.path.abspath(text), os.path.abspath(self._objects))
            if rel.startswith(".."):
                raise KindlingError(f"{text} is not inside {self._objects}")
        return rel.replace(os.sep, "/") if os.sep != "/" else rel

    def abspath(self, rel: str) -> str:
        return f"{self._objects}/{rel}" if os.sep == "/" else os.path.join(self._objects, rel)

    # ------------------------------------------------------------ keeping current

    def sync(self, *, trust_watcher: bool = True) -> SyncReport:
        """Bring the index in step with the files (cheap when nothing changed)."""
        self._reopen_if_replaced()
        try:
            return self.scanner.sync(trust_watcher=trust_watcher)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self.close()
            self._discard_file()
            self._open()
            return self.scanner.sync(trust_watcher=trust_watcher)

    def rebuild(self) -> SyncReport:
        """Rebuild every row from the files in one transaction (readers see old or new, whole)."""
        self._reopen_if_replaced()
        return self._build(only_if_stale=False)

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
                    return self.scanner.sync_all()
                continue
            if len(parts) == 1:
                return self.scanner.sync_all()
            moved.add(f"{parts[0]}/{parts[1]}")
        return self.scanner.sync_folders(moved)

    def record(self, entity_type: str, path: str | Path, data: bytes, entity: dict) -> None:
        """Index a file Kindling itself just wrote with `data` (what is on disk now wins)."""
        rel = self.rel(path)
        read = self.scanner.read_file(rel, entity_type, known=(data, entity))
        with self.transaction():
            if read is None:
                self.scanner.apply([], [rel])
            else:
                self.scanner.apply([read], [])

    def drop(self, path: str | Path) -> None:
        """Forget a file Kindling itself just deleted."""
        rel = self.rel(path)
        etype = rel.split("/", 1)[0]
        read = self.scanner.read_file(rel, etype) if etype in ENTITY_TYPES else None
        with self.transaction():
            if read is None:
                self.scanner.apply([], [rel])
            else:
                self.scanner.apply([read], [])

    def _build(self, *, only_if_stale: bool) -> SyncReport:
        with self.transaction() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if only_if_stale and version == schema.SCHEMA_VERSION:
                return SyncReport(problems=self.problems())
            return self.scanner.build(had_schema=version == schema.SCHEMA_VERSION)

    # ------------------------------------------------------------ lookups

    def _indexed(self, row: tuple) -> Indexed:
        return Indexed(row[0], orjson.loads(row[1]), self.abspath(row[2]))

    def get(self, entity_id: str, entity_type: str | None = None) -> Indexed | None:
        """The entity with this exact id (of any type when none is given), or None."""
        sql = (
            "SELECT e.type, e.json, f.path FROM entities e JOIN files f ON f.id = e.rowid "
            "WHERE e.id = ? AND e.shadowed = 0"
        )
        params: list = [entity_id]
        if entity_type is not None:
            sql += " AND e.type = ?"
            params.append(entity_type)
        sql += f" ORDER BY {schema.TYPE_ORDER.replace('type', 'e.type')} LIMIT 1"
        row = self.conn.execute(sql, params).fetchone()
        return self._indexed(row) if row else None

    def match_prefix(self, prefix: str, limit: int = 10) -> list[Indexed]:
        """Entities (any type) whose id starts with `prefix`, by id."""
        if not prefix:
            return []
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self.conn.execute(
            "SELECT e.type, e.json, f.path FROM entities e JOIN files f ON f.id = e.rowid "
            "WHERE e.id >= ? AND e.id < ? AND e.shadowed = 0 "
            f"ORDER BY e.id, {schema.TYPE_ORDER.replace('type', 'e.type')} LIMIT ?",
            (prefix, upper, limit),
        ).fetchall()
        return [self._indexed(r) for r in rows]

    def entities(
        self,
        entity_type: str,
        *,
        scope: dict | None = None,
        kinds: list[str] | None = None,
        since: int | None = None,
        limit: int | None = None,
    ) -> list[dict]:
        """Entities of one type in scope, newest first (then id ascending)."""
        where, params = filters(entity_type, scope=scope, kinds=kinds, since=since)
        sql = f"SELECT json FROM entities e WHERE {where} ORDER BY e.time DESC, e.id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [orjson.loads(r[0]) for r in self.conn.execute(sql, params)]

    def open_capsules(self, session_id: str | None = None) -> list[dict]:
        """Open capsules (of one session when given), most recently opened first."""
        sql = (
            "SELECT json FROM entities WHERE type = 'capsules' AND status = 'open' AND shadowed = 0"
        )
        params: list = []
        if session_id is not None:
            sql += " AND session = ?"
            params.append(session_id)
        sql += " ORDER BY time DESC, id"
        return [orjson.loads(r[0]) for r in self.conn.execute(sql, params)]

    def summarised_capsules(self, scope: dict | None = None, *, by: str = "opened") -> list[dict]:
        """Capsules in scope that name a summary, most recently opened (or closed) first."""
        where, params = filters("capsules", scope=scope)
        if by == "closed":
            order = "e.closed_at DESC, e.id"
            where += " AND e.closed_at IS NOT NULL"
        else:
            order = "e.time DESC, e.id"
        where += " AND e.summary_id IS NOT NULL"
        sql = f"SELECT json FROM entities e WHERE {where} ORDER BY {order}"
        return [orjson.loads(r[0]) for r in self.conn.execute(sql, params)]

    def match(
        self,
        fts_query: str,
        *,
        rank: RankKey,
        scope: dict | None = None,
        kinds: list[str] | None = None,
        since: int | None = None,
        exclude: Iterable[tuple[str, str]] = (),
        limit: int | None = None,
    ) -> tuple[list[tuple], list[int]]:
        """Searchable entities matching an FTS5 expression, best first by `rank`.

        The score x = clamp(norm_weight * norm + recency_weight * recency, 0, 1) is sorted by
        its key k = int(x * 1e10 + 0.5), then time (newest first), id and type. Rows are
        (rowid, type, id, time, bm25, best bm25, worst bm25, number of matches, k); the bm25
        bounds and the count are over every match, not only the rows returned. Also returned:
        the keys of any rows whose x lies so close to a rounding midpoint that k might differ
        from Python's round(x, 10) (almost always none).
        """
        types = ["observations"] if kinds else ["observations", "summaries"]
        where, params = [], []
        for etype in types:
            w, p = filters(etype, scope=scope, kinds=kinds, since=since)
            where.append(f"({w})")
            params.extend(p)
        exclude = list(exclude)
        skip = ""
        if exclude:
            skip = f"AND (e.type, e.id) NOT IN (VALUES {', '.join(['(?, ?)'] * len(exclude))})"
            params.extend(v for pair in exclude for v in pair)
        sql = f"""
            WITH m AS MATERIALIZED (
                SELECT e.rowid AS rid, e.type AS type, e.id AS id, e.time AS ts, bm25(fts) AS b
                FROM fts CROSS JOIN entities e ON e.rowid = fts.rowid
                WHERE fts MATCH ? AND ({" OR ".join(where)}) {skip}
            ),
            s AS (SELECT min(b) AS lo, max(b) AS hi, count(*) AS n FROM m),
            r AS MATERIALIZED (
                SELECT m.*, s.lo, s.hi, s.n, min(1.0, max(0.0,
                    ? * (CASE WHEN s.hi = s.lo THEN 0.5 ELSE (s.hi - m.b) / (s.hi - s.lo) END)
                    + ? * max(0.0, 1.0 - (? - m.ts) / ?))) * 10000000000.0 AS y
                FROM m, s
            )
            SELECT rid, type, id, ts, b, lo, hi, n, CAST(y + 0.5 AS INTEGER) AS k,
                (SELECT group_concat(CAST(y + 0.5 AS INTEGER)) FROM r
                 WHERE abs(y - CAST(y AS INTEGER) - 0.5) < 0.00001) AS near
            FROM r
            ORDER BY k DESC, ts DESC, id, type
            LIMIT ?
        """
        args = [fts_query, *params, rank.norm_weight, rank.recency_weight, rank.now]
        args += [float(rank.window_ms), -1 if limit is None else limit]
        rows = self.conn.execute(sql, args).fetchall()
        near = rows[0][9] if rows else None
        return [r[:9] for r in rows], [int(k) for k in near.split(",")] if near else []

    def snippets(self, fts_query: str, rowids: list[int], *, tokens: int = 16) -> dict[int, str]:
        """A short FTS5 snippet around the first match in each row, matched terms in **bold**."""
        if not rowids:
            return {}
        marks = ", ".join("?" * len(rowids))
        rows = self.conn.execute(
            f"SELECT rowid, snippet(fts, 0, '**', '**', '…', {int(tokens)}) FROM fts "
            f"WHERE fts MATCH ? AND rowid IN ({marks})",
            [fts_query, *rowids],
        )
        return dict(rows)

    def rows(self, rowids: list[int]) -> dict[int, dict]:
        """Entities by index rowid (as `match` returns them)."""
        if not rowids:
            return {}
        marks = ", ".join("?" * len(rowids))
        rows = self.conn.execute(
            f"SELECT rowid, json FROM entities WHERE rowid IN ({marks})", rowids
        )
        return {rid: orjson.loads(data) for rid, data in rows}

    def counts(self) -> dict:
        """Entities by type, plus redacted observations and open capsules."""
        out = {t: 0 for t in ENTITY_TYPES}
        out.update(redacted=0, openCapsules=0)
        rows = self.conn.execute(
            "SELECT type, count(*), sum(redacted), sum(status = 'open') FROM entities "
            "WHERE shadowed = 0 GROUP BY type"
        )
        for etype, n, redacted, open_ in rows:
            out[etype] = n
            out["redacted"] += redacted or 0
            out["openCapsules"] += open_ or 0
        return out

    def problems(self) -> list[Problem]:
        """Files the last sync could not index, by path."""
        rows = self.conn.execute(
            "SELECT path, problem FROM files WHERE problem IS NOT NULL ORDER BY path"
        )
        return [Problem(self.abspath(p), reason) for p, reason in rows]

    def duplicates(self) -> list[tuple[str, str, list[str]]]:
        """(type, id, paths) for every id held by more than one file; the first path wins."""
        rows = self.conn.execute(
            "SELECT e.type, e.id, f.path, e.shadowed FROM entities e "
            "JOIN files f ON f.id = e.rowid "
            "WHERE (e.type, e.id) IN (SELECT type, id FROM entities WHERE shadowed = 1) "
            "ORDER BY e.type, e.id, e.shadowed, f.path"
        ).fetchall()
        out: dict[tuple[str, str], list[str]] = {}
        for etype, eid, path, _ in rows:
            out.setdefault((etype, eid), []).append(self.abspath(path))
        return [(t, i, paths) for (t, i), paths in out.items()]

    def dump(self) -> dict:
        """Everything the index holds, keyed by path, for comparing two indexes in tests/fsck."""
        files = {
            row[0]: row[1:]
            for row in self.conn.execute(
                "SELECT path, type, size, hash, problem FROM files ORDER BY path"
            )
        }
        columns = ", ".join(f"e.{c.strip()}" for c in schema.ENTITY_COLUMNS.split(",")[1:])
        rows = self.conn.execute(
            f"SELECT f.path, e.shadowed, {columns}, fts.body FROM entities e "
            "JOIN files f ON f.id = e.rowid LEFT JOIN fts ON fts.rowid = e.rowid ORDER BY f.path"
        )
        entities = {row[0]: row[1:] for row in rows}
        counts = self.conn.execute(
            "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM entities), "
            "(SELECT count(*) FROM fts)"
        ).fetchone()
        return {"files": files, "entities": entities, "counts": counts}

    def verify(self) -> list[Problem]:
        """Ways the index disagrees with the files or is internally damaged; writes nothing."""
        return self.scanner.verify()

    # ------------------------------------------------------------ watcher hand-off

    def watcher_state(self) -> dict | None:
        """What a running `kindling watch` last published (see kindling.index_folders)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'watcher'").fetchone()
        return orjson.loads(row[0]) if row else None

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


def filters(
    entity_type: str,
    *,
    scope: dict | None = None,
    kinds: list[str] | None = None,
    since: int | None = None,
    alias: str = "e",
) -> tuple[str, list]:
    """SQL conditions (and parameters) selecting winning entities of a type in scope."""
    where = [f"{alias}.type = ?", f"{alias}.shadowed = 0"]
    params: list = [entity_type]
    for key, value in (scope or {}).items():
        column = f"{alias}.{schema.SCOPE_COLUMNS[key]}"
        if entity_type == "pins":
            # A pin matches a field it shares, or one it does not carry at all.
            where.append(f"({column} IS NULL OR {column} = ?)")
        else:
            where.append(f"{column} = ?")
        params.append(value)
    if kinds:
        where.append(f"{alias}.kind IN ({', '.join('?' * len(kinds))})")
        params.extend(kinds)
    if since is not None:
        where.append(f"{alias}.time >= ?")
        params.append(since)
    return " AND ".join(where), params


_BUSY_MESSAGE = "the index is busy: another Kindling process held it for over a minute; try again"
