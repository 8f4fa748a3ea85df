"""The loop behind `kindling watch`: keep a store's index current while its files change.

It takes the store's watch lock (one watcher per store), publishes that it is catching up,
and reconciles (a full incremental sync) once watching has begun. Each batch of changed paths
is then applied as hints with `Index.refresh`, which re-lists the fan-out folders holding them,
so the event types reported are never trusted. A large batch, a move of the git HEAD, a quiet
moment after a burst, a replaced index file and a timer (every few minutes) each lead to a
reconcile instead. The hand-off to readers follows the contract in kindling.index.handoff.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kindling import platform
from kindling.errors import KindlingError
from kindling.fileio import SAFE_OPEN_FLAGS, inode_of, is_regular_fd
from kindling.store import Store
from kindling.watch import daemon
from kindling.watch.source import ChangeSource, GitHead, WatchfilesSource, relative, relevant

if TYPE_CHECKING:
    from kindling.index import Index, SyncReport

DEFAULT_DEBOUNCE_MS = 300
DEFAULT_RECONCILE_S = 300
BURST = 500  # paths in one batch from which a reconcile is cheaper than per-folder work
TICK_S = 1.0  # how often an idle watcher looks at the git HEAD, the index file and the lock
HEARTBEAT_S = 2.0
STALE_AFTER_S = 15.0  # readers stop trusting a watcher whose heartbeat is older than this
# How long a reader may wait for a batch of paths to be applied (milliseconds, as a rule);
# for a full reconcile or a retry it is not worth waiting: the reader walks itself.
REFRESH_WAIT_MS = 250
LOCK_WAIT_S = 1.0  # readers probe the lock for an instant: retry this long before giving up
RETRY_S = (1.0, 60.0)  # first and longest wait before retrying after an error

Event = dict


class Stopped(BaseException):
    """Ends the watcher at once, wherever it is; an index write in progress rolls back."""


class Watcher:
    """Keeps one store's index in step with its files until told to stop."""

    def __init__(
        self,
        store: Store,
        *,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        reconcile_every: float = DEFAULT_RECONCILE_S,
        burst: int = BURST,
        source: ChangeSource | None = None,
        on_event: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        git_head: GitHead | None = None,
        idle_exit: float | None = None,
    ) -> None:
        self.store = store
        self.idle_exit = idle_exit  # seconds unused (no reader, no change) before exiting
        self.debounce_ms = debounce_ms
        self.reconcile_every = reconcile_every
        self.burst = burst
        self.source = source or WatchfilesSource(
            store.objects, debounce_ms=debounce_ms, tick_s=TICK_S
        )
        self.on_event = on_event or (lambda event: None)
        self.clock = clock
        self.git = git_head if git_head is not None else GitHead(store.root)
        self.interruptible = False  # whether a stop request may cut in right away
        self._stop = threading.Event()
        self.index: Index | None = None
        self._objects = os.path.abspath(store.objects)
        self._real_objects = os.path.realpath(self._objects)
        self._lock_fd: int | None = None
        self._index_ino: int | None = None
        self._problems: set[tuple[str, str]] = set()
        self._head: tuple | None = None
        self._last_beat = self._last_reconcile = 0.0
        self._settle = False  # reconcile again once the tree is quiet after a burst
        self._retry_at: float | None = None  # set after an error: reconcile again then
        self._retry_wait = RETRY_S[0]
        self._active_at = time.time()  # wall clock: compared with the lock's mtime
        self._token = daemon.new_token()  # what a stop request must name to end this watcher
        self._homes: list[tuple[Path, tuple[int, int] | None]] = []  # the folders it serves

    # ------------------------------------------------------------ running

    def run(self, stop: threading.Event | None = None) -> None:
        """Watch until `stop` is set or the change source ends."""
        self._stop = stop = stop or threading.Event()
        try:
            self.interruptible = True
            self._homes = [(self.store.root, _identity(self.store.root))]
            self.index = self._open_index()
            self._homes.append((self.store.state, _identity(self.store.state)))
            self._take_lock()
            self._publish(pending=True)
            self._head = self.git.signature()
            self._emit(
                "start", store=str(self.store.root), pid=os.getpid(), debounceMs=self.debounce_ms
            )
            changes = iter(self.source(stop))
            first = True
            while not stop.is_set():
                batch = next(changes, None)
                if batch is None:
                    break
                if first:
                    first = False
                    self._reconcile("start", announce=False)
                else:
                    self.step(batch)
        except Stopped:
            pass
        finally:
            self.interruptible = False
            self._shutdown()

    def step(self, changes: Iterable[tuple[int, str]]) -> None:
        """Apply one change set (empty: a quiet tick), then look after the watcher's duties."""
        rels = set()
        for _, path in changes:
            rel = relative(self._objects, path)
            if rel is None:
                rel = relative(self._real_objects, path)
            if rel is not None and relevant(rel):
                rels.add(rel)
        if rels:
            self._active_at = time.time()
        if self._gone():
            # Deleted or moved: a watcher never outlives its store, and never makes anything
            # where it was.
            self._emit("gone", store=str(self.store.root))
            self._stop.set()
            return
        if daemon.stop_requested(self.index.watch_lock_path, self._token):
            self._emit("requested", store=str(self.store.root))
            self._stop.set()
            return
        if self._index_replaced() and self._may_retry():
            if self._reopen():
                self._reconcile("index replaced", announce=True)
        elif self._head_moved():
            self._reconcile("git HEAD moved", announce=True)
        elif "." in rels:
            self._reconcile("objects folder replaced", announce=True)
        elif len(rels) >= self.burst:
            self._reconcile("burst", announce=True, paths=len(rels))
            self._settle = True
        elif rels:
            self._refresh(rels)
        elif self._settle:
            self._reconcile("quiet after a burst", announce=False)
        self._housekeeping()

    def _housekeeping(self) -> None:
        now = self.clock()
        if self._retry_at is not None:
            if now >= self._retry_at:
                self._reconcile("retry after an error", announce=False)
        elif self.reconcile_every and now - self._last_reconcile >= self.reconcile_every:
            self._reconcile("periodic", announce=False)
        self._check_lock()
        self._check_idle()
        if self.clock() - self._last_beat >= HEARTBEAT_S:
            try:
                self._publish(pending=self._retry_at is not None)
            except (sqlite3.Error, KindlingError, OSError) as exc:
                self._failed(f"cannot publish the watcher's state: {exc}")

    def _gone(self) -> bool:
        """True when the store or its state folder is no longer the one this watcher serves."""
        for path, was in self._homes:
            now = _identity(path)
            if now is None or now != was:
                return True
        return False

    def _check_idle(self) -> None:
        """Stop once no reader has relied on the watcher and nothing changed for idle_exit s."""
        if self._stop.is_set() or self.idle_exit is None:
            return
        used = self._active_at
        with contextlib.suppress(OSError, TypeError):
            used = max(used, os.stat(self.index.watch_lock_path).st_mtime)
        if time.time() - used >= self.idle_exit:
            self._emit("idle", seconds=self.idle_exit)
            self._stop.set()

    def _may_retry(self) -> bool:
        return self._retry_at is None or self.clock() >= self._retry_at

    # ------------------------------------------------------------ applying changes

    def _refresh(self, rels: set[str]) -> None:
        paths = [self.store.objects / rel for rel in sorted(rels)]
        self._apply(
            lambda index: index.refresh(paths),
            mode="refresh",
            reason="changes",
            paths=len(rels),
            announce=True,
        )

    def _reconcile(self, reason: str, *, announce: bool, paths: int = 0) -> None:
        self._settle = False
        self._last_reconcile = self.clock()
        self._apply(
            lambda index: index.sync(trust_watcher=False),
            mode="reconcile",
            reason=reason,
            paths=paths,
            announce=announce,
        )

    def _apply(
        self,
        action: Callable[[Index], SyncReport],
        *,
        mode: str,
        reason: str,
        paths: int,
        announce: bool,
    ) -> None:
        began = time.perf_counter()
        try:
            if announce:
                self._publish(pending=True, wait_ms=REFRESH_WAIT_MS if mode == "refresh" else 0)
            try:
                report = action(self.index)
            except sqlite3.DatabaseError:
                # A damaged index: a full sync discards and rebuilds it.
                report = self.index.sync(trust_watcher=False)
            ms = round((time.perf_counter() - began) * 1000, 1)
            self._publish(pending=False)
        except (sqlite3.Error, KindlingError, OSError) as exc:
            self._failed(f"{mode} failed: {exc}")
            return
        self._retry_at, self._retry_wait = None, RETRY_S[0]
        current = {(p.path, p.reason) for p in report.problems}
        new = sorted(current - self._problems)
        self._problems = current
        self._emit(
            "batch",
            mode=mode,
            reason=reason,
            paths=paths,
            added=report.added,
            updated=report.updated,
            removed=report.removed,
            problems=[{"path": p, "reason": r} for p, r in new],
            ms=ms,
        )

    def _failed(self, message: str) -> None:
        self._emit("error", message=message)
        self._retry_at = self.clock() + self._retry_wait
        self._retry_wait = min(self._retry_wait * 2, RETRY_S[1])
        with contextlib.suppress(sqlite3.Error, KindlingError, OSError):
            self._publish(pending=True)

    # ------------------------------------------------------------ the index file

    def _open_index(self) -> Index:
        from kindling.index import Index

        # A new index is only created here and filled by the first reconcile, once the lock
        # is held: hooks then answer from it at once instead of filling it too.
        index = Index(self.store, deadline=0.0)
        index.deadline = None
        if index.watch_lock_path is None:
            index.close()
            raise KindlingError(
                f"cannot watch {self.store.root}: there is nowhere to keep its index "
                "(the store and the cache directory are both read-only)"
            )
        self._index_ino = inode_of(index.path)
        return index

    def _index_replaced(self) -> bool:
        return inode_of(self.index.path) != self._index_ino

    def _reopen(self) -> bool:
        """Connect to the index file now at the index path (deleted or replaced underneath)."""
        try:
            fresh = self._open_index()
        except (sqlite3.Error, KindlingError, OSError) as exc:
            self._failed(f"cannot reopen the index: {exc}")
            return False
        self.index.close()
        self.index = fresh
        self._problems = set()
        self._emit("reopen", path=str(fresh.path))
        return True

    def _publish(self, *, pending: bool, wait_ms: int = 0) -> None:
        now_ms = time.time_ns() // 1_000_000
        self.index.set_watcher_state(
            {
                "pid": os.getpid(),
                "pending": pending,
                "waitMs": wait_ms if pending else 0,  # how long a reader may wait for it
                "heartbeatMs": now_ms,
                "staleAfterMs": int(STALE_AFTER_S * 1000),
                "debounceMs": self.debounce_ms,
                "idleExitS": self.idle_exit,
            }
        )
        self._last_beat = self.clock()

    def _head_moved(self) -> bool:
        head = self.git.signature()
        moved = head != self._head
        self._head = head
        return moved

    # ------------------------------------------------------------ the lock

    def _take_lock(self) -> None:
        path = self.index.watch_lock_path
        # Never through a symlink, never waiting on a FIFO someone put in its place.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | SAFE_OPEN_FLAGS, 0o644)
        if not is_regular_fd(fd):
            os.close(fd)
            raise KindlingError(f"{path} is not a regular file; remove it and start again")
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                platform.lock(fd, blocking=False)
                break
            except platform.LockBusy:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise KindlingError(self._refusal(path)) from None
                time.sleep(0.02)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, daemon.lock_text(os.getpid(), self._token))
        if self._lock_fd is not None:
            os.close(self._lock_fd)
        self._lock_fd = fd

    def _refusal(self, path: Path) -> str:
        holder = daemon.lock_holder(path)
        pid = holder[0] if holder else None
        if pid is None:
            with contextlib.suppress(sqlite3.Error, KindlingError, AttributeError):
                pid = self.index.watcher_state().get("pid")
        who = f"pid {pid}" if pid else "another process"
        return (
            f"kindling watch is already running on {self.store.root} ({who}); "
            "one watcher per store is enough"
        )

    def _check_lock(self) -> None:
        """Take the lock again if its file was deleted or replaced underneath."""
        path = self.index.watch_lock_path
        if self._lock_fd is None or inode_of(path) == os.fstat(self._lock_fd).st_ino:
            return
        if not self._gone():
            self._take_lock()

    # ------------------------------------------------------------ stopping

    def _shutdown(self) -> None:
        if self.index is not None:
            if self._lock_fd is not None:
                with contextlib.suppress(sqlite3.Error, KindlingError, OSError):
                    self.index.set_watcher_state(None)
            self.index.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None
            self._emit("stop")

    def _emit(self, kind: str, **fields) -> None:
        was, self.interruptible = self.interruptible, False  # never cut a line in half
        try:
            self.on_event({"event": kind, "time": time.time_ns() // 1_000_000, **fields})
        finally:
            self.interruptible = was
        if was and self._stop.is_set():
            raise Stopped


def run_until_signalled(watcher: Watcher) -> None:
    """Run `watcher` until SIGINT or SIGTERM, which stop it at once (the index stays whole)."""
    stop = threading.Event()

    def handle(signum: int, frame: object) -> None:
        again = stop.is_set()
        stop.set()
        if again or watcher.interruptible:
            raise Stopped

    with platform.on_stop_signals(handle):
        try:
            watcher.run(stop)
        except Stopped:
            pass


def _identity(path: str | os.PathLike) -> tuple[int, int] | None:
    """A folder's (device, inode) now; None once nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
