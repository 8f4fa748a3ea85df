"""Where the watcher's change sets come from: watchfiles on objects/, and the git HEAD.

A change source is any callable that, given a stop event, yields sets of (change, path)
pairs. An empty set means "nothing happened for a while" (a tick); the first item marks that
watching has begun, so changes made after it are never missed; a set holding the objects/
folder itself asks for a reconcile of everything. Event types are passed on but not trusted.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from kindling.errors import KindlingError
from kindling.fileio import inode_of, is_entity_name, read_regular
from kindling.gitdir import find_git_dir
from kindling.model import ENTITY_TYPES

Change = tuple[int, str]
ChangeSource = Callable[[threading.Event], Iterable[set[Change]]]

# Names editors and Kindling's own atomic writes use for files that are never entities.
_IGNORED_ENDINGS = ("~", ".tmp", ".swp", ".swx", ".swo")


def relevant(rel: str) -> bool:
    """True when a changed path (relative to objects/) can matter to the index.

    Temp files of atomic writes (`.<name>.<pid>.<hex>.tmp`), editors' swap and backup files
    and anything deeper than `<type>/<xx>/<id>.json` are not.
    """
    if rel in ("", "."):
        return True
    parts = rel.split("/")
    if len(parts) > 3 or parts[0] not in ENTITY_TYPES:
        return False
    name = parts[-1]
    if len(parts) == 3:
        return is_entity_name(name)  # the rule every walk uses
    return not name.startswith(".") and not name.endswith(_IGNORED_ENDINGS)


def relative(objects: str, path: str) -> str | None:
    """`path` relative to the objects/ folder ('/'-separated), or None when outside it."""
    if path == objects:
        return "."
    if path.startswith(objects) and path[len(objects) : len(objects) + 1] == os.sep:
        rel = path[len(objects) + 1 :]
        return rel.replace(os.sep, "/") if os.sep != "/" else rel
    return None


class _Probe:
    """The stop event handed to watchfiles; its first poll means the watches are in place."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.ready = threading.Event()

    def is_set(self) -> bool:
        self.ready.set()
        return self.stop.is_set()


class _Feed:
    """One run of watchfiles in its thread, with the queue it fills and what it watches."""

    def __init__(self, source: WatchfilesSource) -> None:
        self.probe = _Probe()
        self.out: queue.SimpleQueue = queue.SimpleQueue()
        self.ino = inode_of(source.root)  # the objects/ folder this run watches
        self.thread = threading.Thread(
            target=source.feed, args=(self.probe, self.out), name="kindling-watch", daemon=True
        )
        self.thread.start()
        while not self.probe.ready.wait(0.05):
            if not self.thread.is_alive():
                raise _failure(source.root, self.out)

    def end(self) -> None:
        self.probe.stop.set()
        self.thread.join(2)

    def drain(self, changes: set[Change]) -> set[Change]:
        """`changes` with every batch that piled up meanwhile merged in."""
        while True:
            try:
                more = self.out.get_nowait()
            except queue.Empty:
                return changes
            if isinstance(more, BaseException):
                self.out.put(more)  # seen by the next get
                return changes
            changes.update((int(c), p) for c, p in more)


class WatchfilesSource:
    """Changes under `objects` as watchfiles reports them, grouped over up to `debounce_ms`.

    A ChangeSource: called with a stop event, it yields change sets. watchfiles runs in a
    thread so the main thread stays free for signals; batches that pile up while the caller
    is busy are merged into one. When objects/ itself is replaced (a checkout that removed
    every file), watching restarts and a full reconcile is asked for.
    """

    def __init__(self, objects: str | os.PathLike, *, debounce_ms: int, tick_s: float = 1.0):
        self.root = os.path.abspath(os.fspath(objects))
        self.real = os.path.realpath(self.root)
        self.debounce_ms = debounce_ms
        self.tick_s = tick_s

    def keep(self, _change: object, path: str) -> bool:
        """watchfiles' filter: only paths that can matter to the index."""
        rel = relative(self.root, path)
        if rel is None:
            rel = relative(self.real, path)
        return rel is not None and relevant(rel)

    def feed(self, probe: _Probe, out: queue.SimpleQueue) -> None:
        """The thread's body: every batch watchfiles reports, then its failure if any."""
        import watchfiles  # only `kindling watch` pays for this import

        try:
            for changes in watchfiles.watch(
                self.root,
                watch_filter=self.keep,
                debounce=self.debounce_ms,
                step=max(1, min(50, self.debounce_ms)),
                stop_event=probe,
                rust_timeout=0,
                raise_interrupt=False,
            ):
                out.put(changes)
        except BaseException as exc:  # handed to the main thread
            out.put(exc)

    def __call__(self, stop: threading.Event) -> Iterator[set[Change]]:
        # A fresh clone of an empty store has no objects/; made only inside a store that is
        # still there (mkdir, not makedirs), never in place of a deleted one.
        with contextlib.suppress(OSError):
            os.mkdir(self.root)
        feed = _Feed(self)
        try:
            yield set()
            while not stop.is_set():
                try:
                    item = feed.out.get(timeout=self.tick_s)
                except queue.Empty:
                    if inode_of(self.root) == feed.ino:
                        yield set()
                        continue
                    item = None  # objects/ was removed or replaced: watch the new one
                if isinstance(item, BaseException) or item is None:
                    feed.end()
                    while inode_of(self.root) is None and not stop.is_set():
                        yield set()
                        time.sleep(self.tick_s)
                    if stop.is_set():
                        return
                    feed = _Feed(self)
                    yield {(0, self.root)}
                    continue
                yield feed.drain({(int(c), p) for c, p in item})
        finally:
            feed.end()


def _failure(root: str, out: queue.SimpleQueue) -> KindlingError:
    try:
        exc = out.get_nowait()
    except queue.Empty:
        return KindlingError(f"cannot watch {root}: the watcher stopped at once")
    text = str(exc)
    if "No space left" in text or "os error 28" in text:
        text += " (the inotify watch limit: raise fs.inotify.max_user_watches)"
    return KindlingError(f"cannot watch {root}: {text}")


class GitHead:
    """Where the store's git HEAD points and the commit it names: a checkout or pull moves it."""

    def __init__(self, start: str | os.PathLike) -> None:
        self.git_dir, self.common_dir = find_git_dir(Path(start))

    def signature(self) -> tuple | None:
        """Something that changes whenever HEAD or the branch it names moves; None outside git."""
        if self.git_dir is None:
            return None
        try:
            head = read_regular(self.git_dir / "HEAD")
        except OSError:
            return None
        if head is None:
            return None
        if not head.startswith(b"ref: "):
            return (head,)  # a detached HEAD names the commit itself
        ref = head[5:].strip().decode("utf-8", "replace")
        for base in dict.fromkeys((self.git_dir, self.common_dir)):
            try:
                tip = read_regular(base / ref)
            except OSError:
                continue
            if tip is not None:
                return (head, tip)
        try:
            st = os.stat(self.common_dir / "packed-refs")
        except OSError:
            return (head,)
        return (head, st.st_mtime_ns, st.st_size, st.st_ino)
