"""The watcher's core loop, driven by a scripted stream of change sets (no real watching)."""

from __future__ import annotations

import os
import sqlite3

import pytest
from entities import observation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kindling.index import Index
from kindling.index import handoff as index_folders
from kindling.store import Store
from kindling.watch import watcher as watch
from kindling.watch.source import GitHead, relevant
from kindling.watch.watcher import Watcher

ADDED, MODIFIED, DELETED = 1, 2, 3
CONFLICTED = b'<<<<<<< ours\n{"id": "x"}\n=======\n{"id": "y"}\n>>>>>>> theirs\n'


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def scripted(*steps):
    """A change source: 'watching began', then each step's file changes and the set it returns."""

    def source(stop):
        yield set()
        for step in steps:
            yield set(step() or ())

    return source


def changed(*paths, kind: int = MODIFIED) -> set:
    return {(kind, str(p)) for p in paths}


@pytest.fixture
def store(store_dir) -> Store:
    return Store(store_dir)


@pytest.fixture
def events():
    return []


@pytest.fixture
def make(store, events, tmp_path):
    """A Watcher over `store` with a scripted source, recording its events."""

    def build(*steps, **options):
        options.setdefault("git_head", GitHead(tmp_path))
        options.setdefault("clock", Clock())
        return Watcher(store, source=scripted(*steps), on_event=events.append, **options)

    return build


def look(store: Store) -> Index:
    """A reader's own connection to the live index."""
    return Index(store)


def rebuilt_dump(store: Store, tmp_path) -> dict:
    other = Index(store, path=tmp_path / f"rebuilt-{len(list(tmp_path.glob('rebuilt-*')))}")
    try:
        return other.dump()
    finally:
        other.close()


def live_dump(store: Store) -> dict:
    ix = look(store)
    try:
        return ix.dump()
    finally:
        ix.close()


def batches(events) -> list[dict]:
    return [e for e in events if e["event"] == "batch"]


# ---------------------------------------------------------------- which paths matter


@pytest.mark.parametrize(
    "rel, expected",
    [
        (".", True),
        ("observations", True),
        ("observations/ab", True),
        ("observations/ab/obs-1.json", True),
        ("pins/0f/pin_1.json", True),
        ("observations/ab/.obs-1.json.1234.0a1b2c3d.tmp", False),  # Kindling's atomic write
        ("observations/ab/.obs-1.json.swp", False),  # vim
        ("observations/ab/obs-1.json~", False),  # backups
        ("observations/ab/4913", False),  # vim's probe file
        ("observations/ab/#obs-1.json#", False),  # emacs
        ("observations/ab/obs-1.json.tmp", False),
        ("observations/.hidden", False),
        ("observations/ab/cd/obs-1.json", False),  # deeper than any entity
        ("notes/ab/obs-1.json", False),  # not a type folder
    ],
)
def test_relevant(rel, expected):
    assert relevant(rel) is expected


# ---------------------------------------------------------------- start, hints, stop


def test_start_reconciles_publishes_and_stop_withdraws(store, make, events, tmp_path):
    store.write("observations", observation(1, "before the watcher"))
    seen = {}

    def during():
        ix = look(store)
        seen["state"] = ix.watcher_state()
        seen["trusted"] = index_folders.watcher_caught_up(seen["state"], ix.watch_lock_path)
        seen["found"] = ix.get("obs-0001") is not None
        ix.close()

    make(during).run()
    assert seen["found"]
    assert seen["trusted"]
    assert seen["state"]["pid"] == os.getpid()
    assert seen["state"]["pending"] is False
    assert seen["state"]["staleAfterMs"] > 0 and seen["state"]["heartbeatMs"] > 0
    assert [e["event"] for e in events] == ["start", "batch", "stop"]
    assert events[1]["mode"] == "reconcile" and events[1]["reason"] == "start"
    # There was no index: the watcher created it and filled it in its first reconcile, once
    # it held the lock (readers meanwhile answer from it instead of filling it themselves).
    assert events[1]["added"] == 1
    ix = look(store)
    assert ix.watcher_state() is None
    assert not index_folders.watcher_alive(ix.watch_lock_path)
    ix.close()


def test_changes_made_before_watching_began_are_found(store, events, make):
    path = store.path_for("observations", "obs-0001")

    def source(stop):
        # Written after the index was opened but before the first change set: the start
        # reconcile must find it.
        store.write("observations", observation(1, "early"))
        yield set()

    watcher = make()
    watcher.source = source
    watcher.run()
    ix = look(store)
    assert ix.get("obs-0001").path == str(path)
    ix.close()


