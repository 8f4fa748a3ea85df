"""Findings of a hostile review of hook and MCP input: odd input is kept, never dropped, and
the MCP server answers every message.

Each test is named after its finding. Hooks run as Claude Code runs them (a real process,
the payload on stdin); the MCP server runs as a client starts it (a real process on stdio),
driven line by line so that what a client library would refuse to send still gets sent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import run_kindling
from mcp_wire import Wire, nested, text_of

SESSION = "5b0e7c1d-2f3a-4b5c-8d9e-0a1b2c3d4e5f"
REPLACEMENT = "\ufffd"
TOO_DEEP = "[nested too deep]"


@pytest.fixture(autouse=True)
def no_claude_env(monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)


def hook(project: Path, event: str, data: bytes | str) -> str:
    """Run `kindling hook EVENT` in `project`; its stderr (exit status 0 whatever happened)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    result = run_kindling("hook", event, input=raw, cwd=project)
    assert result.returncode == 0
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    return stderr


def fields(project: Path, event: str, **more) -> dict:
    return {"session_id": SESSION, "cwd": str(project), "hook_event_name": event, **more}


def observations(project: Path) -> list[dict]:
    from kindling.memory import Memory

    with Memory(project / ".kindling") as memory:
        return memory.list("observations", limit=None)


def only_observation(project: Path, stderr: str) -> dict:
    assert "nothing recorded" not in stderr, stderr
    found = observations(project)
    assert len(found) == 1, (found, stderr)
    return found[0]


def bash_failure(project: Path, error: str) -> dict:
    return fields(
        project,
        "PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "make check"},
        error=error,
    )


def bash_success(project: Path, response) -> dict:
    return fields(
        project,
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "make check"},
        tool_response=response,
    )


# ---------------------------------------------------------------- hooks


def test_finding_odd_input_lone_surrogate_in_a_hook_payload_is_kept(project):
    # json.dumps writes a lone surrogate as the escape \ud800, as a buggy or hostile sender may.
    prompt = fields(project, "UserPromptSubmit", prompt="fix the \ud800 parser")
    stderr = hook(project, "UserPromptSubmit", json.dumps(prompt))
    kept = only_observation(project, stderr)
    assert kept["content"] == f"fix the {REPLACEMENT} parser"

    output = bash_success(project, {"stdout": "tests \udfff passed", "stderr": ""})
    stderr = hook(project, "PostToolUse", json.dumps(output))
    assert "nothing recorded" not in stderr, stderr
    command = [o for o in observations(project) if o["kind"] == "command"]
    assert len(command) == 1
    assert f"tests {REPLACEMENT} passed" in command[0]["content"]


def test_finding_odd_input_invalid_utf8_in_a_hook_payload_is_kept(project):
    raw = json.dumps(fields(project, "UserPromptSubmit", prompt="caf@ ok")).encode()
    stderr = hook(project, "UserPromptSubmit", raw.replace(b"@", b"\xe9"))
    assert only_observation(project, stderr)["content"] == f"caf{REPLACEMENT} ok"


@pytest.mark.parametrize("code", [str(10**30), "9" * 5_000], ids=["10**30", "5000 digits"])
def test_finding_odd_input_huge_exit_code_in_a_hook_payload_is_kept(project, code):
    stderr = hook(
        project, "PostToolUseFailure", json.dumps(bash_failure(project, f"Exit code {code}\nboom"))
    )
    kept = only_observation(project, stderr)
    assert kept["kind"] == "error"
    assert kept["content"] == f"Bash: make check -> exit {code}\nboom"
    # Out of the store's integer range: kept as its digits (text), never as a number.
    assert kept["provenance"]["exitCode"] == code


