"""A documented session of each agent replayed through `kindling hook --agent NAME`.

Payloads are shaped as each agent's documentation shows them (sources below and in each
adapter's docstring, read 2026-12-02); the hook runs as the agent runs it, the command line
with the JSON on stdin, and its stdout is read in the agent's own output form.

- Codex CLI: https://developers.openai.com/codex/hooks.md and openai/codex
  codex-rs/hooks/schema/generated/*.command.input.schema.json (commit bde5e18).
- Gemini CLI: google-gemini/gemini-cli docs/hooks/reference.md (commit 06c0d81).
- Cursor: https://cursor.com/docs/agent/hooks (conversation_id, workspace_roots, ...).
- OpenCode: https://opencode.ai/docs/plugins; the payload is the one the packaged plugin
  (kindling/plugin/opencode/kindling.js) sends.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_kindling

from kindling.cli import cli

ORIGIN = "git@github.com:acme/acme-api.git"
REPO_ID = "github.com/acme/acme-api"
PROMPT = "Users get logged out right after login; the JWT expiry check in validateToken is wrong"
FIX = "Fixed validateToken: it compared exp (seconds) with Date.now() (milliseconds)."
SOURCE = "src/middleware/validateToken.ts"


@pytest.fixture(autouse=True)
def no_claude_env(monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)


def git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def repo(tmp_path) -> Path:
    """acme-api: a git repository with an origin remote, a source file and a Kindling store."""
    project = tmp_path / "acme-api"
    (project / "src" / "middleware").mkdir(parents=True)
    (project / SOURCE).write_text("if (payload.exp < Date.now()) throw new Error('expired')\n")
    git("init", "-q", "-b", "main", cwd=project)
    git("remote", "add", "origin", ORIGIN, cwd=project)
    assert run_kindling("init", cwd=project).returncode == 0
    return project


def hook(agent: str, event: str, body: dict) -> str:
    """Run `kindling hook --agent AGENT EVENT` with `body` on stdin: its stdout (stderr empty)."""
    result = CliRunner().invoke(
        cli, ["hook", "--agent", agent, event], input=json.dumps(body).encode()
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == "", result.stderr
    return result.stdout


def stored(project: Path, entity_type: str) -> list[dict]:
    from kindling.memory import Memory

    with Memory(project / ".kindling") as memory:
        return memory.list(entity_type, limit=None)


def check_session(project: Path, agent: str, session: str) -> tuple[dict, dict, list[dict]]:
    """The session's closed capsule, its summary and its observations, each naming the agent."""
    (capsule,) = [c for c in stored(project, "capsules") if c["scopeIds"]["sessionId"] == session]
    assert capsule["scopeIds"] == {"sessionId": session, "repoId": REPO_ID, "agentId": agent}
    assert capsule["intent"] == PROMPT
    assert capsule["status"] == "closed"
    (summary,) = [s for s in stored(project, "summaries") if s["capsuleId"] == capsule["id"]]
    assert summary["scopeIds"]["agentId"] == agent
    observations = [
        o for o in stored(project, "observations") if o["id"] in capsule["observationIds"]
    ]
    assert observations and all(o["scopeIds"]["agentId"] == agent for o in observations)
    assert all(o["provenance"]["source"] == agent for o in observations)
    return capsule, summary, observations


def by_kind(observations: list[dict], kind: str) -> list[str]:
    return [o["content"] for o in observations if o["kind"] == kind]


# --- Codex CLI ------------------------------------------------------------------------------


def codex(event: str, project: Path, session: str, **fields) -> dict:
    """Codex's common input fields (session-start.command.input.schema.json and friends)."""
    return {
        "session_id": session,
        "transcript_path": None,
        "cwd": str(project),
        "hook_event_name": event,
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "turn_id": "019d036d-c7fa-72d2-b6fd-78878bfe34e4",
        **fields,
    }


