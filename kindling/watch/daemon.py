"""The watcher Kindling starts for itself, as git starts its fsmonitor daemon.

A reader that had to stat every file of a big store (KINDLING_AUTOWATCH_MIN_FILES, default
5,000) and found no watcher starts `kindling watch --background` detached, so the next
readers skip the walk. One per store (the watch lock decides; a loser exits at once); it
exits after KINDLING_AUTOWATCH_IDLE_S seconds (default 1,800) in which no reader relied on it
and no file changed, and within a few seconds of its store being deleted or moved. It is only
ever a shortcut: the files stay the truth, every writer indexes its own writes, and a reader
that cannot trust it walks the files itself.

Nothing from the repository runs in it: it is started as Python in isolated mode (no current
folder, no PYTHON* variables on its path), from the store's state folder, outside the work
tree. It is never signalled: `kindling watch --stop` leaves a stop request naming the token
the running watcher wrote in its lock, and the watcher ends itself when it sees it.

Off when KINDLING_AUTOWATCH=0 (per user or machine, in the environment), under CI (the
variables the common CI systems set) unless KINDLING_AUTOWATCH=1, after `kindling watch --stop`
in this clone (until `kindling watch --start`), and when the store's config.json says
`"autowatch": false`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from kindling.errors import KindlingError
from kindling.fileio import SAFE_OPEN_FLAGS, read_regular, write_atomic
from kindling.index import handoff
from kindling.platform import pid_alive
from kindling.settings import AUTOWATCH_ENV, Settings
from kindling.store import Store

SPAWN_NAME = "watch.spawn"  # who was started last, and when
OFF_NAME = "watch.off"  # `kindling watch --stop` in this clone: no watcher until --start
STOP_NAME = "watch.stop"  # a stop request: the token of the watcher asked to end
SPAWN_GRACE_S = 10.0  # a starting watcher gets this long to take its lock before another try
FAILED_BACKOFF_S = 300.0  # after a watcher died before taking its lock, wait this long
STOP_WAIT_S = 10.0


def disabled_by(store: Store, settings: Settings) -> str | None:
    """Why Kindling may not start a watcher for this store by itself, or None when it may."""
    if settings.autowatch is False:
        return f"{AUTOWATCH_ENV}={settings.autowatch_raw}"
    if settings.autowatch is None and settings.ci:
        return "a CI job"
    if (store.state / OFF_NAME).exists():
        return "stopped in this clone (kindling watch --start resumes)"
    if not store.config.autowatch:
        return '"autowatch": false in config.json'
    return None


def maybe_start(store: Store, lock: Path | None, walked: int, settings: Settings) -> int | None:
    """After a reader's full walk of `walked` files: start a watcher if one would pay off.

    Returns the pid started, or None. Never raises: a failure only means the next reader
    walks too.
    """
    if lock is None or walked < max(settings.min_files, 1) or disabled_by(store, settings):
        return None
    try:
        if handoff.watcher_alive(lock) or _starting(lock):
            return None
        return start(store, lock)
    except OSError:
        return None


# The watcher's process: Kindling's own entry point, run by path-independent code. Isolated
# mode keeps the current folder, PYTHONPATH and the user's site-packages off sys.path; the
# folder Kindling itself was imported from goes last, so a user install is still found.
_BOOT = "import sys; sys.path.append(sys.argv.pop(1)); from kindling.entry import main; main()"


def watcher_command(store: Store) -> list[str]:
    """The command line of a background watcher for `store`."""
    home = str(Path(__file__).resolve().parents[2])  # the folder holding the kindling package
    root = os.path.realpath(store.root)
    return [sys.executable, "-I", "-c", _BOOT, home, "--store", root, "watch", "--background"]


def start(store: Store, lock: Path) -> int:
    """Start a background watcher for `store` (its pid); OSError when it cannot be started."""
    state = store.ensure_state()
    pid = spawn_detached(watcher_command(store), cwd=str(state))
    _record_spawn(lock.with_name(SPAWN_NAME), pid)
    return pid


def _starting(lock: Path) -> bool:
    """True while the last watcher started is still starting, or failed to start lately."""
    try:
        pid_text, when_text = (read_regular(lock.with_name(SPAWN_NAME)) or b"").split()
        pid, when = int(pid_text), float(when_text)
    except (OSError, ValueError):
        return False
    holder = lock_holder(lock)
    if holder is not None and holder[0] == pid:
        return False  # it took the lock once and no longer holds it: it ended
    age = time.time() - when
    if pid_alive(pid):
        return age < SPAWN_GRACE_S
    # It died without ever taking the lock (no watchfiles, no inotify watches left...):
    # starting another on every read would only burn CPU.
    return age < FAILED_BACKOFF_S


def _record_spawn(path: Path, pid: int) -> None:
    with contextlib.suppress(OSError):
        write_atomic(path, f"{pid} {time.time():.3f}\n".encode(), durable=False)


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


# ------------------------------------------------------------ the lock's contents


def new_token() -> str:
    """A watcher's token: what a stop request must name to end that watcher and no other."""
    import secrets  # only a watcher makes one (secrets loads OpenSSL, which readers avoid)

    return secrets.token_hex(16)


