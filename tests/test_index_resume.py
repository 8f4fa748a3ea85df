"""An index built from nothing keeps what each sync applied: a build killed mid-way, or a hook
stopped at its time budget, is continued by the next one and ends equal to a full rebuild;
meanwhile a hook answers from the index it has and says that memory is still being indexed."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import NOTHING_RACY, pin_fs_clock
from entities import observation

from kindling.agents import context
from kindling.agents.hooks import run_hook
from kindling.index import Index
from kindling.index import sync as sync_module
from kindling.index.db import remove_index_files
from kindling.memory import Memory
from kindling.store import Store

# Kills itself (SIGKILL, as a hook timeout or a closed laptop would) while applying the third
# chunk of its build: the first two chunks were committed, the third never is.
KILLED_BUILD = textwrap.dedent(
    """
    import os, signal, sys
    from kindling.index import Index
    from kindling.index import sync
    from kindling.store import Store

    sync.CHUNK = 40
    applied = 0
    apply = sync.Syncer.apply

    def counting(self, reads, removed):
        global applied
        applied += 1
        out = apply(self, reads, removed)
        if applied == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return out

    sync.Syncer.apply = counting
    Index(Store(sys.argv[1]), path=sys.argv[2])
    """
)


def fill(store: Store, n: int) -> None:
    for i in range(n):
        store.write("observations", observation(i, f"note {i} about the cache"), durable=False)


def fresh_dump(store: Store, tmp_path: Path) -> dict:
    fresh = Index(store, path=tmp_path / "fresh.sqlite")
    try:
        return fresh.dump()
    finally:
        fresh.close()


def test_a_killed_build_keeps_its_progress_and_the_next_continues(store_dir, tmp_path):
    store = Store(store_dir)
    fill(store, 200)
    path = tmp_path / "index.sqlite"
    done = subprocess.run(
        [sys.executable, "-c", KILLED_BUILD, str(store_dir), str(path)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == -9, done.stderr.decode()
    # The next process opens what the killed one left: two chunks of 40, still building.
    index = Index(store, path=path, deadline=0.0)
    try:
        assert index.building
        assert index.counts()["observations"] == 80
        index.deadline = None
        report = index.sync()
        assert (report.added, report.unchanged, report.pending) == (120, 80, 0)
        assert not index.building
        assert index.dump() == fresh_dump(store, tmp_path)
        assert index.verify() == []
    finally:
        index.close()


def folders(store: Store) -> int:
    return sum(1 for p in store.objects.glob("*/*") if p.is_dir())


def test_syncs_stopped_at_their_deadline_add_up_to_a_rebuild(store_dir, tmp_path, monkeypatch):
    pin_fs_clock(monkeypatch, NOTHING_RACY)  # every file's stat data trusted: exact counts
    store = Store(store_dir)
    fill(store, 30)
    monkeypatch.setattr(sync_module, "DEADLINE_CHUNK", 7)
    index = Index(store, path=tmp_path / "index.sqlite", deadline=0.0)  # always past
    try:
        assert index.building and index.counts()["observations"] == 0
        added = []
        while index.building:
            # Each walks one folder more (its deadline is long past), in turn, and keeps it.
            added.append(index.sync().added)
            assert index.stopped and len(added) <= folders(store)
        assert sum(added) == 30 and min(added) >= 1
        # Files written while it was building are found like any others.
        fill(store, 33)
        index.deadline = None
        assert index.sync().added == 3 and not index.stopped
        assert index.dump() == fresh_dump(store, tmp_path)
    finally:
        index.close()


def test_a_walk_that_fits_its_deadline_is_whole(store_dir, tmp_path):
    store = Store(store_dir)
    fill(store, 30)
    index = Index(store, path=tmp_path / "index.sqlite", deadline=0.0)
    try:
        index.deadline = time.monotonic() + 600
        report = index.sync()
        assert (report.added, report.pending) == (30, 0)
        assert not index.stopped and not index.building
    finally:
        index.close()


def test_files_too_recent_to_trust_never_stall_a_build(store_dir, tmp_path, monkeypatch):
    pin_fs_clock(monkeypatch, 0)  # every file is racy: re-read by every sync until it is not
    store = Store(store_dir)
    fill(store, 30)
    monkeypatch.setattr(sync_module, "DEADLINE_CHUNK", 1)
    index = Index(store, path=tmp_path / "index.sqlite", deadline=0.0)
    try:
        added = []
        while index.building:
            added.append(index.sync().added)
            assert len(added) <= 2 * folders(store)
        assert sum(added) == 30  # new files first: the racy re-reads never hold it back
        index.deadline = None
        index.sync()
        assert index.dump() == fresh_dump(store, tmp_path)
    finally:
        index.close()


def test_a_rebuild_of_an_unfinished_index_finishes_it(store_dir, tmp_path):
    store = Store(store_dir)
    fill(store, 12)
    index = Index(store, path=tmp_path / "index.sqlite", deadline=0.0)
    try:
        assert index.building
        index.rebuild()
        assert not index.building
        assert index.dump() == fresh_dump(store, tmp_path)
    finally:
        index.close()


def _session_start(project: Path) -> dict:
    return {
        "session_id": "3f1c2a7e-8b9d-4c0e-a1f2-0123456789ab",
        "transcript_path": "/dev/null",
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }


def _context(result) -> str:
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_hook_on_a_store_with_no_index_answers_at_its_budget_and_says_so(
    project, monkeypatch, tmp_path
):
    store = Store(project / ".kindling")
    fill(store, 60)
    remove_index_files(store.index_path)
    # No time to index anything but one chunk: the hook answers from what the index holds.
    monkeypatch.setattr(context, "INDEX_BUDGET_S", 0.0)
    monkeypatch.setattr(sync_module, "DEADLINE_CHUNK", 20)
    data = json.dumps(_session_start(project)).encode()
    first = run_hook("SessionStart", data, str(store.root))
    assert first.message is None, first.message
    text = _context(first)
    assert "memory is still being indexed" in text
    assert "`kindling reindex` finishes it" in text  # no watcher here (KINDLING_AUTOWATCH=0)
    with Memory(store.root) as memory:
        index = Index(store, deadline=0.0)
        try:
            assert index.building  # what the hook applied stayed; the rest is still to do
            assert 0 < index.counts()["observations"] < 60
        finally:
            index.close()
        # Each hook continues where the last one stopped, until the index is whole.
        hooks = 1
        while "still being indexed" in _context(run_hook("SessionStart", data, str(store.root))):
            hooks += 1
            assert hooks <= folders(store) + 1
        assert hooks >= 2
        memory.sync()
        assert memory.indexing() is None
        assert memory.index.dump() == fresh_dump(store, tmp_path)


def test_a_prompt_is_told_memory_is_being_indexed_even_when_nothing_is_recalled(
    project, monkeypatch
):
    store = Store(project / ".kindling")
    fill(store, 45)
    remove_index_files(store.index_path)
    monkeypatch.setattr(context, "INDEX_BUDGET_S", 0.0)
    monkeypatch.setattr(sync_module, "DEADLINE_CHUNK", 20)
    prompt = {
        **_session_start(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "why is the zebrafish queue stuck",
    }
    result = run_hook("UserPromptSubmit", json.dumps(prompt).encode(), str(store.root))
    assert result.message is None, result.message
    assert _context(result).startswith("Note: memory is still being indexed (")


def test_a_hook_leaves_a_new_index_to_the_watcher_filling_it(store_dir):
    store = Store(store_dir)
    fill(store, 25)
    Index(store, deadline=0.0).close()  # created, nothing read: as a fresh clone's first hook
    with Memory(store_dir, index_budget_s=30.0) as memory:
        lock_path = memory.index.watch_lock_path
        lock = open(lock_path, "w")  # noqa: SIM115 - held for the test: a watcher at work
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            lock.write(f"{os.getpid()} token\n")
            lock.flush()
            memory.sync()
            assert memory.index.walked == 0  # it read nothing: the watcher is filling it
            state = memory.indexing()
            assert state == {"indexed": 0, "pending": 0, "watcher": os.getpid()}
            assert f"(pid {os.getpid()}) is finishing it" in context.indexing_note(memory)
        finally:
            lock.close()
        memory.sync()  # the watcher is gone: the reader fills it itself
        assert memory.indexing() is None
        assert memory.index.counts()["observations"] == 25
