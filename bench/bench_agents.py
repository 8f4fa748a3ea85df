"""Agent paths as whole processes: what Claude Code waits for on every tool call and prompt.

A git repository `app/` whose store holds N observations of that repository, a session with
its open capsule in place (as the SessionStart hook leaves it), and real hook payloads on
stdin. Nothing is started by hand: the first reader starts the background watcher, as a user's
first command would, and the rows are measured once it has caught up. A row for that first
call (no watcher yet) is measured too. Each figure sits next to the CLI floor
(`python -c "import click, orjson, sqlite3"`) and the bare interpreter (`python -c pass`),
all run by the same Python: by default a venv with Kindling installed from this checkout as
users install it, since a development (editable) install adds an import hook to every start.

    python bench/bench_agents.py --sizes 1000,10000 --runs 9     # or through bench/bench.py
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kindling.store import Store  # noqa: E402

SESSION = "bench-session"
PROMPT = "why does the zephyrine cache miss after a quokkaform deploy"
SPREAD: list[tuple[int, str, float, float, float]] = []  # size, row, min, median, max (s)


def payloads(repo: Path) -> dict[str, dict]:
    base = {"session_id": SESSION, "cwd": str(repo), "transcript_path": "/dev/null"}
    return {
        "SessionStart": {**base, "hook_event_name": "SessionStart", "source": "startup"},
        "PostToolUse": {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q tests/test_cache.py"},
            "tool_response": {"stdout": "4 passed in 0.31s\n", "stderr": "", "interrupted": False},
            "tool_use_id": "toolu_bench",
        },
        "UserPromptSubmit": {**base, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT},
    }


def build(out: Path, n: int, rows, fresh: bool) -> Path:
    """The repository (a git work tree) holding a store of `rows`, all of repository `app`."""
    repo = out / f"agents-{n}" / "app"
    marker = repo.parent / "bench-complete"
    if marker.exists() and not fresh:
        return repo
    shutil.rmtree(repo.parent, ignore_errors=True)
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    store = Store.create(repo / ".kindling")
    for etype, entity in rows:
        scope = {**entity["scopeIds"], "repoId": "app"}
        store.write(etype, {**entity, "scopeIds": scope}, durable=False)
    store.sync_to_disk()
    marker.write_text("ok\n")
    return repo


def agent_env(env: dict) -> dict:
    """The bench environment with nothing that would keep Kindling from helping itself."""
    out = {k: v for k, v in env.items() if not k.startswith("KINDLING_AUTOWATCH") and k != "CI"}
    out.pop("KINDLING_STORE", None)
    return out


def run(args: list[str], env: dict, cwd: Path, stdin: bytes | None = None) -> None:
    subprocess.run(
        args,
        env=env,
        cwd=cwd,
        input=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )


def timed_runs(fns, runs: int) -> list[list[float]]:
    """`runs` interleaved timings of each of `fns`, in seconds."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i in reversed(range(len(fns))):
            start = time.perf_counter()
            fns[i]()
            times[i].append(time.perf_counter() - start)
    return times


def watcher_caught_up(repo: Path) -> bool:
    from kindling.memory import Memory

    with Memory(repo / ".kindling") as memory:
        info = memory.watcher()
    return bool(info and info["caughtUp"])


def stop_watcher(kindling: list[str], env: dict, repo: Path) -> None:
    """Stop the running watcher, leaving the next reader free to start one by itself."""
    from kindling.store import Store
    from kindling.watch import daemon

    run([*kindling, "watch", "--stop"], env, repo)
    daemon.resume(Store(repo / ".kindling"))  # --stop keeps it off in this clone; undo that


def wait_caught_up(repo: Path, timeout: float = 600.0) -> None:
    end = time.monotonic() + timeout
    while not watcher_caught_up(repo):
        if time.monotonic() > end:
            raise SystemExit(f"no caught-up watcher for {repo} after {timeout:.0f} s")
        time.sleep(0.1)