def test_each_batch_is_applied_as_hints(store, make, events, tmp_path):
    p1 = store.path_for("observations", "obs-0001")
    p2 = store.path_for("observations", "obs-0002")

    def add():
        store.write("observations", observation(1, "alpha"))
        store.write("observations", observation(2, "beta"))
        return changed(p1, p2, kind=ADDED)

    def edit():
        p1.write_bytes(p1.read_bytes().replace(b"alpha", b"gamma"))
        return changed(p1)

    def delete():
        p2.unlink()
        return changed(p2, kind=DELETED)

    make(add, edit, delete).run()
    done = batches(events)[1:]
    assert [(b["mode"], b["added"], b["updated"], b["removed"]) for b in done] == [
        ("refresh", 2, 0, 0),
        ("refresh", 0, 1, 0),
        ("refresh", 0, 0, 1),
    ]
    assert [b["paths"] for b in done] == [2, 1, 1]
    assert all(b["ms"] >= 0 for b in done)
    ix = look(store)
    assert ix.get("obs-0001").entity["content"] == "gamma"
    assert ix.get("obs-0002") is None
    ix.close()
    assert live_dump(store) == rebuilt_dump(store, tmp_path)


def test_event_types_are_not_trusted(store, make, tmp_path):
    p1 = store.path_for("observations", "obs-0001")
    p2 = store.path_for("observations", "obs-0002")
    store.write("observations", observation(2))

    def lie():
        store.write("observations", observation(1))
        p2.unlink()
        # Reported the wrong way round: the file system decides.
        return {(DELETED, str(p1)), (ADDED, str(p2))}

    make(lie).run()
    ix = look(store)
    assert ix.get("obs-0001") is not None
    assert ix.get("obs-0002") is None
    ix.close()


def test_a_folder_hint_covers_every_file_in_it(store, make, tmp_path):
    def add():
        path, _ = store.write("observations", observation(1))
        return changed(path.parent, kind=ADDED)  # a new fan-out folder, files not reported

    make(add).run()
    assert live_dump(store) == rebuilt_dump(store, tmp_path)


def test_temp_and_swap_files_are_ignored(store, make, events):
    folder = store.path_for("observations", "obs-0001").parent
    folder.mkdir(parents=True)

    def noise():
        names = [".obs-0001.json.99.deadbeef.tmp", ".obs-0001.json.swp", "obs-0001.json~", "4913"]
        for name in names:
            (folder / name).write_text("junk")
        return changed(*(folder / n for n in names), kind=ADDED)

    make(noise).run()
    assert len(batches(events)) == 1  # only the start reconcile: nothing to apply
    ix = look(store)
    assert ix.problems() == []
    ix.close()


# ---------------------------------------------------------------- reconciles


def test_a_burst_reconciles_then_settles_once_quiet(store, make, events, tmp_path):
    def burst():
        paths = [store.write("observations", observation(n), durable=False)[0] for n in range(30)]
        return changed(*paths, kind=ADDED)

    def missed():
        # Written during the burst but never reported (a lost event): the settle finds it.
        store.write("observations", observation(99, "never reported"))
        return set()

    make(burst, missed, burst=10).run()
    kinds = [(b["mode"], b["reason"]) for b in batches(events)]
    assert kinds == [
        ("reconcile", "start"),
        ("reconcile", "burst"),
        ("reconcile", "quiet after a burst"),
    ]
    assert batches(events)[1]["added"] == 30 and batches(events)[1]["paths"] == 30
    assert live_dump(store) == rebuilt_dump(store, tmp_path)


def test_a_moved_git_head_reconciles(store, make, events, tmp_path):
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text("a" * 40 + "\n")

    def checkout():
        store.write("observations", observation(1))  # a checkout whose events were lost
        (git / "HEAD").write_text("ref: refs/heads/other\n")
        (git / "refs" / "heads" / "other").write_text("b" * 40 + "\n")

    def pull():
        store.write("observations", observation(2))
        (git / "refs" / "heads" / "other").write_text("c" * 40 + "\n")

    make(checkout, pull).run()
    assert [b["reason"] for b in batches(events)] == ["start", "git HEAD moved", "git HEAD moved"]
    assert live_dump(store) == rebuilt_dump(store, tmp_path)


