"""The derived index: build, incremental sync, problem files, duplicates, damage and concurrency."""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from conftest import NOTHING_RACY, pin_fs_clock
from entities import NOW, capsule, observation, pin

from kindling.index import Index, Problem, handoff
from kindling.index import schema as index_schema
from kindling.index import sync as sync_module
from kindling.store import Store, fanout


@pytest.fixture
def store(store_dir) -> Store:
    return Store(store_dir)


@pytest.fixture
def index(store):
    ix = Index(store)
    yield ix
    ix.close()


def fresh_dump(store: Store, tmp_path) -> dict:
    """What a rebuild from nothing holds, in a separate database."""
    path = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}.sqlite"
    other = Index(store, path=path)
    try:
        return other.dump()
    finally:
        other.close()


# ---------------------------------------------------------------- building and syncing


def test_open_builds_from_existing_files(store):
    for n in range(3):
        store.write("observations", observation(n))
    store.write("capsules", capsule(1, sessionId="s1"))
    ix = Index(store)
    assert ix.counts() == {
        "observations": 3,
        "capsules": 1,
        "summaries": 0,
        "pins": 0,
        "redacted": 0,
        "openCapsules": 1,
    }
    assert store.index_path.is_file()
    assert not (store.root / "index.sqlite").exists()  # nothing derived in the work tree
    ix.close()


def test_sync_counts_each_kind_of_change(store, index):
    paths = [store.write("observations", observation(n))[0] for n in range(4)]
    report = index.sync()
    assert (report.added, report.updated, report.removed, report.unchanged) == (4, 0, 0, 0)
    store.write("observations", observation(1, "changed"))
    paths[2].unlink()
    store.write("observations", observation(9))
    os.utime(paths[3])  # stat changes, bytes do not
    report = index.sync()
    assert (report.added, report.updated, report.removed, report.unchanged) == (1, 1, 1, 2)
    assert report.problems == []
    assert index.get("obs-0001").entity["content"] == "changed"
    assert index.get("obs-0002") is None


def walks(index: Index, monkeypatch) -> list[int]:
    """A spy on the whole-store walk: one entry per listing of every fan-out folder."""
    seen: list[int] = []
    real = sync_module.buckets

    def spy(objects):
        found = real(objects)
        seen.append(len(found))
        return found

    monkeypatch.setattr(sync_module, "buckets", spy)
    return seen


def test_noop_sync_writes_nothing(store, index, monkeypatch):
    store.write("observations", observation(1))
    pin_fs_clock(monkeypatch, NOTHING_RACY)
    index.sync()
    before = index.conn.total_changes
    walked = walks(index, monkeypatch)
    assert index.sync().unchanged == 1
    assert walked == [1]  # it did look at the store...
    assert index.conn.total_changes == before  # ...and changed no row


def test_racy_files_are_reread_until_their_tick_is_over(store, index, monkeypatch):
    path, _ = store.write("observations", observation(1, "first"))
    st = os.lstat(path)
    # The filesystem's clock still reads the tick the file was written in.
    pin_fs_clock(monkeypatch, max(st.st_mtime_ns, st.st_ctime_ns))
    index.sync()
    key = index.conn.execute("SELECT statkey FROM files").fetchone()[0]
    assert key == ""  # its stat data cannot be trusted yet
    # An edit in the same timestamp tick can leave every stat field as it was; only
    # re-reading racy files catches it. Pretend the stat data is identical:
    path.write_bytes(path.read_bytes().replace(b"first", b"other"))
    assert index.sync().updated == 1
    assert index.get("obs-0001").entity["content"] == "other"

    pin_fs_clock(monkeypatch, NOTHING_RACY)  # the tick is over
    index.sync()
    key = index.conn.execute("SELECT statkey FROM files").fetchone()[0]
    st = os.lstat(path)
    assert key == f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"

    # Once trusted, identical stat data means "unchanged" without reading: the same edit made
    # invisible to stat (as a same-tick edit would be) is then not seen. That is why recent
    # files are never trusted.
    path.write_bytes(path.read_bytes().replace(b"other", b"third"))
    st = os.lstat(path)
    index.conn.execute(
        "UPDATE files SET size = ?, mtime_ns = ?, ctime_ns = ?, ino = ?, racy = 0",
        (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino),
    )
    assert index.sync().updated == 0
    monkeypatch.undo()
    os.utime(path)
    assert index.sync().updated == 1


