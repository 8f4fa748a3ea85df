"""Red-team findings, one test (or a few) per finding, each named after it.

Every test here failed before its fix: a traceback, a hang (caught by a subprocess timeout),
a lost write or a leaked byte.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import signal
import subprocess
import tracemalloc
from pathlib import Path

import entities
import pytest
from click.testing import CliRunner
from conftest import run_kindling
from entities import bundle as make_bundle
from entities import observation

from kindling import canonical
from kindling.cli import cli
from kindling.errors import KindlingError, ValidationError
from kindling.memory import Memory
from kindling.store import Store, fanout

BIG = 2**63  # one past SQLite's largest integer
PAST_9999 = 10**15  # fits SQLite, but no calendar date (year ~33658)
HANG_TIMEOUT = 20  # seconds; a FIFO read blocks forever, so any finish within this is a pass


def obs(oid: str, content: str = "token expired at login", **fields) -> dict:
    return observation(
        oid, content, **{"kind": "error", "ts": 1750416064123, "sessionId": "s1", **fields}
    )


def plant(store_dir: Path, etype: str, entity: dict) -> Path:
    """Put a file in the store the way git would: no validation on the way in."""
    path = store_dir / "objects" / etype / fanout(entity["id"]) / f"{entity['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(canonical.encode(entity))
    return path


def clean_exit(result, codes=(0, 1, 2)) -> None:
    """Exit 0/1/2 and no exception escaping click (CliRunner keeps tracebacks out of output)."""
    assert result.exit_code in codes, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )


def cli_in(store_dir: Path, *args: str, input=None, env=None):
    return CliRunner().invoke(cli, ["--store", str(store_dir), *args], input=input, env=env)


def proc(store_dir: Path, *args: str, input: bytes | None = None, env=None):
    result = run_kindling(
        "--store", str(store_dir), *args, input=input, env=env, timeout=HANG_TIMEOUT
    )
    assert "Traceback" not in result.stderr.decode(errors="replace"), result.stderr
    return result


# ---------------------------------------------------------------- 1. out-of-range integers


@pytest.mark.parametrize("field,value", [("ts", BIG), ("ts", 2**64 - 1), ("ts", PAST_9999)])
def test_finding_01_out_of_range_timestamp_in_a_pulled_file_never_wedges_the_store(
    store_dir, field, value
):
    Memory(store_dir).log("a good observation")
    bad = plant(store_dir, "observations", obs("o-bad", **{field: value}))
    for args in (
        ["status"],
        ["search", "token"],
        ["search", "good"],
        ["list", "observations"],
        ["fsck"],
        ["fsck", "--fix"],
        ["reindex", "--full"],
        ["export"],
    ):
        result = cli_in(store_dir, *args)
        clean_exit(result)
    status = cli_in(store_dir, "status", "--json")
    assert status.exit_code == 0
    problems = json.loads(status.output)["problems"]
    assert [p["path"] for p in problems] == [str(bad)]
    fsck = cli_in(store_dir, "fsck", "--json")
    assert any(p["check"] == "invalid" for p in json.loads(fsck.output)["problems"])
    assert bad.exists(), "a file that does not validate is never removed"


def test_finding_01_out_of_range_pin_expiry_in_a_pulled_file_is_a_problem_file(store_dir):
    plant(store_dir, "observations", obs("o-1"))
    pin = {
        "id": "pin_x",
        "targetType": "observation",
        "targetId": "o-1",
        "reason": None,
        "createdAt": 1,
        "expiresAt": BIG,
        "scopeIds": {},
    }
    plant(store_dir, "pins", pin)
    for args in (["list", "pins"], ["search", "token"], ["status"], ["reindex", "--full"]):
        clean_exit(cli_in(store_dir, *args))
    assert len(json.loads(cli_in(store_dir, "status", "--json").output)["problems"]) == 1


def test_finding_01_out_of_range_numbers_are_refused_where_they_enter(store_dir, memory):
    assert cli_in(store_dir, "log", "x", "--ts", str(BIG)).exit_code == 2
    assert cli_in(store_dir, "log", "x", "--ts", str(PAST_9999)).exit_code == 2
    written = memory.log("pin me")
    oid = written.entity["id"]
    assert cli_in(store_dir, "pin", "observation", oid, "--ttl", str(BIG)).exit_code == 2
    with pytest.raises(ValidationError, match="year 9999"):
        memory.pin("observation", oid, ttl=BIG)  # as an MCP pin call makes it
    with pytest.raises(ValidationError):
        memory.log("x", ts=BIG)
    with pytest.raises(ValidationError):
        memory.log("x", provenance={"n": 2**64 - 1})
    result = cli_in(store_dir, "log", "x", env={"KINDLING_NOW": str(BIG)})
    clean_exit(result, (1,))
    assert "KINDLING_NOW" in result.output
    assert len(memory.list("observations", limit=None)) == 1


def test_finding_01_bundle_with_out_of_range_timestamp_is_refused_whole(store_dir, memory):
    bundle = make_bundle(observations=[obs("o-1", ts=BIG)])
    result = cli_in(store_dir, "import", "-", input=json.dumps(bundle))
    clean_exit(result, (1,))
    assert "nothing was imported" in result.output
    assert memory.list("observations") == []


def test_finding_01_far_future_timestamps_never_crash_list_search_or_session_start(tmp_path):
    project = tmp_path / "acme"
    project.mkdir()
    store_dir = Memory.init(project).store.root
    Memory(store_dir).log("login token expired", scope={"repoId": "acme"})
    # A file indexed before validation was bounded: its row carries a year-33658 time.
    plant(store_dir, "observations", obs("o-future", ts=PAST_9999, scopeIds={"repoId": "acme"}))
    for args in (["list", "observations"], ["search", "token"]):
        clean_exit(cli_in(store_dir, *args))
    result = session_start(project, "s2")
    assert result.returncode == 0
    assert "nothing recorded" not in result.stderr.decode()
    assert "login token expired" in result.stdout.decode()


def session_start(project: Path, session: str) -> subprocess.CompletedProcess:
    """Run the SessionStart hook in `project` as Claude Code would, under the hang timeout."""
    payload = {"session_id": session, "cwd": str(project), "hook_event_name": "SessionStart"}
    return run_kindling(
        "hook",
        "SessionStart",
        input=json.dumps(payload).encode(),
        cwd=project,
        timeout=HANG_TIMEOUT,
    )


def test_finding_01_time_formatting_never_raises():
    from kindling.agents.payload import when as _when
    from kindling.bundle.format import iso_utc
    from kindling.cli.format import entity_line, format_time
    from kindling.when import format_instant

    for value in (BIG, -BIG, PAST_9999, -1, 2**200):
        assert str(value)[:10] in format_time(value)
        assert _when(value)
        assert iso_utc(value)
    assert format_instant(0, utc=True) == "1970-01-01 00:00:00 +00:00"
    assert iso_utc(1750416064123) == "2025-06-20T10:41:04.123Z"
    assert "o-1" in entity_line("observations", obs("o-1", ts=BIG))


# ---------------------------------------------------------------- 4. FIFOs never hang


@pytest.fixture
def fifo_store(store_dir):
    """A store whose observation `o-fifo` and capsule `cap_fifo` are FIFOs."""
    for etype, eid in (("observations", "o-fifo"), ("capsules", "cap_fifo")):
        path = store_dir / "objects" / etype / fanout(eid) / f"{eid}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
    return store_dir


@pytest.mark.parametrize(
    "args",
    [
        ["show", "o-fifo"],
        ["forget", "o-fifo"],
        ["pin", "observation", "o-fifo"],
        ["log", "x", "--capsule", "cap_fifo"],
        ["capsule", "close", "cap_fifo"],
        ["list", "observations"],
        ["fsck"],
        ["fsck", "--fix"],
    ],
)
def test_finding_04_fifo_named_like_an_entity_file_never_hangs(fifo_store, args):
    result = proc(fifo_store, *args)
    assert result.returncode in (0, 1)


def test_finding_04_fifo_in_the_store_never_hangs_an_import(fifo_store):
    bundle = make_bundle(observations=[obs("o-fifo")])
    result = proc(fifo_store, "import", "-", input=json.dumps(bundle).encode())
    assert result.returncode in (0, 1)
    assert "o-fifo" in result.stdout.decode()  # skipped, and said so


def test_finding_04_fifo_given_as_the_bundle_file_never_hangs(store_dir, tmp_path):
    fifo = tmp_path / "bundle.json"
    os.mkfifo(fifo)
    result = proc(store_dir, "import", str(fifo))
    assert result.returncode == 1
    assert "not a regular file" in result.stderr.decode()


def test_finding_04_fifo_at_watch_lock_never_hangs_reads(store_dir):
    with Memory(store_dir) as memory:
        memory.log("token refresh")
    os.mkfifo(store_dir / "watch.lock")
    for args in (["search", "token"], ["list", "observations"], ["status"]):
        assert proc(store_dir, *args).returncode == 0


def test_finding_04_fifo_at_gitattributes_never_hangs_init(tmp_path):
    store = tmp_path / ".kindling"
    store.mkdir()
    os.mkfifo(store / ".gitattributes")
    result = run_kindling("--store", str(store), "init", timeout=HANG_TIMEOUT)
    assert result.returncode == 1
    assert "not a regular file" in result.stderr.decode()


def test_finding_04_fifo_at_claude_settings_never_hangs(tmp_path):
    from kindling.agents.claude_settings import install_claude_code_hooks

    (tmp_path / ".claude").mkdir()
    os.mkfifo(tmp_path / ".claude" / "settings.json")

    def hang(signum, frame):
        raise TimeoutError("reading .claude/settings.json blocked")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_TIMEOUT)
    try:
        with pytest.raises(KindlingError, match="not a regular file"):
            install_claude_code_hooks(tmp_path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_finding_04_fifo_at_git_config_or_hook_activity_never_hangs(tmp_path):
    project = tmp_path / "acme"
    (project / ".git").mkdir(parents=True)
    os.mkfifo(project / ".git" / "config")
    store_dir = Memory.init(project).store.root
    os.mkfifo(store_dir / "index.sqlite-hooks.json")
    assert proc(store_dir, "status").returncode == 0
    result = session_start(project, "s1")
    assert result.returncode == 0


# ---------------------------------------------------------------- 5. index damage recovery


def logged_then_damaged(store_dir, damage: str) -> None:
    """One observation logged, then the index damaged behind Kindling's back."""
    import sqlite3

    with Memory(store_dir) as memory:
        memory.log("the cache key ignores the tenant")
    conn = sqlite3.connect(Store(store_dir).index_path)
    conn.execute(damage)
    conn.commit()
    conn.close()


