"""Index the files a bulk import writes on a second thread, so indexing overlaps the writing.

SQLite and file system calls release the GIL, so the rows of one batch are inserted while
the import goes on writing the next files. Batches wait in a bounded queue: when indexing
falls behind, the writer waits for it, so memory stays bounded. Each batch is recorded as
soon as it arrives. Files still too recent for their stat data to be trusted then (the racy
rule, `kindling.index.fsclock`: usually only those of the filesystem clock's current tick,
but seconds of them where only the system clock can be read) get stat key ""; once older
than the racy window their batch is settled (given its stat keys, a cheap update), so no
later sync reads those files again. What is still too recent when the import ends stays
unsettled: the next sync reads those files once more.

The files are the truth: a batch that fails to index is dropped (the next sync reads those
files), never retried, and never stops the writing.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

RECORD_BATCH = 1_000  # files written per index transaction during an import
RACY_S = 2.5  # a little over the system clock's racy margin (kindling.index.schema.RACY_NS)
QUEUED_BATCHES = 16  # batches written but not yet recorded, at most; then the writer waits
THREAD_NAME = "kindling-import-index"
_DONE = None  # put last: the thread records what it holds and ends


class BackgroundRecorder:
    """Hands written files to `record` in batches on its own thread, then what `record`
    returned for a batch (its files too recent to trust yet), if anything, to `settle` once
    the batch's newest file is older than the racy window (or at `close`, when ripe).

    Use as a context manager (or `start` then `close`): the thread never outlives it.
    """

    def __init__(
        self,
        record: Callable[[list[Any]], Any],
        settle: Callable[[Any], None] | None = None,
        *,
        batch: int | None = None,
        racy_s: float | None = None,
        queued: int = QUEUED_BATCHES,
    ) -> None:
        self._record = record
        self._settle = settle
        self._size = batch or RECORD_BATCH
        self._racy_s = RACY_S if racy_s is None else racy_s
        self._batch: list[Any] = []
        self._queue: queue.Queue[tuple[float, list[Any]] | None] = queue.Queue(maxsize=queued)
        # Recorded batches waiting out the racy window, oldest first, with their write time.
        self._unsettled: collections.deque[tuple[float, list[Any]]] = collections.deque()
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
        """Record what is left, settle what is old enough, and end the thread."""
        if not self._thread.is_alive():
            return
        self._hand_over()
        self._queue.put(_DONE)
        self._thread.join()

    def _hand_over(self) -> None:
        if self._batch:
            self._queue.put((time.monotonic(), self._batch))
            self._batch = []

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=self._until_ripe())
            except queue.Empty:
                item = ()  # nothing new: time to settle
            if self.failure is None:
                try:
                    if item:
                        later = self._record(item[1])
                        if later and self._settle is not None:
                            self._unsettled.append((item[0], later))
                    self._settle_ripe()
                except BaseException as exc:  # noqa: BLE001 - the files stay; a sync reads them
                    self.failure = exc
                    self._unsettled.clear()
            if item is _DONE:
                return

    def _until_ripe(self) -> float | None:
        """Seconds until the oldest recorded batch can be settled; None: wait for a batch."""
        if not self._unsettled:
            return None
        return max(0.0, self._unsettled[0][0] + self._racy_s - time.monotonic())

    def _settle_ripe(self) -> None:
        now = time.monotonic()
        while self._unsettled and self._unsettled[0][0] + self._racy_s <= now:
            self._settle(self._unsettled.popleft()[1])  # type: ignore[misc]