def test_stat_data_recorded_per_file(store, index):
    path, data = store.write("observations", observation(1))
    index.sync()
    row = index.conn.execute(
        "SELECT path, type, size, mtime_ns, ctime_ns, ino, hash FROM files"
    ).fetchone()
    st = os.lstat(path)
    assert row == (
        f"observations/{fanout('obs-0001')}/obs-0001.json",
        "observations",
        len(data),
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
        index_schema.canonical.content_hash(data),
    )


def test_vanished_folders_and_types_are_removed(store, index):
    for n in range(5):
        store.write("observations", observation(n))
    store.write("capsules", capsule(1))
    index.sync()
    shutil.rmtree(store.objects / "observations")
    report = index.sync()
    assert report.removed == 5
    assert index.counts()["observations"] == 0
    assert index.counts()["capsules"] == 1


def test_temp_hidden_and_stray_files_are_ignored(store, index):
    store.write("observations", observation(1))
    bucket = store.path_for("observations", "obs-0001").parent
    (bucket / ".obs-0002.json.123.abcd.tmp").write_text("{")
    (bucket / ".hidden.json").write_text("{")
    (bucket / "notes.txt").write_text("hi")
    (store.objects / "observations" / "loose.json").write_text("{}")
    (bucket / "link.json").symlink_to(store.path_for("observations", "obs-0001"))
    report = index.sync()
    assert report.added == 1 and report.problems == []


# ---------------------------------------------------------------- problem files


BROKEN = {
    "conflict": (
        b'<<<<<<< HEAD\n{\n  "content": "a"\n}\n=======\n{\n  "content": "b"\n}\n>>>>>>> other\n',
        "holds git merge conflict markers",
    ),
    "truncated": (b'{\n  "content": "JWT validation', "not valid JSON"),
    "empty": (b"", "empty file"),
    "invalid": (b'{"id": "obs-0007", "kind": "shout"}\n', "invalid observation obs-0007"),
    "array": (b"[1, 2]\n", "not a JSON object"),
    "binary": (b"\xff\xfe\x00garbage", "not valid JSON"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_problem_files_are_reported_and_left_byte_identical(store, index, name, tmp_path):
    data, reason = BROKEN[name]
    store.write("observations", observation(1, "token expired"))
    bad = store.path_for("observations", "obs-0007")
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(data)
    before = os.lstat(bad)
    for report in (index.sync(), index.sync(), index.rebuild()):
        assert [p.path for p in report.problems] == [str(bad)]
        assert reason in report.problems[0].reason
        assert report.unchanged + report.added == 1
    assert index.problems() == report.problems
    assert bad.read_bytes() == data
    assert os.lstat(bad).st_mtime_ns == before.st_mtime_ns
    assert index.get("obs-0001") is not None
    assert index.get("obs-0007") is None
    assert index.dump() == fresh_dump(store, tmp_path)


def test_a_fixed_problem_file_is_indexed_and_a_broken_entity_removed(store, index):
    path, good = store.write("observations", observation(1, "fine"))
    index.sync()
    path.write_bytes(BROKEN["conflict"][0])
    report = index.sync()
    assert report.removed == 1 and len(report.problems) == 1
    assert index.get("obs-0001") is None
    path.write_bytes(good)
    report = index.sync()
    assert report.added == 1 and report.problems == []
    assert index.get("obs-0001").entity["content"] == "fine"


def test_a_folder_limited_sync_counts_only_its_own_folders(store, index):
    # Problem files elsewhere in the store are neither walked nor unchanged here.
    path, _ = store.write("observations", observation(1, "fine"))
    other = store.objects / "observations" / ("00" if path.parent.name != "00" else "01")
    other.mkdir(exist_ok=True)
    for n in range(3):
        (other / f"bad-{n}.json").write_bytes(BROKEN["truncated"][0])
    report = index.sync()
    assert len(report.problems) == 3
    assert (report.added, report.unchanged) == (1, 0)
    # nothing changed in the folder: the quiet path
    report = index.refresh([path])
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 1)
    assert len(report.problems) == 3
    # a file changed in the folder: the path that applies rows
    store.write("observations", observation(1, "changed"))
    report = index.refresh([path])
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 1, 0, 0)
    # a problem file inside the refreshed folder is walked but is not unchanged
    (path.parent / "bad-here.json").write_bytes(BROKEN["truncated"][0])
    report = index.refresh([path])
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 1)
    assert len(report.problems) == 4
    report = index.refresh([path])
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 1)


# ---------------------------------------------------------------- duplicate ids


