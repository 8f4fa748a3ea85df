"""Time and peak memory of export and import of N observations, next to bare-I/O floors.

Each phase runs in its own process, so its peak RSS (ru_maxrss) is its own:

    python bench/bench_bundle.py              # 100,000 observations
    python bench/bench_bundle.py -n 10000 --markdown
    python bench/bench_bundle.py --rounds 3   # write floor and import alternate three times

The write floor and the import are timed in alternation (`--rounds`), each import next to the
floor just before it: on a shared disk the floor alone moves by 2x within minutes, so a ratio
is only meaningful against a floor taken at the same moment.

Floors: `read floor` walks the store and reads and parses every file, keeping nothing;
`write floor` writes N canonical files (temp + rename, one sync at the end) into an empty store.
`python start` is a whole process that imports what every phase imports and does nothing: its
time is the process's wall time from launch to exit (the other rows time only their work,
inside their process), its memory the RSS every phase starts from.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kindling import canonical  # noqa: E402
from kindling.store import Store  # noqa: E402

WORDS = (
    "jwt token expiry middleware validate seconds milliseconds refresh session cache "
    "request header auth retry timeout handler config deploy migration index query"
).split()


def observations(n: int, seed: int = 42):
    """N plausible observations, generated one at a time (never all in memory)."""
    rng = random.Random(seed)
    kinds = ("tool_call", "command", "file_diff", "error", "message")
    for i in range(n):
        yield {
            "id": f"{rng.getrandbits(128):032x}-{i}",
            "kind": kinds[i % len(kinds)],
            "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40))),
            "provenance": {"file": f"src/{rng.choice(WORDS)}.ts", "line": rng.randint(1, 900)},
            "ts": 1750000000000 + rng.randint(0, 10**9),
            "scopeIds": {"sessionId": f"s{i % 50}", "repoId": "bench"},
            "redacted": False,
        }


def _fill(root: Path, n: int) -> None:
    store = Store.create(root)
    for entity in observations(n):
        store.write("observations", entity, durable=False)
    store.sync_to_disk()


# ---------------------------------------------------------------- phases (run in a child)


def phase_python(work: Path, n: int) -> dict:
    return {}  # nothing: the parent times the whole process


def phase_setup(work: Path, n: int) -> dict:
    _fill(work / "source", n)
    return {}


def phase_read_floor(work: Path, n: int) -> dict:
    count = 0
    for found in Store(work / "source").walk():
        with open(found.path, "rb") as fh:
            canonical.decode(fh.read())
        count += 1
    return {"entities": count}


def phase_write_floor(work: Path, n: int) -> dict:
    store = Store.create(work / "floor")
    for entity in observations(n):
        path = store.path_for("observations", entity["id"])
        store.write_file(path, canonical.encode(entity), durable=False)
    store.sync_to_disk()
    return {}


def phase_export(work: Path, n: int) -> dict:
    from kindling.bundle.export import export_to_path

    report = export_to_path(Store(work / "source"), work / "bundle.json")
    return {"entities": sum(report.counts.values()), "bytes": (work / "bundle.json").stat().st_size}


def _import(work: Path, target: str) -> dict:
    from kindling.bundle.format import read_source
    from kindling.bundle.importer import import_bundle
    from kindling.memory import Memory

    root = work / target
    if not root.exists():
        Store.create(root)
    timings = {}
    with Memory(root) as memory:
        fresh = memory.sync
        spent = []

        def timed_fresh():
            t = time.perf_counter()
            result = fresh()
            spent.append(time.perf_counter() - t)
            return result

        memory.sync = timed_fresh
        # As `kindling import FILE` does it: the bytes go in, nothing else holds them.
        report = import_bundle(memory, read_source(str(work / "bundle.json")))
    timings["index_sync_s"] = round(sum(spent), 2)
    timings["written"] = report.written
    return timings


def phase_import(work: Path, n: int) -> dict:
    return _import(work, "target")


def phase_reimport(work: Path, n: int) -> dict:
    return _import(work, "target")


PHASES = {
    "python start": phase_python,
    "read floor": phase_read_floor,
    "export": phase_export,
    "write floor": phase_write_floor,
    "import (empty store)": phase_import,
    "import again (unchanged)": phase_reimport,
}


# Removed before the phase starts its clock (an earlier round's files), then flushed, so the
# deletion's own disk work does not land inside the next timing.
EMPTIED = {phase_write_floor: "floor", phase_import: "target"}


def child(name: str, work: Path, n: int) -> None:
    func = func_of(name)
    if func in EMPTIED and (work / EMPTIED[func]).exists():
        shutil.rmtree(work / EMPTIED[func])
        os.sync()
    start = time.perf_counter()
    extra = func(work, n)
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_mb": peak_kb / 1024, **extra}))


def run_phase(name: str, work: Path, n: int) -> dict:
    launched = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--work", str(work), "-n", str(n)],
        capture_output=True,
        text=True,
        check=False,
    )
    process_s = time.perf_counter() - launched
    if out.returncode != 0:
        sys.exit(f"phase {name!r} failed:\n{out.stderr}")
    result = json.loads(out.stdout)
    if func_of(name) is phase_python:
        result["seconds"] = process_s  # the interpreter start is the whole of this phase
    return result


def func_of(name: str):
    return phase_setup if name == "setup" else PHASES[name.split(" #", 1)[0]]


def schedule(rounds: int) -> list[str]:
    """The phases in the order they run: floor and import alternate, `rounds` times."""
    names = ["python start", "read floor", "export"]
    for r in range(1, rounds + 1):
        tag = f" #{r}" if rounds > 1 else ""
        names += [f"write floor{tag}", f"import (empty store){tag}"]
    return [*names, "import again (unchanged)"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000, help="observations (default 100000)")
    parser.add_argument("--work", type=Path, help="work directory (default: a temp dir)")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument(
        "--rounds", type=int, default=1, help="write floor + import pairs, alternated (default 1)"
    )
    args = parser.parse_args()
    if args.phase:
        child(args.phase, args.work, args.n)
        return

    work = args.work or Path(tempfile.mkdtemp(prefix="kindling-bench-bundle-"))
    try:
        print(f"setting up {args.n:,} observations in {work} ...", file=sys.stderr)
        run_phase("setup", work, args.n)
        rows = []
        for name in schedule(args.rounds):
            result = run_phase(name, work, args.n)
            if name.startswith("import (empty store)"):
                result["ratio"] = f"{result['seconds'] / rows[-1][1]['seconds']:.2f}x"
            rows.append((name, result))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)

    size = next(r for name, r in rows if name == "export").get("bytes", 0)
    if args.markdown:
        print(
            f"{args.n:,} observations, bundle {size / 2**20:.1f} MiB, "
            f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs\n"
        )
        print("| phase | time (s) | peak RSS (MiB) | notes |")
        print("|---|---:|---:|---|")
    for name, r in rows:
        notes = ", ".join(
            f"{k} {v}" for k, v in r.items() if k not in ("seconds", "peak_mb", "bytes")
        )
        if args.markdown:
            print(f"| {name} | {r['seconds']:.2f} | {r['peak_mb']:.0f} | {notes} |")
        else:
            print(f"{name:<26} {r['seconds']:>7.2f} s  {r['peak_mb']:>7.0f} MiB  {notes}")


if __name__ == "__main__":
    main()
