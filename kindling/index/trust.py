"""Proof that an index file was built here: a keyed MAC binding it to its place and inode.

Anything inside the store can arrive through git, including a force-added index.sqlite whose
rows say things no entity file says. So an index is served only when its `identity` row is
HMAC-SHA256, under a random key no commit can carry, of the index file's real path, device
and inode. The key lives in the repository's git directory (git refuses any path through
`.git`, so no checkout writes there), or for a store outside git in the user's state
directory. Someone who controls committed files cannot forge the MAC: the key never leaves
this clone, and a checked-out or copied file gets a new inode anyway. An index without a
valid identity is discarded and rebuilt from the files.

A symlink where the index (or its -wal/-shm companions) should be is never opened: SQLite
would follow it and write a database wherever it points.

The MAC covers the file's identity, not its pages, and SQLite applies a -wal file found next
to the index when it opens it. So every open connection also holds a shared lock on a guard
file beside the index (`index.sqlite-guard`); whoever finds it unheld is the only user of the
index and first deletes any -wal and -shm: with no connection open, a WAL is either planted or
left by a crash, and dropping a crash's WAL only returns the index to its last checkpoint,
a consistent older state that the next sync brings up to date from the files. (On Windows,
which has no shared locks, there is no guard: a planted -wal is applied there.)
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from kindling import platform, sha256
from kindling.fileio import SAFE_OPEN_FLAGS

KEY_NAME = "index-key"
IDENTITY_KEY = "identity"  # the meta row holding the MAC

_key_cache: dict[str, bytes | None] = {}


def state_home() -> Path:
    """Per-user state that must not be committed: $XDG_STATE_HOME or ~/.local/state."""
    base = os.environ.get("XDG_STATE_HOME")
    return Path(base) if base else Path.home() / ".local" / "state"


def git_dir(start: Path) -> Path | None:
    """The git directory of the work tree holding `start`: no commit can ever write there."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        try:
            if dot.is_dir():
                return dot
            if dot.is_file():
                text = dot.read_text(errors="replace").strip()
                if text.startswith("gitdir:"):
                    found = Path(text[len("gitdir:") :].strip())
                    return found if found.is_absolute() else (folder / found)
                return None
        except OSError:
            return None
    return None


def key_path(store_root: Path | None = None) -> Path:
    """Where the index key lives: in the repository's git directory (shared by everyone who
    works in this clone, whatever their HOME), else in this user's state directory."""
    if store_root is not None:
        found = git_dir(store_root)
        if found is not None and os.access(found, os.W_OK):
            return found / "kindling" / KEY_NAME
    return state_home() / "kindling" / KEY_NAME


def machine_key(store_root: Path | None = None) -> bytes | None:
    """The index key for a store, created on first use; None when it cannot be kept anywhere."""
    path = key_path(store_root)
    cached = _key_cache.get(str(path))
    if cached is not None:
        return cached
    key = _read_key(path)
    if key is None:
        key = _create_key(path)
    if key is not None:
        _key_cache[str(path)] = key
    return key


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        text = fh.read(200).strip()
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    return key if len(key) >= 16 else None


def _create_key(path: Path) -> bytes | None:
    """Publish a new key with link(): two processes racing both end up with the same key."""
    import secrets  # only the first index on a machine makes a key

    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temp = path.with_name(f".{KEY_NAME}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(key.hex().encode() + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(temp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    except OSError:
        return None
    return _read_key(path)


def _subject(path: str, st: os.stat_result) -> bytes:
    real = os.path.realpath(path)
    return f"kindling-index\0{real}\0{st.st_dev}\0{st.st_ino}".encode()


def identity_for(path: str, st: os.stat_result, key: bytes) -> str:
    """The identity row an index at `path` (with stat `st`) built here carries."""
    return sha256.hmac_hexdigest(key, _subject(path, st))


def identity_holds(value: object, path: str, st: os.stat_result, key: bytes) -> bool:
    """True when `value` (the stored identity row) proves the index at `path` is ours."""
    if not isinstance(value, str):
        return False
    return sha256.equal(value, identity_for(path, st, key))


def refuse_links(path: Path) -> bool:
    """Remove symlinks at the -wal/-shm places; True when `path` itself is a symlink."""
    for suffix in ("-wal", "-shm"):
        side = f"{path}{suffix}"
        with contextlib.suppress(OSError):
            if os.path.islink(side):
                os.unlink(side)  # removes the link only, never what it points at
    return os.path.islink(path)


def fallback_path(path: Path) -> Path:
    """Where the index of a store whose index place holds a symlink lives instead."""
    cache = os.environ.get("XDG_CACHE_HOME")
    base = Path(cache) if cache else Path.home() / ".cache"
    key = sha256.hexdigest(str(path.parent.resolve()).encode())[:16]
    return base / "kindling" / key / path.name


def hold_guard(path: Path) -> int | None:
    """Take the shared guard of the index at `path` (its descriptor, to close with the
    connection), first clearing a -wal and -shm no open connection can be using."""
    if platform.BACKEND == "windows":
        return None  # no shared locks: a guard would let one connection in at a time
    guard = f"{path}-guard"
    if os.path.islink(guard):
        os.unlink(guard)  # the link only
    fd = os.open(guard, os.O_RDWR | os.O_CREAT | SAFE_OPEN_FLAGS, 0o644)
    try:
        try:
            platform.lock(fd, exclusive=True, blocking=False)
        except platform.LockBusy:
            platform.lock(fd, exclusive=False)  # others have it open: their WAL is live
            return fd
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")
        platform.lock(fd, exclusive=False)  # flock converts the lock in place
    except BaseException:
        os.close(fd)
        raise
    return fd
