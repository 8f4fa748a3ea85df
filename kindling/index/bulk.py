"""Rows for many new files at once: an import, a checkout or a pull that adds thousands.

Row by row, each file costs a lookup and three inserts; here the paths the index already
knows are found with a few IN queries, and the rest go in with one executemany per table.
"""

from __future__ import annotations

import os
import sqlite3

from kindling import canonical
from kindling.fileio import FileStat
from kindling.index import schema
from kindling.index.scan import ObjectPaths, trusted_stat_key, walkable
from kindling.index.schema import FileRead

_IN_CHUNK = 500  # SQLite's host-parameter limit is far above this; small keeps plans cheap


def _chunks(items: list, size: int = _IN_CHUNK):
    for i in range(0, len(items), size):
        chunk = items[i : i + size]
        yield chunk, ", ".join("?" * len(chunk))


def insert_new(
    conn: sqlite3.Connection, reads: list[FileRead]
) -> tuple[list[FileRead], int, set[tuple[str, str]]]:
    """Insert the parsed entities of paths the index has no row for (in the caller's
    transaction); returns the reads left for the row-by-row path, how many were inserted,
    and the (type, id) pairs now held by more than one row."""
    known: set[str] = set()
    for chunk, marks in _chunks([r.rel for r in reads]):
        rows = conn.execute(f"SELECT path FROM files WHERE path IN ({marks})", chunk)
        known.update(row[0] for row in rows)
    rest, new = [], []
    for read in reads:
        if read.rel in known or read.entity is None or read.problem is not None:
            rest.append(read)
        else:
            known.add(read.rel)  # the same path twice in one batch: the second goes slowly
            new.append(read)
    if not new:
        return reads, 0, set()
    first = (conn.execute("SELECT max(id) FROM files").fetchone()[0] or 0) + 1
    files, entities, fts = [], [], []
    for fid, read in enumerate(new, first):
        racy = int(not read.statkey)
        files.append((fid, read.entity_type, *read.stat, racy, read.hash, read.rel))
        entities.append(schema.entity_row(fid, read.entity_type, read.entity))
        text = schema.searchable_text(read.entity_type, read.entity)
        if text is not None:
            fts.append((fid, text))
    conn.executemany(
        "INSERT INTO files(id, type, size, mtime_ns, ctime_ns, ino, racy, hash, path) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        files,
    )
    conn.executemany(schema.BULK_ENTITY, entities)
    conn.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)", fts)
    return rest, len(new), shared_ids(conn, [(r.entity_type, r.entity["id"]) for r in new])


def shared_ids(conn: sqlite3.Connection, keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Of (type, id) pairs, those more than one entity row holds."""
    wanted = set(keys)
    out: set[tuple[str, str]] = set()
    for chunk, marks in _chunks(sorted({eid for _, eid in keys})):
        rows = conn.execute(
            f"SELECT type, id FROM entities WHERE id IN ({marks}) "
            "GROUP BY type, id HAVING count(*) > 1",
            chunk,
        )
        out.update(row for row in rows if row in wanted)
    return out


def written_read(
    paths: ObjectPaths,
    rel: str,
    entity_type: str,
    data: bytes,
    entity: dict,
    renamed: FileStat,
    racy_from: int | None = None,
) -> FileRead | None:
    """A file Kindling wrote, from the bytes in hand: no read-back while its stat data is the
    one taken right after its rename (`renamed`); None means read it back instead.

    The stat key is judged as a sync would: a file changed too recently to trust gets ""
    and the next sync reads it again. `racy_from`, when given, was taken before this stat
    (one clock reading for a whole batch).
    """
    if not walkable(rel) or rel.split("/", 1)[0] != entity_type:
        return None
    if racy_from is None:
        racy_from = paths.racy_from()  # before the stat it judges
    try:
        st = os.lstat(paths.abspath(rel))
    except OSError:
        return None
    # FileStat.of(st), without building one per file of a big import
    if (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) != renamed:
        return None
    stat = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    digest = canonical.content_hash(data)
    key = trusted_stat_key(st, racy_from)
    return FileRead(rel, entity_type, stat, key, digest, data, entity, None)