def replay_codex(project: Path, session: str, prompt: str = PROMPT) -> str:
    """A Codex session: start, prompt, a failing and a passing test run, a patch, Stop, end."""
    start = hook("codex", "SessionStart", codex("SessionStart", project, session, source="startup"))
    hook("codex", "UserPromptSubmit", codex("UserPromptSubmit", project, session, prompt=prompt))
    failing = codex(
        "PostToolUse",
        project,
        session,
        tool_name="Bash",
        tool_input={"command": "npm test -- auth"},
        tool_response={"exit_code": 1, "output": "FAIL auth.test.ts: token expired"},
        tool_use_id="call_1",
    )
    hook("codex", "PostToolUse", failing)
    patch = (
        "*** Begin Patch\n*** Update File: src/middleware/validateToken.ts\n@@\n"
        "-if (payload.exp < Date.now()) throw new Error('expired')\n"
        "+if (payload.exp < Math.floor(Date.now() / 1000)) throw new Error('expired')\n"
        "*** End Patch\n"
    )
    hook(
        "codex",
        "PostToolUse",
        codex(
            "PostToolUse",
            project,
            session,
            tool_name="apply_patch",
            tool_input={"command": patch},
            tool_response=f"Success. Updated the following files:\nM {SOURCE}",
            tool_use_id="call_2",
        ),
    )
    hook(
        "codex",
        "PostToolUse",
        codex(
            "PostToolUse",
            project,
            session,
            tool_name="Bash",
            tool_input={"command": "npm test -- auth"},
            tool_response={"exit_code": 0, "output": "PASS auth.test.ts"},
            tool_use_id="call_3",
        ),
    )
    hook(
        "codex",
        "Stop",
        codex("Stop", project, session, last_assistant_message=FIX, stop_hook_active=False),
    )
    hook("codex", "SessionEnd", codex("SessionEnd", project, session, reason="exit"))
    return start


def test_codex_session_is_recorded_summarized_and_recalled(repo):
    replay_codex(repo, "thread-1")
    capsule, summary, observations = check_session(repo, "codex", "codex:thread-1")
    assert any("npm test -- auth -> exit 1" in c for c in by_kind(observations, "error"))
    assert any(SOURCE in c and "Math.floor" in c for c in by_kind(observations, "file_diff"))
    assert "Asked:" in summary["content"] and "Changed: " + SOURCE in summary["content"]
    assert FIX[:40] in summary["content"]
    # The next Codex session starts with it, in Codex's output form.
    answer = json.loads(
        hook("codex", "SessionStart", codex("SessionStart", repo, "thread-2", source="startup"))
    )
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert "Session codex:thread-2" in out["additionalContext"]
    assert summary["id"][:8] in out["additionalContext"]
    # A prompt is answered with what is recalled for it.
    recalled = hook(
        "codex",
        "UserPromptSubmit",
        codex(
            "UserPromptSubmit", repo, "thread-2", prompt="why were users logged out after login?"
        ),
    )
    context = json.loads(recalled)["hookSpecificOutput"]["additionalContext"]
    assert "Kindling recalls" in context and "validateToken" in context


# --- Gemini CLI -----------------------------------------------------------------------------


def gemini(event: str, project: Path, session: str, **fields) -> dict:
    """Gemini CLI's base input schema (docs/hooks/reference.md)."""
    return {
        "session_id": session,
        "transcript_path": f"/home/dev/.gemini/tmp/{session}.json",
        "cwd": str(project),
        "hook_event_name": event,
        "timestamp": "2026-12-02T10:30:00Z",
        **fields,
    }


def test_gemini_session_is_recorded_summarized_and_recalled(repo):
    s = "gem-1"
    start = json.loads(
        hook("gemini", "SessionStart", gemini("SessionStart", repo, s, source="startup"))
    )
    assert "additionalContext" in start["hookSpecificOutput"]
    hook("gemini", "BeforeAgent", gemini("BeforeAgent", repo, s, prompt=PROMPT))
    hook(
        "gemini",
        "AfterTool",
        gemini(
            "AfterTool",
            repo,
            s,
            tool_name="run_shell_command",
            tool_input={"command": "npm test -- auth"},
            tool_response={
                "llmContent": "FAIL auth.test.ts",
                "returnDisplay": "FAIL",
                "error": {"message": "Command exited with code 1: FAIL auth.test.ts"},
            },
        ),
    )
    hook(
        "gemini",
        "AfterTool",
        gemini(
            "AfterTool",
            repo,
            s,
            tool_name="replace",
            tool_input={
                "file_path": str(repo / SOURCE),
                "old_string": "payload.exp < Date.now()",
                "new_string": "payload.exp < Math.floor(Date.now() / 1000)",
            },
            tool_response={"llmContent": "Successfully modified file", "returnDisplay": "ok"},
        ),
    )
    ran = hook(
        "gemini",
        "AfterTool",
        gemini(
            "AfterTool",
            repo,
            s,
            tool_name="run_shell_command",
            tool_input={"command": "npm test"},
            tool_response={"llmContent": "PASS auth.test.ts", "returnDisplay": "PASS"},
        ),
    )
    assert json.loads(ran) == {}  # exit 0 means JSON on stdout, even with nothing to say
    hook(
        "gemini",
        "AfterAgent",
        gemini("AfterAgent", repo, s, prompt=PROMPT, prompt_response=FIX, stop_hook_active=False),
    )
    hook("gemini", "SessionEnd", gemini("SessionEnd", repo, s, reason="exit"))
    capsule, summary, observations = check_session(repo, "gemini", "gemini:gem-1")
    assert any(c.startswith("Bash: npm test -- auth") for c in by_kind(observations, "error"))
    assert any("Math.floor" in c for c in by_kind(observations, "file_diff"))
    assert "Changed: " + SOURCE in summary["content"]
    answer = hook(
        "gemini",
        "BeforeAgent",
        gemini("BeforeAgent", repo, "gem-2", prompt="why were users logged out after login?"),
    )
    out = json.loads(answer)["hookSpecificOutput"]
    assert out["hookEventName"] == "BeforeAgent" and "validateToken" in out["additionalContext"]


