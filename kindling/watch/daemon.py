"""The watcher Kindling starts for itself, as git starts its fsmonitor daemon.

A reader that had to stat every file of a big store (KINDLING_AUTOWATCH_MIN_FILES, default
5,000) and found no watcher starts `kindling watch --background` detached, so the next
readers skip the walk. One per store (the watch lock decides; a loser exits at once); it
exits after KINDLING_AUTOWATCH_IDLE_S seconds (default 1,800) in which no reader relied on it
and no file changed. It is only ever a shortcut: the files stay the truth, every writer
indexes its own writes, and a reader that cannot trust it walks the files itself.

Off when KINDLING_AUTOWATCH=0 (per user or machine, in the environment), when the store's
config.json says `"autowatch": false`, and under CI (CI set) unless KINDLING_AUTOWATCH=1.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import orjson

from kindling.errors import KindlingError
from kindling.index import handoff
from kindling.store import CONFIG_NAME, Store

ENV = "KINDLING_AUTOWATCH"
MIN_FILES_ENV = "KINDLING_AUTOWATCH_MIN_FILES"
IDLE_ENV = "KINDLING_AUTOWATCH_IDLE_S"
DEFAULT_MIN_FILES = 5_000
DEFAULT_IDLE_S = 1_800.0
SPAWN_NAME = "watch.spawn"  # who was started last, and when (gitignored with watch.*)
SPAWN_GRACE_S = 10.0  # a starting watcher gets this long to take its lock before another try
FAILED_BACKOFF_S = 300.0  # after a watcher died before taking its lock, wait this long
STOP_WAIT_S = 10.0
_OFF = ("0", "false", "no", "off")


def _env_number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value >= 0 else default


def min_files() -> int:
    """How many entity files a store holds before a reader starts a watcher for it."""
    return int(_env_number(MIN_FILES_ENV, DEFAULT_MIN_FILES))


def idle_exit_s() -> float:
    """Seconds a background watcher waits unused before it exits."""
    return _env_number(IDLE_ENV, DEFAULT_IDLE_S)


def enabled(store: Store) -> bool:
    """Whether Kindling may start a watcher for this store (environment, CI, config)."""
    setting = os.environ.get(ENV, "").strip().lower()
    if setting in _OFF:
        return False
    if not setting and os.environ.get("CI"):
        return False
    try:
        config = orjson.loads((store.root / CONFIG_NAME).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return True
    return not (isinstance(config, dict) and config.get("autowatch") is False)


def maybe_start(store: Store, lock: Path | None, walked: int) -> int | None:
    """After a reader's full walk of `walked` files: start a watcher if one would pay off.

    Returns the pid started, or None. Never raises: a failure only means the next reader
    walks too.
    """
    if lock is None or walked < max(min_files(), 1) or not enabled(store):
        return None
    try:
        if handoff.watcher_alive(lock) or _starting(lock):
            return None
        pid = spawn_detached(
            [sys.executable, "-m", "kindling", "--store", str(store.root), "watch", "--background"],
            cwd=str(store.root),
        )
        _record_spawn(lock.with_name(SPAWN_NAME), pid)
        return pid
    except OSError:
        return None


def _starting(lock: Path) -> bool:
    """True while the last watcher started is still starting, or failed to start lately."""
    try:
        pid_text, when_text = lock.with_name(SPAWN_NAME).read_text().split()
        pid, when = int(pid_text), float(when_text)
    except (OSError, ValueError):
        return False
    try:
        if int(lock.read_text().strip()) == pid:
            return False  # it took the lock once and no longer holds it: it ended
    except (OSError, ValueError):
        pass
    age = time.time() - when
    if _pid_alive(pid):
        return age < SPAWN_GRACE_S
    # It died without ever taking the lock (no watchfiles, no inotify watches left...):
    # starting another on every read would only burn CPU.
    return age < FAILED_BACKOFF_S


def _record_spawn(path: Path, pid: int) -> None:
    from kindling.fileio import write_atomic

    with contextlib.suppress(OSError):
        if path.is_symlink():
            path.unlink()
        write_atomic(path, f"{pid} {time.time():.3f}\n".encode(), durable=False)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive
    return True


def spawn_detached(args: list[str], *, cwd: str) -> int:
    """Start `args` in a new session, detached from our stdio; its pid (never waited for)."""
    import subprocess  # only a reader that starts a watcher pays for it

    proc = subprocess.Popen(
        args,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    return proc.pid  # subprocess reaps it later if this process outlives it


def running_pid(lock: Path | None) -> int | None:
    """The pid of the watcher holding `lock`, or None when none does."""
    if lock is None or not handoff.watcher_alive(lock):
        return None
    try:
        return int(lock.read_text().strip())
    except (OSError, ValueError):
        return None


def stop(lock: Path | None) -> int | None:
    """Stop the store's running watcher (SIGTERM, then wait for its lock); its pid or None."""
    pid = running_pid(lock)
    if pid is None:
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return pid  # it ended meanwhile
    except OSError as exc:
        raise KindlingError(f"cannot stop the watcher (pid {pid}): {exc.strerror}") from None
    deadline = time.monotonic() + STOP_WAIT_S
    while handoff.watcher_alive(lock) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid
