"""A team's memory as it grows: files, bytes, index size, push, pull, clone and first-hook
times, measured at a few store sizes and fitted to a line to project larger ones.

For each size N, a bare repository holds a commit of a team store of N entity files
(bench/team_mix.py: 51 files and about 87 KB a session). Measured, with git's own
commands as a team runs them (local `file://` remotes, so no network, and `--no-local` so
git packs and copies objects as it would over ssh):

- clone: `git clone --no-local` of the bare repository;
- push: one team-day (40 sessions, about 2,040 files) written in clone A, then `git add`,
  `git commit` and `git push` (the three summed, and push alone);
- pull: `git pull --ff-only` of that day in clone B;
- first hook in the fresh clone: `kindling hook SessionStart` with no index (it answers at its
  index budget and says memory is still being indexed), and the full `kindling reindex`;
- index: its size per entity after that reindex.

Every time is linear in N or close to it at these sizes; `--project` fits each column to
a + b*N by least squares over the sizes measured and prints the values at the sizes asked.

    python bench/bench_team_growth.py --n 10000 --n 50000 --project 100000,400000,1200000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(1, str(HERE))

import team_mix  # noqa: E402
from bench_index_size import file_bytes, team_store  # noqa: E402
from bench_pull import DAY_SESSIONS, hook  # noqa: E402

OUT = HERE / "out" / "growth"
GIT = ["git", "-c", "core.fsmonitor=false", "-c", "user.name=bench", "-c", "user.email=b@x"]


def git(args: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - started


def env() -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith("KINDLING_")}
    out.update(KINDLING_AUTOWATCH="0", PYTHONPATH=str(HERE.parent))
    return out


def setup(n: int) -> Path:
    """out/<n>/bare.git: one commit holding the team store of n files (built once)."""
    base = OUT / str(n)
    bare = base / "bare.git"
    if (base / "complete").exists():
        return bare
    shutil.rmtree(base, ignore_errors=True)
    seed = base / "seed"
    seed.mkdir(parents=True)
    git(["init", "-q", "-b", "main"], seed)
    shutil.copytree(team_store(n), seed / ".kindling")
    git(["add", "-A"], seed)
    git(["commit", "-q", "-m", "memory"], seed)
    git(["clone", "-q", "--bare", str(seed), str(bare)], base)
    shutil.rmtree(seed)
    (base / "complete").write_text("ok\n")
    return bare


def measure(n: int) -> dict:
    bare = setup(n)
    base = bare.parent
    for name in ("a", "b"):
        shutil.rmtree(base / name, ignore_errors=True)
    url = f"file://{bare}"
    clone = git(["clone", "-q", "--no-local", url, "a"], base)
    git(["clone", "-q", "--no-local", url, "b"], base)
    a, b = base / "a", base / "b"
    files, size = file_bytes(a / ".kindling" / "objects")
    # The fresh clone's first SessionStart, then the whole index.
    first_hook, text = hook("SessionStart", a, source="startup")
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "kindling", "reindex"],
        cwd=a,
        env=env(),
        check=True,
        capture_output=True,
    )
    reindex = time.perf_counter() - started
    from kindling.store import Store

    index_bytes = Store.open(a / ".kindling").index_path.stat().st_size
    # One team-day written in A, pushed, pulled by B.
    day = team_mix.sessions(DAY_SESSIONS, start=n // team_mix.FILES_PER_SESSION + 50_000)
    team_mix.write_store(Store.open(a / ".kindling"), day)
    add = git(["add", "-A", ".kindling"], a)
    commit = git(["commit", "-q", "-m", "a day"], a)
    push = git(["push", "-q", "origin", "main"], a)
    pull = git(["pull", "-q", "--ff-only", "origin", "main"], b)
    for name in ("a", "b"):
        shutil.rmtree(base / name, ignore_errors=True)
    return {
        "files": files,
        "bytes": size,
        "indexBytes": index_bytes,
        "indexBytesPerFile": round(index_bytes / files),
        "cloneS": round(clone, 2),
        "firstHookS": round(first_hook, 2),
        "firstHookSaidIndexing": "still being indexed" in text,
        "reindexS": round(reindex, 2),
        "addCommitPushS": round(add + commit + push, 2),
        "pushS": round(push, 2),
        "pullS": round(pull, 2),
    }


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares a + b*x."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    return my - slope * mx, slope


def project(results: list[dict], sizes: list[int]) -> list[dict]:
    keys = ("bytes", "indexBytes", "cloneS", "reindexS", "addCommitPushS", "pushS", "pullS")
    xs = [r["files"] for r in results]
    out = []
    for n in sizes:
        row: dict = {"files": n}
        for key in keys:
            a, b = fit(xs, [r[key] for r in results])
            row[key] = round(max(a + b * n, 0), 2)
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="sizes measured (default 10000)")
    parser.add_argument("--project", default="", help="comma-separated sizes to project to")
    args = parser.parse_args()
    results = [measure(n) for n in args.n or [10_000]]
    sizes = [int(s) for s in args.project.split(",") if s]
    print(json.dumps({"measured": results, "projected": project(results, sizes)}, indent=2))


if __name__ == "__main__":
    main()
