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
from kindling.fileio import inode_of, read_regular
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
    if name.startswith(".") or name.endswith(_IGNORED_ENDINGS):
        return False
    return len(parts) < 3 or name.endswith(".json")


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


def watchfiles_source(
    objects: str | os.PathLike, *, debounce_ms: int, tick_s: float = 1.0
) -> ChangeSource:
    """Changes under `objects` as watchfiles reports them, grouped over up to `debounce_ms`.

    watchfiles runs in a thread so the main thread stays free for signals; batches that pile
    up while the caller is busy are merged into one. When objects/ itself is replaced (a
    checkout that removed every file), watching restarts and a full reconcile is asked for.
    """
    root = os.path.abspath(os.fspath(objects))
    real = os.path.realpath(root)

    def keep(_change: object, path: str) -> bool:
        rel = relative(root, path)
        if rel is None:
            rel = relative(real, path)
        return rel is not None and relevant(rel)

    def feed(probe: _Probe, out: queue.SimpleQueue) -> None:
        import watchfiles  # only `kindling watch` pays for this import

        try:
            for changes in watchfiles.watch(
                root,
                watch_filter=keep,
                debounce=debounce_ms,
                step=max(1, min(50, debounce_ms)),
                stop_event=probe,
                rust_timeout=0,
                raise_interrupt=False,
            ):
                out.put(changes)
        except BaseException as exc:  # handed to the main thread
            out.put(exc)

    def start() -> tuple[_Probe, queue.SimpleQueue, threading.Thread, int | None]:
        probe, out = _Probe(), queue.SimpleQueue()
        ino = inode_of(root)
        thread = threading.Thread(
            target=feed, args=(probe, out), name="kindling-watch", daemon=True
        )
        thread.start()
        while not probe.ready.wait(0.05):
            if not thread.is_alive():
                raise _failure(root, out)
        return probe, out, thread, ino

    def source(stop: threading.Event) -> Iterator[set[Change]]:
        # A fresh clone of an empty store has no objects/; made only inside a store that is
        # still there (mkdir, not makedirs), never in place of a deleted one.
        with contextlib.suppress(OSError):
            os.mkdir(root)
        probe, out, thread, ino = start()
        try:
            yield set()
            while not stop.is_set():
                try:
                    item = out.get(timeout=tick_s)
                except queue.Empty:
                    if inode_of(root) == ino:
                        yield set()
                        continue
                    item = None  # objects/ was removed or replaced: watch the new one
                if isinstance(item, BaseException) or item is None:
                    probe.stop.set()
                    thread.join(2)
                    while inode_of(root) is None and not stop.is_set():
                        yield set()
                        time.sleep(tick_s)
                    if stop.is_set():
                        return
                    probe, out, thread, ino = start()
                    yield {(0, root)}
                    continue
                changes = {(int(c), p) for c, p in item}
                while True:  # merge whatever piled up meanwhile
                    try:
                        more = out.get_nowait()
                    except queue.Empty:
                        break
                    if isinstance(more, BaseException):
                        out.put(more)
                        break
                    changes.update((int(c), p) for c, p in more)
                yield changes
        finally:
            probe.stop.set()
            thread.join(2)

    return source


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
