"""Kindling benchmark: stores of 1k, 10k and 100k observations, one table of timings.

Every figure is printed next to its floor, measured in the same run on the same tree, and as a
ratio to it: these machines are noisy, and only ratios compare across runs.

    python bench/bench.py                       # 1k, 10k and 100k (100k takes a while)
    python bench/bench.py --sizes 1000,10000 --runs 9
    python bench/bench.py --markdown table.md   # also write the table as Markdown

Stores are built once under bench/out/ (git-ignored) and reused; --fresh rebuilds them.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bench_agents  # noqa: E402

from kindling import canonical  # noqa: E402
from kindling.index import Index  # noqa: E402
from kindling.index import schema as index_schema  # noqa: E402
from kindling.search.retrieve import retrieve  # noqa: E402
from kindling.store import Store  # noqa: E402

NOW = 1_750_416_064_123  # KINDLING_NOW for every run, so recency is the same each time
DAY = 86_400_000
RARE = ("zephyrine", "quokkaform")  # each in 0.5% of realistic rows: the query matches ~1%
REALISTIC_QUERY = " ".join(RARE)
WORST_QUERY = "authentication cache"
KINDS = ("tool_call", "command", "file_diff", "error", "message")


# ---------------------------------------------------------------- building stores


def _vocabulary(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ter", "von", "ax", "pri", "sul", "de", "ran", "qui", "bo"]
    words = set()
    while len(words) < 3000:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def realistic(n: int) -> list[tuple[str, dict]]:
    """Varied text over 50 sessions and 5 repos; RARE words in about 1% of rows."""
    rng = random.Random(n)
    vocab = _vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(vocab))]  # Zipf-like word frequencies
    out = []
    for i in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(8, 24))
        if i % 200 == 7:
            words.insert(rng.randrange(len(words)), RARE[0])
        if i % 200 == 107:
            words.insert(rng.randrange(len(words)), RARE[1])
        entity = {
            "id": f"obs-{n}-{i:07d}",
            "kind": KINDS[i % len(KINDS)],
            "content": " ".join(words),
            "provenance": {"tool": "bench"},
            "ts": NOW - rng.randrange(60 * DAY),
            "scopeIds": {"sessionId": f"session-{i % 50}", "repoId": f"repo-{i % 5}"},
            "redacted": False,
        }
        out.append(("observations", entity))
    return out


def worst(n: int) -> list[tuple[str, dict]]:
    """Every row matches the query: one session and repo, one template."""
    return [
        (
            "observations",
            {
                "id": f"obs-{n}-{i:07d}",
                "kind": "command",
                "content": (
                    f"command invocation {i}: validate authentication cache and feature flags"
                ),
                "provenance": {},
                "ts": NOW - i * 1000,
                "scopeIds": {"sessionId": "session-1", "repoId": "my-project"},
                "redacted": False,
            },
        )
        for i in range(n)
    ]


def build_store(path: Path, rows: list[tuple[str, dict]], fresh: bool) -> Store:
    marker = path / "bench-complete"
    if marker.exists() and not fresh:
        return Store(path)
    shutil.rmtree(path, ignore_errors=True)
    store = Store.create(path)
    for etype, entity in rows:
        store.write(etype, entity, durable=False)
    store.sync_to_disk()
    marker.write_text("ok\n")
    return store


# ---------------------------------------------------------------- timing helpers


def median_pair(measure, floor, runs: int) -> tuple[float, float]:
    """Medians of `runs` interleaved timings of measure() and floor(), in seconds."""
    ours, low = medians(measure, floor, runs=runs)
    return ours, low


def medians(*fns, runs: int) -> list[float]:
    """Medians of `runs` interleaved timings of each of `fns` (floors first), in seconds."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i in reversed(range(len(fns))):
            times[i].append(_timed(fns[i]))
    return [statistics.median(t) for t in times]


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bare_walk(objects: Path) -> int:
    """The floor of a sync: os.scandir + stat of every file, nothing else."""
    n = 0
    for etype in ("observations", "capsules", "summaries", "pins"):
        try:
            buckets = os.scandir(objects / etype)
        except FileNotFoundError:
            continue
        with buckets:
            for bucket in buckets:
                with os.scandir(bucket.path) as files:
                    for entry in files:
                        entry.stat(follow_symlinks=False)
                        n += 1
    return n


