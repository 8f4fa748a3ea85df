"""An import indexes on a second thread: failures there leave the files, the thread ends."""

from __future__ import annotations

import os
import threading

import entities
import orjson
import pytest

from kindling.bundle import recording
from kindling.bundle.importer import ImportInterrupted, import_bundle
from kindling.bundle.recording import THREAD_NAME, BackgroundRecorder
from kindling.index import Index
from kindling.memory import Memory
from kindling.store import Store

N = 7


def bundle_bytes(n: int = N) -> bytes:
    observations = [entities.observation(i, f"note number {i}") for i in range(n)]
    return orjson.dumps(entities.bundle(observations=observations))


def indexing_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def index_is_exact(root, tmp_path) -> bool:
    """The index after a sync holds what a rebuild from the files holds."""
    with Memory(root) as memory:
        memory.sync()
        live = memory.index.dump()
    rebuilt = Index(Store(root), path=tmp_path / "rebuilt.sqlite")
    try:
        return live == rebuilt.dump()
    finally:
        rebuilt.close()


@pytest.fixture
def root(tmp_path):
    path = tmp_path / "store"
    Store.create(path)
    return path


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(recording, "RECORD_BATCH", 2)


def test_a_failure_in_the_indexing_thread_leaves_every_file_and_the_next_sync_exact(
    root, tmp_path, small_batches
):
    calls = []

    def failing(self, written):
        calls.append(len(written))
        if len(calls) == 2:
            raise RuntimeError("indexing broke")
        return original(self, written)

    original = Memory.record
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Memory, "record", failing)
        with Memory(root) as memory:
            report = import_bundle(memory, bundle_bytes())
    assert report.written == N
    assert calls == [2, 2]  # batches after the failure are dropped, not retried
    assert not indexing_threads()
    store = Store(root)
    assert sorted(os.path.basename(f.path) for f in store.walk()) == sorted(
        f"{entities.observation(i)['id']}.json" for i in range(N)
    )
    assert index_is_exact(root, tmp_path)
    with Memory(root) as memory:
        assert len(memory.index.entities("observations")) == N


def test_the_indexing_thread_ends_when_a_write_fails_part_way(root, tmp_path, small_batches):
    real_write = Store.write
    writes = []

    def write(self, *args, **kwargs):
        writes.append(1)
        if len(writes) == 4:
            raise OSError(28, "No space left on device", "x.json")
        return real_write(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Store, "write", write)
        with Memory(root) as memory, pytest.raises(ImportInterrupted):
            import_bundle(memory, bundle_bytes())
    assert not indexing_threads()
    assert index_is_exact(root, tmp_path)
    with Memory(root) as memory:
        assert len(memory.index.entities("observations")) == 3


def test_every_written_file_is_recorded_once_in_order():
    heard: list[list[int]] = []
    with BackgroundRecorder(heard.append, batch=3, racy_s=0) as recorder:
        for i in range(8):
            recorder.add(i)
    assert heard == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert not indexing_threads()


def test_closing_records_what_waits_out_the_racy_window_at_once():
    heard: list[list[int]] = []
    done = threading.Event()
    # An hour's racy window: only close() can bring these batches out before the join.
    recorder = BackgroundRecorder(heard.append, batch=2, racy_s=3600).start()
    for i in range(5):
        recorder.add(i)
    closer = threading.Thread(target=lambda: (recorder.close(), done.set()))
    closer.start()
    closer.join(60)
    assert done.is_set() and heard == [[0, 1], [2, 3], [4]]


def test_after_a_failure_the_thread_drains_the_queue_so_the_writer_never_waits():
    def broken(batch):
        raise RuntimeError("no index")

    recorder = BackgroundRecorder(broken, batch=1, racy_s=0, queued=1).start()
    adder = threading.Thread(target=lambda: [recorder.add(i) for i in range(50)])
    adder.start()
    adder.join(60)
    assert not adder.is_alive()
    recorder.close()
    assert isinstance(recorder.failure, RuntimeError)
    assert not indexing_threads()
