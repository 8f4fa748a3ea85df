"""An import indexes on a second thread: failures there leave the files, the thread ends."""

from __future__ import annotations

import os
import threading

import entities
import orjson
import pytest
from conftest import NOTHING_RACY

from kindling.bundle import recording
from kindling.bundle.importer import ImportInterrupted, import_bundle
from kindling.bundle.recording import THREAD_NAME, BackgroundRecorder
from kindling.index import Index, fsclock
from kindling.memory import Memory
from kindling.store import Store, WrittenFile

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

    original = Index.record_many
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Index, "record_many", failing)
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
    real_write = Store.write_checked
    writes = []

    def write(self, *args, **kwargs):
        writes.append(1)
        if len(writes) == 4:
            raise OSError(28, "No space left on device", "x.json")
        return real_write(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Store, "write_checked", write)
        with Memory(root) as memory, pytest.raises(ImportInterrupted):
            import_bundle(memory, bundle_bytes())
    assert not indexing_threads()
    assert index_is_exact(root, tmp_path)
    with Memory(root) as memory:
        assert len(memory.index.entities("observations")) == 3


def test_every_written_file_is_recorded_once_in_order():
    heard: list[list[int]] = []
    with BackgroundRecorder(heard.append, batch=3) as recorder:
        for i in range(8):
            recorder.add(i)
    assert heard == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert not indexing_threads()


def test_after_a_failure_the_thread_drains_the_queue_so_the_writer_never_waits():
    def broken(batch):
        raise RuntimeError("no index")

    recorder = BackgroundRecorder(broken, batch=1, queued=1).start()
    adder = threading.Thread(target=lambda: [recorder.add(i) for i in range(50)])
    adder.start()
    adder.join(60)
    assert not adder.is_alive()
    recorder.close()
    assert isinstance(recorder.failure, RuntimeError)
    assert not indexing_threads()


def test_a_batch_is_judged_against_one_reading_of_the_filesystem_clock(root, monkeypatch):
    readings = []
    monkeypatch.setattr(
        fsclock, "racy_from", lambda clock, objects: readings.append(1) or NOTHING_RACY
    )
    with Memory(root) as memory:
        written = []
        for i in range(3):
            entity = entities.observation(i)
            path = memory.store.entity_path("observations", entity["id"])
            stored = memory.store.write_checked(path, entity)
            written.append(WrittenFile("observations", path, stored.data, None, stored.stat))
        index = memory.index  # opened (and built) first
        readings.clear()
        index.record_many(written)
        keys = [row[0] for row in memory.index.conn.execute("SELECT statkey FROM files")]
    assert len(readings) == 1 and len(keys) == 3 and "" not in keys
