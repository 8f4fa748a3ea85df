"""Where a store keeps what is not memory: its index, locks and watcher files.

Everything under the store folder can arrive in a commit, so Kindling writes nothing there but
entity files, config.json and its ignore and attribute files, and reads nothing back from it
as its own state. The derived index (with its -wal and -shm), the per-entity locks, the
filesystem clock, the watcher's lock and the hook report live in a folder of the store's own:

- in a git work tree, `<git dir>/kindling/<key>/`, beside git's own index: no checkout can
  write there (git refuses every path through `.git`), everyone working in the clone shares
  it, and it goes when the clone goes;
- otherwise, or when the git directory is not writable, `$XDG_CACHE_HOME/kindling/<key>/`
  (default `~/.cache/kindling/<key>/`), per user.

`<key>` is 16 hex digits of SHA-256 of the store's real path: two stores in one repository
get two folders, one store reached through two paths gets one. A store that moves gets a new
folder, and its index is built again there from the files.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from kindling import hashing
from kindling.gitdir import find_git_dir

STATE_DIRNAME = "kindling"
STORE_NOTE = "store"  # the store's real path, for a person looking at the folder


def cache_home() -> Path:
    """Per-user cache: $XDG_CACHE_HOME or ~/.cache."""
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base) if base else Path.home() / ".cache"


def key_for(real_root: str) -> str:
    """The folder name of a store's state: 16 hex digits of SHA-256 of its real path."""
    return hashing.hexdigest(os.fsencode(real_root))[:16]


def state_dir(store_root: Path) -> Path:
    """The state folder of the store at `store_root` (not created; see `ensure`)."""
    real = os.path.realpath(store_root)
    key = key_for(real)
    git_dir, _ = find_git_dir(Path(real))
    if git_dir is not None and os.access(git_dir, os.W_OK):
        return git_dir / STATE_DIRNAME / key
    return cache_home() / STATE_DIRNAME / key


def ensure(folder: Path, store_root: Path) -> Path:
    """Create `folder` (a `state_dir`) if needed; raises OSError when it cannot be made.

    Only its last two levels are ever created: when the git directory or the cache's parent
    is gone (the clone was deleted), nothing is made in its place.
    """
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        return folder
    except FileNotFoundError:
        parent = folder.parent
        if parent.parent == cache_home():
            parent.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o700)
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            return folder  # another process made it meanwhile, and leaves the note
    note = folder / STORE_NOTE
    try:
        with open(note, "x", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(os.path.realpath(store_root) + "\n")
    except OSError:
        pass  # only a note for people
    return folder