# --- Cursor ---------------------------------------------------------------------------------


def cursor(event: str, project: Path, conversation: str, **fields) -> dict:
    """Cursor's common input fields (cursor.com/docs/agent/hooks)."""
    return {
        "conversation_id": conversation,
        "generation_id": "gen-456",
        "hook_event_name": event,
        "workspace_roots": [str(project)],
        "model": "claude-4.5-sonnet",
        "cursor_version": "2.1.0",
        **fields,
    }


def replay_cursor(project: Path, conversation: str, prompt: str = PROMPT) -> str:
    start = hook("cursor", "sessionStart", cursor("sessionStart", project, conversation))
    answer = hook(
        "cursor",
        "beforeSubmitPrompt",
        cursor("beforeSubmitPrompt", project, conversation, prompt=prompt, attachments=[]),
    )
    assert json.loads(answer) == {"continue": True}
    hook(
        "cursor",
        "postToolUseFailure",
        cursor(
            "postToolUseFailure",
            project,
            conversation,
            tool_name="Shell",
            tool_input=json.dumps({"command": "npm test -- auth"}),
            error_message="Exit code 1: FAIL auth.test.ts",
        ),
    )
    hook(
        "cursor",
        "afterFileEdit",
        cursor(
            "afterFileEdit",
            project,
            conversation,
            file_path=str(project / SOURCE),
            edits=[
                {
                    "old_string": "payload.exp < Date.now()",
                    "new_string": "payload.exp < Math.floor(Date.now() / 1000)",
                }
            ],
        ),
    )
    hook(
        "cursor",
        "afterShellExecution",
        cursor(
            "afterShellExecution",
            project,
            conversation,
            command="npm test -- auth",
            cwd=str(project),
            output="PASS auth.test.ts",
            duration=1500,
        ),
    )
    hook(
        "cursor",
        "afterAgentResponse",
        cursor("afterAgentResponse", project, conversation, text=FIX),
    )
    assert (
        hook(
            "cursor",
            "stop",
            cursor("stop", project, conversation, status="completed", loop_count=0),
        )
        == ""
    )
    hook("cursor", "sessionEnd", cursor("sessionEnd", project, conversation, reason="completed"))
    return start


def test_cursor_session_is_recorded_summarized_and_recalled(repo):
    replay_cursor(repo, "conv-1")
    capsule, summary, observations = check_session(repo, "cursor", "cursor:conv-1")
    assert any(
        c.startswith("Bash: npm test -- auth -> exit 0") for c in by_kind(observations, "command")
    )
    assert any("Math.floor" in c for c in by_kind(observations, "file_diff"))
    assert "Changed: " + SOURCE in summary["content"]
    answer = json.loads(hook("cursor", "sessionStart", cursor("sessionStart", repo, "conv-2")))
    assert set(answer) == {"additional_context"}
    assert summary["id"][:8] in answer["additional_context"]


# --- OpenCode -------------------------------------------------------------------------------


def opencode(event: str, project: Path, session: str, **fields) -> dict:
    """What the packaged plugin sends for an OpenCode event."""
    return {"hook_event_name": event, "session_id": session, "cwd": str(project), **fields}


def test_opencode_session_is_recorded_summarized_and_recalled(repo):
    s = "ses_01"
    hook("opencode", "session.created", opencode("session.created", repo, s))
    hook("opencode", "chat.message", opencode("chat.message", repo, s, prompt=PROMPT))
    hook(
        "opencode",
        "tool.execute.after",
        opencode(
            "tool.execute.after",
            repo,
            s,
            tool="bash",
            args={"command": "npm test -- auth"},
            title="npm test",
            output="FAIL auth.test.ts",
            exit=1,
        ),
    )
    hook(
        "opencode",
        "tool.execute.after",
        opencode(
            "tool.execute.after",
            repo,
            s,
            tool="edit",
            args={
                "filePath": str(repo / SOURCE),
                "oldString": "payload.exp < Date.now()",
                "newString": "payload.exp < Math.floor(Date.now() / 1000)",
            },
            title=SOURCE,
            output="",
        ),
    )
    hook("opencode", "session.idle", opencode("session.idle", repo, s))
    hook("opencode", "session.deleted", opencode("session.deleted", repo, s))
    capsule, summary, observations = check_session(repo, "opencode", "opencode:ses_01")
    assert any("exit 1" in c for c in by_kind(observations, "error"))
    assert "Changed: " + SOURCE in summary["content"]
    answer = json.loads(
        hook("opencode", "session.created", opencode("session.created", repo, "s2"))
    )
    assert summary["id"][:8] in answer["context"]