def test_git_dir_of_a_linked_work_tree(tmp_path):
    main = tmp_path / "main" / ".git"
    (main / "worktrees" / "wt").mkdir(parents=True)
    (main / "refs" / "heads").mkdir(parents=True)
    (main / "refs" / "heads" / "topic").write_text("d" * 40 + "\n")
    (main / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/topic\n")
    (main / "worktrees" / "wt" / "commondir").write_text("../..\n")
    tree = tmp_path / "wt"
    (tree / ".kindling").mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {main / 'worktrees' / 'wt'}\n")
    head = GitHead(tree / ".kindling")
    before = head.signature()
    assert before is not None and b"d" * 40 in before[1]
    (main / "refs" / "heads" / "topic").write_text("e" * 40 + "\n")
    assert head.signature() != before
    assert GitHead(tmp_path / "elsewhere").signature() is None


def test_objects_folder_replaced_reconciles(store, make, events):
    def replaced():
        store.write("observations", observation(1))
        return changed(store.objects, kind=ADDED)

    make(replaced).run()
    assert batches(events)[1]["reason"] == "objects folder replaced"
    assert batches(events)[1]["added"] == 1


def test_periodic_reconcile_heals_what_no_event_reported(store, make, events, tmp_path):
    clock = Clock()

    def unreported():
        store.write("observations", observation(1))
        clock.now += 10

    def later():
        clock.now += 100

    make(unreported, later, clock=clock, reconcile_every=60).run()
    assert [b["reason"] for b in batches(events)] == ["start", "periodic"]
    assert live_dump(store) == rebuilt_dump(store, tmp_path)


def test_reconcile_every_zero_never_reconciles_on_a_timer(store, make, events):
    clock = Clock()

    def later():
        clock.now += 10**6

    make(later, later, clock=clock, reconcile_every=0).run()
    assert [b["reason"] for b in batches(events)] == ["start"]


# ---------------------------------------------------------------- the hand-off to readers


def test_pending_while_a_batch_is_applied_and_heartbeat_while_idle(
    store, make, monkeypatch, tmp_path
):
    clock = Clock()
    during = []
    real_refresh = Index.refresh

    def spy(self, paths):
        state = self.watcher_state()
        during.append((state["pending"], state["waitMs"]))
        return real_refresh(self, paths)

    monkeypatch.setattr(Index, "refresh", spy)
    beats = []
    published = []  # (idle ticks seen so far, state): a millisecond clock may not move
    real_publish = Index.set_watcher_state

    def publish(self, state):
        published.append((len(beats), state))
        return real_publish(self, state)

    monkeypatch.setattr(Index, "set_watcher_state", publish)

    def add():
        return changed(store.write("observations", observation(1))[0], kind=ADDED)

    def idle():
        ix = look(store)
        beats.append(ix.watcher_state())
        ix.close()
        clock.now += watch.HEARTBEAT_S + 0.5

    make(add, idle, idle, idle, clock=clock).run()
    # Applying a batch of paths: readers may wait for it; starting (a full reconcile): not.
    assert during == [(True, watch.REFRESH_WAIT_MS)]
    assert published[0][1]["pending"] is True and published[0][1]["waitMs"] == 0
    assert [b["pending"] for b in beats] == [False, False, False]
    stamps = [b["heartbeatMs"] for b in beats]
    assert stamps == sorted(stamps)
    # one heartbeat after each of the first two idle ticks, each seen by the next reader
    idle_beats = [ticks for ticks, state in published if state and ticks in (1, 2)]
    assert idle_beats == [1, 2]


def test_a_deleted_lock_file_is_taken_again(store, make):
    held = []

    def delete_lock():
        ix = look(store)
        ix.watch_lock_path.unlink()
        ix.close()

    def check():
        ix = look(store)
        held.append(index_folders.watcher_alive(ix.watch_lock_path))
        ix.close()

    make(delete_lock, check).run()
    assert held == [True]


# ---------------------------------------------------------------- surviving damage


def test_problem_files_are_reported_and_other_files_kept(store, make, events):
    good, _ = store.write("observations", observation(1, "still here"))
    bad = store.path_for("observations", "obs-0002")

    def conflict():
        bad.parent.mkdir(parents=True, exist_ok=True)
        bad.write_bytes(CONFLICTED)
        good.write_bytes(good.read_bytes().replace(b"still here", b"edited too"))
        return changed(bad, good)

    def fix():
        store.write("observations", observation(2, "resolved"))
        return changed(bad)

    make(conflict, fix).run()
    first, second = batches(events)[1:]
    assert [p["path"] for p in first["problems"]] == [str(bad)]
    assert first["updated"] == 1
    assert second["problems"] == [] and second["added"] == 1
    ix = look(store)
    assert ix.problems() == []
    assert ix.get("obs-0001").entity["content"] == "edited too"
    ix.close()


def test_a_deleted_index_is_reopened_and_rebuilt(store, make, events, tmp_path):
    index_path = store.index_path
    states = []

    def delete_index():
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(f"{index_path}{suffix}"):
                os.unlink(f"{index_path}{suffix}")

    def add():
        return changed(store.write("observations", observation(2))[0], kind=ADDED)

    def check():
        ix = look(store)
        states.append(ix.watcher_state())
        ix.close()

    store.write("observations", observation(1))
    make(delete_index, add, check).run()
    kinds = [e["event"] for e in events]
    assert "reopen" in kinds
    assert [b["reason"] for b in batches(events)][:2] == ["start", "index replaced"]
    assert states[0]["pid"] == os.getpid() and states[0]["pending"] is False
    assert live_dump(store) == rebuilt_dump(store, tmp_path)


def test_an_index_replaced_by_another_file_is_reopened(store, make, events, tmp_path):
    index_path = store.index_path

    def replace_index():
        other = tmp_path / "other.sqlite"
        Index(store, path=other).close()
        os.replace(other, index_path)
        store.write("observations", observation(1))

    make(replace_index).run()
    assert "reopen" in [e["event"] for e in events]
    assert live_dump(store) == rebuilt_dump(store, tmp_path)


def test_an_error_is_reported_and_retried(store, make, events, monkeypatch, tmp_path):
    clock = Clock()
    real_refresh = Index.refresh
    failures = [sqlite3.OperationalError("disk I/O error")]

    def flaky(self, paths):
        if failures:
            raise failures.pop()
        return real_refresh(self, paths)

    monkeypatch.setattr(Index, "refresh", flaky)
    real_sync = Index.sync
    calls = {"n": 0}

    def sync(self, **kw):
        calls["n"] += 1
        if calls["n"] == 2:  # the fallback sync right after the failed refresh
            raise sqlite3.OperationalError("disk I/O error")
        return real_sync(self, **kw)

    monkeypatch.setattr(Index, "sync", sync)
    states = []

    def add():
        return changed(store.write("observations", observation(1))[0], kind=ADDED)

    def wait():
        ix = look(store)
        states.append(ix.watcher_state()["pending"])
        ix.close()
        clock.now += 5

    make(add, wait, clock=clock).run()
    kinds = [e["event"] for e in events]
    assert "error" in kinds
    assert states == [True]  # readers do not trust a watcher that is behind
    assert batches(events)[-1]["reason"] == "retry after an error"
    assert live_dump(store) == rebuilt_dump(store, tmp_path)


# ---------------------------------------------------------------- incremental == rebuilt


OPS = st.lists(
    st.tuples(
        st.sampled_from(["create", "edit", "in-place", "delete", "garbage", "temp", "rename"]),
        st.integers(0, 7),
        st.sampled_from([ADDED, MODIFIED, DELETED]),
        st.booleans(),  # report the folder instead of the file
    ),
    max_size=25,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=OPS, split=st.integers(1, 5))
def test_any_reported_history_ends_equal_to_a_rebuild(tmp_path_factory, ops, split):
    base = tmp_path_factory.mktemp("prop")
    store = Store.create(base / ".kindling")
    Index(store).close()

    def apply(op, n, kind, folder):
        path = store.path_for("observations", f"obs-{n:04d}")
        if op == "create" or (op in ("edit", "in-place", "rename") and not path.exists()):
            store.write("observations", observation(n, f"made {n}"), durable=False)
        elif op == "edit":
            store.write("observations", observation(n, f"edited {n}"), durable=False)
        elif op == "in-place":
            with open(path, "r+b") as fh:
                data = fh.read().replace(b"made", b"mood")
                fh.seek(0)
                fh.truncate()
                fh.write(data)
        elif op == "delete":
            path.unlink(missing_ok=True)
        elif op == "garbage":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(CONFLICTED)
        elif op == "temp":
            path.parent.mkdir(parents=True, exist_ok=True)
            (path.parent / f".{path.name}.1.abcd.tmp").write_bytes(b"partial")
        elif op == "rename":
            other = store.path_for("observations", f"obs-{n + 10:04d}")
            other.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, other)  # an id at the wrong path is a duplicate/misplaced file
            return {(kind, str(path.parent if folder else path)), (kind, str(other))}
        return {(kind, str(path.parent if folder else path))}

    chunks = [ops[i : i + split] for i in range(0, len(ops), split)]

    def step_for(chunk):
        def step():
            out = set()
            for op in chunk:
                out |= apply(*op)
            return out

        return step

    watcher = Watcher(
        store,
        source=scripted(*(step_for(c) for c in chunks)),
        git_head=GitHead(base),
        clock=Clock(),
        burst=1000,
    )
    watcher.run()
    assert live_dump(store) == rebuilt_dump(store, base)