def process(args: list[str], env: dict) -> None:
    # Run outside the checkout, so that `python -m kindling` is the installed package.
    subprocess.run(
        args,
        env=env,
        cwd=env.get("HOME"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )


def installed_python(out: Path) -> str:
    """A Python with Kindling installed from this checkout as users install it: a venv under
    `out` with a regular (not editable) install, so no development import hooks load at start.
    """
    venv = out / "venv"
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([*pip, str(ROOT)], check=True)
    else:  # this checkout's code, every run
        subprocess.run([*pip, "--no-deps", "--force-reinstall", str(ROOT)], check=True)
    return str(python)


# ---------------------------------------------------------------- measurements


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.bare: list[float | None] = []

    def add(self, size, what, value, floor, unit, target=None, higher_is_better=False, bare=None):
        """One row; `bare` is a second, click-free process floor (`python -c "import orjson,
        sqlite3"`) shown beside the first for whole-process rows."""
        ratio = value / floor if floor else float("nan")
        ok = ""
        if target is not None:
            ok = "yes" if (ratio >= target if higher_is_better else ratio <= target) else "NO"
        self.rows.append((size, what, value, floor, unit, ratio, target, higher_is_better, ok))
        self.bare.append(bare)
        print(self._line(self.rows[-1], bare), flush=True)

    @staticmethod
    def _fmt(value, unit):
        if unit == "ms":
            return f"{value * 1000:.1f} ms"
        if value is None:
            return "—"
        return f"{value:,.0f} {unit}"

    def _bare(self, value, bare) -> tuple[str, str]:
        if bare is None:
            return "", ""
        return self._fmt(bare, "ms"), f"{value / bare:.2f}x"

    def _line(self, row, bare=None) -> str:
        size, what, value, floor, unit, ratio, target, hib, ok = row
        goal = "" if target is None else (">= " if hib else "<= ") + f"{target}x"
        no_click, no_click_ratio = self._bare(value, bare)
        return (
            f"{size:>7} | {what:<52} | {self._fmt(value, unit):>14} | "
            f"{self._fmt(floor, unit):>14} | {ratio:6.2f}x | {goal:>8} | {ok:>3} | "
            f"{no_click:>10} | {no_click_ratio:>6}"
        )

    def text(self) -> str:
        head = (
            f"{'size':>7} | {'measure':<52} | {'value':>14} | {'floor':>14} | {'ratio':>7} | "
            f"{'target':>8} | ok  | {'no click':>10} | ratio"
        )
        lines = (self._line(r, b) for r, b in zip(self.rows, self.bare, strict=True))
        return "\n".join([head, "-" * len(head), *lines])

    def markdown(self) -> str:
        lines = [
            "| size | measure | value | floor | ratio | target | met "
            "| floor without click | ratio |",
            "|---:|---|---:|---:|---:|---:|:---:|---:|---:|",
        ]
        for row, bare in zip(self.rows, self.bare, strict=True):
            size, what, value, floor, unit, ratio, target, hib, ok = row
            goal = "" if target is None else (">= " if hib else "<= ") + f"{target}x"
            no_click, no_click_ratio = self._bare(value, bare)
            lines.append(
                f"| {size:,} | {what} | {self._fmt(value, unit)} | {self._fmt(floor, unit)} "
                f"| {ratio:.2f}x | {goal} | {ok} | {no_click} | {no_click_ratio} |"
            )
        return "\n".join(lines)


def rebuild_floor(store: Store) -> float:
    """Read + hash + parse every file, plus one bulk FTS5 insert into a database on the same
    disk, set up as the index is (WAL): seconds."""
    db = store.root / "bench-floor.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    start = time.perf_counter()
    texts = []
    for f in store.walk():
        data = Path(f.path).read_bytes()
        hashlib.sha256(data).hexdigest()
        texts.append((orjson.loads(data)["content"],))
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("BEGIN")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'porter unicode61')")
    conn.executemany("INSERT INTO t(body) VALUES (?)", texts)
    conn.execute("COMMIT")
    conn.close()
    elapsed = time.perf_counter() - start
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return elapsed


def settle(store: Store) -> None:
    """Wait until no file is too recent to trust (the racy window), then sync once."""
    time.sleep(index_schema.RACY_NS / 1e9 + 0.1)
    with _opened(store) as ix:
        ix.sync()


