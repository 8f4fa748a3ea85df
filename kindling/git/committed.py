"""Reading an entity file as a commit holds it, for a file a `git switch` took away."""

from __future__ import annotations

import os
from pathlib import Path

from kindling import canonical
from kindling.errors import KindlingError
from kindling.git.setup import find_repo, git

# Where to look, in turn: the branch (or commit) checked out before this one, then the
# commit this one came from when the switch was a rebase or a reset.
REVISIONS = ("@{-1}", "ORIG_HEAD")
MAX_BLOB_BYTES = 16 * 1024 * 1024


def committed_entity(
    path: str | os.PathLike, revisions: tuple[str, ...] = REVISIONS
) -> dict | None:
    """The entity at `path` (a file in a git work tree) as the first of `revisions` (by
    default: the previously checked-out commit) that holds it has it; None when none does or
    git cannot say.

    `git cat-file blob` prints the blob as stored: no filter, textconv or hook runs.
    """
    file = Path(path)
    try:
        top = find_repo(file.parent)
    except KindlingError:
        return None
    if top is None:
        return None
    try:
        relative = file.resolve().relative_to(top.resolve()).as_posix()
    except (OSError, ValueError):
        return None
    for revision in revisions:
        spec = f"{revision}:{relative}"
        try:
            size = git(top, "cat-file", "-s", spec).strip()
            if not size.isdigit() or int(size) > MAX_BLOB_BYTES:
                return None  # the repository is untrusted: never read a huge blob
            data = git(top, "cat-file", "blob", spec)
        except KindlingError:
            continue
        try:
            found = canonical.decode(data)
        except canonical.DecodeError:
            return None
        return found if isinstance(found, dict) else None
    return None
