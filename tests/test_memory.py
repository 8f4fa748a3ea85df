"""The Python API: one public call syncs the index at most once."""

from __future__ import annotations

import sqlite3

from kindling.index import Index


def test_one_public_call_syncs_once(memory, monkeypatch):
    cap = memory.open_capsule("work", scope={"sessionId": "s1"}).entity["id"]
    first = memory.log("first", scope={"sessionId": "s1"}).entity["id"]
    second = memory.log("second", scope={"sessionId": "s1"}).entity["id"]
    calls = []
    real_sync = Index.sync
    monkeypatch.setattr(Index, "sync", lambda self, **kw: calls.append(1) or real_sync(self, **kw))

    memory.close_capsule(cap[:10], summary="done", evidence=[first[:8], second[:8]])
    assert len(calls) == 1
    memory.log("third", scope={"sessionId": "s1"})
    assert len(calls) == 2
    # Between calls the index is synced again, so outside edits are always seen.
    memory.list("observations")
    memory.list("observations")
    assert len(calls) == 4


def test_full_ids_resolve_without_a_sync(memory, monkeypatch):
    obs = memory.log("x").entity["id"]
    monkeypatch.setattr(Index, "sync", lambda self, **kw: (_ for _ in ()).throw(AssertionError))
    assert memory.get(obs).entity["content"] == "x"
    memory.forget(obs)
    assert memory.store.load("observations", obs)["redacted"] is True


def test_a_write_the_index_refuses_keeps_its_file_and_the_next_read_finds_it(memory, monkeypatch):
    def refuse(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    with monkeypatch.context() as patched:
        patched.setattr(Index, "record", refuse)
        written = memory.log("kept on disk")
    assert written.path.is_file()
    assert memory.store.load("observations", written.entity["id"]) == written.entity
    assert [o["id"] for o in memory.list("observations")] == [written.entity["id"]]
