"""What a crash (kill -9) can leave behind, and `kindling fsck` finding and repairing it.

Found by killing Kindling processes: a forget killed at the wrong moment left the forgotten
word in the index (the file redacted, the index's rows or its full-text segments not), and an
import killed mid-write left its temp file, neither of which fsck reported.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT

from kindling.cli import cli
from kindling.fileio import is_temp_name
from kindling.index import fulltext
from kindling.memory import Memory
from kindling.model import REDACTED_CONTENT
from kindling.store import Store

WORD = "zebrafinch42"  # the forgotten word: in no other observation
PAUSE_RENAME = str(Path(__file__).with_name("pause_rename.py"))
# Above Linux's largest pid_max (2**22): no process ever has this id.
DEAD_PID = 4_194_999


def run(root: Path, *args: str):
    result = CliRunner().invoke(cli, ["--store", str(root), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def fsck_json(root: Path, *args: str) -> tuple[int, dict]:
    result = run(root, "fsck", "--json", *args)
    return result.exit_code, json.loads(result.output)


def index_bytes(store: Store) -> bytes:
    """The index file and its WAL, as they lie on disk."""
    out = b""
    for suffix in ("", "-wal"):
        path = Path(f"{store.index_path}{suffix}")
        if path.exists():
            out += path.read_bytes()
    return out


def segments_hold(store: Store, word: str) -> bool:
    """Whether any full-text segment leaf (fts_data) holds the word's bytes."""
    conn = sqlite3.connect(store.index_path)
    try:
        blocks = conn.execute("SELECT block FROM fts_data").fetchall()
        return any(word.encode() in bytes(block) for (block,) in blocks)
    finally:
        conn.close()


def live_rows_matching(store: Store, word: str) -> list[int]:
    conn = sqlite3.connect(store.index_path)
    try:
        return [r[0] for r in conn.execute("SELECT rowid FROM fts WHERE fts MATCH ?", (word,))]
    finally:
        conn.close()


def remembered(root: Path, *, quoted: bool = False) -> tuple[Store, dict]:
    """A store whose index holds the word in one observation among others, each its own
    write (so the full-text index has several segments, as a real one does); `quoted`: in
    the summary of its capsule too."""
    with Memory(root) as mem:
        for n in range(6):
            mem.log(f"routine note {n} about the build cache")
        capsule = mem.open_capsule("fix the staging host").entity["id"]
        secret = mem.log(f"the staging host answers to {WORD} on port 8443", capsule_id=capsule)
        secret = secret.entity
        for n in range(3):
            mem.log(f"later note {n} about flaky tests")
        if quoted:
            mem.close_capsule(capsule, summary=f"We learned: {secret['content']}. Fixed it.")
    store = Store.open(root)
    assert WORD.encode() in index_bytes(store)
    return store, secret


def redacted(observation: dict) -> dict:
    """The observation as forget leaves its file."""
    return {**observation, "content": REDACTED_CONTENT, "provenance": {}, "redacted": True}


def assert_forgotten_everywhere(root: Path, store: Store, observation_id: str) -> None:
    with Memory(root) as mem:
        found = mem.search(WORD, max_results=50)
    assert observation_id not in json.dumps(found)
    assert live_rows_matching(store, WORD) == []
    assert not segments_hold(store, WORD)
    assert WORD.encode() not in index_bytes(store)


def test_finding_crash_during_forget_leaves_no_forgotten_word_fsck_finds_and_fixes_it(
    store_dir,
):
    store, secret = remembered(store_dir, quoted=True)
    # Killed once forget had written its files (the observation, the summary quoting it),
    # before the index heard of them.
    with Memory(store_dir) as mem:
        _, plan = mem.forget_report(secret["id"], dry_run=True)
    written = []
    for step in plan.forgotten:
        path, _ = store.write(
            step.entity_type, step.edit(store.load(step.entity_type, step.entity_id))
        )
        written.append(path.relative_to(store_dir).as_posix())
    assert len(written) == 2

    code, report = fsck_json(store_dir)
    found = [(p["path"], p["check"]) for p in report["problems"]]
    assert sorted(found) == sorted((rel, "index") for rel in written), report
    for problem in report["problems"]:
        assert "forget" in problem["reason"]
        assert problem["fixed"]  # the sync that read the forgotten files scrubbed their rows
    assert code == 0

    code, report = fsck_json(store_dir, "--fix")
    assert code == 0, report
    code, report = fsck_json(store_dir)
    assert (code, report["problems"]) == (0, [])
    assert_forgotten_everywhere(store_dir, store, secret["id"])


