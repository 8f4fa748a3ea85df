"""Folder mtimes and the hand-off to a running watcher: how a reader may skip the full walk.

While `kindling watch` runs, readers trust it the way git trusts an fsmonitor. The contract:

- The watcher holds an exclusive `flock` on `Index.watch_lock_path` for its whole life.
  Readers probe that lock with a non-blocking shared lock held for an instant, so the watcher
  retries its own non-blocking exclusive lock for about a second before concluding that
  another watcher runs.
- Right after taking the lock, before its first reconcile (`Index.sync(trust_watcher=False)`),
  it publishes `Index.set_watcher_state({"pid": ..., "pending": True})`, and publishes
  `"pending": False` only once the index reflects every change it has been told about. It may
  add `heartbeatMs` and `staleAfterMs` (epoch ms, ms): readers stop trusting a state whose
  heartbeat is older than that.
- It applies each batch of changed paths with `Index.refresh(paths)`, which re-lists the
  fan-out folders holding them (the event types are not trusted).

A reader that finds the lock held and the state not pending skips the walk: it stats the type
and fan-out folders (about a thousand stats) and re-lists only those whose mtime moved since
it was recorded, so a file added, removed or renamed is never missed even inside the watcher's
debounce window; only an in-place edit may show up one debounce late. A pending state may say
`waitMs`: the watcher is applying a batch of paths (milliseconds), and a reader waits for it
up to that long (at most `PENDING_WAIT_S`) before walking the whole store itself; a watcher
starting, reconciling or waiting to retry after an error says 0, and is not waited for.
Folder mtimes are recorded only while a watcher holds the lock, and with the same racy rule
as files.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

import orjson

from kindling import platform
from kindling.index.scan import real_types
from kindling.model import ENTITY_TYPES


def stat_dirs(objects: Path) -> dict[str, int | None]:
    """mtime_ns of every type folder and fan-out folder, each taken before it is listed."""
    out: dict[str, int | None] = {}
    real = real_types(str(objects))
    for etype in ENTITY_TYPES:
        try:
            if etype not in real:
                raise FileNotFoundError  # a symlink is never entered: as good as absent
            out[etype] = os.lstat(objects / etype).st_mtime_ns
            entries = list(os.scandir(objects / etype))
        except (FileNotFoundError, NotADirectoryError):
            out[etype] = None
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                try:
                    out[f"{etype}/{entry.name}"] = entry.stat(follow_symlinks=False).st_mtime_ns
                except FileNotFoundError:
                    out[f"{etype}/{entry.name}"] = None
    return out


def _recorded(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    return {p: (m, r) for p, m, r in conn.execute("SELECT path, mtime_ns, racy FROM folder_mtimes")}


def dirs_differ(conn: sqlite3.Connection, dirs: dict[str, int | None], racy_from: int) -> bool:
    """True when recording `dirs` would change the folder_mtimes table."""
    recorded = _recorded(conn)
    for rel, mtime in dirs.items():
        want = None if mtime is None else (mtime, int(mtime >= racy_from))
        if recorded.get(rel) != want:
            return True
    return False


def store_dirs(
    conn: sqlite3.Connection, dirs: dict[str, int | None], racy_from: int, *, full: bool
) -> None:
    """Record folder mtimes (inside the caller's transaction); `full` replaces them all."""
    if full:
        conn.execute("DELETE FROM folder_mtimes")
    for rel, mtime in dirs.items():
        if mtime is None:
            conn.execute(
                "DELETE FROM folder_mtimes WHERE path = ? OR path LIKE ?", (rel, rel + "/%")
            )
        else:
            conn.execute(
                "INSERT OR REPLACE INTO folder_mtimes(path, mtime_ns, racy) VALUES (?, ?, ?)",
                (rel, mtime, int(mtime >= racy_from)),
            )


def moved_folders(
    conn: sqlite3.Connection, objects: str
) -> tuple[set[str], dict[str, int | None]] | None:
    """Fan-out folders whose mtime moved, and the type folders' new mtimes; None if unknown."""
    recorded = _recorded(conn)
    if not recorded:
        return None
    folders: set[str] = set()
    type_dirs: dict[str, int | None] = {}
    by_type: dict[str, list[str]] = {etype: [] for etype in ENTITY_TYPES}
    for rel in recorded:
        etype, slash, _ = rel.partition("/")
        if slash and etype in by_type:
            by_type[etype].append(rel)
    lstat = os.lstat
    real = real_types(objects)
    for etype in ENTITY_TYPES:
        try:
            if etype not in real:
                raise FileNotFoundError  # a symlink is never entered: as good as absent
            mtime: int | None = lstat(f"{objects}/{etype}").st_mtime_ns
        except (FileNotFoundError, NotADirectoryError):
            mtime = None
        candidates: Iterable[str] = by_type[etype]
        if recorded.get(etype) != (None if mtime is None else (mtime, 0)):
            # Folders were added or removed (or the time is too recent to trust): list them.
            type_dirs[etype] = mtime
            if mtime is not None:
                with os.scandir(f"{objects}/{etype}") as entries:
                    listed = {
                        f"{etype}/{e.name}" for e in entries if e.is_dir(follow_symlinks=False)
                    }
                candidates = listed.union(candidates)
        for folder in candidates:
            try:
                now = lstat(f"{objects}/{folder}").st_mtime_ns
            except (FileNotFoundError, NotADirectoryError):
                folders.add(folder)
                continue
            if recorded.get(folder) != (now, 0):
                folders.add(folder)
    return folders, type_dirs


def watcher_alive(lock_path: Path | None) -> bool:
    """True when some process holds the watcher's lock."""
    if lock_path is None:
        return False
    return platform.held_by_other(lock_path)


def mark_used(lock_path: Path | None) -> None:
    """Tell a watcher a reader relied on it (it counts idle time from the lock's mtime)."""
    if lock_path is None:
        return
    try:
        os.utime(lock_path)
    except OSError:
        pass  # not ours to touch, or gone: the watcher then just idles out sooner


def _beating(state: dict) -> bool:
    """False when the state carries a heartbeat that has gone stale."""
    beat, stale = state.get("heartbeatMs"), state.get("staleAfterMs")
    if isinstance(beat, int) and isinstance(stale, int):
        return time.time_ns() // 1_000_000 - beat <= stale
    return True


def watcher_caught_up(state: object, lock_path: Path | None) -> bool:
    """True when a live watcher says it has applied every change it knows of."""
    if not isinstance(state, dict) or state.get("pending", True) is not False:
        return False
    return _beating(state) and watcher_alive(lock_path)


# The longest a reader waits for a live watcher to finish applying a batch (a few ms as a
# rule) before it walks the whole store itself, whatever the watcher's `waitMs` says.
PENDING_WAIT_S = 0.25
_POLL_S = 0.002


def _wait_s(state: dict) -> float:
    """How long a reader may wait for a pending state to clear (0: walk at once)."""
    wait_ms = state.get("waitMs")
    if state.get("pending") is not True or not isinstance(wait_ms, int) or not _beating(state):
        return 0.0
    return min(max(wait_ms, 0) / 1000, PENDING_WAIT_S)


def trusted_watcher(conn: sqlite3.Connection, lock_path: Path | None) -> bool:
    """True when a live watcher is caught up, waiting while it says a batch is nearly
    applied (its `waitMs`, at most PENDING_WAIT_S); False at once when there is no live
    watcher worth waiting for."""
    deadline = None
    while True:
        state = watcher_state(conn)
        if watcher_caught_up(state, lock_path):
            return True
        wait_s = _wait_s(state) if isinstance(state, dict) else 0.0
        if wait_s <= 0:
            return False  # no watcher, or none worth waiting for
        now = time.monotonic()
        if deadline is None:
            if not watcher_alive(lock_path):
                return False
            deadline = now + wait_s
        elif now >= deadline:
            return False
        time.sleep(_POLL_S)


def watcher_state(conn: sqlite3.Connection) -> dict | None:
    """What a running `kindling watch` last published, or None."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'watcher'").fetchone()
    return orjson.loads(row[0]) if row else None
