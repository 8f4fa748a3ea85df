"""`kindling hook EVENT`: Claude Code payloads in, observations and the context block out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_kindling

from kindling.agents.hooks import record_for as capture
from kindling.agents.payload import truncate
from kindling.agents.records import MAX_TOOL_OUTPUT_CHARS

SESSION = "3f1c2a7e-8b9d-4c0e-a1f2-0123456789ab"


@pytest.fixture(autouse=True)
def no_claude_env(monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)


def payload(event: str, project: Path, session: str = SESSION, **fields) -> dict:
    """The common fields Claude Code sends with every hook, plus the event's own."""
    return {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-acme-api/{session}.jsonl",
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def bash(project, command, stdout, stderr="", **kw):
    return payload(
        "PostToolUse",
        project,
        tool_name="Bash",
        tool_input={"command": command, "description": "Run it", "timeout": 120000},
        tool_response={"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False},
        tool_use_id="toolu_01ABCdef",
        **kw,
    )


def edit(project):
    path = str(project / "src" / "middleware" / "validateToken.ts")
    return payload(
        "PostToolUse",
        project,
        tool_name="Edit",
        tool_input={
            "file_path": path,
            "old_string": "payload.exp < Date.now()",
            "new_string": "payload.exp < Math.floor(Date.now() / 1000)",
            "replace_all": False,
        },
        tool_response={
            "filePath": path,
            "oldString": "payload.exp < Date.now()",
            "newString": "payload.exp < Math.floor(Date.now() / 1000)",
            "originalFile": "...",
            "userModified": False,
            "replaceAll": False,
            "structuredPatch": [
                {
                    "oldStart": 40,
                    "oldLines": 3,
                    "newStart": 40,
                    "newLines": 3,
                    "lines": [
                        "   // check expiry",
                        "-  if (payload.exp < Date.now()) {",
                        "+  if (payload.exp < Math.floor(Date.now() / 1000)) {",
                        "   }",
                    ],
                }
            ],
        },
        tool_use_id="toolu_02",
    )


def hook(event: str, body, cwd: Path, store: Path | None = None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    args = (["--store", str(store)] if store else []) + ["hook", event]
    return run_kindling(*args, input=data, cwd=cwd)


def stored(project: Path, entity_type: str) -> list[dict]:
    from kindling.memory import Memory

    with Memory(project / ".kindling") as memory:
        return memory.list(entity_type, limit=None)


# ---------------------------------------------------------------- payload -> observation


def test_bash_becomes_a_command(tmp_path):
    found = capture("PostToolUse", bash(tmp_path, "npm test -- auth", "42 passed\n", "warn: x"))
    assert found.kind == "command"
    assert found.content == "Bash: npm test -- auth -> exit 0\n42 passed\n[stderr]\nwarn: x"
    assert found.provenance["tool"] == "Bash"
    assert found.provenance["command"] == "npm test -- auth"
    assert found.provenance["subject"] == "Bash: npm test -- auth"
    # The output is the content; provenance keeps only the rest of the response.
    assert "stdout" not in found.provenance["payload"]["tool_response"]
    assert found.provenance["toolUseId"] == "toolu_01ABCdef"


def test_edit_becomes_a_file_diff_with_a_relative_path(tmp_path):
    found = capture("PostToolUse", edit(tmp_path))
    assert found.kind == "file_diff"
    assert found.provenance["file"] == "src/middleware/validateToken.ts"
    assert found.content.splitlines()[:3] == [
        "--- a/src/middleware/validateToken.ts",
        "+++ b/src/middleware/validateToken.ts",
        "@@ -40,3 +40,3 @@",
    ]
    assert "+  if (payload.exp < Math.floor(Date.now() / 1000)) {" in found.content


def test_edit_without_a_patch_is_diffed_from_its_strings(tmp_path):
    body = edit(tmp_path)
    del body["tool_response"]["structuredPatch"]
    found = capture("PostToolUse", body)
    assert "-payload.exp < Date.now()" in found.content
    assert "+payload.exp < Math.floor(Date.now() / 1000)" in found.content


def test_write_of_a_new_file_is_a_diff_from_nothing(tmp_path):
    path = str(tmp_path / "notes.md")
    body = payload(
        "PostToolUse",
        tmp_path,
        tool_name="Write",
        tool_input={"file_path": path, "content": "one\ntwo\n"},
        tool_response={
            "type": "create",
            "filePath": path,
            "content": "one\ntwo\n",
            "structuredPatch": [],
        },
    )
    found = capture("PostToolUse", body)
    assert found.kind == "file_diff"
    assert found.content == "--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1,2 @@\n+one\n+two"


def test_other_tools_are_tool_calls_and_reads_are_not_copied(tmp_path):
    grep = payload(
        "PostToolUse",
        tmp_path,
        tool_name="Grep",
        tool_input={"pattern": "Date.now", "path": "src"},
        tool_response={"mode": "files_with_matches", "filenames": ["src/a.ts"]},
    )
    found = capture("PostToolUse", grep)
    assert found.kind == "tool_call" and found.content.startswith("Grep: Date.now\n")
    assert "src/a.ts" in found.content
    read = payload(
        "PostToolUse",
        tmp_path,
        tool_name="Read",
        tool_input={"file_path": "/x/secret.ts"},
        tool_response={"type": "text", "file": {"content": "x" * 50_000}},
    )
    # The path, the lines read and a short head of them: the file is in the repository.
    assert capture("PostToolUse", read).content == "Read: /x/secret.ts\n" + "x" * 160
    inside = dict(read, tool_input={"file_path": str(tmp_path / "src" / "a.ts")})
    assert capture("PostToolUse", inside).content.startswith("Read: src/a.ts\n")  # relative


def test_failure_becomes_an_error(tmp_path):
    body = payload(
        "PostToolUseFailure",
        tmp_path,
        tool_name="Bash",
        tool_input={"command": "npm test", "description": "Run tests"},
        tool_use_id="toolu_03",
        error="Command exited with non-zero status code 1",
        is_interrupt=False,
    )
    found = capture("PostToolUseFailure", body)
    assert found.kind == "error"
    assert found.content == "Bash: npm test -> exit 1\nCommand exited with non-zero status code 1"
    assert found.provenance["exitCode"] == 1


def test_long_output_is_cut_with_a_visible_notice(tmp_path):
    stdout = "".join(f"line {i}\n" for i in range(20_000))
    found = capture("PostToolUse", bash(tmp_path, "cat big.log", stdout))
    assert len(found.content) < MAX_TOOL_OUTPUT_CHARS + 200
    assert "[... kindling cut" in found.content
    assert found.content.rstrip().endswith("line 19999")  # the tail, where errors are, stays
    assert found.provenance["truncated"] is True
    text, cut = truncate("short", 10)
    assert (text, cut) == ("short", False)


def test_events_that_record_nothing(tmp_path):
    own = payload(
        "PostToolUse",
        tmp_path,
        tool_name="mcp__kindling__log",
        tool_input={"content": "x"},
        tool_response={"id": "abc"},
    )
    assert capture("PostToolUse", own) is None
    assert capture("Stop", payload("Stop", tmp_path, stop_hook_active=False)) is None
    assert capture("UserPromptSubmit", payload("UserPromptSubmit", tmp_path, prompt="  ")) is None
    assert capture("SessionEnd", payload("SessionEnd", tmp_path, reason="other")) is None


# ---------------------------------------------------------------- a session, as processes


def test_a_whole_session(project, tmp_path):
    # The hook runs from elsewhere: the store is found from the payload's cwd.
    start = hook(
        "SessionStart",
        payload("SessionStart", project, source="startup", model="claude-sonnet-4-5-20250929"),
        tmp_path,
    )
    assert start.returncode == 0, start.stderr
    out = json.loads(start.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Nothing stored yet" in out["hookSpecificOutput"]["additionalContext"]

    steps = [
        (
            "UserPromptSubmit",
            payload("UserPromptSubmit", project, prompt="Users get logged out right after login"),
        ),
        ("PostToolUse", bash(project, "npm test -- auth", "3 failed, 39 passed\n")),
        ("PostToolUse", edit(project)),
        (
            "PostToolUseFailure",
            payload(
                "PostToolUseFailure",
                project,
                tool_name="Bash",
                tool_input={"command": "npm run lint"},
                tool_use_id="toolu_04",
                error="Command exited with non-zero status code 2",
                is_interrupt=False,
            ),
        ),
        ("Stop", payload("Stop", project, stop_hook_active=False)),
        ("PreCompact", payload("PreCompact", project, trigger="auto", custom_instructions="")),
    ]
    for event, body in steps:
        result = hook(event, body, tmp_path)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), event

    (capsule,) = stored(project, "capsules")
    assert capsule["status"] == "open"  # Stop fires every turn and closes nothing
    assert capsule["scopeIds"] == {
        "sessionId": SESSION,
        "repoId": "acme-api",
        "agentId": "claude-code",
    }
    observations = stored(project, "observations")
    # the prompt, the compaction and the session start are messages
    assert sorted(o["kind"] for o in observations) == [
        "command",
        "error",
        "file_diff",
        "message",
        "message",
        "message",
    ]
    assert sorted(capsule["observationIds"]) == sorted(o["id"] for o in observations)
    assert all(o["scopeIds"]["repoId"] == "acme-api" for o in observations)

    # Compaction starts the same session again: same capsule, context shows what happened.
    again = hook("SessionStart", payload("SessionStart", project, source="compact"), tmp_path)
    assert again.stderr == b"", again.stderr
    context = json.loads(again.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "npm test -- auth" in context and "[file_diff]" in context
    assert [c["id"] for c in stored(project, "capsules")] == [capsule["id"]]

    end = hook("SessionEnd", payload("SessionEnd", project, reason="prompt_input_exit"), tmp_path)
    assert end.returncode == 0 and end.stderr == b""
    (closed,) = stored(project, "capsules")
    assert closed["status"] == "closed"
    assert closed["intent"] == "Users get logged out right after login"
    (summary,) = stored(project, "summaries")
    assert "\nChanged: src/middleware/validateToken.ts [" in summary["content"]
    assert "\nStill failing: Bash: npm run lint -> exit 2 (" in summary["content"]
    assert "Interrupted" not in summary["content"]  # it ended
    assert summary["evidenceRefs"] and set(summary["evidenceRefs"]) <= set(closed["observationIds"])


def test_context_block_brings_back_pins_and_the_summary(project, tmp_path):
    from kindling.memory import Memory

    with Memory(project / ".kindling") as memory:
        old = {"sessionId": "earlier", "repoId": "acme-api"}
        cap = memory.open_capsule("fix login", scope=old).entity
        cause = memory.log("JWT exp is in seconds, Date.now() in ms", scope=old).entity
        memory.log("forgotten detail", scope=old)
        memory.close_capsule(cap["id"], summary="Compare exp with Date.now()/1000")
        memory.pin("observation", cause["id"], note="root cause")
        memory.log("another repo entirely", scope={"repoId": "other"})

    result = hook("SessionStart", payload("SessionStart", project, source="startup"), tmp_path)
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.index("Pinned") < context.index("summaries") < context.index("Recent activity")
    assert "JWT exp is in seconds" in context and "root cause" in context
    assert "Compare exp with Date.now()/1000" in context
    assert "forgotten detail" in context
    # The project's own store is all this project's memory, whatever repoId it was kept under.
    assert "another repo entirely" in context


def test_a_shared_store_gives_only_this_repositorys_memory(project, tmp_path):
    from kindling.memory import Memory

    shared = tmp_path / "shared"
    Memory.init(store=shared).close()
    subprocess_git = __import__("subprocess").run
    subprocess_git(["git", "init", "-q", str(project)], check=True)
    subprocess_git(
        [
            "git",
            "-C",
            str(project),
            "remote",
            "add",
            "origin",
            "https://u:t@github.com/acme/acme-api.git",
        ],
        check=True,
    )
    with Memory(shared) as memory:
        memory.log("kept under the 0.1 folder name", scope={"repoId": "acme-api"})
        memory.log("kept under the remote id", scope={"repoId": "github.com/acme/acme-api"})
        memory.log("another repo entirely", scope={"repoId": "other"})
    result = hook(
        "SessionStart", payload("SessionStart", project, source="startup"), tmp_path, store=shared
    )
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "# Kindling memory for github.com/acme/acme-api" in context
    assert "0.1 folder name" in context and "kept under the remote id" in context
    assert "another repo entirely" not in context


def test_prompt_recall_needs_shared_words_and_never_repeats(project, tmp_path):
    from kindling.memory import Memory

    with Memory(project / ".kindling") as memory:
        earlier = {"sessionId": "earlier", "repoId": "acme-api"}
        memory.log(
            "Rate limiter: Redis bucket of 50 requests per minute fixed the 429s", scope=earlier
        )
        memory.log("unrelated note about fonts in the rate card design", scope=earlier)
    hook("SessionStart", payload("SessionStart", project, source="startup"), tmp_path)
    ask = payload("UserPromptSubmit", project, prompt="Why do we get 429s from the rate limiter?")
    first = hook("UserPromptSubmit", ask, tmp_path)
    # Everything relevant was already in the session-start context: nothing repeated.
    assert first.stdout == b"" and first.stderr == b""
    other = payload(
        "UserPromptSubmit", project, session="s-2", prompt="429s from the rate limiter again"
    )
    hook("SessionStart", payload("SessionStart", project, session="s-2", source="clear"), tmp_path)
    with Memory(project / ".kindling") as memory:
        for n in range(70):
            memory.log(f"filler step {n}", kind="command", scope={"repoId": "acme-api"})
    hook("SessionStart", payload("SessionStart", project, session="s-3", source="clear"), tmp_path)
    third = payload(
        "UserPromptSubmit", project, session="s-3", prompt="429s from the rate limiter again"
    )
    recalled = json.loads(hook("UserPromptSubmit", third, tmp_path).stdout)
    text = recalled["hookSpecificOutput"]["additionalContext"]
    assert recalled["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "Redis bucket of 50" in text and "fonts" not in text
    assert hook("UserPromptSubmit", third, tmp_path).stdout == b""  # not repeated
    assert other  # a second session's prompt is its own


def test_secrets_are_masked(project, tmp_path):
    body = payload(
        "UserPromptSubmit",
        project,
        prompt="deploy with api_key=sk-live-0123456789abcdefghijklmnop please",
    )
    result = hook("UserPromptSubmit", body, tmp_path)
    assert result.returncode == 0
    (obs,) = stored(project, "observations")
    assert "sk-live-0123456789abcdefghijklmnop" not in obs["content"]
    assert "[REDACTED]" in obs["content"]


@pytest.mark.parametrize(
    "event, body",
    [
        ("UserPromptSubmit", b""),
        ("UserPromptSubmit", b"not json {"),
        ("UserPromptSubmit", b"[1, 2]"),
        ("UserPromptSubmit", b"\xff\xfe"),
        ("UserPromptSubmit", {"prompt": "no session id", "cwd": "{project}"}),
        ("PostToolUse", {"session_id": "s", "cwd": "{project}", "tool_input": {}}),
        ("PostToolUse", {"session_id": "s", "cwd": "{project}", "hook_event_name": "Stop"}),
        ("NoSuchEvent", {"session_id": "s", "cwd": "{project}"}),
    ],
)
def test_bad_input_records_nothing_and_never_fails(project, tmp_path, event, body):
    if isinstance(body, dict):
        body = json.loads(json.dumps(body).replace("{project}", str(project)))
    result = hook(event, body, tmp_path)
    assert result.returncode == 0
    assert result.stdout == b""
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "nothing recorded" in lines[0]
    assert "Traceback" not in result.stderr.decode()
    assert not list((project / ".kindling" / "objects").rglob("*.json"))


@pytest.mark.parametrize("body", [b"", b"not json {", b"[1, 2]"])
def test_malformed_payloads_show_in_status(project, body):
    assert hook("Stop", body, project).returncode == 0
    status = run_kindling("status", cwd=project)
    assert status.returncode == 0
    errors = status.stdout.decode().split("Hook errors", 1)
    assert len(errors) == 2 and "kindling hook Stop:" in errors[1]


def test_no_store_is_reported_not_raised(tmp_path):
    lost = tmp_path / "no-store-here"
    lost.mkdir()
    result = hook("UserPromptSubmit", payload("UserPromptSubmit", lost, prompt="hi"), lost)
    assert result.returncode == 0 and result.stdout == b""
    assert "no Kindling store" in result.stderr.decode()


def test_explicit_store_wins(project, tmp_path):
    other = tmp_path / "elsewhere"
    result = run_kindling("--store", str(other), "init")
    assert result.returncode == 0
    hook(
        "UserPromptSubmit",
        payload("UserPromptSubmit", project, prompt="hello"),
        tmp_path,
        store=other,
    )
    assert list((other / "objects" / "observations").rglob("*.json"))
    assert not stored(project, "observations")


# ---------------------------------------------------------------- .claude/settings.json


def test_install_writes_every_hook(tmp_path):
    from kindling.agents.claude_settings import install_claude_code_hooks
    from kindling.agents.hooks import EVENTS

    path = install_claude_code_hooks(tmp_path)
    assert path == tmp_path / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    assert set(settings["hooks"]) == set(EVENTS) - {
        "PreToolUse",
        "PermissionRequest",
        "SubagentStart",
    }
    background = {"PostToolUse", "PostToolUseFailure", "Notification"}
    for event, groups in settings["hooks"].items():
        (group,) = groups
        (entry,) = group["hooks"]
        assert entry["command"] == (
            f"command -v kindling >/dev/null 2>&1 && kindling hook {event} || true"
        )
        assert entry.get("async", False) is (event in background)
        assert 5 <= entry["timeout"] <= 60
        assert group.get("matcher") == ("*" if event.startswith("PostToolUse") else None)
    local = install_claude_code_hooks(tmp_path, local=True)
    assert local == tmp_path / ".claude" / "settings.local.json"
    assert json.loads(local.read_text()) == settings


def test_install_merges_and_is_idempotent(tmp_path):
    from kindling.agents.claude_settings import install_claude_code_hooks

    settings_path = tmp_path / ".claude" / "settings.json"
    settings_path.parent.mkdir()
    mine = {
        "permissions": {"allow": ["Bash(npm test:*)"]},
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "Write|Edit",
                    "hooks": [{"type": "command", "command": "npx prettier --write"}],
                }
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "/opt/bin/kindling hook Stop"}]}],
        },
    }
    settings_path.write_text(json.dumps(mine))
    install_claude_code_hooks(tmp_path)
    first = settings_path.read_bytes()
    merged = json.loads(first)
    assert merged["permissions"] == mine["permissions"]
    assert merged["hooks"]["PostToolUse"][0] == mine["hooks"]["PostToolUse"][0]
    assert merged["hooks"]["PostToolUse"][1]["hooks"][0]["command"].endswith(
        "kindling hook PostToolUse || true"
    )
    # already there, by another path: kept as written, given a timeout
    (stop,) = merged["hooks"]["Stop"]
    assert stop["hooks"] == [
        {"type": "command", "command": "/opt/bin/kindling hook Stop", "timeout": 10}
    ]
    install_claude_code_hooks(tmp_path)
    assert settings_path.read_bytes() == first


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"hooks": []}'])
def test_install_refuses_to_overwrite_what_it_cannot_read(tmp_path, text):
    from kindling.agents.claude_settings import install_claude_code_hooks
    from kindling.errors import KindlingError

    settings_path = tmp_path / ".claude" / "settings.json"
    settings_path.parent.mkdir()
    settings_path.write_text(text)
    with pytest.raises(KindlingError):
        install_claude_code_hooks(tmp_path)
    assert settings_path.read_text() == text


def test_installed_commands_run_as_claude_code_runs_them(project, tmp_path):
    import os
    import subprocess
    import sys

    from kindling.agents.claude_settings import install_claude_code_hooks

    path = install_claude_code_hooks(project, command=f"{sys.executable} -m kindling")
    hooks = json.loads(path.read_text())["hooks"]
    for event, body in [
        ("SessionStart", payload("SessionStart", project, source="startup")),
        ("PostToolUse", bash(project, "git status", "clean\n")),
    ]:
        command = hooks[event][0]["hooks"][0]["command"]
        result = subprocess.run(
            command,
            shell=True,
            input=json.dumps(body).encode(),
            capture_output=True,
            cwd=project,
            timeout=60,
            env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)},
        )
        assert result.returncode == 0 and result.stderr == b"", result.stderr
    assert sorted(o["kind"] for o in stored(project, "observations")) == ["command", "message"]