def measure(n: int, rows, table, runs: int, out: Path, env: dict, fresh: bool, python: str) -> None:
    """Add the agent-path rows for a store of n observations to `table`; `python` runs
    Kindling's processes and the floors."""
    repo = build(Path(out), n, rows, fresh)
    env = agent_env(env)
    os.environ["KINDLING_AUTOWATCH"] = "0"  # this process only looks; the CLI starts it
    kindling = [python, "-m", "kindling"]
    floor = [python, "-c", "import click, orjson, sqlite3"]
    bare = [python, "-c", "pass"]
    hooks = {k: json.dumps(v).encode() for k, v in payloads(repo).items()}

    def floor_run() -> None:
        run(floor, env, repo)

    def bare_run() -> None:
        run(bare, env, repo)

    def hook(event: str):
        return lambda: run([*kindling, "hook", event], env, repo, hooks[event])

    # The session and its open capsule, as the first SessionStart leaves them; this first
    # full walk also starts the watcher.
    from kindling.settings import Settings

    watched = n >= Settings.from_environ(env).min_files  # a smaller store is walked each time
    stop_watcher(kindling, env, repo)
    hook("SessionStart")()
    if watched:
        wait_caught_up(repo)

    paths = [
        ("hook SessionStart", hook("SessionStart")),
        ("hook PostToolUse", hook("PostToolUse")),
        ("hook UserPromptSubmit (records, recalls)", hook("UserPromptSubmit")),
        (
            "log --session",
            lambda: run([*kindling, "log", "--session", SESSION, "noted"], env, repo),
        ),
        ("search", lambda: run([*kindling, "search", "zephyrine quokkaform"], env, repo)),
    ]
    for label, fn in paths:
        ours, floors, bares = timed_runs([fn, floor_run, bare_run], runs)
        value, floor_s, bare_s = (statistics.median(t) for t in (ours, floors, bares))
        table.add(n, f"agent: {label} (process)", value, floor_s, "ms", 2.0, bare=bare_s)
        SPREAD.append((n, label, min(ours), value, max(ours)))

    if not watched:
        return
    # The first call, before any watcher runs: it walks every file and starts one.
    cold = []
    for _ in range(max(1, min(runs, 3))):
        stop_watcher(kindling, env, repo)
        start = time.perf_counter()
        hook("SessionStart")()
        cold.append(time.perf_counter() - start)
        wait_caught_up(repo)
    floor_s = statistics.median(timed_runs([floor_run], 3)[0])
    table.add(
        n, "agent: hook SessionStart, first call (process)", statistics.median(cold), floor_s, "ms"
    )
    SPREAD.append(
        (n, "hook SessionStart, first call", min(cold), statistics.median(cold), max(cold))
    )
    run([*kindling, "watch", "--stop"], env, repo)  # leave nothing running


def spread_text() -> str:
    """Run-to-run spread of each agent row: min, median and max, and (max - min) / median."""
    lines = ["size | agent path | min | median | max | spread"]
    for n, label, lo, mid, hi in SPREAD:
        lines.append(
            f"{n:,} | {label} | {lo * 1000:.0f} ms | {mid * 1000:.0f} ms | {hi * 1000:.0f} ms "
            f"| {(hi - lo) / mid:.0%}"
        )
    return "\n".join(lines)


def git_costs(repo: Path) -> list[tuple[str, float]]:
    """`git add`, `git commit`, `git status` and a fresh clone of the repository, in seconds."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    clone = repo.parent / "clone"
    shutil.rmtree(clone, ignore_errors=True)

    def git(*args: str, cwd: Path = repo) -> float:
        start = time.perf_counter()
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)
        return time.perf_counter() - start

    shutil.rmtree(repo / ".git")  # a repository that has never seen these files
    git("init", "-q")
    out = [("git add .kindling (first time)", git("add", ".kindling"))]
    out.append(("git commit", git("commit", "-q", "-m", "memory")))
    git("status", "--porcelain")  # the first status after a commit refreshes git's index
    out.append(
        ("git status (warm)", statistics.median(git("status", "--porcelain") for _ in range(5)))
    )
    out.append(
        (
            "git clone (fresh, no hardlinks)",
            git("clone", "-q", "--no-hardlinks", str(repo), str(clone), cwd=repo.parent),
        )
    )
    shutil.rmtree(clone, ignore_errors=True)
    return out


def main() -> None:
    import argparse

    import bench

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--out", default=str(ROOT / "bench" / "out"))
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--git", action="store_true", help="also time git on the largest store")
    parser.add_argument(
        "--python", help="the Python that runs the processes (default: an installed venv)"
    )
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    python = args.python or bench.installed_python(Path(args.out))
    home = Path(args.out) / "home"
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    os.environ.update(HOME=env["HOME"], XDG_CACHE_HOME=env["XDG_CACHE_HOME"])  # one index key
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kindling")], check=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} on {bench.machine()}; processes run {python}")
    table = bench.Table()
    sizes = [int(s) for s in args.sizes.split(",")]
    for n in sizes:
        measure(n, bench.realistic(n), table, args.runs, Path(args.out), env, args.fresh, python)
    print()
    print(table.text())
    print()
    print(spread_text())
    if args.git:
        print()
        for label, seconds in git_costs(Path(args.out) / f"agents-{max(sizes)}" / "app"):
            print(f"{max(sizes):,} | {label} | {seconds:.2f} s")


if __name__ == "__main__":
    main()
