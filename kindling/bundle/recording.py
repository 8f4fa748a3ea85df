"""Index the files a bulk import writes on a second thread, so indexing overlaps the writing.

SQLite and file system calls release the GIL, so the rows of one batch are inserted while
the import goes on writing the next files. Batches wait in a bounded queue: when indexing
falls behind, the writer waits for it, so memory stays bounded. Files still too recent for
their stat data to be trusted when their batch is recorded (the racy rule,
`kindling.index.fsclock`: those of the filesystem clock's current tick) get stat key "", and
the next sync reads just those once more.

The files are the truth: a batch that fails to index is dropped (the next sync reads those
files), never retried, and never stops the writing.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

RECORD_BATCH = 1_000  # files written per index transaction during an import
QUEUED_BATCHES = 16  # batches written but not yet recorded, at most; then the writer waits
THREAD_NAME = "kindling-import-index"
_DONE = None  # put last: the thread records what it holds and ends


class BackgroundRecorder:
    """Hands written files to `record` in batches on its own thread.

    Use as a context manager (or `start` then `close`): the thread never outlives it.
    """

    def __init__(
        self,
        record: Callable[[list[Any]], object],
        *,
        batch: int | None = None,
        queued: int = QUEUED_BATCHES,
    ) -> None:
        self._record = record
        self._size = batch or RECORD_BATCH
        self._batch: list[Any] = []
        self._queue: queue.Queue[list[Any] | None] = queue.Queue(maxsize=queued)
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
        """Record what is left and end the thread."""
        if not self._thread.is_alive():
            return
        self._hand_over()
        self._queue.put(_DONE)
        self._thread.join()

    def _hand_over(self) -> None:
        if self._batch:
            self._queue.put(self._batch)
            self._batch = []

    def _run(self) -> None:
        while True:
            batch = self._queue.get()
            if batch is _DONE:
                return
            if self.failure is None:  # after a failure, drain: the writer never waits
                try:
                    self._record(batch)
                except BaseException as exc:  # noqa: BLE001 - the files stay; a sync reads them
                    self.failure = exc
