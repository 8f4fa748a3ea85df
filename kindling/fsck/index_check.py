"""The index checks of fsck: a sync, then every row against the files; --fix rebuilds."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from kindling.fsck.report import SCRUB_FIX, SCRUBBED, Finding, display
from kindling.store import Store

if TYPE_CHECKING:
    from kindling.index import Index


def index_problems(store: Store, *, fix: bool = False) -> list[Finding]:
    """Ways the derived index disagrees with the files (none when there is no index yet)."""
    if not store.index_path.exists():
        return []  # built from the files on first use; nothing to disagree yet
    import sqlite3

    from kindling.index import Index
    from kindling.index.db import remove_index_files
    from kindling.index.rebuild import FORGOTTEN

    rel = _index_rel(store)
    index = None
    try:
        index = Index(store)
        # A stale index is routine (a checkout, a merge): every read syncs it, so does fsck.
        # What a sync leaves wrong is damage. A row it had to scrub is reported as well: its
        # file was forgotten (or a forget pulled in) without the index following.
        syncer = index.syncer()
        syncer.sync()
        found = [
            Finding(_display_rel(store, syncer.paths.abspath(r)), "index", SCRUBBED, SCRUB_FIX)
            for r in syncer.scrubbed
        ]
        damage = [Finding(_display_rel(store, p.path), "index", p.reason) for p in index.verify()]
        forgotten = bool(found) or any(p.reason in FORGOTTEN for p in damage)
        if damage and fix:
            with index.scrubbing():  # what the rebuild drops is zeroed, the WAL truncated
                index.rebuild()
        if forgotten and fix:
            _compact(index)
        if damage and fix:
            left = index.verify()
            for problem in damage:
                problem.fixed = None if left else "index rebuilt from the files"
            damage.extend(
                Finding(_display_rel(store, p.path), "index", f"{p.reason} (after a rebuild)")
                for p in left
            )
        return found + damage
    except (sqlite3.Error, OSError) as exc:
        problem = Finding(rel, "index", f"index cannot be read: {exc}")
        if fix:
            try:
                if index is not None:
                    index.close()
                    index = None
                remove_index_files(store.index_path)
                Index(store).close()
                problem.fixed = "index rebuilt from the files"
            except (sqlite3.Error, OSError) as again:
                problem.reason += f"; rebuilding failed too: {again}"
        return [problem]
    finally:
        if index is not None:
            index.close()


def _compact(index: Index) -> None:
    """Rewrite the index file whole: pages freed before any scrub (by merges, or with
    secure_delete off) may still hold forgotten text, and VACUUM keeps no free page."""
    import sqlite3

    with contextlib.suppress(sqlite3.Error):
        index.conn.execute("VACUUM")
    with contextlib.suppress(sqlite3.Error):
        index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _index_rel(store: Store) -> str:
    try:
        return display(store.index_path.relative_to(store.root).as_posix())
    except ValueError:
        return display(store.index_path)


def _display_rel(store: Store, path: str) -> str:
    """A path the index reports, relative to the store when it lies inside it."""
    try:
        return display(Path(path).relative_to(store.root).as_posix())
    except ValueError:
        return display(path)
