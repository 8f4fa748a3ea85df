"""When a session capsule left open may be closed, and by whom.

Its owner (the clone that ran the session, kindling.agents.owned) closes it once it has been
idle for STALE_AFTER_MS: if the session was only paused, it goes on in a capsule of its own
that holds the first one's records (kindling.agents.session_capsule). Anyone else waits until
it is abandoned: idle for `abandonAfterHours` of the store's committed config.json (default a
week), so a teammate never closes a session that may still be alive. Both close it as every
clone would (dated at its last activity, its summary's id derived from the capsule's), so
clones that do it alike write the same bytes.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from kindling.errors import KindlingError
from kindling.gitdir import find_git_dir
from kindling.store import CONFIG_NAME, DEFAULT_ABANDON_HOURS, read_config

HOUR_MS = 60 * 60 * 1000
STALE_AFTER_MS = 4 * HOUR_MS  # the owner: four hours without a new observation


def abandon_after_hours(store) -> int:
    """The store's committed `abandonAfterHours` as `read_config` bounds it; the default when
    config.json can't be read (this check must never stop a session from starting)."""
    try:
        return read_config(store.root / CONFIG_NAME).abandon_after_hours
    except KindlingError:
        return DEFAULT_ABANDON_HOURS


def idle_limit_ms(store, mine: bool) -> int:
    """How long a capsule must be idle before this clone closes it: its owner's or anyone's."""
    return STALE_AFTER_MS if mine else abandon_after_hours(store) * HOUR_MS


def may_close(store, last_activity: int, now: int, *, mine: bool) -> bool:
    """True when this clone may close a capsule last active at `last_activity`.

    Its owner: once idle for STALE_AFTER_MS. Anyone else: once idle for the abandonment
    limit, and already so when this clone last heard from its remotes. A clone back from a
    long absence sees its teammates' capsules as they were when it last pulled: it closes
    none of them before it has pulled, so it never closes one from an older view than theirs
    (two closes of one capsule from different views are two different files' bytes).
    """
    limit = idle_limit_ms(store, mine)
    if now - last_activity < limit:
        return False
    if mine:
        return True
    heard = heard_from_remotes_at(store)
    return heard is None or heard - last_activity >= limit


MAX_REMOTE_REFS = 1000  # loose remote-tracking refs looked at: far more than a clone keeps


def heard_from_remotes_at(store) -> int | None:
    """When the store's clone last fetched (epoch ms, from git's own files), or None when
    it is not in a git work tree or has never fetched nor been cloned."""
    git_dir, common = find_git_dir(Path(os.path.realpath(store.root)))
    if git_dir is None or common is None:
        return None
    paths = [git_dir / "FETCH_HEAD", common / "packed-refs"]
    with contextlib.suppress(OSError):
        for n, (folder, _dirs, files) in enumerate(os.walk(common / "refs" / "remotes")):
            paths.extend(Path(folder) / name for name in files)
            if n > MAX_REMOTE_REFS or len(paths) > MAX_REMOTE_REFS:
                break
    times = []
    for path in paths:
        with contextlib.suppress(OSError):
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                times.append(info.st_mtime_ns // 1_000_000)
    return max(times) if times else None
