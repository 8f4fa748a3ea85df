"""Writers killed with SIGKILL at random moments never leave a partial or empty entity file;
their temp files are ignored by everything and cleaned by `fsck --fix` only once stale."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kindling import canonical
from kindling.cli import cli
from kindling.fsck import STALE_TEMP_SECONDS, fsck, is_temp_name
from kindling.memory import Memory
from kindling.store import Store

REPO_ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 8

# Logs large observations into an open capsule, forever: there is always a write in flight.
WRITER = textwrap.dedent(
    """
    import sys
    from kindling.memory import Memory

    store, capsule, worker = sys.argv[1], sys.argv[2], sys.argv[3]
    body = "lorem ipsum dolor " * 20_000
    n = 0
    with Memory(store) as mem:
        while True:
            mem.log(f"crash test {worker} {n} {body}", capsule_id=capsule)
            n += 1
    """
)


def temp_files(root: Path) -> list[Path]:
    return [p for p in (root / "objects").rglob("*") if is_temp_name(p.name)]


def entity_files(root: Path) -> list[Path]:
    return [
        p for p in (root / "objects").rglob("*.json") if not p.name.startswith(".") and p.is_file()
    ]


@pytest.mark.slow
def test_sigkill_never_leaves_a_partial_file(tmp_path):
    root = tmp_path / ".kindling"
    Store.create(root)
    with Memory(root) as mem:
        capsule = mem.open_capsule("crash test").entity["id"]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    rng = random.Random(1234)
    for round_ in range(ROUNDS):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(root), capsule, f"{round_}.{n}"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
            )
            for n in range(2)
        ]
        time.sleep(rng.uniform(0.3, 0.8))
        for proc in procs:
            time.sleep(rng.uniform(0, 0.05))
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            _, err = proc.communicate(timeout=30)
            assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]

    # A write caught between creating its temp file and renaming it, made by hand so the
    # test does not depend on the kill landing there.
    bucket = Store(root).path_for("observations", "obs-torn").parent
    bucket.mkdir(parents=True, exist_ok=True)
    (bucket / ".obs-torn.json.999999.0badf00d.tmp").write_bytes(b'{"id": "obs-torn", "ki')

    files = entity_files(root)
    assert len(files) > 1
    for path in files:
        data = path.read_bytes()
        assert data, f"{path} is empty"
        canonical.decode(data)  # raises on a partial file

    report = fsck(Store.open(root), check_index=False)
    assert report.problems == [], report.problems[:5]  # young temp files are not problems

    temps = temp_files(root)
    assert temps
    # Everything else ignores the temp files.
    with Memory(root) as mem:
        status = mem.status()
        assert status["problems"] == []
        assert status["counts"]["observations"] == len(entity_files(root)) - 1
        ids = {o["id"] for o in mem.list("observations", limit=None)}
        assert "obs-torn" not in ids

    # fsck --fix leaves young temp files alone, and removes them once they are an hour old.
    runner = CliRunner()
    result = runner.invoke(cli, ["--store", str(root), "fsck", "--fix"])
    assert result.exit_code == 0, result.output
    assert sorted(temp_files(root)) == sorted(temps)
    old = time.time() - STALE_TEMP_SECONDS - 5
    for path in temps:
        os.utime(path, (old, old))
    result = runner.invoke(cli, ["--store", str(root), "fsck", "--fix"])
    assert result.exit_code == 0, result.output
    assert result.output.count("[fixed: removed]") == len(temps)
    assert temp_files(root) == []
    assert runner.invoke(cli, ["--store", str(root), "fsck"]).exit_code == 0
