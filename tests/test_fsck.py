"""`kindling fsck`: every kind of problem found with its path, and only safe repairs made."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from kindling import canonical
from kindling.cli import cli
from kindling.fsck import STALE_TEMP_SECONDS, fsck
from kindling.store import Store

STORES = FIXTURES / "stores"


def copy_store(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(STORES / name / "store", root)
    return root


def run_fsck(root: Path, *args: str):
    result = CliRunner().invoke(cli, ["--store", str(root), "fsck", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def snapshot(root: Path) -> dict[str, str]:
    """Store-relative path -> sha256 of every file under objects/."""
    out = {}
    for path in sorted((root / "objects").rglob("*")):
        if path.is_file():
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def ours(reason: str) -> str:
    """The part of a reason Kindling words: a parse error's detail in brackets is orjson's."""
    if reason.startswith("not valid JSON ("):
        return "not valid JSON ("
    return reason


def test_malformed_store_reports_every_problem_exactly(tmp_path):
    root = copy_store("malformed", tmp_path)
    result = run_fsck(root, "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    expected = json.loads((STORES / "malformed" / "fsck.json").read_text())
    assert report["store"] == str(root)
    assert report["ok"] is False
    assert report["checked"] == expected["checked"]

    def found(problems):
        return [(p["path"], p["check"], p["fixed"]) for p in problems]

    assert found(report["problems"]) == found(expected["problems"])
    for got, want in zip(report["problems"], expected["problems"], strict=True):
        assert ours(got["reason"]) == ours(want["reason"]), got["path"]
        assert got["reason"].startswith(ours(want["reason"]))


def test_malformed_store_text_output_names_path_and_reason(tmp_path):
    root = copy_store("malformed", tmp_path)
    result = run_fsck(root)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert (
        "objects/capsules/7a/cap_0002.json: conflict: holds git merge conflict markers"
        in (lines[0])
    )
    expected = json.loads((STORES / "malformed" / "fsck.json").read_text())
    checked, problems = expected["checked"], len(expected["problems"])
    assert lines[-1] == (
        f"{checked} entity files checked, {problems} problem(s); "
        "`kindling fsck --fix` repairs the safe ones"
    )
    assert len(lines) == problems + 1


def test_fix_on_malformed_store_repairs_only_what_is_safe(tmp_path):
    root = copy_store("malformed", tmp_path)
    before = snapshot(root)
    result = run_fsck(root, "--fix", "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    fixed = {p["path"]: p["fixed"] for p in report["problems"] if p["fixed"]}
    assert fixed == {
        "objects/observations/09/obs-0002.json": "re-encoded canonically",
        "objects/capsules/ed/pin_0002.json": "moved to objects/pins/ed/pin_0002.json",
        "objects/observations/41/renamed.json": "moved to objects/observations/41/obs-0008.json",
        "objects/observations/zz/obs-0007.json": "moved to objects/observations/74/obs-0007.json",
    }
    after = snapshot(root)
    untouchable = [
        "objects/capsules/7a/cap_0002.json",
        "objects/observations/4f/obs-0003.json",
        "objects/observations/7b/obs-0005.json",
        "objects/observations/df/obs-0004.json",
        "objects/observations/00/evil.json",
        "objects/observations/04/obs-0006.json",
        "objects/observations/ab/notes.txt",
        "objects/observations/ab/copy-of-obs-0001.json",
        "objects/pins/69/pin_0001.json",
    ]
    for rel in untouchable:
        assert after[rel] == before[rel], rel
    moved = Store(root).path_for("pins", "pin_0002")
    assert canonical.encode(canonical.decode(moved.read_bytes())) == moved.read_bytes()
    assert not (root / "objects/capsules/ed/pin_0002.json").exists()

    again = json.loads(run_fsck(root, "--json").output)
    assert {p["check"] for p in again["problems"]} == {
        "conflict",
        "parse",
        "invalid",
        "stray",
        "duplicate",
        "dangling",
    }


def test_fix_makes_a_noncanonical_store_clean(tmp_path):
    root = copy_store("noncanonical", tmp_path)
    first = run_fsck(root)
    assert first.exit_code == 1
    assert first.output.count(": noncanonical: ") == 3
    assert first.output.count(": misplaced: ") == 2
    fixed = run_fsck(root, "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert fixed.output.splitlines()[-1] == (
        "6 entity files checked, 5 problem(s), 5 fixed, 0 left"
    )
    clean = run_fsck(root)
    assert clean.exit_code == 0
    assert clean.output == "6 entity files checked, no problems\n"
    store = Store(root)
    for item in store.walk():
        data = Path(item.path).read_bytes()
        assert canonical.encode(store.parse_entity(item.entity_type, item.path, data)) == data
    # the ASCII-escaped text came back as the same characters
    obs3 = store.load("observations", "obs-0003")
    assert obs3["content"] == "indent 4 — ünïcode"


def test_conflicted_file_is_reported_and_never_rewritten(tmp_path):
    root = copy_store("conflicted", tmp_path)
    before = snapshot(root)
    for args in ((), ("--fix",)):
        result = run_fsck(root, *args)
        assert result.exit_code == 1
        assert "objects/capsules/04/cap_0001.json: conflict:" in result.output
    assert snapshot(root) == before


def test_clean_store_exits_zero(store_dir):
    result = run_fsck(store_dir, "--json")
    assert result.exit_code == 0
    assert json.loads(result.output) == {
        "checked": 0,
        "ok": True,
        "problems": [],
        "store": str(store_dir),
    }


# Above Linux's largest pid_max (2**22): no process ever has this id.
DEAD_PID = 4_194_999


def test_temp_files_removed_only_when_no_live_writer_can_own_them(tmp_path):
    root = copy_store("conflicted", tmp_path)
    (root / "objects/capsules/04/cap_0001.json").unlink()
    bucket = root / "objects" / "observations" / "f2"
    now = time.time()

    def temp(name: str, age: float) -> Path:
        path = bucket / name
        path.write_bytes(b'{"half": ')
        os.utime(path, (now - age, now - age))
        return path

    young = temp(f".obs-0001.json.{DEAD_PID}.abcd1234.tmp", 20)  # maybe another machine's
    live = temp(f".obs-0001.json.{os.getppid()}.cafe0001.tmp", 600)  # its writer still runs
    unnamed = temp(".notes.tmp", 600)  # no pid to ask about
    dead = temp(f".obs-0001.json.{DEAD_PID}.deadbeef.tmp", 120)
    old = temp(f".obs-0001.json.{os.getppid()}.0123abcd.tmp", STALE_TEMP_SECONDS + 60)

    result = run_fsck(root)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert sorted(lines[:-1]) == sorted(
        [
            f"objects/observations/f2/{dead.name}: temp: stale temp file left by an interrupted "
            f"write (its writer, process {DEAD_PID}, is gone; 2 min old)",
            f"objects/observations/f2/{old.name}: temp: stale temp file left by an interrupted "
            "write (1.0 h old)",
        ]
    )
    fixed = run_fsck(root, "--fix")
    assert fixed.exit_code == 0
    assert fixed.output.count("[fixed: removed]") == 2
    assert not dead.exists() and not old.exists()
    assert young.exists() and live.exists() and unnamed.exists()
    assert run_fsck(root).exit_code == 0


def test_library_report(tmp_path):
    root = copy_store("noncanonical", tmp_path)
    report = fsck(Store.open(root))
    assert not report.ok
    assert [p.check for p in report.problems] == ["noncanonical"] * 3 + ["misplaced"] * 2
    report = fsck(Store.open(root), fix=True)
    assert report.ok


def test_missing_store_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "nothing"), "fsck"])
    assert result.exit_code == 1
    assert "Error: no Kindling store" in result.output


@pytest.mark.parametrize("name", ["subdir", "link"])
def test_strange_entries_are_reported_not_followed(tmp_path, name):
    root = copy_store("conflicted", tmp_path)
    (root / "objects/capsules/04/cap_0001.json").unlink()
    target = root / "objects" / "observations" / "f2" / "obs-0001.json"
    if name == "link":
        (root / "objects/observations/aa").mkdir()
        (root / "objects/observations/aa/obs-0009.json").symlink_to(target)
        expected = "objects/observations/aa/obs-0009.json: stray: not a regular file"
    else:
        (root / "objects/observations/f2/deeper").mkdir()
        shutil.copy(target, root / "objects/observations/f2/deeper/obs-0001.json")
        expected = "objects/observations/f2/deeper/obs-0001.json: duplicate:"
    result = run_fsck(root)
    assert result.exit_code == 1
    assert expected in result.output


def test_index_damage_is_found_and_rebuilt(store_dir):
    import sqlite3

    from kindling.index import Index

    store = Store.open(store_dir)
    entity = {
        "id": "obs-1",
        "kind": "error",
        "content": "token expired",
        "provenance": {},
        "ts": 1750416064123,
        "scopeIds": {},
        "redacted": False,
    }
    path, _ = store.write("observations", entity)
    past = time.time() - 600  # old enough that the index trusts the stat data
    os.utime(path, (past, past))
    Index(store).close()
    assert run_fsck(store_dir).exit_code == 0

    # A row that disagrees with its file while the stat data still matches: a sync keeps it.
    conn = sqlite3.connect(store.index_path)
    with conn:
        conn.execute("UPDATE entities SET json = ? WHERE id = 'obs-1'", (b'{"id": "obs-1"}',))
    conn.close()
    result = run_fsck(store_dir)
    assert result.exit_code == 1
    assert "index: the index holds a different entity for this file" in result.output

    fixed = run_fsck(store_dir, "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert "[fixed: index rebuilt from the files]" in fixed.output
    assert run_fsck(store_dir).exit_code == 0


def test_unreadable_index_is_rebuilt(store_dir):
    store = Store.open(store_dir)
    store.ensure_state()
    store.index_path.write_bytes(b"this is not a database" * 100)
    result = run_fsck(store_dir, "--fix")
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 0, result.output
    assert run_fsck(store_dir).exit_code == 0


# ---------------------------------------------------------------- retention


def test_capsules_naming_retired_observations_are_clean(tmp_path):
    from test_gc import retired_of, team_store

    from kindling.retention import gc

    b, sessions = team_store(tmp_path / ".kindling")
    gc(b.store, confirm=True)
    assert not any(b.store.path_for("observations", i).exists() for i in retired_of(sessions))
    report = fsck(b.store)
    assert report.ok, report.as_dict()
    assert run_fsck(b.store.root).exit_code == 0


def test_a_bad_retention_policy_or_record_is_a_finding_left_alone(tmp_path):
    root = tmp_path / ".kindling"
    store = Store.create(root)
    (root / "retention.json").write_text('{"keepDays": 0}')
    (root / "retired").mkdir()
    (root / "retired" / "0123456789abcdef.json").write_text('{"version": 1, "retired": [1]}')
    report = fsck(store, fix=True)
    assert [(p.path, p.check, p.fixed) for p in report.problems] == [
        ("retired/0123456789abcdef.json", "parse", None),
        ("retention.json", "invalid", None),
    ]
    assert report.problems[1].reason == (
        "retention policy: keepDays must be an integer from 1 to 3650"
    )
    assert (root / "retention.json").read_text() == '{"keepDays": 0}'
    assert run_fsck(root).exit_code == 1