@pytest.mark.parametrize("damage", ["DROP TABLE files", "DROP TABLE meta", "DROP TABLE fts_data"])
def test_finding_05_reindex_full_repairs_what_its_hint_names(store_dir, damage):
    logged_then_damaged(store_dir, damage)
    broken = cli_in(store_dir, "search", "tenant")
    clean_exit(broken, (0, 1))
    if broken.exit_code == 1:
        assert "reindex --full" in broken.output
    clean_exit(cli_in(store_dir, "reindex", "--full"), (0,))
    found = cli_in(store_dir, "search", "tenant", "--json")
    assert found.exit_code == 0
    assert json.loads(found.output)["candidates"]


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE entities SET json = X'00'",
        "UPDATE entities SET json = 'garbage'",
        "UPDATE entities SET time = 'abc'",
    ],
)
def test_finding_05_bad_index_row_never_crashes_fsck(store_dir, damage):
    logged_then_damaged(store_dir, damage)
    clean_exit(cli_in(store_dir, "search", "tenant"), (0, 1))
    clean_exit(cli_in(store_dir, "list", "observations"), (0, 1))
    check = cli_in(store_dir, "fsck", "--json")
    clean_exit(check, (1,))
    assert any(p["check"] == "index" for p in json.loads(check.output)["problems"])
    fixed = cli_in(store_dir, "fsck", "--fix")
    clean_exit(fixed, (0,))
    clean_exit(cli_in(store_dir, "fsck"), (0,))
    assert "tenant" in cli_in(store_dir, "list", "observations").output


