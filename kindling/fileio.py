"""Files on disk: the one way Kindling writes a file, whole-file reads, and the entity-file rule.

Every file Kindling writes (entity files, exports, merge-driver output, `.gitattributes`,
Claude Code settings, the browse page) goes through `atomic_output`: a temp file in the same
folder, flushed (and fsynced when durable), then renamed over the target. A reader sees the
old file or the new one, never a part; a crash leaves at most a hidden temp file.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat as stat_module
from collections.abc import Iterator
from typing import NamedTuple

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


class FileStat(NamedTuple):
    """The stat data that tells a file from one written over it since: inode, size, mtime and
    ctime (ns). Four numbers, where an os.stat_result holds nineteen: a bulk write keeps
    thousands of them until the index has recorded their files."""

    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStat:
        return cls(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class AtomicFile(io.BufferedWriter):
    """The stream `atomic_output` yields. Once the file is renamed into place, `stat` holds
    its stat data (None when the path already holds another file again): a caller that
    indexes the file can tell from it that the file is still the one it wrote."""

    stat: FileStat | None = None


@contextlib.contextmanager
def atomic_output(
    path: str | os.PathLike, *, durable: bool = True, make_parents: bool = True
) -> Iterator[AtomicFile]:
    """A binary stream that becomes `path` whole on success and leaves no trace on failure.

    Written to a temp file in the same directory (`.<name>.<pid>.<hex>.tmp`, ignored by every
    walk), flushed (+ fsync), then renamed over `path`. With make_parents=False a missing
    folder is an error rather than created. After the block, the stream's `stat` is set.
    """
    folder = os.path.dirname(path)
    tmp = os.path.join(
        folder, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
    )
    try:
        fh = AtomicFile(io.FileIO(tmp, "xb"))
    except FileNotFoundError:
        if not make_parents:
            raise
        # First file in this folder: create it (checked only on a miss).
        os.makedirs(folder, exist_ok=True)
        fh = AtomicFile(io.FileIO(tmp, "xb"))
    try:
        with fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
            ino = os.fstat(fh.fileno()).st_ino
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # Taken after the rename (which changes the ctime); the inode says it is still ours.
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if st.st_ino == ino:
            fh.stat = FileStat.of(st)
    if durable:
        fsync_dir(folder or ".")


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


class NotRegularFileError(OSError):
    """A path that holds a FIFO, device, socket, folder or (when refused) a symlink."""


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX only; Windows has no FIFOs in the tree
# Opening a FIFO without O_NONBLOCK waits for a writer forever; with it, open returns at once
# and fstat tells what the path really is before a single byte is read.
_SAFE_READ = os.O_RDONLY | _NONBLOCK | _CLOEXEC
# Add to os.open flags for a file Kindling keeps (a lock file): no symlink, no FIFO wait.
SAFE_OPEN_FLAGS = _NOFOLLOW | _NONBLOCK | _CLOEXEC


def open_regular(path: str | os.PathLike, *, follow_symlinks: bool = True) -> int | None:
    """A read-only fd on a regular file, None when absent; anything else raises, never blocks.

    Raises NotRegularFileError for a FIFO, device, socket or folder, and for a symlink when
    `follow_symlinks` is False.
    """
    flags = _SAFE_READ | (0 if follow_symlinks else _NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise NotRegularFileError(
                errno.ELOOP, "a symlink, not a regular file", os.fspath(path)
            ) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat_module.S_ISREG(mode):
            raise NotRegularFileError(
                errno.EINVAL, f"not a regular file ({_kind(mode)})", os.fspath(path)
            )
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(
    path: str | os.PathLike, *, follow_symlinks: bool = True, limit: int | None = None
) -> bytes | None:
    """A regular file's bytes, None when it is absent; see `open_regular` for what is refused.

    With `limit`, at most limit + 1 bytes are read, so a caller can tell an oversized file.
    """
    fd = open_regular(path, follow_symlinks=follow_symlinks)
    if fd is None:
        return None
    try:
        parts = []
        left = limit + 1 if limit is not None else -1
        while left:
            chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            parts.append(chunk)
            if left > 0:
                left -= len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def is_real_dir(path: str | os.PathLike) -> bool:
    """True when `path` is a folder itself, not a symlink to one (walks never follow those)."""
    try:
        return stat_module.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def is_regular_fd(fd: int) -> bool:
    """True when an open fd is a regular file (not a FIFO, device, socket or folder)."""
    return stat_module.S_ISREG(os.fstat(fd).st_mode)


def _kind(mode: int) -> str:
    for test, name in (
        (stat_module.S_ISFIFO, "a FIFO"),
        (stat_module.S_ISDIR, "a folder"),
        (stat_module.S_ISSOCK, "a socket"),
        (stat_module.S_ISCHR, "a device"),
        (stat_module.S_ISBLK, "a device"),
    ):
        if test(mode):
            return name
    return "not a file"


def read_whole(path: str | os.PathLike, size: int) -> bytes:
    """A whole file's bytes, in one read when it is still `size` bytes long.

    For a path a walk saw as a regular file: opened without following a symlink or waiting
    on a FIFO, should it have been swapped for one since.
    """
    fd = os.open(path, _SAFE_READ | _NOFOLLOW)
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