def test_finding_index_text_differs_from_its_file_the_next_sync_puts_it_right(store_dir):
    # The full-text table keeps no copy of its text (it is contentless), so where a damaged
    # index can differ from a file is whether the file's text is indexed at all; every sync
    # ends with a sweep that counts the rows and fills the table again on a mismatch.
    store, secret = remembered(store_dir)
    rel = store.path_for("observations", secret["id"]).relative_to(store.objects).as_posix()
    conn = sqlite3.connect(store.index_path)
    with conn:
        (fid,) = conn.execute("SELECT id FROM files WHERE path = ?", (rel,)).fetchone()
        fulltext.delete(conn, fid)
    conn.close()
    assert live_rows_matching(store, WORD) == []

    code, report = fsck_json(store_dir)
    assert (code, report["problems"]) == (0, [])
    assert live_rows_matching(store, WORD) == [fid]
    with Memory(store_dir) as mem:
        assert [c["entity"]["id"] for c in mem.search(WORD)["candidates"]] == [secret["id"]]


def test_finding_a_forget_the_index_missed_is_scrubbed_by_the_next_sync(store_dir):
    store, secret = remembered(store_dir)
    # The file redacted behind the index's back: a forget killed before it reached the index,
    # or a teammate's forget arriving with `git pull`. Any read syncs; that sync scrubs.
    store.write("observations", redacted(secret))
    with Memory(store_dir) as mem:
        mem.sync()
        assert live_rows_matching(store, WORD) == []
        assert not segments_hold(store, WORD)
    assert WORD.encode() not in index_bytes(store)


def test_finding_crash_during_import_leaves_a_temp_file_fsck_reports_and_removes_it(store_dir):
    with Memory(store_dir) as mem:
        observation = mem.log("a note the import brought").entity
    home = Store.open(store_dir).path_for("observations", observation["id"])
    now = time.time()

    def temp(folder: Path, name: str, pid: int, age: float) -> Path:
        path = folder / f".{name}.{pid}.{os.urandom(4).hex()}.tmp"
        path.write_bytes(b'{"id": "obs-')
        os.utime(path, (now - age, now - age))
        return path

    # Left by dead writers two minutes ago: in a fan-out folder, a type folder, the root.
    dead = [
        temp(home.parent, home.name, DEAD_PID, 120),
        temp(store_dir / "objects" / "capsules", "cap_x.json", DEAD_PID, 120),
        temp(store_dir, "config.json", DEAD_PID, 120),
    ]
    # May still be written: too young to judge, or its writer is alive.
    alive = [
        temp(home.parent, home.name, DEAD_PID, 5),
        temp(store_dir, ".gitattributes", os.getppid(), 600),
    ]

    code, report = fsck_json(store_dir)
    assert code == 1
    reported = sorted(p["path"] for p in report["problems"])
    assert reported == sorted(p.relative_to(store_dir).as_posix() for p in dead)
    assert {p["check"] for p in report["problems"]} == {"temp"}
    assert all(f"process {DEAD_PID}, is gone" in p["reason"] for p in report["problems"])

    code, report = fsck_json(store_dir, "--fix")
    assert code == 0
    assert [p["fixed"] for p in report["problems"]] == ["removed"] * 3
    assert not any(p.exists() for p in dead)
    assert all(p.exists() for p in alive)
    assert fsck_json(store_dir)[0] == 0
    assert home.exists()


@pytest.mark.parametrize("command", ["import", "forget"])
def test_finding_kill_9_mid_write_leaves_a_temp_file_fsck_removes_it_once_its_writer_is_dead(
    tmp_path, store_dir, command
):
    with Memory(store_dir) as mem:
        observation = mem.log(f"the staging host answers to {WORD}").entity
    if command == "import":
        bundle = tmp_path / "bundle.json"
        assert run(store_dir, "export", str(bundle)).exit_code == 0
        target = tmp_path / "other" / ".kindling"
        Store.create(target)
        args = ["import", str(bundle)]
    else:
        target, args = store_dir, ["forget", observation["id"]]
    announce = tmp_path / "paused"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    proc = subprocess.Popen(
        [sys.executable, PAUSE_RENAME, str(announce), "-m", "kindling", "--store", str(target)]
        + args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not (announce.is_file() and announce.read_text()):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the writer never reached its rename"
            time.sleep(0.02)
        temp = Path(announce.read_text())
        assert is_temp_name(temp.name) and temp.is_file()
        old = time.time() - 120
        os.utime(temp, (old, old))
        # Old enough, but its writer is alive (paused before its rename): never touched.
        code, report = fsck_json(target, "--fix")
        assert code == 0, report
        assert temp.exists()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    code, report = fsck_json(target)
    assert code == 1
    assert [(p["path"], p["check"]) for p in report["problems"]] == [
        (temp.relative_to(target).as_posix(), "temp")
    ]
    code, report = fsck_json(target, "--fix")
    assert code == 0
    assert report["problems"][0]["fixed"] == "removed"
    assert not temp.exists()
    code, report = fsck_json(target)
    assert (code, report["problems"]) == (0, [])
