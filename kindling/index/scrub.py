"""Deletes that leave no trace of forgotten words in the index files.

A sync that replaces a row with one that forgot words (an observation redacted, a summary whose
quote became the forgotten-text marker), or drops a second copy of an observation (how forget
removes a misplaced one), must not leave the old text behind: not in freed pages (PRAGMA
secure_delete), not in the full-text segments (FTS5's secure-delete from SQLite 3.44, and a
merge of the segments), and not in the WAL (checkpointed and truncated after the transaction).
"""

from __future__ import annotations

import contextlib
import sqlite3
import zlib

from kindling.index import schema
from kindling.model import REDACTED_CONTENT

# Forgetting turns every forgotten text into this marker (kindling.forgetting); an entity's
# JSON holds it verbatim.
_FORGOTTEN = REDACTED_CONTENT.encode()
_REDACTED = [c.strip() for c in schema.ENTITY_COLUMNS.split(",")].index("redacted")


def may_forget(new_row: tuple) -> bool:
    """Whether an entity row could be a forget's work (most rows are not)."""
    return bool(new_row[_REDACTED]) or _FORGOTTEN in schema.unpack(new_row[-1])


def forgets(old_redacted: object, old_json: object, new_row: tuple) -> bool:
    """Whether replacing an entity row (its redacted flag and packed JSON) with `new_row` drops
    words a forget took away: an observation redacted, or more forgotten-text markers."""
    if new_row[_REDACTED] and not old_redacted:
        return True
    new_json = schema.unpack(new_row[-1])
    if _FORGOTTEN not in new_json:
        return False
    try:
        old = schema.unpack(old_json) if isinstance(old_json, bytes) else None
    except zlib.error:
        old = None
    if old is None:
        return True  # a damaged row: whatever it held may be what was forgotten
    return new_json.count(_FORGOTTEN) > old.count(_FORGOTTEN)


class Scrub:
    """Secure deletes on one connection, from the first delete that may drop forgotten words
    to the end of the batch of row changes it belongs to."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._secure_was: int | None = None  # secure_delete before `from_here` turned it on
        self._rewritten = False  # segments rewritten since the last WAL checkpoint

    def replacing_forgets(self, fid: int, redacted: int, becomes: tuple) -> bool:
        """Whether replacing entity row `fid` (its redacted flag) with `becomes` forgets words."""
        if not may_forget(becomes):
            return False  # the common case, decided without reading the old JSON
        row = self.conn.execute("SELECT json FROM entities WHERE rowid = ?", (fid,)).fetchone()
        return forgets(redacted, row[0], becomes)

    def from_here(self) -> None:
        """Make every delete from now until `end` leave no trace."""
        if self._secure_was is not None:
            return
        conn = self.conn
        self._secure_was = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
        conn.execute("PRAGMA secure_delete = ON")
        if sqlite3.sqlite_version_info >= (3, 44, 0):
            # From here on FTS5 removes a deleted document's entries from its segments.
            conn.execute("INSERT INTO fts(fts, rank) VALUES ('secure-delete', 1)")

    def rewrite_segments(self) -> None:
        """After deletes `from_here` guarded: merge the full-text segments into one.

        Old segments keep a deleted document's terms until a merge reaches them (before
        SQLite 3.44 always); the pages the merge frees are zeroed like the rows were.
        """
        if self._secure_was is not None:
            self.conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
            self._rewritten = True

    def end(self) -> None:
        """Put secure_delete back as it was before `from_here`."""
        if self._secure_was is not None:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute(f"PRAGMA secure_delete = {self._secure_was}")
            self._secure_was = None

    def checkpoint(self) -> None:
        """After the transaction that rewrote segments: copy the WAL into the index and truncate
        it, since its old frames hold the deleted text.

        Best effort: a reader in another process keeps the frames it still reads.
        """
        if not self._rewritten:
            return
        self._rewritten = False
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