def test_finding_odd_input_5000_digit_integer_in_a_hook_payload_is_kept(project):
    digits = "9" * 5_000
    text = json.dumps(bash_success(project, {"stdout": "built", "stderr": "", "n": 0}))
    stderr = hook(project, "PostToolUse", text.replace('"n": 0', f'"n": {digits}, "m": -{digits}'))
    kept = only_observation(project, stderr)
    assert kept["content"] == "Bash: make check -> exit 0\nbuilt"
    response = kept["provenance"]["payload"]["tool_response"]
    assert isinstance(response["n"], str) and response["n"].startswith("999")
    assert isinstance(response["m"], str) and response["m"].startswith("-999")


@pytest.mark.parametrize("depth", [990, 5_000])
def test_finding_odd_input_deep_nesting_in_a_hook_payload_is_cut_not_refused(project, depth):
    text = json.dumps(bash_success(project, {"stdout": "built", "stderr": "", "deep": 0}))
    stderr = hook(project, "PostToolUse", text.replace('"deep": 0', f'"deep": {nested(depth)}'))
    kept = only_observation(project, stderr)
    assert kept["content"] == "Bash: make check -> exit 0\nbuilt"
    assert TOO_DEEP in json.dumps(kept["provenance"])


def test_finding_odd_input_out_of_range_floats_in_a_hook_payload_are_kept_as_text(project):
    text = json.dumps(bash_success(project, {"stdout": "built", "stderr": "", "a": 0, "b": 0}))
    stderr = hook(project, "PostToolUse", text.replace('"a": 0, "b": 0', '"a": 1e400, "b": NaN'))
    response = only_observation(project, stderr)["provenance"]["payload"]["tool_response"]
    assert (response["a"], response["b"]) == ("1e400", "NaN")


def test_finding_odd_input_deep_nesting_is_cut_at_one_depth_whatever_its_size():
    from kindling.agents.intake import MAX_DEPTH, loads

    tricky = '"a [ { \\" ] } string"'  # brackets and an escaped quote inside a string
    shallow = loads(f'{{"s": {tricky}, "deep": {nested(MAX_DEPTH + 5)}}}')
    huge = loads(f'{{"s": {tricky}, "deep": {nested(50_000)}}}')  # past json's own recursion
    assert shallow == huge
    assert huge["s"] == 'a [ { " ] } string'
    value, levels = huge["deep"], 1
    while isinstance(value, dict):
        value, levels = value["a"], levels + 1
    assert (value, levels) == (TOO_DEEP, MAX_DEPTH)
    with pytest.raises(ValueError):
        loads("[" * 50_000)  # never closed: not JSON, however it is read


# ---------------------------------------------------------------- the CLI


@pytest.mark.skipif(sys.platform == "win32", reason="argv bytes are a POSIX notion")
def test_finding_odd_input_lone_surrogate_in_cli_log_content_is_kept(project):
    # Python hands argv bytes that are not UTF-8 over as lone surrogates (surrogateescape).
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "kindling", "log", b"caf\xe9 latte"],
        cwd=project,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert only_observation(project, "")["content"] == f"caf{REPLACEMENT} latte"


# ---------------------------------------------------------------- MCP


@pytest.fixture
def wire(store_dir, tmp_path):
    pytest.importorskip("mcp")
    server = Wire(store_dir, tmp_path / "server-stderr.txt")
    yield server
    stderr = server.close()
    assert "Traceback" not in stderr, stderr


def stored_mcp(store_dir: Path, entity_id: str) -> dict:
    from kindling.memory import Memory

    with Memory(store_dir) as memory:
        return memory.get(entity_id).entity


def test_finding_mcp_lone_surrogate_in_arguments_gets_an_answer(wire, store_dir):
    result = wire.call("log", {"content": "lone \ud800 here", "scope": {"taskId": "t\udc00"}})
    assert result["isError"] is False, result
    entity = stored_mcp(store_dir, result["structuredContent"]["id"])
    assert entity["content"] == f"lone {REPLACEMENT} here"
    assert entity["scopeIds"]["taskId"] == f"t{REPLACEMENT}"
    found = wire.call("search", {"query": "lone \udbff"})
    assert found["isError"] is False, found
    assert wire.alive()