def change_300(store: Store, round_no: int, n: int):
    """100 changed, 100 new and 100 deleted observation files; returns a function undoing it."""
    rng = random.Random(round_no)
    files = sorted(f.path for f in store.walk("observations"))
    picked = rng.sample(files, 200)
    saved = {path: Path(path).read_bytes() for path in picked}
    for path in picked[:100]:
        entity = canonical.decode(saved[path])
        entity["content"] += f" edited {round_no}"
        store.write("observations", entity, durable=False)
    for path in picked[100:]:
        os.unlink(path)
    new_ids = [f"new-{n}-{round_no}-{i}" for i in range(100)]
    for i, eid in enumerate(new_ids):
        entity = {
            "id": eid,
            "kind": "message",
            "content": f"fresh note {i}",
            "provenance": {},
            "ts": NOW,
            "scopeIds": {},
            "redacted": False,
        }
        store.write("observations", entity, durable=False)

    def undo() -> None:
        for path, data in saved.items():
            store.write_file(Path(path), data, durable=False)
        for eid in new_ids:
            store.remove("observations", eid)

    return undo


def measure_size(n: int, args, table: Table, env: dict) -> None:
    out = Path(args.out)
    real = build_store(out / f"realistic-{n}", realistic(n), args.fresh)
    bad = build_store(out / f"worst-{n}", worst(n), args.fresh)
    runs = args.runs if n < 100_000 else max(3, args.runs // 2)
    floor_cmd = [args.python, "-c", "import click, orjson, sqlite3"]
    bare_cmd = [args.python, "-c", "import orjson, sqlite3"]  # the same without click
    kindling = [args.python, "-m", "kindling"]

    for store in (real, bad):
        with _opened(store) as ix:
            ix.sync()

    # Full rebuild, in entities per second, against read + hash + parse + bulk FTS5 insert.
    with _opened(real) as ix:
        ours, floor = median_pair(ix.rebuild, lambda: rebuild_floor(real), min(runs, 5))
    table.add(n, "full rebuild (entities/s)", n / ours, n / floor, "/s", 0.6, True)

    # No-op sync against a bare scandir + stat walk.
    settle(real)
    with _opened(real) as ix:
        ours, floor = median_pair(ix.sync, lambda: bare_walk(real.objects), runs)
    table.add(n, "no-op sync", ours, floor, "ms", 1.5)

    # Sync after 100 changed + 100 new + 100 deleted files.
    if n >= 1000:
        times, floors = [], []
        with _opened(real) as ix:
            for r in range(min(runs, 3)):
                undo = change_300(real, r, n)
                floors.append(_timed(lambda: bare_walk(real.objects)))
                times.append(_timed(ix.sync))
                undo()  # the stores are reused: leave them as they were
        table.add(
            n,
            "sync after 100 changed/new/deleted",
            statistics.median(times),
            statistics.median(floors),
            "ms",
        )

    # Whole processes against `python -c "import click, orjson, sqlite3"`, and beside it the
    # same without click (click is Kindling's choice, not part of the work).
    settle(real)
    settle(bad)
    real_env = dict(env, KINDLING_STORE=str(real.root))
    bad_env = dict(env, KINDLING_STORE=str(bad.root))
    floor_run = lambda: process(floor_cmd, env)  # noqa: E731
    bare_run = lambda: process(bare_cmd, env)  # noqa: E731
    ours, floor, bare = medians(
        lambda: process([*kindling, "search", REALISTIC_QUERY], real_env),
        floor_run,
        bare_run,
        runs=runs,
    )
    table.add(
        n,
        "kindling search, realistic query (process)",
        ours,
        floor,
        "ms",
        2.0 if n == 10_000 else None,
        bare=bare,
    )
    ours, floor, bare = medians(
        lambda: process([*kindling, "search", WORST_QUERY, "--max", "20"], bad_env),
        floor_run,
        bare_run,
        runs=runs,
    )
    table.add(n, "kindling search, worst case --max 20 (process)", ours, floor, "ms", bare=bare)

    logged: list[str] = []

    def log_once() -> None:
        proc = subprocess.run(
            [*kindling, "log", "bench log entry", "--kind", "message"],
            env=real_env,
            capture_output=True,
            text=True,
            check=True,
        )
        logged.append(proc.stdout.strip())

    # No --session, so no capsule to find: this path never syncs (a hook's log does).
    ours, floor, bare = medians(log_once, floor_run, bare_run, runs=runs)
    table.add(n, "kindling log, no --session: no sync (process)", ours, floor, "ms", 1.5, bare=bare)
    for eid in logged:
        real.remove("observations", eid)
    settle(real)

    # Search while a watcher runs: issue 5 adds the real row. The reader's side of the
    # hand-off is measured here with the watcher's lock and state simulated.
    if n == 100_000:
        ours, floor = _simulated_watcher_search(real, real_env, env, kindling, floor_cmd, runs)
        table.add(n, "search, watcher hand-off simulated (process)", ours, floor, "ms", 2.5)

    # Retrieval through the API, worst case, against one bare FTS5 bm25 query over all matches.
    with _opened(bad) as ix:
        ix.sync()
        match = '"authentication" OR "cache"'

        def bare_fts():
            ix.conn.execute(
                "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 20",
                (match,),
            ).fetchall()

        ours, floor = median_pair(
            lambda: retrieve(ix, WORST_QUERY, max_results=20, now=NOW), bare_fts, runs
        )
    table.add(
        n, "retrieve API, worst case --max 20", ours, floor, "ms", 1.5 if n == 100_000 else None
    )

    # Agent paths (hooks, log --session, search) with the watcher Kindling starts itself.
    bench_agents.measure(
        n, realistic(n), table, max(runs, 5), Path(args.out), env, args.fresh, args.python
    )


def _simulated_watcher_search(store, store_env, env, kindling, floor_cmd, runs):
    ix = Index(store)
    lock = open(ix.watch_lock_path, "w")  # noqa: SIM115
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ix.set_watcher_state({"pid": os.getpid(), "pending": True})
        ix.sync(trust_watcher=False)
        ix.set_watcher_state({"pid": os.getpid(), "pending": False})
        return median_pair(
            lambda: process([*kindling, "search", REALISTIC_QUERY], store_env),
            lambda: process(floor_cmd, env),
            runs,
        )
    finally:
        ix.set_watcher_state(None)
        ix.close()
        lock.close()


class _opened:
    """An Index used as a context manager."""

    def __init__(self, store: Store) -> None:
        self.index = Index(store)

    def __enter__(self) -> Index:
        return self.index

    def __exit__(self, *exc) -> None:
        self.index.close()


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )


