"""Applying a sync's row changes: the file, entity and full-text rows of the files read and
the files gone, with the scrubbing a forget needs (kindling.index.scrub)."""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from collections.abc import Iterable
from typing import Literal, NamedTuple

from kindling.index import bulk, fulltext, schema
from kindling.index.scan import (
    S_IFMT,
    S_IFREG,
    ObjectPaths,
    try_parse,
    walkable,
    winning_rowid,
)
from kindling.index.schema import FileRead
from kindling.index.scrub import Scrub

__all__ = ["RowCounts", "Rows"]


class RowCounts(NamedTuple):
    """What applying a batch of reads and removals did to the entity rows."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    same: int = 0  # files re-read whose content had not changed


Outcome = Literal["added", "updated", "removed", "same"]  # a RowCounts field


class Rows:
    """Row changes over one open index database, inside the caller's transaction."""

    def __init__(
        self, conn: sqlite3.Connection, paths: ObjectPaths, scrub: Scrub, scrubbed: list[str]
    ) -> None:
        self.conn = conn
        self.paths = paths
        self._scrub = scrub
        # Files whose rows held words a forget took from the file: the syncer's list.
        self.scrubbed = scrubbed

    def apply(self, reads: list[FileRead], removed: list[str]) -> RowCounts:
        """Write row changes inside the caller's transaction.

        A row replaced by one that forgot words (a redacted observation, a summary whose quote
        became the forgotten-text marker), or a removed copy of an observation, is deleted the
        way `Index.scrubbing` deletes: zeroed, and the full-text segments rewritten in this
        same transaction, so a crash cannot leave the rows changed and the old terms behind.
        """
        try:
            counts = self._apply(reads, removed)
            self._scrub.rewrite_segments()
            return counts
        finally:
            self._scrub.end()

    def _apply(self, reads: list[FileRead], removed: list[str]) -> RowCounts:
        counts: Counter[Outcome] = Counter()
        touched: set[tuple[str, str]] = set()
        counts["removed"] += self._apply_removals(removed, touched)
        rest = reads
        if len(reads) > 1:
            rest, inserted, shared = bulk.insert_new(self.conn, reads)
            counts["added"] += inserted
            self._reshadow(shared)
        for read in rest:
            outcome = self._apply_read(read, touched)
            if outcome is not None:
                counts[outcome] += 1
        self._reshadow(touched)
        self._forget_fingerprints([*removed, *(read.rel for read in reads)])
        return RowCounts(**counts)

    def _apply_removals(self, removed: list[str], touched: set[tuple[str, str]]) -> int:
        """Drop the rows of files gone since the walk; how many entities went with them."""
        dropped = 0
        for rel in removed:
            if self._still_there(rel):
                continue  # came back since the walk; the next sync reads it
            row = self.conn.execute("SELECT id FROM files WHERE path = ?", (rel,)).fetchone()
            if row is None:
                continue
            dropped += self._drop_entity(row[0], touched, rel, gone=True)
            self.conn.execute("DELETE FROM files WHERE id = ?", row)
        return dropped

    def _apply_read(self, read: FileRead, touched: set[tuple[str, str]]) -> Outcome | None:
        """Bring one file's rows in step with what was read; what that did to its entity
        (None: nothing to count, as for a problem file that stays one)."""
        conn = self.conn
        row = conn.execute(
            "SELECT id, hash, problem FROM files WHERE path = ?", (read.rel,)
        ).fetchone()
        if row is not None and row[1] == read.hash:
            conn.execute(
                "UPDATE files SET size = ?, mtime_ns = ?, ctime_ns = ?, ino = ?, racy = ? "
                "WHERE id = ?",
                (*read.stat, int(not read.statkey), row[0]),
            )
            return "same" if row[2] is None else None
        entity, problem = read.entity, read.problem
        if entity is None and problem is None:
            entity, problem = try_parse(read.entity_type, self.paths.abspath(read.rel), read.data)
        values = (read.entity_type, *read.stat, int(not read.statkey), read.hash, problem)
        if row is None:
            fid = conn.execute(
                "INSERT INTO files(type, size, mtime_ns, ctime_ns, ino, racy, hash, "
                "problem, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*values, read.rel),
            ).lastrowid
        else:
            fid = row[0]
            conn.execute(
                "UPDATE files SET type = ?, size = ?, mtime_ns = ?, ctime_ns = ?, ino = ?, "
                "racy = ?, hash = ?, problem = ? WHERE id = ?",
                (*values, fid),
            )
        new_row = None if entity is None else schema.entity_row(fid, read.entity_type, entity)
        was_entity = row is not None and self._drop_entity(fid, touched, read.rel, becomes=new_row)
        if new_row is None:
            return "removed" if was_entity else None
        conn.execute(schema.INSERT_ENTITY, new_row)
        text = schema.searchable_text(read.entity_type, entity)
        if text is not None:
            conn.execute("INSERT INTO fts(rowid, body) VALUES (?, ?)", (fid, text))
        touched.add((read.entity_type, entity["id"]))
        return "updated" if was_entity else "added"

    def _forget_fingerprints(self, rels: Iterable[str]) -> None:
        """Rows changed outside a full walk: those folders are compared file by file next time."""
        folders = {rel.rsplit("/", 1)[0] for rel in rels}
        self.conn.executemany(
            "INSERT INTO folder_fingerprints(path, count, fingerprint) VALUES (?, 0, NULL) "
            "ON CONFLICT(path) DO UPDATE SET fingerprint = NULL",
            [(folder,) for folder in folders],
        )

    def _drop_entity(
        self, fid: int, touched: set, rel: str, *, becomes: tuple | None = None, gone: bool = False
    ) -> int:
        """Delete one file's entity and text rows; `becomes` is the entity row replacing them."""
        conn = self.conn
        old = conn.execute("SELECT type, id, redacted FROM entities WHERE rowid = ?", (fid,))
        old = old.fetchone()
        if old is None:
            return 0
        etype, eid, redacted = old
        touched.add((etype, eid))
        if becomes is not None and self._scrub.replacing_forgets(fid, redacted, becomes):
            self._scrub.from_here()
            self.scrubbed.append(rel)
        elif gone and etype == "observations" and not redacted and self._has_copy(eid, fid):
            # A second copy going away is how forget removes a misplaced one.
            self._scrub.from_here()
        fulltext.delete(conn, fid)
        conn.execute("DELETE FROM entities WHERE rowid = ?", (fid,))
        return 1

    def _has_copy(self, observation_id: str, fid: int) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM entities WHERE type = 'observations' AND id = ? AND rowid != ?",
            (observation_id, fid),
        ).fetchone()
        return row is not None

    def _still_there(self, rel: str) -> bool:
        try:
            st = os.lstat(self.paths.abspath(rel))
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
            winner_id = winning_rowid(etype, eid, [(path, rowid) for rowid, path, _ in rows])
            for rowid, _, shadowed in rows:
                want = int(rowid != winner_id)
                if shadowed != want:
                    self.conn.execute(
                        "UPDATE entities SET shadowed = ? WHERE rowid = ?", (want, rowid)
                    )

    def recorded_hashes(self, rels: list[str]) -> dict[str, str]:
        """The recorded hash of each of these files the index holds."""
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
