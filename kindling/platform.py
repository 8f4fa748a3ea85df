"""The one module that knows which operating system it runs on: file locks, flushing, signals.

Everything else asks here, so no other module imports `fcntl`, `msvcrt` or another OS-only
module. POSIX uses `flock` (shared and exclusive); Windows uses `msvcrt.locking`, which has
no shared locks, so a shared lock is taken as an exclusive one there. Locks are advisory and
belong to an open file descriptor: closing it (or the process dying) releases them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator

from kindling.fileio import SAFE_OPEN_FLAGS, is_regular_fd

# msvcrt locks a byte range from the file position; a byte far past any content keeps the
# bytes a lock file holds (the watcher's pid) readable by other processes.
_WINDOWS_LOCK_OFFSET = 1 << 30
_WINDOWS_RETRY_S = 0.05


def backend(platform: str | None = None) -> str:
    """Which implementation serves `platform` (default: this one): `windows` or `posix`."""
    return "windows" if (platform or sys.platform) == "win32" else "posix"


BACKEND = backend()


class LockBusy(BlockingIOError):
    """A non-blocking lock request found the lock held by someone else."""


def _posix_lock(fd: int, exclusive: bool, blocking: bool) -> None:
    import fcntl  # POSIX only: imported where it is used

    flags = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    if not blocking:
        flags |= fcntl.LOCK_NB
    try:
        fcntl.flock(fd, flags)
    except BlockingIOError:
        raise LockBusy() from None


def _posix_unlock(fd: int) -> None:
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)


def _windows_lock(fd: int, exclusive: bool, blocking: bool) -> None:
    import msvcrt  # Windows only

    del exclusive  # Windows has no shared locks: every lock is exclusive
    while True:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return
        except OSError:
            if not blocking:
                raise LockBusy() from None
            time.sleep(_WINDOWS_RETRY_S)


def _windows_unlock(fd: int) -> None:
    import msvcrt

    os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
    msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)


_LOCKS = {"posix": (_posix_lock, _posix_unlock), "windows": (_windows_lock, _windows_unlock)}


def lock(fd: int, *, exclusive: bool = True, blocking: bool = True) -> None:
    """Lock an open file; raises LockBusy when `blocking` is false and the lock is held."""
    _LOCKS[BACKEND][0](fd, exclusive, blocking)


def unlock(fd: int) -> None:
    """Release a lock taken with `lock` (closing the descriptor also releases it)."""
    _LOCKS[BACKEND][1](fd)


@contextlib.contextmanager
def locked_file(path: str | os.PathLike, *, exclusive: bool = True) -> Iterator[int]:
    """Open (creating) `path` and hold a lock on it for the block; yields the descriptor."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        lock(fd, exclusive=exclusive)
        yield fd
    finally:
        os.close(fd)  # releases the lock on every platform


def held_by_other(path: str | os.PathLike) -> bool:
    """True when another process holds a lock on `path` (probed without waiting)."""
    try:
        # A FIFO or symlink in the lock's place must not hang or redirect the probe.
        fd = os.open(path, (os.O_RDWR if BACKEND == "windows" else os.O_RDONLY) | SAFE_OPEN_FLAGS)
    except OSError:
        return False
    try:
        if not is_regular_fd(fd):
            return False
        lock(fd, exclusive=False, blocking=False)
    except LockBusy:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # also releases the probe's own lock when it was granted
    return False


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs here (True when that cannot be told)."""
    if BACKEND == "windows":
        return True  # os.kill there ends a process rather than asking about it
    if not 0 < pid < 2**31:
        return True  # not a process id at all: nothing can be told
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive
    return True


def sync_all() -> None:
    """Flush every earlier write to disk; Windows has no system-wide sync, so nothing there."""
    if hasattr(os, "sync"):
        os.sync()


def stop_signals() -> tuple[int, ...]:
    """The signals that ask a long-running command to stop on this platform."""
    import signal  # only the long-running commands handle signals

    extra = (signal.SIGBREAK,) if BACKEND == "windows" and hasattr(signal, "SIGBREAK") else ()
    return (signal.SIGINT, signal.SIGTERM, *extra)


@contextlib.contextmanager
def on_stop_signals(handler: Callable[[int, object], None]) -> Iterator[None]:
    """Route the stop signals to `handler` for the block, then restore what was there."""
    import signal

    previous = {sig: signal.signal(sig, handler) for sig in stop_signals()}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