def run(measure, default_sizes: str, description: str) -> None:
    """The command line every benchmark script shares: parse, measure each size, print."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sizes", default=default_sizes)
    parser.add_argument("--runs", type=int, default=7, help="repetitions per figure (median)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out"))
    parser.add_argument("--fresh", action="store_true", help="rebuild the stores")
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument(
        "--python",
        help="the Python that runs Kindling's processes and their floors (default: a venv "
        "under --out with Kindling installed from this checkout, as users install it)",
    )
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.python is None:
        args.python = installed_python(Path(args.out))
    home = Path(args.out) / "home"
    home.mkdir(exist_ok=True)
    # No background watcher unless a row asks for one (the agent rows do, by design).
    env = dict(
        os.environ,
        KINDLING_NOW=str(NOW),
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        KINDLING_AUTOWATCH="0",
    )
    # This process opens the same indexes as the processes it times: the same home, so the
    # same index key (an index built under another key is not trusted, and is rebuilt).
    os.environ.update(KINDLING_NOW=str(NOW), HOME=env["HOME"], XDG_CACHE_HOME=env["XDG_CACHE_HOME"])
    # Byte-compile first: with PYTHONDONTWRITEBYTECODE set, every process would otherwise
    # compile any module edited since its .pyc was written, and time that instead.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kindling")], check=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} on {machine()}; processes run {args.python}")
    table = Table()
    for n in (int(s) for s in args.sizes.split(",")):
        measure(n, args, table, env)
    print()
    print(table.text())
    if bench_agents.SPREAD:
        print()
        print(bench_agents.spread_text())
    if args.markdown:
        Path(args.markdown).write_text(table.markdown() + "\n")


def main() -> None:
    run(measure_size, "1000,10000,100000", __doc__.split("\n", 1)[0])


if __name__ == "__main__":
    main()
