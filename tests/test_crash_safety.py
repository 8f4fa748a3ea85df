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
from conftest import REPO_ROOT

from kindling import canonical
from kindling.cli import cli
from kindling.fsck import STALE_TEMP_SECONDS, fsck, is_temp_name
from kindling.memory import Memory
from kindling.store import Store

ROUNDS = 8
PAUSE_RENAME = str(Path(__file__).with_name("pause_rename.py"))

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


def wait_for(predicate, what: str, timeout: float = 30.0):
    """Poll until `predicate()` is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def observation_count(root: Path) -> int:
    return sum(1 for p in (root / "objects" / "observations").rglob("*.json") if p.name[0] != ".")


def writer(
    root: Path, capsule: str, name: str, env: dict, pause: Path | None = None
) -> subprocess.Popen:
    """A process logging into `capsule` forever; with `pause`, it stops before its first
    rename and names its temp file in that file."""
    paused = [PAUSE_RENAME, str(pause)] if pause is not None else []
    return subprocess.Popen(
        [sys.executable, *paused, "-c", WRITER, str(root), capsule, name],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]


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
    # Kills at moments the writers choose: each one once it has made progress.
    rng = random.Random(1234)
    for round_ in range(ROUNDS):
        before = observation_count(root)
        procs = [writer(root, capsule, f"{round_}.{n}", env) for n in range(2)]
        wait_for(lambda b=before: observation_count(root) > b, "a writer to finish one write")
        for proc in rng.sample(procs, len(procs)):
            kill(proc)

    # Kills exactly between the temp file's last byte and the rename (a test-only pause).
    torn = []
    for n in range(2):
        announce = tmp_path / f"paused-{n}"
        proc = writer(root, capsule, f"paused.{n}", env, pause=announce)
        temp = Path(wait_for(lambda a=announce: a.is_file() and a.read_text(), "the pause"))
        kill(proc)
        assert is_temp_name(temp.name) and temp.parent.parent.parent == root / "objects"
        entity = canonical.decode(temp.read_bytes())  # the temp file is whole...
        target = Store(root).path_for(temp.parent.parent.name, entity["id"])
        assert not target.exists()  # ...and never became the entity file
        torn.append(temp)

    files = entity_files(root)
    assert len(files) > 1
    for path in files:
        data = path.read_bytes()
        assert data, f"{path} is empty"
        canonical.decode(data)  # raises on a partial file

    report = fsck(Store.open(root), check_index=False)
    assert report.problems == [], report.problems[:5]  # young temp files are not problems

    temps = temp_files(root)
    assert set(torn) <= set(temps)
    # Everything else ignores the temp files.
    with Memory(root) as mem:
        status = mem.status()
        assert status["problems"] == []
        assert status["counts"]["observations"] == len(entity_files(root)) - 1
        ids = {o["id"] for o in mem.list("observations", limit=None)}
        for temp in torn:
            assert canonical.decode(temp.read_bytes())["id"] not in ids

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
