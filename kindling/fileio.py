"""Files on disk: the one way Kindling writes a file, whole-file reads, and the entity-file rule.

Every file Kindling writes (entity files, exports, merge-driver output, `.gitattributes`,
Claude Code settings, the browse page) goes through `atomic_output`: a temp file in the same
folder, flushed (and fsynced when durable), then renamed over the target. A reader sees the
old file or the new one, never a part; a crash leaves at most a hidden temp file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import BinaryIO

TEMP_SUFFIX = ".tmp"
ENTITY_SUFFIX = ".json"


def is_entity_name(name: str) -> bool:
    """True for a file name a walk treats as an entity file (`*.json`, not hidden)."""
    return name.endswith(ENTITY_SUFFIX) and not name.startswith(".")


def is_temp_name(name: str) -> bool:
    """True for the name of an atomic write's temp file."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def check_output_path(path: str | os.PathLike) -> None:
    """Raise a KindlingError unless `path` names a file whose folder exists.

    An output path given by a person is never turned into a new tree of folders: a typo
    should be an error, not a file somewhere unexpected.
    """
    from kindling.errors import KindlingError

    text = os.fspath(path)
    if not text.strip():
        raise KindlingError("the output path is empty")
    if os.path.isdir(text):
        raise KindlingError(f"cannot write {text}: it is a folder")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise KindlingError(f"cannot write {text}: folder {folder} does not exist")


@contextlib.contextmanager
def atomic_output(
    path: str | os.PathLike, *, durable: bool = True, make_parents: bool = True
) -> Iterator[BinaryIO]:
    """A binary stream that becomes `path` whole on success and leaves no trace on failure.

    Written to a temp file in the same directory (`.<name>.<pid>.<hex>.tmp`, ignored by every
    walk), flushed (+ fsync), then renamed over `path`. With make_parents=False a missing
    folder is an error rather than created.
    """
    folder = os.path.dirname(path)
    tmp = os.path.join(
        folder, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
    )
    try:
        fh = open(tmp, "xb")
    except FileNotFoundError:
        if not make_parents:
            raise
        # First file in this folder: create it (checked only on a miss).
        os.makedirs(folder, exist_ok=True)
        fh = open(tmp, "xb")
    try:
        with fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if os.environ.get("KINDLING_TEST_PAUSE_BEFORE_RENAME"):  # lets a test kill us here
            _pause_before_rename(tmp, os.environ["KINDLING_TEST_PAUSE_BEFORE_RENAME"])
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(folder or ".")


def _pause_before_rename(tmp: str, announce: str) -> None:
    """Test-only: name the finished temp file in `announce`, then wait to be killed."""
    import time

    with open(announce, "w") as fh:
        fh.write(tmp)
    time.sleep(3600)


def write_atomic(path: str | os.PathLike, data: bytes, *, durable: bool = True) -> None:
    """Replace `path` with `data` through `atomic_output`."""
    with atomic_output(path, durable=durable) as fh:
        fh.write(data)


def fsync_dir(path: str | os.PathLike) -> None:
    """Make a folder's entries (a rename, a new or removed file) durable; best effort."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def inode_of(path: str | os.PathLike) -> int | None:
    """The inode number of `path`, or None when it is gone."""
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def read_whole(path: str | os.PathLike, size: int) -> bytes:
    """A whole file's bytes, in one read when it is still `size` bytes long."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        data = os.read(fd, size + 1)
        if len(data) <= size:  # a short read of a regular file is its end
            return data
        parts = [data]
        while chunk := os.read(fd, 1 << 20):  # it grew since the stat
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)
