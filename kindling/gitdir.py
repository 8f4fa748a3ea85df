"""Finding the git directory of the work tree that holds a path, without running git.

Read by hand because it is on every command's path (a `git rev-parse` would cost more than
the rest of a hook). Only what git itself creates is believed: a `.git` folder, or a `.git`
file saying `gitdir: ...` (worktrees, submodules). A commit can never deliver either: git
refuses every path through `.git`.
"""

from __future__ import annotations

import os
import stat as stat_module
from pathlib import Path

from kindling.fileio import read_regular

_GITDIR_PREFIX = b"gitdir:"
_MAX_POINTER = 4096


def find_git_dir(start: Path) -> tuple[Path | None, Path | None]:
    """(git dir, common dir) of the work tree holding `start`, or (None, None) outside git."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        try:
            mode = os.lstat(dot).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None, None
        if stat_module.S_ISDIR(mode):
            git_dir = dot
        elif stat_module.S_ISREG(mode):
            try:
                text = (read_regular(dot, follow_symlinks=False, limit=_MAX_POINTER) or b"").strip()
            except OSError:
                return None, None
            if not text.startswith(_GITDIR_PREFIX) or len(text) > _MAX_POINTER:
                return None, None
            pointer = os.fsdecode(text[len(_GITDIR_PREFIX) :].strip())
            git_dir = Path(os.path.realpath(folder / pointer))
        else:
            return None, None  # a symlink or anything else git would not have made
        common = git_dir
        try:
            pointer = read_regular(git_dir / "commondir", follow_symlinks=False, limit=_MAX_POINTER)
            if pointer is not None:
                common = Path(os.path.realpath(git_dir / os.fsdecode(pointer.strip())))
        except OSError:
            pass
        return git_dir, common
    return None, None
