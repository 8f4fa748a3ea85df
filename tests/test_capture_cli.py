"""The commands that write memory, run as a user runs them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kindling import canonical
from kindling.cli import cli
from kindling.store import Store

NOW = 1781951400000


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", str(NOW))


def entity_path(store: Path, etype: str, entity_id: str) -> Path:
    xx = hashlib.sha256(entity_id.encode()).hexdigest()[:2]
    return store / "objects" / etype / xx / f"{entity_id}.json"


def files(store: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(store)): p.read_bytes()
        for p in sorted((store / "objects").rglob("*.json"))
    }


def ok(result) -> str:
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def fails(result, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    # An unexpected exception would also exit 1; only a handled error is a SystemExit.
    assert isinstance(result.exception, SystemExit), result.exception
    if code == 1:
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    return result.stderr


# ------------------------------------------------------------------ init


def test_init_creates_exactly_the_store_path(tmp_path):
    target = tmp_path / "mem"
    result = CliRunner().invoke(cli, ["--store", str(target), "init"])
    assert ok(result) == f"Kindling store ready at {target}\n"
    assert (target / "config.json").is_file() and (target / "objects" / "pins").is_dir()
    before = files(target)
    ok(CliRunner().invoke(cli, ["--store", str(target), "init"]))
    assert files(target) == before


def test_init_path_argument_makes_dot_kindling(tmp_path):
    ok(CliRunner().invoke(cli, ["init", str(tmp_path / "proj")]))
    assert (tmp_path / "proj" / ".kindling" / "config.json").is_file()


def test_init_in_a_git_repo_registers_the_merge_driver_and_claude_hooks(tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = CliRunner().invoke(cli, ["init", str(tmp_path), "--claude-code"])
    out = ok(result)
    assert "Registered the Kindling merge driver" in out
    assert "merge=kindling" in (tmp_path / ".kindling" / ".gitattributes").read_text()
    driver = subprocess.run(
        ["git", "config", "--get", "merge.kindling.driver"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout
    assert driver.strip() == "kindling merge-driver %O %A %B"
    for key in ("rebase.autoStash", "merge.autoStash"):  # a pull mid-session keeps hook writes
        got = subprocess.run(["git", "config", "--get", key], cwd=tmp_path, capture_output=True)
        assert got.stdout.strip() == b"true"
    assert "autoStash" in out
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert "kindling hook SessionStart" in json.dumps(settings["hooks"]["SessionStart"])
    again = ok(CliRunner().invoke(cli, ["init", str(tmp_path), "--claude-code"]))
    assert "Registered" not in again and "autoStash" not in again
    assert json.loads((tmp_path / ".claude" / "settings.json").read_text()) == settings


def test_commands_without_a_store_say_to_init(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = fails(CliRunner().invoke(cli, ["log", "x"]))
    assert err.startswith("Error: no Kindling store found") and "kindling init" in err


# ------------------------------------------------------------------ log


def test_log_prints_the_id_and_writes_canonical_bytes(run, store_dir):
    obs_id = ok(
        run(
            "log",
            "JWT validation failed: token expired",
            "--kind",
            "error",
            "--session",
            "s1",
            "--repo",
            "./my-project",
            "--provenance",
            '{"stack": "at validateToken.ts:42"}',
        )
    ).strip()
    path = entity_path(store_dir, "observations", obs_id)
    expected = {
        "id": obs_id,
        "kind": "error",
        "content": "JWT validation failed: token expired",
        "provenance": {"stack": "at validateToken.ts:42"},
        "ts": NOW,
        "scopeIds": {"sessionId": "s1", "repoId": "my-project"},
        "redacted": False,
    }
    assert path.read_bytes() == canonical.encode(expected)
    assert ok(run("show", obs_id, "--json")).encode() == path.read_bytes()


def test_log_json_prints_the_entity_exactly_as_stored(run, store_dir):
    out = ok(run("log", "hello", "--ts", "5", "--json"))
    entity = json.loads(out)
    assert out.encode() == entity_path(store_dir, "observations", entity["id"]).read_bytes()
    assert entity["ts"] == 5 and entity["kind"] == "message"


def test_log_reads_stdin_with_dash(run):
    obs_id = ok(run("log", "-", "--kind", "file_diff", input="--- a\n+++ b\n")).strip()
    assert json.loads(ok(run("show", obs_id, "--json")))["content"] == "--- a\n+++ b\n"


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["log", "x", "--provenance", "{bad"], 1, "Error: --provenance is not valid JSON"),
        (["log", "x", "--provenance", "[1]"], 1, "Error: --provenance must be a JSON object"),
        (["log", "   "], 1, "Error: content must be a non-empty string"),
        (["log", "x", "--session", ""], 1, "Error: scope.sessionId must be a non-empty string"),
        (["log", "x", "--capsule", "../../etc"], 1, "Error: invalid id '../../etc'"),
        (["log", "x", "--capsule", "cap_missing"], 1, "Error: no capsule with id or prefix"),
        (["log", "x", "--kind", "bogus"], 2, "Invalid value for '--kind'"),
        (["log", "x", "--ts", "-1"], 2, "Invalid value for '--ts'"),
        (["log"], 2, "Missing argument 'CONTENT'"),
    ],
)
def test_log_rejects_bad_input_and_writes_nothing(run, store_dir, args, code, message):
    err = fails(run(*args), code)
    assert message in err
    assert files(store_dir) == {}


def test_secrets_are_masked_before_writing(run):
    result = run(
        "log",
        "deploy with api_key=abc123secretvalue",
        "--provenance",
        '{"env": "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx"}',
        "--json",
    )
    entity = json.loads(ok(result))
    assert "abc123secretvalue" not in result.stdout and "sk-abcdef" not in result.stdout
    assert "[REDACTED]" in entity["content"] and "[REDACTED]" in entity["provenance"]["env"]
    assert result.stderr == "Masked 2 secrets before writing.\n"


# ------------------------------------------------------------------ capsules


def test_log_appends_to_the_sessions_open_capsule(run, store_dir):
    cap = ok(run("capsule", "open", "--intent", "fix login", "--session", "s1")).strip()
    first = ok(run("log", "one", "--session", "s1")).strip()
    ok(run("log", "elsewhere", "--session", "s2"))
    second = ok(run("log", "two", "--capsule", cap[:8])).strip()
    capsule = json.loads(entity_path(store_dir, "capsules", cap).read_bytes())
    assert capsule["observationIds"] == [first, second]


def test_one_open_session_capsule_per_session(run, store_dir):
    cap = ok(run("capsule", "open", "--intent", "a", "--session", "s1")).strip()
    err = fails(run("capsule", "open", "--intent", "b", "--session", "s1"))
    assert err == (
        f"Error: session 's1' already has an open session capsule {cap}; close it first\n"
    )
    ok(run("capsule", "open", "--intent", "node", "--type", "pocketflow_node", "--session", "s1"))


def test_close_with_summary_and_evidence(run, store_dir):
    cap = ok(
        run("capsule", "open", "--intent", "fix login", "--session", "s1", "--repo", "acme")
    ).strip()
    obs = ok(run("log", "root cause found", "--session", "s1")).strip()
    capsule = json.loads(
        ok(
            run(
                "capsule",
                "close",
                cap,
                "--summary",
                "Fixed it",
                "--confidence",
                "0.8",
                "--evidence",
                obs[:6],
                "--json",
            )
        )
    )
    summary_id = capsule["summaryId"]
    assert capsule["status"] == "closed" and capsule["closedAt"] == NOW
    summary = json.loads(entity_path(store_dir, "summaries", summary_id).read_bytes())
    assert summary == {
        "id": summary_id,
        "content": "Fixed it",
        "confidence": 0.8,
        "evidenceRefs": [obs],
        "capsuleId": cap,
        "ts": NOW,
        "scopeIds": {"sessionId": "s1", "repoId": "acme"},
    }
    assert "is already closed" in fails(run("capsule", "close", cap))
    before = files(store_dir)
    assert "is closed; nothing was logged" in fails(run("log", "late", "--capsule", cap))
    assert files(store_dir) == before


def test_close_refuses_unknown_capsule_and_missing_evidence(run, store_dir):
    assert "no capsule with id or prefix 'cap_nope'" in fails(run("capsule", "close", "cap_nope"))
    cap = ok(run("capsule", "open", "--intent", "x")).strip()
    before = files(store_dir)
    err = fails(run("capsule", "close", cap, "--summary", "s", "--evidence", "missing-obs"))
    assert "no observation with id or prefix 'missing-obs'" in err
    assert files(store_dir) == before
    assert "Invalid value for '--confidence'" in fails(
        run("capsule", "close", cap, "--confidence", "1.5"), 2
    )


# ------------------------------------------------------------------ pins, forget


def test_pin_defaults_scope_to_target_and_sets_expiry(run, store_dir):
    obs = ok(run("log", "root cause", "--session", "s1", "--repo", "r")).strip()
    pin = json.loads(
        ok(run("pin", "observation", obs, "--note", "keep handy", "--ttl", "60000", "--json"))
    )
    assert pin["targetId"] == obs and pin["reason"] == "keep handy"
    assert pin["createdAt"] == NOW and pin["expiresAt"] == NOW + 60000
    assert pin["scopeIds"] == {"sessionId": "s1", "repoId": "r"}
    bare = json.loads(ok(run("pin", "observation", obs, "--session", "s9", "--json")))
    assert bare["reason"] is None and bare["expiresAt"] is None
    assert bare["scopeIds"] == {"sessionId": "s9"}


def test_pin_target_must_exist_with_the_right_type(run, store_dir):
    obs = ok(run("log", "x")).strip()
    assert "no summary with id" in fails(run("pin", "summary", obs))
    assert "no observation with id or prefix" in fails(run("pin", "observation", "abcdef99"))
    assert files(store_dir).keys() == {
        str(entity_path(store_dir, "observations", obs).relative_to(store_dir))
    }


def test_pin_note_must_not_be_empty(run, store_dir):
    obs = ok(run("log", "x")).strip()
    assert "note must be a non-empty string" in fails(run("pin", "observation", obs, "--note", " "))
    assert not (store_dir / "objects" / "pins").exists() or not list(
        (store_dir / "objects" / "pins").rglob("*.json")
    )


def test_unpin_removes_the_file(run, store_dir):
    obs = ok(run("log", "x")).strip()
    pin = ok(run("pin", "observation", obs)).strip()
    assert entity_path(store_dir, "pins", pin).exists()
    assert ok(run("unpin", pin)).strip() == pin
    assert not entity_path(store_dir, "pins", pin).exists()
    assert "no pin with id" in fails(run("unpin", pin))


def test_forget_keeps_the_record_and_drops_the_content(run, store_dir):
    obs = ok(run("log", "password is hunter2", "--provenance", '{"cmd": "login"}')).strip()
    forgotten = json.loads(ok(run("forget", obs, "--json")))
    assert forgotten["content"] == "[redacted]"
    assert forgotten["provenance"] == {} and forgotten["redacted"] is True
    path = entity_path(store_dir, "observations", obs)
    before = path.read_bytes()
    assert ok(run("forget", obs)).strip() == obs
    assert path.read_bytes() == before
    assert b"hunter2" not in before


# ------------------------------------------------------------------ show, list, status


def test_show_by_prefix_and_ambiguous_prefix(run, store_dir):
    store = Store.open(store_dir)
    base = {
        "kind": "message",
        "content": "c",
        "provenance": {},
        "ts": 1,
        "scopeIds": {},
        "redacted": False,
    }
    store.write("observations", {**base, "id": "abcdef01-x"})
    store.write("observations", {**base, "id": "abcdef02-y"})
    out = ok(run("show", "abcdef01"))
    assert out.startswith("observation abcdef01-x\nPath: ")
    assert str(entity_path(store_dir, "observations", "abcdef01-x")) in out
    err = fails(run("show", "abcdef"))
    assert "ambiguous" in err and "abcdef01-x" in err and "abcdef02-y" in err
    assert "prefixes need 6+ characters" in fails(run("show", "abc"))


def test_list_newest_first_with_filters_and_expired_pins(run, monkeypatch):
    for i, kind in enumerate(["message", "error", "command", "error"]):
        ok(run("log", f"entry {i}", "--kind", kind, "--ts", str(1000 + i), "--session", "s1"))
    out = ok(run("list", "observations", "--kind", "error"))
    lines = out.splitlines()
    assert len(lines) == 2 and "entry 3" in lines[0] and "entry 1" in lines[1]
    assert len(ok(run("list", "observations", "--limit", "3")).splitlines()) == 3
    items = json.loads(ok(run("list", "observations", "--session", "s1", "--json")))
    assert [o["content"] for o in items] == ["entry 3", "entry 2", "entry 1", "entry 0"]
    obs = items[0]["id"]
    ok(run("pin", "observation", obs, "--ttl", "10"))
    monkeypatch.setenv("KINDLING_NOW", str(NOW + 10))
    assert ok(run("list", "pins")) == "No pins.\n"
    assert len(json.loads(ok(run("list", "pins", "--all", "--json")))) == 1
    assert "--kind applies to observations only" in fails(run("list", "pins", "--kind", "error"), 2)


def test_status_counts(run, store_dir):
    cap = ok(run("capsule", "open", "--intent", "work", "--session", "s1")).strip()
    obs = ok(run("log", "a", "--session", "s1")).strip()
    ok(run("log", "b"))
    ok(run("forget", obs))
    info = json.loads(ok(run("status", "--json")))
    assert info["counts"] == {"observations": 2, "capsules": 1, "summaries": 0, "pins": 0}
    assert info["redacted"] == 1
    assert [c["id"] for c in info["openCapsules"]] == [cap]
    assert info["store"] == str(store_dir) and info["problems"] == []
    text = ok(run("status"))
    assert "Observations: 2 (1 redacted)" in text and "Capsules: 1 (1 open)" in text


def test_a_reader_that_goes_away_gets_no_error(run, store_dir):
    import subprocess
    import sys

    # More output than a pipe buffer holds, so the writer is still writing when the reader goes.
    store = Store.open(store_dir)
    for i in range(1000):
        store.write(
            "observations",
            {
                "id": f"obs-{i:04d}",
                "kind": "message",
                "content": "x " * 50,
                "provenance": {},
                "ts": i,
                "scopeIds": {},
                "redacted": False,
            },
            durable=False,  # fixture data: no fsyncs needed
        )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kindling",
            "--store",
            str(store_dir),
            "list",
            "observations",
            "--limit",
            "1000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline().startswith(b"obs-0999")
    proc.stdout.close()  # as `| head -1` does
    assert proc.wait(timeout=30) == 1
    assert proc.stderr.read() == b""
