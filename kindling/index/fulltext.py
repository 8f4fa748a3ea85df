"""Removing rows from the contentless full-text table.

FTS5 keeps no copy of a contentless table's text, so a row is deleted by handing it the text
it indexed, which is worked out again from the entity the row belongs to (entities.json), as
`schema.searchable_text` made it. Where that entity is gone or damaged, the whole table is
filled again from the entity rows, which is always right.
"""

from __future__ import annotations

import sqlite3
import zlib

import orjson

from kindling.index import schema


def text_of(entity_type: str, blob: object) -> str | None:
    """The text a row of this type and entities.json value indexed (None: none, or unknown)."""
    if not isinstance(blob, bytes):
        raise ValueError("not an entity")
    try:
        entity = schema.load(blob)
    except (zlib.error, orjson.JSONDecodeError) as exc:
        raise ValueError("damaged entity") from exc
    if not isinstance(entity, dict):
        raise ValueError("not an entity")
    return schema.searchable_text(entity_type, entity)


def delete(conn: sqlite3.Connection, rowid: int) -> None:
    """Delete one entity's text (before its entity row goes), in the caller's transaction."""
    row = conn.execute("SELECT type, json FROM entities WHERE rowid = ?", (rowid,)).fetchone()
    if row is None:
        return
    if not conn.execute("SELECT 1 FROM fts_docsize WHERE id = ?", (rowid,)).fetchone():
        return  # a redacted observation, or anything else with no text
    try:
        text = text_of(row[0], row[1])
    except (ValueError, KeyError, TypeError):
        text = None
    if text is None:  # the text it indexed cannot be worked out: start the table over
        refill(conn, without=rowid)
        return
    conn.execute("INSERT INTO fts(fts, rowid, body) VALUES ('delete', ?, ?)", (rowid, text))


def refill(conn: sqlite3.Connection, without: int | None = None) -> None:
    """Index every searchable entity row's text again, from nothing (except row `without`)."""
    conn.execute("INSERT INTO fts(fts) VALUES ('delete-all')")
    rows = conn.execute(
        "SELECT rowid, type, json FROM entities WHERE type = 'summaries' "
        "OR (type = 'observations' AND redacted = 0)"
    ).fetchall()
    for rowid, entity_type, blob in rows:
        if rowid == without:
            continue
        try:
            text = text_of(entity_type, blob)
        except (ValueError, KeyError, TypeError):
            continue  # a damaged row is not searchable; a sync replaces it
        if text is not None:
            conn.execute("INSERT INTO fts(rowid, body) VALUES (?, ?)", (rowid, text))
