"""Eight processes writing into one store at once: nothing lost, nothing torn, no lock errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from kindling.fsck import fsck
from kindling.memory import Memory
from kindling.store import Store

WORKERS = 8
WRITES = 200

# Each worker makes WRITES writes: logs into the shared open capsule, with a pin after every
# tenth log and a forget of an earlier observation after every tenth log.
WORKER = textwrap.dedent(
    """
    import json, sys
    from kindling.memory import Memory

    store, capsule, worker, writes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    logged, pinned, forgotten = [], [], []
    done = 0
    with Memory(store) as mem:
        while done < writes:
            w = mem.log(
                f"worker {worker} write {done} marker w{worker}n{done}",
                capsule_id=capsule,
                scope={"sessionId": "shared", "agentId": f"agent-{worker}"},
            )
            logged.append(w.entity["id"])
            done += 1
            if len(logged) % 10 == 3 and done < writes:
                pinned.append(mem.pin("observation", logged[-1], note="keep").entity["id"])
                done += 1
            if len(logged) % 10 == 7 and done < writes:
                mem.forget(logged[-5])
                forgotten.append(logged[-5])
                done += 1
    print(json.dumps({"logged": logged, "pinned": pinned, "forgotten": forgotten}))
    """
)


@pytest.fixture
def fast_dir(tmp_path):
    """A folder on tmpfs when there is one: the proof is about locking, not disk speed."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="kindling-test-") as folder:
            yield Path(folder)
    else:
        yield tmp_path


@pytest.mark.slow
def test_parallel_writers_lose_nothing(fast_dir):
    root = fast_dir / ".kindling"
    Store.create(root)
    with Memory(root) as mem:
        capsule = mem.open_capsule("shared work", scope={"sessionId": "shared"}).entity["id"]

    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(root), capsule, str(n), str(WRITES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for n in range(WORKERS)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert "database is locked" not in err.decode(), err.decode()[-2000:]
        assert proc.returncode == 0, err.decode()[-2000:]
        results.append(json.loads(out))

    logged = [oid for r in results for oid in r["logged"]]
    pinned = [pid for r in results for pid in r["pinned"]]
    forgotten = {oid for r in results for oid in r["forgotten"]}
    assert sum(len(r["logged"]) + len(r["pinned"]) + len(r["forgotten"]) for r in results) == (
        WORKERS * WRITES
    )
    assert len(set(logged)) == len(logged)

    store = Store.open(root)
    # Before any sync: the index already matches the files, so no writer's index update was
    # lost (Memory swallows SQLite errors on that step, so a "database is locked" would show
    # up here as a missing or stale row).
    from kindling.index import Index

    index = Index(store)
    try:
        assert index.verify() == []
    finally:
        index.close()

    report = fsck(store, check_index=False)
    assert report.problems == [], report.problems[:5]
    assert report.checked == len(logged) + len(pinned) + 1

    cap = store.load("capsules", capsule)
    assert cap["status"] == "open"
    assert sorted(cap["observationIds"]) == sorted(logged), "an observation id was lost"
    for oid in logged:
        obs = store.load("observations", oid)
        assert obs["redacted"] is (oid in forgotten)
    for pid in pinned:
        assert store.load("pins", pid) is not None

    with Memory(root) as mem:
        mem.index.sync()
        incremental = mem.index.dump()
        mem.index.rebuild()
        rebuilt = mem.index.dump()
        assert mem.index.verify() == []
        assert len(mem.list("observations", limit=None)) == len(logged)
        assert len(mem.list("pins", limit=None)) == len(pinned)
    assert incremental == rebuilt
    assert fsck(Store.open(root)).problems == []
