"""The index's SQLite schema, the records it hands out, and how an entity becomes a row.

The index is a cache: when SCHEMA_VERSION changes, the old tables are dropped and rebuilt from
the files, so there are no migrations.
"""

from __future__ import annotations

import sqlite3
import zlib
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from kindling import canonical
from kindling.index.tokens import searchable
from kindling.index.traits import traits
from kindling.model import ENTITY_TYPES, REDACTED_CONTENT, SCOPE_NAMES
from kindling.store import (
    Problem,  # noqa: F401 - part of the index API
    fanout,
)


@dataclass
class SyncReport:
    """What a sync or rebuild changed in the index, and the problem files it met."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    problems: list[Problem] = field(default_factory=list)
    # Files found changed but left for a later sync: this one stopped at its deadline.
    pending: int = 0
    # Of those, the files the index has no row for at all (the rest it holds a copy of).
    missing: int = 0

    def as_dict(self) -> dict:
        out = {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "problems": [{"path": p.path, "reason": p.reason} for p in self.problems],
        }
        if self.pending:
            out["pending"] = self.pending
        return out


class Hit(NamedTuple):
    """A searchable entity as `Index.match` finds it (bm25: lower is better, 0.0 for no match)."""

    rowid: int
    type: str
    id: str
    ts: int
    kind: str | None
    session: str | None
    role: str | None
    bm25: float


class FileRead(NamedTuple):
    """One entity file as read during a sync: stat data taken before the read, then its bytes."""

    rel: str
    entity_type: str
    stat: tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode
    statkey: str  # size:mtime_ns:ctime_ns:inode, or "" while too recent to trust
    hash: str
    data: bytes
    entity: dict | None  # parsed lazily: None until needed, or when the file is a problem
    problem: str | None


# Bump on any change to the tables below; an index with another PRAGMA user_version is rebuilt.
SCHEMA_VERSION = 16

# A file (or folder) whose mtime or ctime is this close to the moment its stat data was taken
# may change again within the same timestamp tick without its stat data changing, so it is
# re-read (hash compared) by the next sync until it is older than this: git's "racy" rule.
# Two seconds covers the coarsest common timestamp granularity (FAT, some network mounts).
RACY_NS = 2_000_000_000

# Seconds a connection waits for another process's write transaction before giving up.
BUSY_TIMEOUT_S = 60.0

TABLES = """
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,              -- relative to objects/, '/'-separated (unique)
    type TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    racy INTEGER NOT NULL,           -- 1: changed too recently for its stat data to count
    -- 'size:mtime_ns:ctime_ns:ino', '' while racy (worked out when read, never stored)
    statkey TEXT GENERATED ALWAYS AS (CASE WHEN racy THEN '' ELSE
        size || ':' || mtime_ns || ':' || ctime_ns || ':' || ino END) VIRTUAL,
    hash TEXT NOT NULL,
    problem TEXT                     -- why the file is not an entity, NULL when it is one
);
CREATE TABLE entities (
    rowid INTEGER PRIMARY KEY,       -- = files.id
    type TEXT NOT NULL,
    id TEXT NOT NULL,
    time INTEGER NOT NULL,           -- ts, openedAt or createdAt
    kind TEXT,
    status TEXT,
    redacted INTEGER NOT NULL,
    session TEXT,
    repo TEXT,
    agent TEXT,
    user TEXT,
    task TEXT,
    closed_at INTEGER,
    summary_id TEXT,
    target_type TEXT,
    target_id TEXT,
    expires_at INTEGER,
    subject TEXT,                    -- what an observation ran or touched (index.traits)
    signature TEXT,                  -- an error's normalised message
    role TEXT,                       -- 'prompt', 'marker' or NULL
    file TEXT,                       -- the file a diff changed
    shadowed INTEGER NOT NULL DEFAULT 0,   -- another file holds the same id and wins
    json BLOB NOT NULL               -- the entity as compact JSON, zlib-compressed (pack)
);
CREATE TABLE folder_fingerprints (
    path TEXT PRIMARY KEY,           -- a fan-out folder '<type>/<xx>'
    count INTEGER NOT NULL,          -- entity files in it at the last check
    fingerprint INTEGER              -- their stat data summed, NULL: compare file by file
) WITHOUT ROWID;
CREATE TABLE folder_mtimes (
    path TEXT PRIMARY KEY,           -- a type folder or a fan-out folder, relative to objects/
    mtime_ns INTEGER NOT NULL,
    racy INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
-- No stemming: `ordering` is not `order`, `locale` is not `local`; names are matched in all
-- their spellings instead (kindling.index.tokens). fts_terms: document frequency per token.
-- Contentless: the text is the entity's (entities.json), so FTS5 keeps only its index of it;
-- a row is deleted by giving its text again (kindling.index.fulltext).
CREATE VIRTUAL TABLE fts USING fts5(body, content = '', tokenize = 'unicode61');
CREATE VIRTUAL TABLE fts_terms USING fts5vocab(fts, row);
"""

# Created after a bulk load, which is faster than keeping them current row by row.
INDEXES = """
CREATE UNIQUE INDEX files_by_path ON files(path);
CREATE INDEX entities_redacted ON entities(type) WHERE redacted = 1;
CREATE INDEX entities_by_id ON entities(id, type);
CREATE INDEX entities_by_time ON entities(type, time DESC, id);
CREATE INDEX entities_by_session ON entities(session, type, time, id, kind, redacted, shadowed)
    WHERE session IS NOT NULL;
CREATE INDEX files_with_problems ON files(path) WHERE problem IS NOT NULL;
CREATE INDEX entities_by_subject ON entities(subject, time) WHERE subject IS NOT NULL;
CREATE INDEX entities_by_signature ON entities(signature, time) WHERE signature IS NOT NULL;
"""

SCOPE_COLUMNS = SCOPE_NAMES  # scopeIds key -> column

ENTITY_COLUMNS = (
    "rowid, type, id, time, kind, status, redacted, session, repo, agent, user, task, "
    "closed_at, summary_id, target_type, target_id, expires_at, subject, signature, role, file, "
    "json"
)
INSERT_ENTITY = f"INSERT OR REPLACE INTO entities({ENTITY_COLUMNS}) VALUES ({', '.join('?' * 22)})"
BULK_ENTITY = INSERT_ENTITY.replace("INSERT OR REPLACE", "INSERT")

# SQL that sorts entity types in the order a walk visits them.
TYPE_ORDER = (
    "CASE type " + " ".join(f"WHEN '{t}' THEN {i}" for i, t in enumerate(ENTITY_TYPES)) + " END"
)


def entity_row(rowid: int, entity_type: str, entity: dict) -> tuple[Any, ...]:
    """The entities row for a valid entity."""
    scope = entity["scopeIds"]
    if entity_type == "observations":
        time, kind = entity["ts"], entity["kind"]
    elif entity_type == "summaries":
        time, kind = entity["ts"], None
    elif entity_type == "capsules":
        time, kind = entity["openedAt"], None
    else:
        time, kind = entity["createdAt"], None
    return (
        rowid,
        entity_type,
        entity["id"],
        time,
        kind,
        entity.get("status"),
        1 if entity.get("redacted") else 0,
        scope.get("sessionId"),
        scope.get("repoId"),
        scope.get("agentId"),
        scope.get("userId"),
        scope.get("taskId"),
        entity.get("closedAt"),
        entity.get("summaryId"),
        entity.get("targetType"),
        entity.get("targetId"),
        entity.get("expiresAt"),
        *traits(entity_type, entity),
        pack(entity),
    )


# An entity's JSON is about half its size compressed, and read back only for the few rows
# a lookup returns. Level 1: twice as fast as the default for 2% more bytes (a pull indexes
# thousands of files at once); the same bytes from the same entity every time.
_LEVEL = 1


def pack(entity: dict) -> bytes:
    """The entities.json value of an entity: its compact JSON, compressed."""
    return zlib.compress(canonical.encode_compact(entity), _LEVEL)


def unpack(blob: bytes) -> bytes:
    """The compact JSON an entities.json value holds (zlib.error when it is damaged)."""
    return zlib.decompress(blob)


def load(blob: bytes) -> dict:
    """The entity an entities.json value holds."""
    return orjson.loads(zlib.decompress(blob))


def searchable_text(entity_type: str, entity: dict) -> str | None:
    """The text full-text search sees: observation and summary content; redacted text never."""
    if entity_type == "summaries":
        forgotten = entity["content"] == REDACTED_CONTENT  # how a whole summary is forgotten
    else:
        forgotten = entity_type != "observations" or entity["redacted"]
    # The content, then every other spelling of the names in it (busyTimeout: busy timeout).
    return None if forgotten else searchable(entity["content"])


def create(conn: sqlite3.Connection) -> None:
    """Drop whatever tables exist and create the current schema, in the caller's transaction."""
    drop_all(conn)
    _run(conn, TABLES)


def create_indexes(conn: sqlite3.Connection) -> None:
    _run(conn, INDEXES)


def _run(conn: sqlite3.Connection, script: str) -> None:
    # Statement by statement: executescript() would commit the caller's transaction.
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    for statement in "\n".join(lines).split(";"):
        if statement.strip():
            conn.execute(statement)


def drop_all(conn: sqlite3.Connection) -> None:
    """Drop every table (virtual tables first, so their shadow tables go with them)."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    virtual = [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL")]
    for name in virtual:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')
    for name, _ in rows:
        if name not in virtual:
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def canonical_rel(entity_type: str, entity_id: str) -> str:
    """Where an id's file belongs, relative to objects/."""
    return f"{entity_type}/{fanout(entity_id)}/{entity_id}.json"
