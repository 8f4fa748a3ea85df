"""The first search after a pull, and a fresh clone's first hook, as whole processes.

On a team store of N entity files (bench/team_mix.py, built once under bench/out/team/N) whose
index is up to date and with no watcher running (KINDLING_AUTOWATCH=0):

- pull: one team-day of memory (40 sessions, about 2,040 files) lands in objects/ as a
  checkout writes it; then `kindling search` runs (it indexes them first), and a prompt's
  `kindling hook UserPromptSubmit` (whose index work stops at its budget). The new files are
  taken out again (untimed) before the next round.
- floor: the same search with nothing new (a no-op sync of N files), interleaved with the
  rows above in every round, since the machine is shared and only same-round ratios compare.
- fresh clone: the index deleted, `kindling hook SessionStart` (answers at its budget, saying
  memory is still being indexed), then `kindling reindex` until the index is whole.

    python bench/bench_pull.py --n 10000 --runs 3
    python bench/bench_pull.py --n 10000 --n 100000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(1, str(HERE))

import team_mix  # noqa: E402
from bench_index_size import team_store  # noqa: E402

from kindling.index import Index  # noqa: E402
from kindling.index.db import remove_index_files  # noqa: E402
from kindling.store import Store  # noqa: E402

QUERY = "why does the token cache miss after a retry"
SESSION = "0d1c2a7e-8b9d-4c0e-a1f2-0123456789ab"
DAY_SESSIONS = 40  # 10 developers, about 4 sessions each a day


def env() -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith("KINDLING_")}
    out["KINDLING_AUTOWATCH"] = "0"
    out["PYTHONPATH"] = str(HERE.parent)
    return out


def kindling(args: list[str], cwd: Path, stdin: bytes | None = None) -> float:
    """Run `python -m kindling ARGS`; its wall time (s)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "kindling", *args],
        cwd=cwd,
        env=env(),
        input=stdin,
        capture_output=True,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"kindling {' '.join(args)} failed: {done.stderr.decode()[-500:]}")
    return took


def hook(event: str, project: Path, **fields) -> tuple[float, str]:
    """Run `kindling hook EVENT` with a Claude Code payload; (seconds, context it injected)."""
    payload = {
        "session_id": SESSION,
        "transcript_path": "/dev/null",
        "cwd": str(project),
        "hook_event_name": event,
        **fields,
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "kindling", "hook", event],
        cwd=project,
        env=env(),
        input=json.dumps(payload).encode(),
        capture_output=True,
    )
    took = time.perf_counter() - started
    text = ""
    if done.stdout.strip():
        answer = json.loads(done.stdout)
        text = (answer.get("hookSpecificOutput") or {}).get("additionalContext", "")
    return took, text


def pulled_day(store: Store, n: int, day: int) -> list[tuple[str, dict]]:
    """A team-day of sessions not in the store yet (a different one each round)."""
    first = n // team_mix.FILES_PER_SESSION + 100_000 + day * DAY_SESSIONS
    return list(team_mix.sessions(DAY_SESSIONS, start=first))


def take_out(store: Store, entities: list[tuple[str, dict]]) -> None:
    for etype, entity in entities:
        with_path = store.entity_path(etype, entity["id"])
        os.unlink(with_path)
    index = Index(store)
    index.sync()
    index.close()


def measure(n: int, runs: int, fresh: bool = True) -> dict:
    root = team_store(n)
    project = root.parent
    store = Store.open(root)
    index = Index(store)  # whole and current before the rounds
    index.sync()
    index.close()
    rows: dict[str, list[float]] = {"floor": [], "search": [], "prompt": []}
    for day in range(runs):
        rows["floor"].append(kindling(["search", QUERY], project))
        for kind in ("search", "prompt"):
            day_files = pulled_day(store, n, day * 2 + (kind == "prompt"))
            team_mix.write_store(store, day_files)
            if kind == "search":
                rows["search"].append(kindling(["search", QUERY], project))
            else:
                took, _ = hook("UserPromptSubmit", project, prompt=QUERY)
                rows["prompt"].append(took)
            take_out(store, day_files)
    out = {
        "files": n,
        "pullFiles": DAY_SESSIONS * team_mix.FILES_PER_SESSION,
        **{f"{k}Median": round(statistics.median(v), 3) for k, v in rows.items()},
        **{f"{k}All": [round(x, 3) for x in v] for k, v in rows.items()},
    }
    if not fresh:
        return out
    # A fresh clone: no index at all.
    remove_index_files(store.index_path)
    first_hook, text = hook("SessionStart", project, source="startup")
    out["freshHookSaidIndexing"] = "still being indexed" in text
    out["freshFirstHook"] = round(first_hook, 3)
    out["freshReindexAfterHook"] = round(kindling(["reindex"], project), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="store sizes (default 10000)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--no-fresh", action="store_true", help="skip the fresh clone (its reindex is long)"
    )
    args = parser.parse_args()
    results = [measure(n, args.runs, not args.no_fresh) for n in args.n or [10_000]]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        line = (
            f"{r['files']:>7} files, {r['pullFiles']} pulled: search after pull "
            f"{r['searchMedian']:.2f} s (no-op floor {r['floorMedian']:.2f} s), prompt hook "
            f"after pull {r['promptMedian']:.2f} s"
        )
        if "freshFirstHook" in r:
            line += (
                f"; fresh clone: SessionStart {r['freshFirstHook']:.2f} s (said indexing: "
                f"{r['freshHookSaidIndexing']}), then reindex {r['freshReindexAfterHook']:.2f} s"
            )
        print(line)


if __name__ == "__main__":
    main()
