"""Index bytes per entity on a team's mix of files, and where the bytes go.

Builds (once) a store of N entity files shaped like a team's sessions (bench/team_mix.py:
51 files and about 85 KB a session), builds its index from nothing as a fresh clone would,
and prints the index file's size per indexed entity next to the entity files' own size, with
SQLite's `dbstat` page counts per table and index (FTS5 shadow tables by name).

    python bench/bench_index_size.py --n 10000
    python bench/bench_index_size.py --n 10000 --n 50000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(1, str(HERE))

import team_mix  # noqa: E402

from kindling.index import Index  # noqa: E402
from kindling.store import Store  # noqa: E402

OUT = HERE / "out" / "team"


def team_store(n: int, out: Path = OUT) -> Path:
    """`out/<n>/.kindling`: a store of about n entity files (whole sessions), built once."""
    root = out / str(n)
    marker = root / "complete"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        store = Store.create(root / ".kindling")
        team_mix.write_store(store, team_mix.sessions(max(1, n // team_mix.FILES_PER_SESSION)))
        marker.write_text("ok\n")
    return root / ".kindling"


def file_bytes(objects: Path) -> tuple[int, int]:
    """(entity files, their bytes) under objects/."""
    count = total = 0
    for folder, _, names in os.walk(objects):
        for name in names:
            count += 1
            total += os.path.getsize(os.path.join(folder, name))
    return count, total


def breakdown(path: Path) -> dict[str, int]:
    """Bytes per table or index of an SQLite file (dbstat), largest first."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    return dict(rows)


def measure(n: int) -> dict:
    """Build a fresh index of the n-file store; its size, per entity, and where it goes."""
    root = team_store(n)
    store = Store.open(root)
    index_path = root.parent / "bench-index.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index_path}{suffix}").unlink(missing_ok=True)
    started = time.perf_counter()
    index = Index(store, path=index_path)
    index.sync()
    built = time.perf_counter() - started
    entities = index.counts()
    index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    index.close()
    count, total = file_bytes(root / "objects")
    size = index_path.stat().st_size
    indexed = sum(entities[t] for t in ("observations", "capsules", "summaries", "pins"))
    return {
        "files": count,
        "fileBytesPerEntity": round(total / count),
        "indexBytes": size,
        "indexBytesPerEntity": round(size / max(indexed, 1)),
        "buildSeconds": round(built, 2),
        "tables": breakdown(index_path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="store sizes (default 10000)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = {n: measure(n) for n in args.n or [10_000]}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for n, r in results.items():
        print(
            f"{n:>7} files: entity files {r['fileBytesPerEntity']} B each; index "
            f"{r['indexBytes'] / 1e6:.1f} MB = {r['indexBytesPerEntity']} B per entity "
            f"(built in {r['buildSeconds']} s)"
        )
        for name, size in r["tables"].items():
            print(f"    {name:<28} {size / 1e6:8.2f} MB  {size / r['files']:7.0f} B/entity")


if __name__ == "__main__":
    main()