def lock_text(pid: int, token: str) -> bytes:
    """What a watcher writes in the lock it holds."""
    return f"{pid} {token}\n".encode()


def lock_holder(lock: Path | None) -> tuple[int, str] | None:
    """(pid, token) written in the watch lock, or None when it holds neither."""
    if lock is None:
        return None
    try:
        words = (read_regular(lock, follow_symlinks=False, limit=200) or b"").split()
        return int(words[0]), words[1].decode("ascii")
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None


def running_pid(lock: Path | None) -> int | None:
    """The pid of the watcher holding `lock`, or None when none does."""
    if lock is None or not handoff.watcher_alive(lock):
        return None
    holder = lock_holder(lock)
    return holder[0] if holder else None


def stop_requested(lock: Path, token: str) -> bool:
    """True when a stop request names `token` (the watcher asks on every tick)."""
    try:
        data = read_regular(lock.with_name(STOP_NAME), follow_symlinks=False, limit=200)
    except OSError:
        return False
    return data is not None and data.strip() == token.encode()


def stop(lock: Path | None) -> int | None:
    """Ask the store's running watcher to end and wait for it; its pid, or None if none ran.

    No signal is sent: the request names the token the watcher holding the lock wrote there,
    and only that process ends itself on it.
    """
    if lock is None or not handoff.watcher_alive(lock):
        return None
    holder = lock_holder(lock)
    if holder is None:
        return None
    pid, token = holder
    request = lock.with_name(STOP_NAME)
    try:
        write_atomic(request, token.encode() + b"\n", durable=False)
    except OSError as exc:
        raise KindlingError(f"cannot ask the watcher to stop: {exc.strerror or exc}") from None
    deadline = time.monotonic() + STOP_WAIT_S
    while handoff.watcher_alive(lock) and time.monotonic() < deadline:
        time.sleep(0.05)
    if handoff.watcher_alive(lock):
        raise KindlingError(f"the watcher (pid {pid}) did not stop within {STOP_WAIT_S:g} s")
    with contextlib.suppress(OSError):
        os.unlink(request)
    return pid


# ------------------------------------------------------------ this clone's choice


def pause(store: Store) -> None:
    """Remember, in this clone only, that no watcher is to be started by itself."""
    state = store.ensure_state()
    fd = os.open(state / OFF_NAME, os.O_WRONLY | os.O_CREAT | SAFE_OPEN_FLAGS, 0o644)
    os.close(fd)


def resume(store: Store) -> bool:
    """Undo `pause`; True when it had been paused."""
    try:
        os.unlink(store.state / OFF_NAME)
    except FileNotFoundError:
        return False
    return True
