"""Rebuilding the index from nothing, and checking it against the files."""

from __future__ import annotations

import gc
import sqlite3
from dataclasses import dataclass, field

from kindling import hashing
from kindling.index import handoff, schema
from kindling.index.scan import buckets, read_entity_file, scan_folder, winning_rowid
from kindling.index.schema import Problem, SyncReport
from kindling.index.scrub import forgets, may_forget
from kindling.index.sync import Syncer


@dataclass
class _Rows:
    """Everything a rebuild inserts."""

    files: list[tuple] = field(default_factory=list)
    entities: list[tuple] = field(default_factory=list)
    fts: list[tuple[int, str]] = field(default_factory=list)
    folders: list[tuple] = field(default_factory=list)
    owners: dict[tuple[str, str], list[tuple[str, int]]] = field(default_factory=dict)
    # Rows that may have forgotten words (see scrub.forgets), by path: checked against the old.
    marked: dict[str, tuple] = field(default_factory=dict)


def build(syncer: Syncer, *, had_schema: bool, progress=None) -> SyncReport:
    """Replace every table from a fresh read of all files (inside the caller's transaction)."""
    conn = syncer.conn
    old: dict[str, str] = {}
    if had_schema:
        old = dict(conn.execute("SELECT path, hash FROM files WHERE problem IS NULL"))
    racy_from = syncer.paths.racy_from()
    dirs = None
    if handoff.watcher_alive(syncer.watch_lock):
        dirs = handoff.stat_dirs(syncer.paths.root)
    report = SyncReport()
    # Tens of thousands of small tuples are made here and none is garbage: pause the
    # cyclic collector, which would otherwise rescan them again and again.
    collecting = gc.isenabled()
    gc.disable()
    try:
        rows = _read_all(syncer, racy_from, old, report, progress)
    finally:
        if collecting:
            gc.enable()
    report.removed = len(old)
    # A big page cache keeps the bulk load from spilling half-built pages to the WAL.
    conn.execute("PRAGMA cache_size = -65536")
    # A running watcher's published state outlives the rebuild, so readers keep trusting it.
    watcher = None
    secure_was = None
    if had_schema:
        watcher = conn.execute("SELECT value FROM meta WHERE key = 'watcher'").fetchone()
        forgotten = _newly_forgotten(conn, rows.marked)
        if forgotten:
            # The old tables hold text these files no longer have: their pages are zeroed
            # as they are dropped, so the free list keeps none of it.
            syncer.scrubbed.extend(forgotten)
            secure_was = conn.execute("PRAGMA secure_delete").fetchone()[0]
            conn.execute("PRAGMA secure_delete = ON")
    try:
        schema.create(conn)
    finally:
        if secure_was is not None:
            conn.execute(f"PRAGMA secure_delete = {int(secure_was)}")
    if watcher is not None:
        conn.execute("INSERT INTO meta(key, value) VALUES ('watcher', ?)", watcher)
    rows.files.sort(key=lambda row: row[1])  # the path index fills fastest in order
    conn.executemany(
        "INSERT INTO files(id, path, type, size, mtime_ns, ctime_ns, ino, racy, hash, "
        "problem) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows.files,
    )
    conn.executemany(schema.BULK_ENTITY, rows.entities)
    conn.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)", rows.fts)
    conn.executemany(
        "INSERT INTO folder_fingerprints(path, count, fingerprint) VALUES (?, ?, ?)", rows.folders
    )
    losers = []
    for (etype, eid), held in rows.owners.items():
        if len(held) > 1:
            kept = winning_rowid(etype, eid, held)
            losers.extend((fid,) for _, fid in held if fid != kept)
    conn.executemany("UPDATE entities SET shadowed = 1 WHERE rowid = ?", losers)
    schema.create_indexes(conn)
    if dirs is not None:
        handoff.store_dirs(conn, dirs, racy_from, full=True)
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION}")
    conn.execute("PRAGMA cache_size = -2000")  # SQLite's default again
    report.problems = syncer.problems()
    return report


def _read_all(
    syncer: Syncer, racy_from: int, old: dict[str, str], report: SyncReport, progress=None
) -> _Rows:
    """Read, hash and parse every file into rows for a rebuild, counting against `old`."""
    recent = racy_from
    rows = _Rows()
    file_rows, entity_rows, fts_rows, owners = rows.files, rows.entities, rows.fts, rows.owners
    fid = 0
    folders_to_read = buckets(syncer.paths.objects)
    step = progress("Indexing", len(folders_to_read)) if progress else None
    for rel_folder, path in folders_to_read:
        if step is not None:
            step(1)
        etype = rel_folder.split("/", 1)[0]
        items, fingerprint = scan_folder(path)
        racy = False
        for name, st in items:
            racy = racy or st.st_mtime_ns >= recent or st.st_ctime_ns >= recent
            rel = f"{rel_folder}/{name}"
            # Past its first BULK_FILES files, a rebuild has enough left to hash that OpenSSL pays.
            bulk = fid >= hashing.BULK_FILES
            read = read_entity_file(syncer.paths, rel, etype, st, racy_from, bulk=bulk)
            if read is None:
                continue
            fid += 1
            entity = read.entity
            row = (fid, rel, etype, *read.stat, int(not read.statkey), read.hash, read.problem)
            file_rows.append(row)
            if entity is None:
                continue
            entity_row = schema.entity_row(fid, etype, entity)
            entity_rows.append(entity_row)
            if may_forget(entity_row):
                rows.marked[rel] = entity_row
            text = schema.searchable_text(etype, entity)
            if text is not None:
                fts_rows.append((fid, text))
            owners.setdefault((etype, entity["id"]), []).append((rel, fid))
            previous = old.pop(rel, None)
            if previous is None:
                report.added += 1
            elif previous != read.hash:
                report.updated += 1
            else:
                report.unchanged += 1
        rows.folders.append((rel_folder, len(items), None if racy else fingerprint))
    return rows


def _newly_forgotten(conn: sqlite3.Connection, marked: dict[str, tuple]) -> list[str]:
    """The paths among `marked` whose old rows still hold words a forget took away."""
    out: list[str] = []
    rels = sorted(marked)
    for start in range(0, len(rels), 500):
        chunk = rels[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(
            "SELECT f.path, e.redacted, e.json FROM files f JOIN entities e ON e.rowid = f.id "
            f"WHERE f.path IN ({marks})",
            chunk,
        )
        out.extend(rel for rel, redacted, old in rows if forgets(redacted, old, marked[rel]))
    return out


# Reasons `verify` gives for words a forget took from a file that the index still holds.
FORGOTTEN_TEXT = "the index still holds words a forget took from this file"
FORGOTTEN = (FORGOTTEN_TEXT,)


# Where a verify row (files.id, hash, problem, then the entity row) holds the redacted flag.
_REDACTED = 3 + [c.strip() for c in schema.ENTITY_COLUMNS.split(",")].index("redacted")


def verify(syncer: Syncer, index_path: str) -> list[Problem]:
    """Compare every row with a fresh read of the files, plus FTS5's own integrity check."""
    out: list[Problem] = []
    conn = syncer.conn
    try:
        with syncer.transaction():
            conn.execute("INSERT INTO fts(fts, rank) VALUES ('integrity-check', 1)")
            raise _Rollback
    except _Rollback:
        pass
    except Exception as exc:  # noqa: BLE001 - any failure here is the finding
        out.append(Problem(index_path, f"full-text index damaged ({exc})"))
    columns = ", ".join(f"e.{c.strip()}" for c in schema.ENTITY_COLUMNS.split(","))
    rows = {
        r[0]: r[1:]
        for r in conn.execute(
            f"SELECT f.path, f.id, f.hash, f.problem, {columns} FROM files f "
            "LEFT JOIN entities e ON e.rowid = f.id"
        )
    }
    try:
        # Contentless: which rows have text is known, the text itself is not kept.
        texts: set[int] | None = {r[0] for r in conn.execute("SELECT id FROM fts_docsize")}
    except sqlite3.DatabaseError:
        texts = None  # the full-text tables are damaged: the integrity check said so
    racy_from = syncer.paths.racy_from()
    files = syncer.files()
    bulk = len(files) >= hashing.BULK_FILES
    for rel, etype, st in files:
        read = read_entity_file(syncer.paths, rel, etype, st, racy_from, bulk=bulk)
        if read is None:
            continue
        path = syncer.paths.abspath(rel)
        row = rows.pop(rel, None)
        if row is None:
            out.append(Problem(path, "not in the index"))
            continue
        fid, entity = row[0], read.entity
        if entity is None:  # a problem file: only its hash is recorded
            if row[1] != read.hash:
                out.append(Problem(path, "the index holds an older version of this file"))
            continue
        fresh = schema.entity_row(row[3], etype, entity)
        text = schema.searchable_text(etype, entity)
        redacted = etype == "observations" and text is None
        if row[1] != read.hash:
            why = "the index holds an older version of this file"
        elif row[3:] != fresh:
            # Compared column by column as a fresh index would hold it: a damaged row (a
            # value of the wrong type, JSON that does not parse) is found, never decoded.
            why = "the index holds a different entity for this file"
        elif texts is not None and (fid in texts) != (text is not None):
            why = "the index's full-text row differs from this file's text"
        else:
            continue
        if (redacted and texts is not None and fid in texts) or (
            row[3] is not None and forgets(row[_REDACTED], row[-1], fresh)
        ):
            why = FORGOTTEN_TEXT  # whatever else is stale, this is what someone asked to lose
        out.append(Problem(path, why))
    for rel in sorted(rows):
        out.append(Problem(syncer.paths.abspath(rel), "in the index but no longer on disk"))
    orphans = conn.execute(
        "SELECT (SELECT count(*) FROM entities WHERE rowid NOT IN (SELECT id FROM files)) + "
        "(SELECT count(*) FROM fts_docsize WHERE id NOT IN (SELECT rowid FROM entities))"
    ).fetchone()[0]
    if orphans:
        out.append(Problem(index_path, f"{orphans} orphan rows"))
    return out


class _Rollback(Exception):
    pass
