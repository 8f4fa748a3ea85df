"""Search with `kindling watch` running, and the watcher's own costs, next to their floors.

    python bench/bench_watch.py                         # 100k (the store of bench/bench.py)
    python bench/bench_watch.py --sizes 10000,100000 --markdown watch.md

Uses bench/bench.py's stores (bench/out/realistic-N, built there and reused), its realistic
query (about 1% of rows match), its timing helpers and its table. Rows per size:

- search, no watcher: the reader walks the whole tree (a no-op sync), then searches;
- search with a watcher running: the reader trusts it and stats only the ~1,000 folders;
  both against the CLI floor `python -c "import click, orjson, sqlite3"` and the same
  without click, interleaved;
- watcher start: from launch until its first reconcile is done, against a bare stat walk;
- a dropped-in file indexed: from writing it until the watcher indexed it, against a budget
  of INDEXED_BUDGET_S (a latency, not a ratio to any floor: watchfiles yields after `step`
  ms of quiet, so the debounce is a ceiling, not a minimum);
- 1,000 new files: from the last write until the watcher is caught up, against a bare walk;
- idle CPU: CPU seconds per second with nothing changing, against a budget of IDLE_BUDGET
  of one core (again a budget: the floor of doing nothing is zero).

The files it adds are removed again before it stops, so the store is left as it was found.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench as base  # noqa: E402  bench/bench.py: the shared stores, helpers and table
from kindling import canonical  # noqa: E402
from kindling.index import Index  # noqa: E402
from kindling.store import Store  # noqa: E402
from kindling.watch.watcher import DEFAULT_DEBOUNCE_MS  # noqa: E402

TARGET = 2.5
IDLE_S = 10
INDEXED_BUDGET_S = 1.0  # a file dropped in is searchable within a second
IDLE_BUDGET = 0.01  # an idle watcher costs at most 1% of one core
KINDLING = [sys.executable, "-m", "kindling"]
FLOOR_CMD = [sys.executable, "-c", "import click, orjson, sqlite3"]
BARE_CMD = [sys.executable, "-c", "import orjson, sqlite3"]  # the floor without click


def ask(store: Store, question):
    """One question to the live index, through a connection of its own (no sync)."""
    ix = Index(store)
    try:
        return question(ix)
    finally:
        ix.close()


def caught_up(store: Store, pid: int) -> bool:
    now = ask(store, Index.watcher_state)
    return bool(now) and now.get("pid") == pid and now.get("pending") is False


def wait(check, timeout: float = 900.0) -> float:
    """Seconds until check() holds, polled every few milliseconds."""
    began = time.perf_counter()
    while not check():
        if time.perf_counter() - began > timeout:
            raise SystemExit("timed out waiting for the watcher")
        time.sleep(0.005)
    return time.perf_counter() - began


def indexed(store: Store, entity_id: str) -> bool:
    return ask(store, lambda ix: ix.get(entity_id) is not None)


def count(store: Store) -> int:
    return ask(store, lambda ix: ix.counts()["observations"])


def timed(fn) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def note(n: int, i: int, text: str) -> dict:
    return {
        "id": f"watch-bench-{n}-{i:05d}",
        "kind": "message",
        "content": f"{text} {i}",
        "provenance": {"tool": "bench"},
        "ts": base.NOW,
        "scopeIds": {},
        "redacted": False,
    }


def measure_size(n: int, args, table: base.Table, env: dict) -> None:
    store = base.build_store(Path(args.out) / f"realistic-{n}", base.realistic(n), args.fresh)
    base.settle(store)
    store_env = dict(env, KINDLING_STORE=str(store.root))
    search = [*KINDLING, "search", base.REALISTIC_QUERY]
    floor = lambda: base.process(FLOOR_CMD, env)  # noqa: E731
    bare = lambda: base.process(BARE_CMD, env)  # noqa: E731
    hits = subprocess.run([*search, "--json"], env=store_env, capture_output=True, check=True)
    matches = json.loads(hits.stdout)["provenance"]["totalCandidates"]

    ours, cli, no_click = base.medians(
        lambda: base.process(search, store_env), floor, bare, runs=args.runs
    )
    table.add(n, f"search, no watcher ({matches:,} matches)", ours, cli, "ms", bare=no_click)
    walk = statistics.median(timed(lambda: base.bare_walk(store.objects)) for _ in range(3))

    launched = time.perf_counter()
    watcher = subprocess.Popen(
        [*KINDLING, "watch", "--json"], env=store_env, stdout=subprocess.DEVNULL
    )
    added: list[str] = []
    try:
        wait(lambda: caught_up(store, watcher.pid))
        table.add(n, "watcher start (first reconcile)", time.perf_counter() - launched, walk, "ms")

        ours, cli, no_click = base.medians(
            lambda: base.process(search, store_env), floor, bare, runs=args.runs
        )
        table.add(
            n, "**search with a watcher running (process)**", ours, cli, "ms", TARGET, bare=no_click
        )

        delays = []
        for i in range(5):
            entity = note(n, i, "dropped in")
            path = store.path_for("observations", entity["id"])
            path.parent.mkdir(parents=True, exist_ok=True)
            began = time.perf_counter()
            path.write_bytes(canonical.encode(entity))
            added.append(entity["id"])
            wait(lambda e=entity: indexed(store, e["id"]))
            delays.append(time.perf_counter() - began)
            time.sleep(0.3)
        table.add(
            n,
            f"a dropped-in file indexed (median of 5; debounce {DEFAULT_DEBOUNCE_MS} ms) vs budget",
            statistics.median(delays),
            INDEXED_BUDGET_S,
            "ms",
            1.0,
        )

        before = count(store)
        for i in range(5, 1005):
            entity = note(n, i, "burst")
            store.write("observations", entity, durable=False)
            added.append(entity["id"])
        last = time.perf_counter()
        time.sleep(0.05)  # the first events are in: "caught up" now means caught up with them
        wait(lambda: caught_up(store, watcher.pid) and count(store) == before + 1000)
        table.add(
            n,
            "1,000 new files: caught up after the last write",
            time.perf_counter() - last,
            walk,
            "ms",
        )

        time.sleep(3)  # past the reconcile that follows a burst once the tree is quiet
        spent = cpu_seconds(watcher.pid)
        time.sleep(IDLE_S)
        idle = (cpu_seconds(watcher.pid) - spent) / IDLE_S
        table.add(
            n, "watcher idle CPU (CPU time per second) vs budget", idle, IDLE_BUDGET, "ms", 1.0
        )

        for entity_id in added:  # leave the shared store as it was
            store.remove("observations", entity_id)
        wait(lambda: caught_up(store, watcher.pid) and count(store) == before - 5)
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
        for entity_id in added:
            store.remove("observations", entity_id)


def main() -> None:
    base.run(measure_size, "100000", __doc__.split("\n", 1)[0])


if __name__ == "__main__":
    main()
