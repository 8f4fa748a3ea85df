"""Shell completion of entity ids, read from the index: bounded, read-only, never loud.

Completion runs on every Tab press, so it opens the index file read-only (no sync, no
build: a missing index completes nothing), asks for at most LIMIT ids, and answers nothing
at all rather than an error.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

import click
from click.shell_completion import CompletionItem

from kindling.model import SINGULAR

LIMIT = 50
MAX_PREFIX = 200
_TARGETS = {"observation": "observations", "summary": "summaries"}


def ids(*types: str, open_only: bool = False):
    """A click `shell_complete` function completing ids of these entity types (any if none)."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str):
        wanted = types
        if not wanted and "target_type" in ctx.params:  # `pin TYPE ID`: ids of that type
            wanted = (_TARGETS.get(ctx.params["target_type"] or "", ""),)
        try:
            return [
                CompletionItem(ident, help=help_)
                for ident, help_ in matching(ctx, incomplete, wanted, open_only)
            ]
        except Exception:  # noqa: BLE001  (a Tab press never shows a traceback)
            return []

    return complete


def matching(
    ctx: click.Context, prefix: str, types: tuple[str, ...], open_only: bool = False
) -> list[tuple[str, str]]:
    """(id, what it is) for up to LIMIT indexed entities whose id starts with `prefix`."""
    if len(prefix) > MAX_PREFIX:
        return []
    path = _index_path(ctx)
    if path is None:
        return []
    sql = "SELECT id, type FROM entities WHERE shadowed = 0"
    params: list = []
    if prefix:
        sql += " AND id >= ? AND id < ?"
        params += [prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)]
    types = tuple(t for t in types if t)
    if types:
        sql += f" AND type IN ({','.join('?' * len(types))})"
        params += list(types)
    if open_only:
        sql += " AND (type != 'capsules' OR status = 'open')"
    sql += " ORDER BY time DESC LIMIT ?"
    params.append(LIMIT)
    uri = f"file:{quote(str(path))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=0.2)
    try:
        conn.execute("PRAGMA query_only = ON")
        rows = conn.execute(sql, params).fetchall()
    finally:
        conn.close()
    return [(str(ident), SINGULAR.get(etype, str(etype))) for ident, etype in rows]


def _index_path(ctx: click.Context) -> Path | None:
    """The store's index file, when the store and the index both exist."""
    from kindling.settings import Settings, find_store
    from kindling.store import Store, locate

    root = ctx.find_root()
    given = root.params.get("store")
    store_dir = find_store(given) if given else Settings.from_environ().store
    store = Store.open(locate(store_dir))
    path = store.index_path
    return path if path.is_file() else None
