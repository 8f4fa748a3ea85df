"""Search speed of this checkout against another one, on the same stores, interleaved.

    python bench/bench_search.py --against /path/to/other/checkout --sizes 10000,100000
    python bench/bench_search.py --pathological      # matchContext on hostile texts only

Both checkouts search copies of bench.py's stores (hard links to the same entity files, each
copy with its own index, since the index schemas may differ). Every figure is a median of
rounds that alternate between the two, so machine load hits both alike; the ratio is what
counts. Also printed: each index's size on disk, and the time this checkout takes to answer
a search whose match is a word repeated 20,000 times or a 16 MiB text (FTS5's snippet() is
quadratic there; matchContext is built in one linear pass).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench  # noqa: E402
from kindling.store import Store  # noqa: E402

# Times retrieve() in the checkout on PYTHONPATH: prints the median of `runs` calls, in ms.
_CHILD = """
import statistics, sys, time
from kindling.index import Index
from kindling.search.retrieve import retrieve
from kindling.store import Store
ix = Index(Store(sys.argv[1]))
ix.sync()
query, runs, limit = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
retrieve(ix, query, max_results=limit, now=1_750_416_064_123)
times = []
for _ in range(runs):
    start = time.perf_counter()
    retrieve(ix, query, max_results=limit, now=1_750_416_064_123)
    times.append(time.perf_counter() - start)
print(statistics.median(times) * 1000)
"""


def copy_store(src: Path, dst: Path) -> Path:
    """A copy of a store whose entity files are hard links (no index: it is built on use)."""
    if not (dst / "bench-complete").exists():
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(
            src,
            dst,
            copy_function=os.link,
            ignore=shutil.ignore_patterns("index.sqlite*", "*.lock", "watch*"),
        )
    return dst


def api_ms(checkout: Path, store: Path, query: str, runs: int, limit: int) -> float:
    """Median ms of `runs` retrieve() calls by the checkout's code (after one warm-up call)."""
    env = dict(os.environ, PYTHONPATH=str(checkout), KINDLING_NOW=str(bench.NOW))
    # Run from inside the checkout: `python -c` and `-m` put the working directory first.
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(store), query, str(runs), str(limit)],
        env=env,
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def process_ms(checkout: Path, store: Path, args: list[str]) -> float:
    env = dict(
        os.environ, PYTHONPATH=str(checkout), KINDLING_NOW=str(bench.NOW), KINDLING_STORE=str(store)
    )
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "kindling", "search", *args],
        env=env,
        cwd=checkout,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return (time.perf_counter() - start) * 1000


def index_mb(store: Path) -> float:
    index = Store(store).index_path
    return sum(p.stat().st_size for p in index.parent.glob("index.sqlite*")) / 1e6


def compare(n: int, against: Path, rounds: int, out: Path) -> list[tuple]:
    real = bench.build_store(out / f"realistic-{n}", bench.realistic(n), False).root
    bad = bench.build_store(out / f"worst-{n}", bench.worst(n), False).root
    stores = {
        "ours": {"real": real, "bad": bad},
        "other": {
            "real": copy_store(real, out / f"other-realistic-{n}"),
            "bad": copy_store(bad, out / f"other-worst-{n}"),
        },
    }
    checkouts = {"ours": ROOT, "other": against}
    measures = {
        "search, realistic (process)": lambda c, s: process_ms(c, s["real"], [bench.RARE[0]]),
        "search, worst --max 20 (process)": lambda c, s: process_ms(
            c, s["bad"], [bench.WORST_QUERY, "--max", "20"]
        ),
        "retrieve API, realistic": lambda c, s: api_ms(c, s["real"], bench.REALISTIC_QUERY, 5, 10),
        "retrieve API, worst --max 20": lambda c, s: api_ms(c, s["bad"], bench.WORST_QUERY, 5, 20),
    }
    for who in ("ours", "other"):  # build both indexes before timing anything
        api_ms(checkouts[who], stores[who]["real"], "x", 1, 1)
        api_ms(checkouts[who], stores[who]["bad"], "x", 1, 1)
    rows = []
    for name, measure in measures.items():
        times: dict[str, list[float]] = {"ours": [], "other": []}
        for r in range(rounds):
            order = ("ours", "other") if r % 2 == 0 else ("other", "ours")
            for who in order:
                times[who].append(measure(checkouts[who], stores[who]))
        ours, other = statistics.median(times["ours"]), statistics.median(times["other"])
        rows.append((n, name, ours, other, ours / other))
    for kind in ("real", "bad"):
        ours, other = index_mb(stores["ours"][kind]), index_mb(stores["other"][kind])
        label = "realistic" if kind == "real" else "worst"
        rows.append((n, f"index size, {label} (MB)", ours, other, ours / other))
    return rows


def pathological() -> list[tuple[str, float, int]]:
    """(case, ms for one search in this checkout, longest matchContext)."""
    os.environ["KINDLING_NOW"] = str(bench.NOW)
    from kindling.memory import Memory
    from kindling.store import Store

    cases = {
        "a word repeated 20,000 times": "needle " * 20_000,
        "one 30,000-character token after the match": "needle " + "x" * 30_000,
        "16 MiB of text, the match at the end": ("lorem ipsum " * 1_398_100) + "needle",
    }
    out = []
    for name, content in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            store = Store.create(Path(tmp) / "store")
            store.write(
                "observations",
                {
                    "id": "big",
                    "kind": "command",
                    "content": content,
                    "provenance": {},
                    "ts": bench.NOW,
                    "scopeIds": {},
                    "redacted": False,
                },
            )
            with Memory(store.root) as memory:
                memory.sync()
                start = time.perf_counter()
                result = memory.search("needle")
                ms = (time.perf_counter() - start) * 1000
            longest = max((len(c.get("matchContext", "")) for c in result["candidates"]), default=0)
            out.append((name, ms, longest))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--against", type=Path, help="the other checkout (e.g. the main branch)")
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--pathological", action="store_true", help="only the hostile texts")
    args = parser.parse_args()
    if args.pathological or args.against is None:
        print("| text | search (ms) | longest matchContext (chars) |\n|---|---:|---:|")
        for name, ms, longest in pathological():
            print(f"| {name} | {ms:.0f} | {longest} |")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    print("| size | measure | this checkout | other | ratio |\n|---:|---|---:|---:|---:|")
    for n in (int(s) for s in args.sizes.split(",")):
        for size, name, ours, other, ratio in compare(n, args.against, args.rounds, args.out):
            print(f"| {size:,} | {name} | {ours:.1f} | {other:.1f} | {ratio:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