# ---------------------------------------------------------------- 6. resolve


@pytest.fixture
def git_repo(tmp_path, monkeypatch):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    return top


def git(top: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=top, capture_output=True, text=True)
    assert done.returncode == 0 or not check, done.stderr
    return done


CAP = entities.capsule(
    "cap_shared",
    intent="fix the login bug",
    openedAt=1750416000000,
    sessionId="s1",
    observationIds=["o-base"],
)


def conflicted_capsule(top: Path) -> Store:
    """Both branches append to cap_shared; merged without the driver, so git leaves markers."""
    store = Store.create(top / ".kindling")
    store.write("observations", obs("o-base"))
    store.write("capsules", CAP)
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "base")
    git(top, "checkout", "-q", "-b", "b")
    store.write("observations", obs("o-b"))
    store.write("capsules", {**CAP, "observationIds": ["o-base", "o-b"]})
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "b")
    git(top, "checkout", "-q", "main")
    store.write("observations", obs("o-a"))
    store.write("capsules", {**CAP, "observationIds": ["o-base", "o-a"]})
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "a")
    assert git(top, "merge", "--no-edit", "b", check=False).returncode != 0
    return store


def test_finding_06_resolve_keeps_ids_appended_in_the_working_tree(git_repo):
    store = conflicted_capsule(git_repo)
    path = store.path_for("capsules", "cap_shared")
    git(git_repo, "checkout", "--ours", "--", str(path))  # the file parses again
    with Memory(store.root) as memory:
        late = memory.log("appended while the merge was pending", capsule_id="cap_shared")
    late_id = late.entity["id"]
    result = run_kindling("--store", str(store.root), "resolve", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    capsule = canonical.decode(path.read_bytes())
    assert sorted(capsule["observationIds"]) == sorted(["o-base", "o-a", "o-b", late_id])


def test_finding_06_resolve_leaves_a_session_one_open_session_capsule(git_repo):
    store = conflicted_capsule(git_repo)
    with Memory(store.root) as memory:
        # The conflicted capsule cannot be read, so the session opens another.
        newer = memory.open_capsule("carry on", scope={"sessionId": "s1"}).entity["id"]
    result = run_kindling("--store", str(store.root), "resolve", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    with Memory(store.root) as memory:
        open_ones = [
            c["id"]
            for c in memory.list("capsules", limit=None)
            if c["status"] == "open" and c["scopeIds"].get("sessionId") == "s1"
        ]
        assert open_ones == [newer]
        resolved = memory.get("cap_shared").entity
    assert resolved["observationIds"] == ["o-base", "o-a", "o-b"]
    assert resolved["status"] == "closed"


# ---------------------------------------------------------------- 7. symlinks


def test_finding_07_no_write_goes_through_a_symlinked_fanout_folder(store_dir, tmp_path, memory):
    outside = tmp_path / "outside"
    outside.mkdir()
    # Point the fan-out folder of the next id at a folder outside the store.
    import kindling.model as model

    ident = model.new_id("observations")
    bucket = store_dir / "objects" / "observations" / fanout(ident)
    bucket.symlink_to(outside, target_is_directory=True)
    with pytest.raises(KindlingError, match="symlink"):
        memory.store.write("observations", obs(ident))
    assert list(outside.iterdir()) == []
    report = memory.fsck()
    assert any("symlink" in p.reason for p in report.problems)
    assert not report.ok


def test_finding_07_show_refuses_a_symlinked_entity_file(store_dir, tmp_path, memory):
    secret = tmp_path / "secret.json"
    secret.write_bytes(canonical.encode(obs("o-link", content="outside the store")))
    path = store_dir / "objects" / "observations" / fanout("o-link") / "o-link.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(secret)
    result = cli_in(store_dir, "show", "o-link")
    clean_exit(result, (1,))
    assert "outside the store" not in result.output
    with pytest.raises(KindlingError):
        memory.get("o-link")  # what MCP show calls
    assert any(p.check == "stray" for p in memory.fsck().problems)


# ---------------------------------------------------------------- 8. fsck --fix moves


def test_finding_08_fsck_fix_never_reports_its_own_move_as_a_duplicate(store_dir):
    entity = obs("o-moved")
    right = Store(store_dir).path_for("observations", "o-moved")
    # Misplaced into a bucket that sorts before the right one, so the walk meets the move.
    wrong = store_dir / "objects" / "observations" / "00" / "o-moved.json"
    assert right.parent.name != "00"
    wrong.parent.mkdir(parents=True)
    wrong.write_bytes(canonical.encode(entity))
    right.parent.mkdir(parents=True)  # the right bucket exists (other ids live there)
    fixed = cli_in(store_dir, "fsck", "--fix", "--json")
    report = json.loads(fixed.output)
    assert [p["check"] for p in report["problems"]] == ["misplaced"]
    assert report["ok"] is True
    assert right.exists() and not wrong.exists()
    assert json.loads(cli_in(store_dir, "fsck", "--json").output)["problems"] == []


# ---------------------------------------------------------------- 9. forget leaves no trace


def test_finding_09_forget_leaves_no_trace_in_the_index_files(store_dir):
    token = b"zq7xk9wv3"  # survives the porter stemmer unchanged
    with Memory(store_dir) as memory:
        for i in range(20):
            memory.log(f"filler note {i} about caching")
        oid = memory.log(f"the launch codeword is {token.decode()} indeed").entity["id"]
        memory.log("one more after it")
        assert memory.search(token.decode())["candidates"]
        memory.forget(oid)
        assert not memory.search(token.decode())["candidates"]
        index_files = list(Store(store_dir).index_path.parent.glob("index.sqlite*"))
        assert index_files
        for path in index_files:
            assert token not in path.read_bytes(), path.name


# ---------------------------------------------------------------- 11. partial imports


def test_finding_11_a_write_error_mid_import_reports_what_was_written(store_dir, monkeypatch):
    entities = [obs(f"o-{i}", content=f"imported note {i}") for i in range(5)]
    bundle = make_bundle(observations=entities)
    real_write = Store.write_checked
    calls: list[str] = []

    def failing_write(self, path, entity, **kw):
        if len(calls) == 2:  # the disk fills up on the third write of each run
            raise OSError(errno.ENOSPC, "No space left on device", "somewhere")
        calls.append(entity["id"])
        return real_write(self, path, entity, **kw)

    monkeypatch.setattr(Store, "write_checked", failing_write)
    text = cli_in(store_dir, "import", "-", input=json.dumps(bundle))
    clean_exit(text, (1,))
    assert "only these were written" in text.stdout
    assert "observation o-0 (added)" in text.stdout and "observation o-1 (added)" in text.stdout
    assert "o-2" not in text.stdout
    assert "No space left on device" in text.stderr

    calls.clear()  # a rerun: o-0 and o-1 are there already, two more fit before the disk fills
    result = cli_in(store_dir, "import", "-", "--json", input=json.dumps(bundle))
    clean_exit(result, (1,))
    report = json.loads(result.stdout)
    assert [w["id"] for w in report["writtenIds"]] == calls == ["o-2", "o-3"]
    assert report["counts"]["observations"]["added"] == 2
    assert "No space left" in report["stopped"]

    monkeypatch.setattr(Store, "write_checked", real_write)
    again = cli_in(store_dir, "import", "-", "--json", input=json.dumps(bundle))
    clean_exit(again, (0,))
    counts = json.loads(again.stdout)["counts"]["observations"]
    assert counts["added"] == 1 and counts["unchanged"] == 4
    with Memory(store_dir) as memory:
        assert len(memory.list("observations", limit=None)) == 5


# ---------------------------------------------------------------- 12. terminal escapes


HOSTILE = "ok \x1b]52;c;cm0gLXJmIH4=\x07 \x1b[2J\x1b]8;;http://x\x07link\x1b]8;;\x07 \x9b31m \u202e"


def test_finding_12_control_characters_are_escaped_in_human_output(store_dir):
    with Memory(store_dir) as memory:
        oid = memory.log(HOSTILE, scope={"sessionId": "s\x1b[31m1"}).entity["id"]
        memory.open_capsule("intent \x1b[2J", scope={"sessionId": "s2"})
    for args in (
        ["list", "observations"],
        ["list", "capsules"],
        ["search", "ok"],
        ["show", oid],
        ["status"],
    ):
        result = cli_in(store_dir, *args)
        assert result.exit_code == 0, result.output
        for bad in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert bad not in result.output, (args, bad)
    assert "\\x1b" in cli_in(store_dir, "list", "observations").output
    exact = json.loads(cli_in(store_dir, "show", oid, "--json").output)
    assert exact["content"] == HOSTILE


# ---------------------------------------------------------------- 13. option ranges


@pytest.mark.parametrize(
    "args",
    [
        ["search", "x", "--max", str(BIG)],
        ["search", "x", "--max", str(2**100)],
        ["search", "x", "--since", str(BIG)],
        ["search", "x", "--max-tokens", str(BIG)],
        ["list", "observations", "--limit", str(2**64)],
        ["log", "x", "--ts", str(BIG)],
        ["capsule", "close", "cap_x", "--summary", "s", "--confidence", "nan"],
    ],
)
def test_finding_13_out_of_range_options_are_usage_errors(store_dir, args):
    result = cli_in(store_dir, *args)
    clean_exit(result, (2,))
    assert "Error" in result.output


def test_finding_13_out_of_range_since_through_the_api_is_a_validation_error(memory):
    for value in (BIG, -1, PAST_9999):
        with pytest.raises(ValidationError, match="since"):
            memory.search("x", since=value)  # as MCP search passes it
    with pytest.raises(ValidationError):
        memory.search("x", max_results=BIG)


# ---------------------------------------------------------------- 14. odds and ends


def test_finding_14_gzip_bomb_is_refused_at_the_cap(monkeypatch):
    from kindling.bundle import format as bundle_format

    monkeypatch.setattr(bundle_format, "MAX_BUNDLE_BYTES", 1 << 20, raising=False)
    bomb = gzip.compress(b" " * (8 << 20), 9)
    with pytest.raises(ValidationError, match="over"):
        bundle_format.decode_bundle(bomb)


def test_finding_14_gzip_bundles_decompress_holding_the_output_once():
    from kindling.bundle import format as bundle_format

    size = 24 << 20
    data = gzip.compress(b" " * size + b"{}", 1)
    tracemalloc.start()
    try:
        out = bundle_format.gunzip(data, 1 << 30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert bytes(out[-2:]) == b"{}"
    assert peak < 1.7 * size  # gzip.decompress holds the output twice


def test_finding_14_a_misplaced_observation_search_finds_can_be_forgotten(store_dir):
    wrong = store_dir / "objects" / "observations" / "00" / "o-stray.json"
    wrong.parent.mkdir(parents=True)
    wrong.write_bytes(canonical.encode(obs("o-stray", content="stray secret zq8tt5")))
    with Memory(store_dir) as memory:
        assert memory.search("zq8tt5")["candidates"]
        forgotten = memory.forget("o-stray")
        assert forgotten.entity["redacted"] is True
        assert not memory.search("zq8tt5")["candidates"]
        assert memory.get("o-stray").entity["redacted"] is True
    assert not wrong.exists()
    leftovers = [p for p in (store_dir / "objects").rglob("*.json") if b"zq8tt5" in p.read_bytes()]
    assert leftovers == []


def test_finding_14_export_refuses_a_missing_output_folder(store_dir, tmp_path):
    target = tmp_path / "no" / "such" / "bundle.json"
    result = cli_in(store_dir, "export", "-o", str(target))
    clean_exit(result, (1,))
    assert "does not exist" in result.output
    assert not (tmp_path / "no").exists()
