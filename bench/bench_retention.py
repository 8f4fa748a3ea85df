"""What a retention policy retires from a real store, for several keepDays, and what gc costs.

Reads the store once (kindling.retention.census), then plans each policy (nothing is
deleted): files and bytes retired, by kind, and the share of the store's observation files
and bytes. With no store given, the recall corpus's store (evals/recall, built on first use:
six repositories, about 300 Claude Code sessions over ten months) is used.

    python bench/bench_retention.py                       # the recall corpus's store
    python bench/bench_retention.py --store path/.kindling --days 7,14,30,60,90
    python bench/bench_retention.py --recall 30      # recall eval (dev) after gc, keepDays 30

`--recall DAYS` copies the recall corpus's store, applies gc with that keepDays to the copy
(never to the cached store) and scores the dev probes on it, as `evals/recall/run.py` does.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kindling.retention.census import take_census  # noqa: E402
from kindling.retention.plan import make_plan  # noqa: E402
from kindling.retention.policy import DEFAULT, Policy  # noqa: E402
from kindling.store import Store  # noqa: E402


def recall_store() -> Path:
    sys.path.insert(0, str(ROOT / "evals" / "recall"))
    import build

    return Path(build.cached()["store"])


def recall_after_gc(days: int, sessions: int) -> dict:
    """The dev split of the recall eval, scored on a copy of its store after gc."""
    import shutil
    import tempfile

    sys.path.insert(0, str(ROOT / "evals" / "recall"))
    import build
    import run

    from kindling.retention import gc

    manifest = build.cached()
    source = Path(manifest["store"]).parent
    cache = Path(tempfile.mkdtemp(prefix="kindling-recall-gc-"))
    try:
        target = cache / source.name
        shutil.copytree(source, target)
        manifest["store"] = str(target / "store")
        (target / build.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
        store = Store.open(target / "store")
        (store.root / "retention.json").write_bytes(Policy(days, sessions, DEFAULT.kinds).encode())
        report = gc(store, confirm=True)
        result = run.evaluate("dev", cache=cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    overall = result["systems"]["kindling"]["overall"]
    return {"keepDays": days, "retired": report.removed, **overall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path)
    parser.add_argument("--days", default="1,7,14,30,60,90")
    parser.add_argument("--sessions", type=int, default=DEFAULT.keep_sessions)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--recall", type=int, metavar="DAYS")
    args = parser.parse_args()
    if args.recall:
        print(json.dumps(recall_after_gc(args.recall, args.sessions), indent=2))
        return
    store = Store.open(args.store or recall_store())
    started = time.perf_counter()
    census = take_census(store)
    read_s = time.perf_counter() - started
    files = len(census.observations)
    size = sum(o.size for o in census.observations.values())
    sessions = len({(o.step.repo, o.step.session) for o in census.observations.values()})
    rows = []
    for days in (int(d) for d in args.days.split(",")):
        started = time.perf_counter()
        plan = make_plan(census, Policy(days, args.sessions, DEFAULT.kinds))
        rows.append(
            {
                "keepDays": days,
                "files": len(plan.retire),
                "bytes": plan.bytes,
                "byKind": {k: list(v) for k, v in plan.by_kind().items()},
                "planS": round(time.perf_counter() - started, 3),
            }
        )
    result = {
        "store": str(store.root),
        "observations": files,
        "observationBytes": size,
        "sessions": sessions,
        "censusS": round(read_s, 3),
        "plans": rows,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{files:,} observation files ({size / 1e6:.1f} MB) in {sessions} sessions; read in "
        f"{read_s:.2f} s; keepSessions={args.sessions}"
    )
    print(f"{'keepDays':>8} {'retired':>8} {'share':>6} {'bytes':>10} {'share':>6}  by kind")
    for row in rows:
        kinds = ", ".join(f"{k} {v[0]}" for k, v in row["byKind"].items())
        print(
            f"{row['keepDays']:>8} {row['files']:>8,} {row['files'] / max(files, 1):>6.0%} "
            f"{row['bytes'] / 1e6:>8.2f}MB {row['bytes'] / max(size, 1):>6.0%}  {kinds}"
        )


if __name__ == "__main__":
    main()
