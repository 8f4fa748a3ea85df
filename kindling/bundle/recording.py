"""Index the files a bulk import writes on a second thread, so indexing overlaps the writing.

SQLite and file system calls release the GIL, so the rows of one batch are built and
inserted while the import goes on writing the next files. Batches wait in a bounded queue:
when indexing falls behind, the writer waits for it, so memory stays bounded. The files are
the truth: a batch that fails to index is dropped (the next sync reads those files), never
retried, and never stops the writing.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

RECORD_BATCH = 1_000  # files written per index transaction during an import
RACY_S = 2.5  # a little over the index's racy window (kindling.index.schema.RACY_NS)
QUEUED_BATCHES = 48  # about 2.5 s of writes at full speed, then the writer waits
THREAD_NAME = "kindling-import-index"
_DONE = None  # put last: the thread records what it holds and ends


class BackgroundRecorder:
    """Hands written files to `record` in batches, on its own thread, each once its newest
    file is older than the racy window (its stat data is then trusted at once) or at `close`.

    Use as a context manager: the thread never outlives the `with` block.
    """

    def __init__(
        self,
        record: Callable[[list[Any]], None],
        *,
        batch: int | None = None,
        racy_s: float | None = None,
        queued: int = QUEUED_BATCHES,
    ) -> None:
        self._record = record
        self._size = batch or RECORD_BATCH
        self._racy_s = RACY_S if racy_s is None else racy_s
        self._batch: list[Any] = []
        self._queue: queue.Queue[tuple[float, list[Any]] | None] = queue.Queue(maxsize=queued)
        self._closing = threading.Event()  # set: stop waiting out the racy window
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self.failure: BaseException | None = None  # what stopped the indexing, if anything

    def start(self) -> BackgroundRecorder:
        """Start the thread; `close` must follow (`with` does both)."""
        self._thread.start()
        return self

    def __enter__(self) -> BackgroundRecorder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, written: Any) -> None:
        """One file just written; its batch goes to the thread once full."""
        self._batch.append(written)
        if len(self._batch) >= self._size:
            self._hand_over()

    def close(self) -> None:
        """Record what is left at once (inside the racy window: stat key "") and end the thread."""
        if not self._thread.is_alive():
            return
        self._hand_over()
        self._closing.set()
        self._queue.put(_DONE)
        self._thread.join()

    def _hand_over(self) -> None:
        if self._batch:
            self._queue.put((time.monotonic(), self._batch))
            self._batch = []

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if self.failure is not None:
                continue  # keep draining so the writer never waits on a dead thread
            written_at, batch = item
            self._closing.wait(max(0.0, written_at + self._racy_s - time.monotonic()))
            try:
                self._record(batch)
            except BaseException as exc:  # noqa: BLE001 - reported by the caller, files stay
                self.failure = exc