@pytest.mark.parametrize("depth", [200, 5_000])
def test_finding_mcp_deeply_nested_provenance_gets_an_answer(wire, store_dir, depth):
    line = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "log", '
        f'"arguments": {{"content": "deep provenance", "provenance": {nested(depth)}}}}}}}'
    )
    wire.send(line)
    found = wire.answer()
    assert found is not None, "no answer"
    assert found["id"] == 7 and found["result"]["isError"] is False, found
    entity = stored_mcp(store_dir, found["result"]["structuredContent"]["id"])
    assert TOO_DEEP in json.dumps(entity["provenance"])
    assert wire.alive()


# (tool, arguments, what the one-line error must say)
WRONG_ARGUMENTS = [
    ("recent", {"limit": "lots"}, "limit must be an integer from 1 to 200"),
    ("recent", {"limit": 0}, "limit must be an integer from 1 to 200"),
    ("recent", {"limit": 10**30}, "limit must be an integer from 1 to 200"),
    ("recent", {"type": "bogus"}, "type must be one of observations, capsules"),
    ("log", {"content": "x", "kind": "bogus"}, "kind must be one of tool_call, command"),
    ("log", {"content": "x", "scope": {"bogus": "x"}}, "scope has no field 'bogus'"),
    ("log", {"content": "x", "provenance": "text"}, "provenance must be a JSON object"),
    ("search", {}, "query is required"),
    ("search", {"query": ["a"]}, "query must be a string"),
    ("search", {"query": "x", "kinds": ["error", "nope"]}, "kinds[1] must be one of"),
    ("search", {"query": "x", "since": -1}, "since must be an integer from 0 to"),
    ("search", {"query": "x", "kinds": [1, 2, 3]}, "kinds[0], kinds[1], kinds[2] must be one of"),
    ("get", {"ids": []}, "ids must be a list of 1 to 50 strings"),
    (
        "capsule_close",
        {"capsule_id": "cap_1", "confidence": 2},
        "confidence must be a number from 0 to 1",
    ),
    (
        "pin",
        {"target_type": "capsule", "target_id": "x"},
        "target_type must be one of observation, summary",
    ),
    (
        "search",
        {"query": "x", "include_redacted": "maybe"},
        "include_redacted must be true or false",
    ),
]


def test_finding_mcp_wrong_argument_is_a_one_line_error_for_a_person(wire):
    # One server for every case (each costs a process start otherwise); all wrong ones reported.
    wrong = []
    for tool, arguments, expected in WRONG_ARGUMENTS:
        result = wire.call(tool, arguments)
        message = text_of(result)
        raw = [
            r
            for r in ("validation error", "pydantic", "http", "input_value", "type=")
            if r in message
        ]
        if (
            not result["isError"]
            or expected not in message
            or raw
            or "\n" in message
            or len(message) >= 400
        ):
            wrong.append(f"{tool} {arguments}: {message!r}")
    assert wrong == []


def test_finding_mcp_transport_answers_every_message_and_keeps_serving(wire):
    junk = [
        "this is not json",
        "[]",
        "42",
        '{"jsonrpc": "2.0", "id": 11}',
        '{"jsonrpc": "2.0", "id": 12, "method": "tools/\\ud800"}',
        '{"jsonrpc": "2.0", "id": "\\udc00", "method": "tools/list"}',
        '{"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": ' + nested(3_000) + "}",
        '{"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": 5}}',
        b'{"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {"name": "recent\xff"}}',
        '{"jsonrpc": "2.0", "id": ' + "9" * 5_000 + ', "method": "tools/list"}',
        "[" * 100_000,
    ]
    for line in junk:
        wire.send(line)
        found = wire.answer()
        assert found is not None, f"no answer to {line[:80]!r}"
        assert found.get("jsonrpc") == "2.0", found
        if "error" in found:
            message = found["error"]["message"]
            assert "\n" not in message and len(message) < 400, message
        assert wire.alive(), line[:80]