# --- Every agent, one memory ----------------------------------------------------------------


def test_claude_code_codex_and_cursor_share_one_memory(repo):
    """Three agents' sessions in one repository: one repoId, one store, recalled across agents
    (and filtered to one agent when asked)."""
    claude = {
        "session_id": "0f8e5a2c",
        "transcript_path": "/t.jsonl",
        "cwd": str(repo),
        "permission_mode": "default",
    }
    hook(
        "claude-code",
        "SessionStart",
        {**claude, "hook_event_name": "SessionStart", "source": "startup"},
    )
    hook(
        "claude-code",
        "UserPromptSubmit",
        {
            **claude,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "The rate limiter drops bursts of uploads",
        },
    )
    hook(
        "claude-code",
        "Stop",
        {
            **claude,
            "hook_event_name": "Stop",
            "last_assistant_message": "Raised the upload burst limit to 20.",
        },
    )
    hook("claude-code", "SessionEnd", {**claude, "hook_event_name": "SessionEnd", "reason": "exit"})
    replay_codex(repo, "thread-9")
    capsules = stored(repo, "capsules")
    assert {c["scopeIds"]["repoId"] for c in capsules} == {REPO_ID}
    assert {c["scopeIds"]["agentId"] for c in capsules} == {"claude-code", "codex"}
    # Cursor, new in this repository, is told what Claude Code and Codex did.
    start = json.loads(hook("cursor", "sessionStart", cursor("sessionStart", repo, "conv-7")))
    text = start["additional_context"]
    assert "burst limit" in text and "validateToken" in text
    # Codex recalls what Claude Code found, at a prompt.
    recalled = hook(
        "codex",
        "UserPromptSubmit",
        codex(
            "UserPromptSubmit", repo, "thread-10", prompt="why does the rate limiter drop uploads?"
        ),
    )
    assert "burst limit" in json.loads(recalled)["hookSpecificOutput"]["additionalContext"]
    # Filtered to one agent: the start context and `kindling search --agent`.
    result = CliRunner().invoke(
        cli,
        ["hook", "--agent", "cursor", "--from-agent", "codex", "sessionStart"],
        input=json.dumps(cursor("sessionStart", repo, "conv-8")).encode(),
    )
    only = json.loads(result.stdout)["additional_context"]
    assert "validateToken" in only and "burst limit" not in only
    assert search(repo, "burst limit", "codex") == []
    hits = search(repo, "burst limit", "claude-code")
    assert hits and all(h["scopeIds"]["agentId"] == "claude-code" for h in hits)


def search(project: Path, query: str, agent: str) -> list[dict]:
    """`kindling search QUERY --agent AGENT --json`: the entities found."""
    found = CliRunner().invoke(
        cli,
        ["search", query, "--agent", agent, "--json"],
        env={"KINDLING_STORE": str(project / ".kindling")},
    )
    assert found.exit_code == 0, found.output
    result = json.loads(found.stdout)
    entities = [c["entity"] for c in result["candidates"]]
    if result.get("currentSummary"):
        entities.append(result["currentSummary"])
    return [e for e in entities if "burst" in e["content"]]


def test_session_ids_of_two_agents_never_collide(repo):
    body = codex("SessionStart", repo, "same-id", source="startup")
    hook("codex", "SessionStart", body)
    hook("cursor", "sessionStart", cursor("sessionStart", repo, "same-id"))
    hook("claude-code", "SessionStart", {**body, "hook_event_name": "SessionStart"})
    sessions = {
        c["scopeIds"]["sessionId"]: c["scopeIds"]["agentId"] for c in stored(repo, "capsules")
    }
    assert sessions == {
        "codex:same-id": "codex",
        "cursor:same-id": "cursor",
        "same-id": "claude-code",
    }


def test_an_unknown_agent_or_event_is_one_line_and_exit_0(repo):
    result = CliRunner().invoke(
        cli,
        ["hook", "--agent", "vim", "SessionStart"],
        input=json.dumps(codex("SessionStart", repo, "x")).encode(),
    )
    assert result.exit_code == 0 and "unknown agent 'vim'" in result.stderr
    result = CliRunner().invoke(
        cli,
        ["hook", "--agent", "cursor", "afterTeleport"],
        input=json.dumps(cursor("afterTeleport", repo, "x")).encode(),
    )
    assert result.exit_code == 0 and "unknown Cursor hook event 'afterTeleport'" in result.stderr
