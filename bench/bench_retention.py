"""What a retention policy retires from a real store, for several keepDays, and what gc costs.

Reads the store once (kindling.retention.census), then plans each policy (nothing is
deleted): files and bytes retired, by kind, and the share of the store's observation files
and bytes. With no store given, the recall corpus's store (evals/recall, built on first use:
six repositories, about 300 Claude Code sessions over ten months) is used.

    python bench/bench_retention.py                       # the recall corpus's store
    python bench/bench_retention.py --store path/.kindling --days 7,14,30,60,90
    python bench/bench_retention.py --recall 30      # recall eval (dev) after gc, keepDays 30
    python bench/bench_retention.py --team 600       # a synthetic team store of 600 sessions

`--team N` writes N sessions shaped like the team simulation of issue 25 (45 tool calls
each: reads and greps 45%, commands 26%, failures 6% each followed by its fix, edits 23%; a
prompt and a stop message; a summary citing the session's last three diffs), 66 a day as 10
developers at 200 sessions a month make them, and plans that store.

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


TEAM_MIX = (("tool_call", 45), ("command", 26), ("error", 6), ("file_diff", 23))
SESSIONS_PER_DAY = 66  # 10 developers x 200 sessions a month


def team_store(root: Path, sessions: int, per_day: int = SESSIONS_PER_DAY) -> Path:
    """A store of `sessions` synthetic team sessions (see the module docstring)."""
    import random

    rng = random.Random(25)
    store = Store.create(root)
    start = 1_780_000_000_000
    n = 0
    for s in range(sessions):
        at = start + s * 86_400_000 // per_day
        scope = {"sessionId": f"team-{s}", "repoId": "github.com/acme/app", "agentId": "cc"}
        ids, diffs = [], []
        plan = [("message", "UserPromptSubmit")]
        for _ in range(45):
            kind = rng.choices([k for k, _ in TEAM_MIX], [w for _, w in TEAM_MIX])[0]
            plan.append((kind, None))
            if kind == "error":
                plan.append(("file_diff", None))
                plan.append(("command", "fix"))
        plan.append(("message", "Stop"))
        for i, (kind, note) in enumerate(plan):
            n += 1
            ident = f"{n:08x}-0000-4000-8000-{s:012d}"
            subject = f"Bash: npm test {s}" if kind == "error" or note == "fix" else None
            subject = subject or f"Read: src/m{rng.randrange(400)}.ts"
            lines = 70 if kind != "message" else 15
            body = "".join(f"{kind} output line {j} of session {s}\n" for j in range(lines))
            prov = {"subject": subject} if kind != "message" else {"hook": note}
            entity = {"id": ident, "kind": kind, "content": body, "provenance": prov}
            entity.update(ts=at + i * 20_000, scopeIds=scope, redacted=False)
            store.write("observations", entity, durable=False)
            ids.append(ident)
            if kind == "file_diff":
                diffs.append(ident)
        end = at + len(plan) * 20_000
        cap, summary = f"cap_team{s:06d}", f"sum_team{s:06d}"
        store.write(
            "summaries",
            {
                "id": summary,
                "content": "done",
                "confidence": 1.0,
                "evidenceRefs": diffs[-3:],
                "capsuleId": cap,
                "ts": end,
                "scopeIds": scope,
            },
            durable=False,
        )
        store.write(
            "capsules",
            {
                "id": cap,
                "type": "session",
                "intent": "work",
                "status": "closed",
                "openedAt": at,
                "closedAt": end,
                "scopeIds": scope,
                "observationIds": ids,
                "summaryId": summary,
            },
            durable=False,
        )
    return root


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
    parser.add_argument("--team", type=int, metavar="SESSIONS")
    parser.add_argument("--per-day", type=int, default=SESSIONS_PER_DAY)
    args = parser.parse_args()
    if args.team:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="kindling-team-"))
        args.store = team_store(folder / "s", args.team, args.per_day)
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
