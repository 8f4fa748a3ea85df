"""The sweep a full sync ends with: rows that point at nothing are removed."""

from __future__ import annotations

import sqlite3

from kindling.index import fulltext
from kindling.index.scrub import Scrub


def sweep(conn: sqlite3.Connection, scrub: Scrub) -> None:
    """Remove rows that point at nothing: none should exist, and a sync never trusts that.

    Counting first (a few index scans) keeps this cheap; the deletes only run on a mismatch.
    """
    # A file row lost behind the index's back leaves its folder's record counting a file
    # the rows lack, and a matching fingerprint would keep that folder from being listed
    # again: drop such records, so the next sync compares those folders file by file.
    rows, counted = conn.execute(
        "SELECT (SELECT count(*) FROM files), "
        "(SELECT coalesce(sum(count), 0) FROM folder_fingerprints)"
    ).fetchone()
    if rows != counted:
        conn.execute(
            "DELETE FROM folder_fingerprints AS f WHERE count != (SELECT count(*) FROM files "
            "WHERE path > f.path || '/' AND path < f.path || '0')"
        )
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
    # Text no row should have may be text someone forgot: it leaves no trace either.
    scrub.from_here()
    try:
        conn.execute(
            "DELETE FROM entities WHERE rowid NOT IN (SELECT id FROM files WHERE problem IS NULL)"
        )
        fulltext.refill(conn)  # contentless: no stray row can be deleted alone
        scrub.rewrite_segments()
    finally:
        scrub.end()
    # A file row without its entity row: make the next sync re-read and re-parse it.
    conn.execute(
        "UPDATE files SET hash = '', racy = 1 WHERE problem IS NULL "
        "AND id NOT IN (SELECT rowid FROM entities)"
    )