def test_duplicate_ids_never_crash_and_one_file_wins(store, index, tmp_path):
    home, data = store.write("observations", observation(1, "at home"))
    stray_dir = store.objects / "observations" / "zz"
    stray_dir.mkdir()
    stray = stray_dir / "copy.json"
    stray.write_bytes(data.replace(b"at home", b"a stray copy"))
    index.sync()
    assert index.counts()["observations"] == 1
    assert index.get("obs-0001").path == str(home)
    assert [m.entity["content"] for m in index.match_prefix("obs-")] == ["at home"]
    assert index.duplicates() == [("observations", "obs-0001", [str(home), str(stray)])]
    assert index.dump() == fresh_dump(store, tmp_path)
    home.unlink()
    index.sync()
    assert index.get("obs-0001").entity["content"] == "a stray copy"
    assert index.duplicates() == []
    assert index.dump() == fresh_dump(store, tmp_path)


# ---------------------------------------------------------------- the index file itself


def test_corrupt_index_file_is_rebuilt_silently(store):
    store.write("observations", observation(1))
    store.ensure_state()
    store.index_path.write_bytes(b"this is not a database" * 100)
    ix = Index(store)
    assert ix.get("obs-0001") is not None
    ix.close()


def test_schema_version_mismatch_rebuilds(store):
    store.write("observations", observation(1))
    store.ensure_state()
    conn = sqlite3.connect(store.index_path)
    conn.execute("CREATE TABLE files (whatever)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    ix = Index(store)
    assert ix.conn.execute("PRAGMA user_version").fetchone()[0] == index_schema.SCHEMA_VERSION
    assert ix.get("obs-0001") is not None
    ix.close()


def test_index_deleted_while_open_is_recreated(store, index):
    store.write("observations", observation(1))
    index.sync()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{store.index_path}{suffix}"):
            os.unlink(f"{store.index_path}{suffix}")
    store.write("observations", observation(2))
    index.sync()
    assert index.counts()["observations"] == 2
    assert store.index_path.is_file()


def test_read_only_store_keeps_its_index_in_the_cache(store, monkeypatch, isolated_env):
    store.write("observations", observation(1))
    monkeypatch.setattr(Store, "writable", property(lambda self: False))
    ix = Index(store)
    assert ix.path.is_relative_to(isolated_env / ".cache" / "kindling")
    assert ix.get("obs-0001") is not None
    assert not (store.root / "index.sqlite").exists()
    ix.close()


def test_nowhere_to_keep_an_index_falls_back_to_memory(store, tmp_path):
    store.write("observations", observation(1))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    ix = Index(store, path=blocker / "index.sqlite")
    assert str(ix.path) == ":memory:"
    assert ix.get("obs-0001") is not None
    ix.close()


# ---------------------------------------------------------------- Kindling's own writes


def test_record_and_drop_keep_the_index_current_without_a_walk(store, index, monkeypatch):
    walked = walks(index, monkeypatch)
    path, data = store.write("observations", observation(1, "fresh"))
    index.record("observations", path, data, observation(1, "fresh"))
    assert index.get("obs-0001").entity["content"] == "fresh"
    path.unlink()
    index.recheck(path)
    assert index.get("obs-0001") is None
    assert walked == []


def test_record_believes_the_disk_over_its_caller(store, index):
    path, data = store.write("observations", observation(1, "what was written"))
    path.write_bytes(data.replace(b"what was written", b"what another process wrote"))
    index.record("observations", path, data, observation(1, "what was written"))
    assert index.get("obs-0001").entity["content"] == "what another process wrote"


def test_refresh_rechecks_the_folders_of_hinted_paths(store, index):
    index.sync()
    a, _ = store.write("observations", observation(1))
    b, _ = store.write("observations", observation(2))
    report = index.refresh([a, store.root / "index.sqlite-wal", "/elsewhere/x.json"])
    assert report.added == 1 and index.get("obs-0001") and not index.get("obs-0002")
    b.unlink()
    a.unlink()
    index.refresh([a])
    assert index.get("obs-0001") is None
    assert index.refresh([store.objects]).removed == 0


# ---------------------------------------------------------------- lookups


def test_lookups(store, index):
    store.write("observations", observation(1, ts=NOW - 5, sessionId="s1", repoId="r"))
    store.write("observations", observation(2, ts=NOW, sessionId="s1"))
    store.write("observations", {**observation(3, ts=NOW, sessionId="s2"), "kind": "error"})
    store.write("observations", observation(4, "[redacted]", ts=NOW - 9, redacted=True))
    store.write("capsules", capsule(1, sessionId="s1", openedAt=NOW - 2))
    store.write("capsules", capsule(2, sessionId="s1", openedAt=NOW))
    store.write("capsules", capsule(3, status="closed", sessionId="s1"))
    store.write("pins", pin(1, "obs-0001", sessionId="s1"))
    store.write("pins", pin(2, "obs-0002", sessionId="s9"))
    store.write("pins", pin(3, "obs-0003", repoId="r"))
    index.sync()
    ids = lambda items: [e["id"] for e in items]  # noqa: E731
    assert ids(index.entities("observations")) == ["obs-0002", "obs-0003", "obs-0001", "obs-0004"]
    assert ids(index.entities("observations", scope={"sessionId": "s1"})) == [
        "obs-0002",
        "obs-0001",
    ]
    assert ids(index.entities("observations", kinds=["error"])) == ["obs-0003"]
    assert ids(index.entities("observations", since=NOW - 5, limit=2)) == ["obs-0002", "obs-0003"]
    pins_in = index.entities("pins", scope={"sessionId": "s1", "repoId": "r"})
    assert ids(pins_in) == ["pin_0001", "pin_0003"]  # a pin may lack a scope field
    assert ids(index.open_capsules()) == ["cap_0002", "cap_0001"]
    assert ids(index.open_capsules("s2")) == []
    assert index.counts()["redacted"] == 1 and index.counts()["openCapsules"] == 2
    assert [m.entity["id"] for m in index.match_prefix("cap_000", limit=2)] == [
        "cap_0001",
        "cap_0002",
    ]
    assert index.match_prefix("zzz") == [] and index.match_prefix("") == []
    assert index.get("pin_0002", "observations") is None
    assert index.get("pin_0002", "pins").entity["targetId"] == "obs-0002"


def test_verify_finds_disagreements(store, index):
    path, _ = store.write("observations", observation(1))
    index.sync()
    assert index.verify() == []
    store.write("observations", observation(2))
    path.unlink()
    found = sorted(index.verify())
    assert found == sorted(
        [
            Problem(str(store.path_for("observations", "obs-0002")), "not in the index"),
            Problem(str(path), "in the index but no longer on disk"),
        ]
    )


# ---------------------------------------------------------------- the watcher hand-off


def test_readers_trust_a_live_caught_up_watcher(store, index, monkeypatch):
    pin_fs_clock(monkeypatch, NOTHING_RACY)
    a, _ = store.write("observations", observation(1, "one"))
    lock = open(index.watch_lock_path, "w")  # noqa: SIM115
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        index.set_watcher_state({"pid": os.getpid(), "pending": True})
        index.sync(trust_watcher=False)  # the watcher's reconcile records folder mtimes
        index.set_watcher_state({"pid": os.getpid(), "pending": False})
        walked = walks(index, monkeypatch)  # a trusting reader never walks
        b, _ = store.write("observations", observation(2, "two"))  # a new file moves its folder
        assert index.sync().added == 1
        # An in-place edit does not move the folder: that one is the watcher's to report.
        a.write_bytes(a.read_bytes().replace(b'"one"', b'"ONE"'))
        assert index.sync().updated == 0
        index.refresh([a])
        assert index.get("obs-0001").entity["content"] == "ONE"
        b.unlink()
        assert index.sync().removed == 1
        assert walked == []
        index.set_watcher_state(
            {"pid": os.getpid(), "pending": False, "heartbeatMs": 1, "staleAfterMs": 1000}
        )
        index.sync()
        assert len(walked) == 1  # a stale heartbeat: back to the full walk
    finally:
        lock.close()
    index.sync()
    assert len(walked) == 2  # lock released: the watcher is gone, walk again


# ---------------------------------------------------------------- many processes


WORKER = textwrap.dedent(
    """
    import sys
    from kindling.index import Index
    from kindling.store import Store

    store = Store(sys.argv[1])
    me = int(sys.argv[2])
    ix = Index(store)
    for n in range(25):
        entity = {"id": f"obs-{me}-{n}", "kind": "message", "content": f"worker {me} note {n}",
                  "provenance": {}, "ts": n, "scopeIds": {}, "redacted": False}
        path, data = store.write("observations", entity, durable=False)
        if n % 2:
            ix.record("observations", path, data, entity)
        if n % 5 == 0:
            ix.sync()
    ix.sync()
    """
)


def test_parallel_processes_sync_and_write_without_locking_errors(store, tmp_path):
    store.write("observations", observation(1))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(store.root), str(me)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for me in range(6)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert b"locked" not in err
    ix = Index(store)
    ix.sync()
    assert ix.counts()["observations"] == 151
    assert ix.verify() == []
    assert ix.dump() == fresh_dump(store, tmp_path)
    ix.close()


def test_orphan_rows_are_swept(store, index, monkeypatch):
    pin_fs_clock(monkeypatch, NOTHING_RACY)  # folders skipped by their fingerprint when unchanged
    for n in range(3):
        store.write("observations", observation(n, "token"))
    index.sync()
    # Damage the index behind its back: a file row and an FTS row lose their partners.
    with index.transaction() as conn:
        fid = conn.execute("SELECT id FROM files ORDER BY path LIMIT 1").fetchone()[0]
        conn.execute("DELETE FROM files WHERE id = ?", (fid,))
        conn.execute("INSERT INTO fts(rowid, body) VALUES (999, 'stray token')")
    assert index.verify() != []
    store.write("observations", observation(7, "something new"))  # any change makes the sync write
    index.sync()
    index.sync()  # the file whose row was lost is found again as new
    assert index.verify() == []
    assert index.counts()["observations"] == 4


def test_hints_that_are_not_folders_change_nothing(store, index):
    store.write("observations", observation(1))
    index.sync()
    stray = store.objects / "observations" / "loose.json"
    stray.write_text("{}")
    report = index.refresh([stray, store.objects / "observations" / "nothere" / "x.json"])
    assert (report.added, report.removed, report.problems) == (0, 0, [])
    assert index.get("obs-0001") is not None
    assert (
        index.conn.execute(
            "SELECT count(*) FROM folder_fingerprints WHERE path LIKE '%loose%'"
        ).fetchone()[0]
        == 0
    )


def test_a_failed_transaction_leaves_the_connection_usable(store, index):
    with pytest.raises(RuntimeError):
        with index.transaction() as conn:
            conn.execute("DELETE FROM files")
            raise RuntimeError("boom")
    store.write("observations", observation(1))
    assert index.sync().added == 1


def test_a_rebuild_keeps_the_watchers_published_state(store, index):
    store.write("observations", observation(1, "one"))
    state = {"pid": os.getpid(), "pending": False}
    index.set_watcher_state(state)
    index.rebuild()
    assert index.watcher_state() == state
    assert index.get("obs-0001") is not None


def test_readers_wait_briefly_for_a_watcher_applying_a_batch(store, index, monkeypatch):
    import threading

    pin_fs_clock(monkeypatch, NOTHING_RACY)
    store.write("observations", observation(1, "one"))
    lock = open(index.watch_lock_path, "w")  # noqa: SIM115
    fcntl.flock(lock, fcntl.LOCK_EX)
    watcher = Index(store)  # the watcher's own connection
    me = os.getpid()
    try:
        watcher.set_watcher_state({"pid": me, "pending": True})
        watcher.sync(trust_watcher=False)
        walked = walks(index, monkeypatch)
        # Applying a batch, done 50 ms later: the reader waits for it instead of walking.
        watcher.set_watcher_state({"pid": me, "pending": True, "waitMs": 250})
        done = threading.Timer(0.05, watcher.set_watcher_state, ({"pid": me, "pending": False},))
        done.start()
        index.sync()
        done.join()
        assert walked == []
        # Still pending after the wait: the reader walks the store itself.
        watcher.set_watcher_state({"pid": me, "pending": True, "waitMs": 50})
        index.sync()
        assert len(walked) == 1
        # Starting, reconciling or waiting to retry (waitMs 0, or none): not waited for.
        monkeypatch.setattr(handoff, "_POLL_S", 60)  # a wait would hang the test
        for state in ({"pending": True, "waitMs": 0}, {"pending": True}):
            watcher.set_watcher_state({"pid": me, **state})
            index.sync()
        assert len(walked) == 3
        # A stale heartbeat is not waited for either.
        watcher.set_watcher_state(
            {"pid": me, "pending": True, "waitMs": 250, "heartbeatMs": 1, "staleAfterMs": 1}
        )
        index.sync()
        assert len(walked) == 4
    finally:
        watcher.close()
        lock.close()
    index.set_watcher_state({"pid": me, "pending": True, "waitMs": 250})
    index.sync()  # no live watcher holds the lock: nothing to wait for
    assert len(walked) == 5
