"""The watcher Kindling starts for itself: its life cycle, and reads that stay exact around it.

Every test that lets a watcher start stops it (the `watchers` fixture), so none is left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import exited, run_kindling, wait_for
from entities import observation

from kindling import canonical
from kindling.memory import Memory
from kindling.settings import Settings
from kindling.store import Store
from kindling.watch import daemon

DEADLINE_S = 60.0
ON = {"KINDLING_AUTOWATCH": "1", "KINDLING_AUTOWATCH_MIN_FILES": "1"}


def lock_of(store: Path) -> Path:
    return Store(store).state / "watch.lock"


@pytest.fixture
def watchers(store_dir):
    """Stops (or kills) every watcher of the test's store at teardown."""
    pids: list[int] = []
    yield pids
    pid = daemon.stop(lock_of(store_dir))
    for other in [*pids, *([pid] if pid else [])]:
        try:
            os.kill(other, signal.SIGCONT)
            os.kill(other, signal.SIGKILL)
        except ProcessLookupError:
            pass


def obs(name: str, content: str) -> dict:
    return observation(name, content, repoId="app")


def drop(store: Path, entity: dict) -> Path:
    """Write a file straight into place, as git or an editor would."""
    path = Store(store).path_for("observations", entity["id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(canonical.encode(entity))
    return path


def search_ids(store: Path, query: str, env: dict | None = None) -> list[str]:
    result = run_kindling("--store", str(store), "search", query, "--json", env=env)
    assert result.returncode == 0, result.stderr.decode()
    return [c["entity"]["id"] for c in json.loads(result.stdout)["candidates"]]


def started_watcher(store: Path) -> int:
    """Read once with autowatch on; the pid of the watcher that then runs, caught up."""
    drop(store, obs("obs-seed", "a store worth watching"))
    search_ids(store, "anything", env=ON)
    pid = wait_for(lambda: daemon.running_pid(lock_of(store)), "a watcher to start")
    wait_for(lambda: _caught_up(store), "the watcher to catch up")
    return pid


def _caught_up(store: Path) -> bool:
    with Memory(store) as mem:
        info = mem.watcher()
    return bool(info and info["caughtUp"])


# ---------------------------------------------------------------- life cycle


def test_a_read_of_a_big_enough_store_starts_one_watcher_that_status_shows(store_dir, watchers):
    drop(store_dir, obs("obs-1", "the parser handles unicode"))
    pid = started_watcher(store_dir)
    watchers.append(pid)
    result = run_kindling("--store", str(store_dir), "status", "--json")
    assert json.loads(result.stdout)["watcher"]["pid"] == pid
    text = run_kindling("--store", str(store_dir), "status").stdout.decode()
    assert f"Watcher: pid {pid}" in text
    search_ids(store_dir, "parser", env=ON)  # a second read starts no second one
    assert daemon.running_pid(lock_of(store_dir)) == pid


def test_watch_stop_ends_it_and_says_so(store_dir, watchers):
    watchers.append(started_watcher(store_dir))
    stopped = run_kindling("--store", str(store_dir), "watch", "--stop")
    assert stopped.returncode == 0, stopped.stderr.decode()
    assert f"pid {watchers[0]}" in stopped.stdout.decode()
    assert daemon.running_pid(lock_of(store_dir)) is None
    again = run_kindling("--store", str(store_dir), "watch", "--stop")
    assert again.returncode == 0 and "no watcher is running" in again.stdout.decode()


def test_it_exits_by_itself_once_idle(store_dir, watchers):
    env = {**ON, "KINDLING_AUTOWATCH_IDLE_S": "1"}
    drop(store_dir, obs("obs-1", "words"))
    search_ids(store_dir, "anything", env=env)
    pid = wait_for(lambda: daemon.running_pid(lock_of(store_dir)), "a watcher to start")
    watchers.append(pid)
    wait_for(lambda: daemon.running_pid(lock_of(store_dir)) is None, "the idle watcher to exit")


def test_readers_keep_it_alive_by_relying_on_it(store_dir, watchers):
    """Each read touches the lock; the watcher measures idleness from the last one."""
    watchers.append(started_watcher(store_dir))
    before = lock_of(store_dir).stat().st_mtime_ns
    wait_for(lambda: time.time_ns() > before + 50_000_000, "the clock to move")
    search_ids(store_dir, "anything")
    assert lock_of(store_dir).stat().st_mtime_ns > before


@pytest.mark.parametrize(
    "env, config",
    [
        ({"KINDLING_AUTOWATCH": "0", "KINDLING_AUTOWATCH_MIN_FILES": "1"}, None),
        ({"KINDLING_AUTOWATCH": "", "CI": "true", "KINDLING_AUTOWATCH_MIN_FILES": "1"}, None),
        (ON, {"formatVersion": 1, "autowatch": False}),
        ({"KINDLING_AUTOWATCH": "1"}, None),  # 1 file is below the default threshold
    ],
    ids=["env-off", "under-ci", "config-off", "small-store"],
)
def test_opting_out_or_a_small_store_starts_nothing(store_dir, watchers, env, config):
    drop(store_dir, obs("obs-1", "words"))
    if config is not None:
        (store_dir / "config.json").write_bytes(canonical.encode(config))
    search_ids(store_dir, "words", env=env)
    assert not (store_dir / daemon.SPAWN_NAME).exists()  # never even tried
    assert daemon.running_pid(lock_of(store_dir)) is None


def test_two_processes_racing_to_start_it_leave_exactly_one(store_dir, watchers):
    cmd = [sys.executable, "-m", "kindling", "--store", str(store_dir), "watch", "--background"]
    procs = [subprocess.Popen(cmd, env={**os.environ, **ON}) for _ in range(2)]
    watchers.extend(p.pid for p in procs)
    loser = wait_for(lambda: next((p for p in procs if p.poll() is not None), None), "a loser")
    assert loser.returncode == 0
    winner = next(p for p in procs if p is not loser)
    assert winner.poll() is None
    assert daemon.running_pid(lock_of(store_dir)) == winner.pid
    daemon.stop(lock_of(store_dir))
    assert winner.wait(timeout=DEADLINE_S) == 0


def test_a_killed_watcher_leaves_a_stale_pid_and_state_that_nobody_trusts(store_dir, watchers):
    path = drop(store_dir, obs("obs-edit", "the colour is vermilion"))
    pid = started_watcher(store_dir)
    watchers.append(pid)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: daemon.running_pid(lock_of(store_dir)) is None, "the lock to be released")
    assert lock_of(store_dir).read_text().split()[0] == str(pid)  # the stale pid is still there
    # An in-place edit, the kind only a live watcher (or a walk) can see.
    with open(path, "r+b") as fh:
        fh.write(canonical.encode(obs("obs-edit", "the colour is ultramarine")))
        fh.truncate()
    assert search_ids(store_dir, "ultramarine", env=ON) == ["obs-edit"]
    assert search_ids(store_dir, "vermilion") == []
    new = wait_for(lambda: daemon.running_pid(lock_of(store_dir)), "a new watcher")
    watchers.append(new)
    assert new != pid


# ---------------------------------------------------------------- exact reads around it


def test_reads_stay_exact_while_it_starts(store_dir, watchers):
    for i in range(200):
        drop(store_dir, obs(f"obs-{i:03d}", f"filler text number {i}"))
    search_ids(store_dir, "filler", env=ON)  # starts it; it is now walking and catching up
    for i in range(5):
        drop(store_dir, obs(f"obs-new-{i}", f"pelican{i} arrives"))
        assert search_ids(store_dir, f"pelican{i}") == [f"obs-new-{i}"]
    pid = wait_for(lambda: daemon.running_pid(lock_of(store_dir)), "a watcher")
    watchers.append(pid)


def test_reads_stay_exact_while_it_lags(store_dir, watchers):
    """A stopped (SIGSTOP) watcher still holds the lock and says it is caught up."""
    gone = drop(store_dir, obs("obs-gone", "a departing heron"))
    pid = started_watcher(store_dir)
    watchers.append(pid)
    os.kill(pid, signal.SIGSTOP)
    try:
        drop(store_dir, obs("obs-late", "a late kingfisher"))
        gone.unlink()
        assert search_ids(store_dir, "kingfisher") == ["obs-late"]
        assert search_ids(store_dir, "heron") == []
    finally:
        os.kill(pid, signal.SIGCONT)


def test_writes_never_wait_for_it(store_dir, watchers):
    """A stopped watcher holds no lock a writer needs: logging still records and finds."""
    pid = started_watcher(store_dir)
    watchers.append(pid)
    os.kill(pid, signal.SIGSTOP)
    try:
        result = run_kindling("--store", str(store_dir), "log", "an osprey overhead")
        assert result.returncode == 0, result.stderr.decode()
        assert len(search_ids(store_dir, "osprey")) == 1
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_watcher_that_died_before_taking_the_lock_is_not_restarted_on_every_read(
    store_dir, watchers, monkeypatch
):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    spawned = Store(store_dir).ensure_state() / daemon.SPAWN_NAME
    spawned.write_text(f"{dead.pid} {time.time():.3f}\n")
    for name, value in ON.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_environ()
    assert daemon.maybe_start(Store(store_dir), lock_of(store_dir), 10, settings) is None
    assert daemon.running_pid(lock_of(store_dir)) is None


def test_it_exits_when_its_store_is_deleted(tmp_path, watchers):
    store = Store.create(tmp_path / "doomed" / ".kindling").root
    drop(store, obs("obs-1", "short-lived"))
    search_ids(store, "anything", env=ON)
    pid = wait_for(lambda: daemon.running_pid(lock_of(store)), "a watcher to start")
    watchers.append(pid)
    wait_for(lambda: _caught_up(store), "the watcher to catch up")
    shutil.rmtree(tmp_path / "doomed")
    wait_for(lambda: exited(pid), "the watcher to exit")
    assert not (tmp_path / "doomed").exists()  # and it did not bring the store back


def test_finding_watch_stop_never_signals_the_pid_a_lock_names(store_dir, monkeypatch):
    """Whoever holds the lock, `watch --stop` sends no signal: an unrelated process lives on."""
    from kindling import platform
    from kindling.errors import KindlingError

    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    lock = lock_of(store_dir)
    Store(store_dir).ensure_state()
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        platform.lock(fd, blocking=False)  # held here, naming someone else's process
        os.write(fd, f"{bystander.pid} not-a-watchers-token\n".encode())
        monkeypatch.setattr(daemon, "STOP_WAIT_S", 0.3)
        with pytest.raises(KindlingError, match=rf"\(pid {bystander.pid}\) did not stop"):
            daemon.stop(lock)
        assert bystander.poll() is None
    finally:
        os.close(fd)
        bystander.kill()
        bystander.wait()


# ---------------------------------------------------------------- paths that do not grow


def test_finding_a_sessions_open_capsule_never_walks_the_observations(store_dir, monkeypatch):
    from kindling.index.sync import Syncer

    with Memory(store_dir) as mem:
        capsule = mem.open_capsule("work", scope={"sessionId": "s1"}).entity
        mem.log("before", scope={"sessionId": "s1"})
        monkeypatch.setattr(Syncer, "sync_all", lambda self: pytest.fail("walked every file"))
        monkeypatch.setattr(Syncer, "sync", lambda self, **kw: pytest.fail("walked every file"))
        assert mem.open_session_capsule("s1")["id"] == capsule["id"]
        written = mem.log("after", scope={"sessionId": "s1"})
    assert (
        written.entity["id"] in Store(store_dir).load("capsules", capsule["id"])["observationIds"]
    )


def test_a_session_listing_is_found_by_session_not_by_walking_the_type(store_dir):
    with Memory(store_dir) as mem:
        mem.log("one", scope={"sessionId": "s1"})
        seen = []
        mem.index.conn.set_trace_callback(seen.append)
        mem.list("observations", scope={"sessionId": "s1"}, kinds=["message"], limit=200)
        mem.index.conn.set_trace_callback(None)
        query = next(q for q in seen if q.startswith("SELECT json FROM entities e WHERE"))
        plan = mem.index.conn.execute("EXPLAIN QUERY PLAN " + query).fetchall()
    assert any("entities_by_session" in row[-1] for row in plan), plan
