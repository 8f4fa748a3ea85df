"""Three sessions in a team repository, as Claude Code sends them: a debugging session with a
failed attempt, a root cause and a task switch; a session that crashes; a teammate's clone
(another folder name) that pulls the memory and starts the next session hours later."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kindling.agents.hooks import run_hook
from kindling.memory import Memory
from kindling.summary_format import parts_of

HOUR = 60 * 60 * 1000
T0 = 1_780_000_000_000
ORIGIN_ID = "github.com/acme/acme-api"
FIRST, CRASHED, TEAMMATE = "s-first-0001", "s-crash-0002", "s-mate-0003"
LOGIN = "Users get logged out right after login; the JWT expiry check in validateToken looks wrong"
SWITCH = "Now add a --verbose flag to the export command so support can see which rows it skips"
LINT = "Add structured logging to the webhook retries and make the linter happy"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


class Claude:
    """Hook calls of one clone, each at its own moment."""

    def __init__(self, project: Path, monkeypatch) -> None:
        self.project, self.monkeypatch, self.clock = project, monkeypatch, T0

    def at(self, ms: int) -> None:
        self.clock = ms

    def send(self, event: str, session: str, **fields) -> str | None:
        self.clock += 60_000
        self.monkeypatch.setenv("KINDLING_NOW", str(self.clock))
        body = {
            "session_id": session,
            "transcript_path": f"/home/dev/.claude/projects/x/{session}.jsonl",
            "cwd": str(self.project),
            "hook_event_name": event,
            **fields,
        }
        result = run_hook(event, json.dumps(body).encode())
        assert result.message is None, result.message
        if not result.stdout:
            return None
        return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]

    def bash(self, session: str, command: str, output: str = "", code: int = 0) -> None:
        if code:
            self.send(
                "PostToolUseFailure",
                session,
                tool_name="Bash",
                tool_input={"command": command},
                error=f"Exit code {code}\n{output}",
                tool_use_id=f"toolu_{self.clock}",
            )
        else:
            self.send(
                "PostToolUse",
                session,
                tool_name="Bash",
                tool_input={"command": command},
                tool_response={"stdout": output, "stderr": "", "interrupted": False},
                tool_use_id=f"toolu_{self.clock}",
            )

    def edit(self, session: str, name: str, old: str, new: str) -> None:
        path = str(self.project / name)
        self.send(
            "PostToolUse",
            session,
            tool_name="Edit",
            tool_input={"file_path": path, "old_string": old, "new_string": new},
            tool_response={"filePath": path},
            tool_use_id=f"toolu_{self.clock}",
        )


@pytest.fixture
def clones(tmp_path, monkeypatch):
    """A bare origin, the developer's clone `acme-api` and the teammate's `api-checkout`."""
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setenv("KINDLING_AUTOWATCH", "0")
    origin = tmp_path / "origin.git"
    git("init", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    mine = tmp_path / "acme-api"
    git("clone", str(origin), str(mine), cwd=tmp_path)
    git("remote", "set-url", "origin", f"git@{ORIGIN_ID.replace('/', ':', 1)}.git", cwd=mine)
    git("remote", "set-url", "--push", "origin", str(origin), cwd=mine)
    Memory.init(mine).close()
    return origin, mine, tmp_path / "api-checkout"


def test_three_sessions_two_clones_a_crash_and_a_task_switch(clones, monkeypatch):
    origin, mine, theirs = clones
    me = Claude(mine, monkeypatch)

    # 1. Debugging: a failed attempt, the cause stated mid-session, the fix, a task switch.
    me.send("SessionStart", FIRST, source="startup")
    me.send("UserPromptSubmit", FIRST, prompt=LOGIN)
    me.bash(FIRST, "npm test -- auth", "FAIL auth.test.ts\nTokenExpiredError: jwt expired", 1)
    me.edit(FIRST, "src/auth/validateToken.ts", "exp < now", "exp <= now")
    me.bash(FIRST, "npm test -- auth", "FAIL auth.test.ts\nTokenExpiredError: jwt expired", 1)
    me.send(
        "Stop",
        FIRST,
        last_assistant_message="The root cause is that exp is in seconds while Date.now() is "
        "in milliseconds, so every token looks expired.",
    )
    me.edit(FIRST, "src/auth/validateToken.ts", "exp <= now", "exp < Math.floor(now / 1000)")
    me.bash(FIRST, "npm test -- auth", "PASS auth.test.ts (12 tests)")
    me.send("UserPromptSubmit", FIRST, prompt=SWITCH)
    me.edit(FIRST, "src/export/cli.ts", "flags = {}", "flags = { verbose: false }")
    me.send(
        "Stop",
        FIRST,
        last_assistant_message="Added --verbose to the export command. Next, document the "
        "flag in the support runbook.",
    )
    me.send("SessionEnd", FIRST, reason="other")

    with Memory(mine / ".kindling") as memory:
        capsule = memory.list("capsules", scope={"sessionId": FIRST})[0]
        summary = memory.get(capsule["summaryId"]).entity
    parts = parts_of(summary["content"])
    assert parts["Asked"].startswith(LOGIN[:40]) and "then:" in parts["Asked"]
    assert "src/auth/validateToken.ts" in parts["Tried"]
    assert "seconds" in parts["Root cause"] and "milliseconds" in parts["Root cause"]
    assert (
        "src/auth/validateToken.ts" in parts["Changed"] and "npm test -- auth" in parts["Changed"]
    )
    assert "support runbook" in parts["Next"]
    assert "Still failing" not in parts and "Interrupted" not in parts
    assert "then: " in capsule["intent"]  # the intent followed the task switch

    # 2. The next session fails, and the machine goes away: no Stop, no SessionEnd.
    me.at(T0 + 2 * HOUR)
    me.send("SessionStart", CRASHED, source="startup")
    me.send("UserPromptSubmit", CRASHED, prompt=LINT)
    me.edit(CRASHED, "src/webhooks/retry.ts", "console.log(e)", "log.warn({ err: e })")
    me.bash(CRASHED, "npm run lint", "src/webhooks/retry.ts:3:1 'log' is not defined", 1)

    # The memory travels through git; the teammate clones it under another folder name.
    git("add", "-A", cwd=mine)
    git("commit", "-m", "work", cwd=mine)
    git("push", "origin", "HEAD:main", cwd=mine)
    git("clone", str(origin), str(theirs), cwd=mine.parent)
    git("remote", "set-url", "origin", f"https://{ORIGIN_ID}.git", cwd=theirs)

    # 3. The teammate's session, hours later, is told of the unfinished work first.
    mate = Claude(theirs, monkeypatch)
    mate.at(T0 + 7 * HOUR)
    context = mate.send("SessionStart", TEAMMATE, source="startup")
    lines = context.splitlines()
    assert lines[0] == f"# Kindling memory for {ORIGIN_ID}"  # one identity for both clones
    assert lines[2].startswith("Unfinished work")
    block = "\n".join(lines[2:8])
    assert LINT[:40] in block and "src/webhooks/retry.ts" in block and "npm run lint" in block
    assert " h ago" in block
    # The login failure was fixed: never an open problem, not even in another clone.
    problems = context.split("Open problems", 1)[1] if "Open problems" in context else ""
    assert "jwt expired" not in problems and "npm test -- auth" not in problems
    # The first session's summary is there, its answer first, with its id to `show`.
    assert f"[{summary['id'][:12]}]" in context

    # The teammate pastes the old error: recall answers with the fix, never the stored error,
    # and repeats nothing the start block showed.
    recalled = mate.send(
        "UserPromptSubmit", TEAMMATE, prompt="TokenExpiredError: jwt expired right after login"
    )
    assert recalled is not None and "Math.floor" in recalled
    assert "FAIL auth.test.ts" not in recalled and f"[{summary['id'][:12]}]" not in recalled

    # The same repository set up for Claude Code: hooks, MCP server, skill and commands.
    result = subprocess.run(
        ["kindling", "init", "--claude-code"], cwd=theirs, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    servers = json.loads((theirs / ".mcp.json").read_text())["mcpServers"]
    assert servers["kindling"]["command"] == "kindling" and servers["kindling"]["args"] == ["mcp"]
    skill = (theirs / ".claude" / "skills" / "kindling-memory" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: kindling-memory\n")
    assert "description:" in skill.split("---", 2)[1]
    hooks = json.loads((theirs / ".claude" / "settings.json").read_text())["hooks"]
    assert {"SessionStart", "UserPromptSubmit", "PostToolUse", "SessionEnd"} <= set(hooks)


def test_two_clones_closing_the_same_stale_capsule_write_the_same_bytes(clones, monkeypatch):
    origin, mine, theirs = clones
    me = Claude(mine, monkeypatch)
    me.send("SessionStart", CRASHED, source="startup")
    me.send("UserPromptSubmit", CRASHED, prompt=LINT)
    me.edit(CRASHED, "src/webhooks/retry.ts", "console.log(e)", "log.warn({ err: e })")
    me.bash(CRASHED, "npm run lint", "src/webhooks/retry.ts:3:1 'log' is not defined", 1)
    git("add", "-A", cwd=mine)
    git("commit", "-m", "work", cwd=mine)
    git("push", "origin", "HEAD:main", cwd=mine)
    git("clone", str(origin), str(theirs), cwd=mine.parent)
    # The owner's clone closes its crashed session hours later; a teammate's clone leaves
    # it alone (it may still be alive) until it is abandoned, a week on. Both close it with
    # the same bytes, so their pushes merge cleanly.
    me.at(T0 + 5 * HOUR)
    me.send("SessionStart", FIRST, source="startup")
    mate = Claude(theirs, monkeypatch)
    mate.at(T0 + 9 * HOUR)
    mate.send("SessionStart", TEAMMATE, source="startup")
    with Memory(theirs / ".kindling") as memory:
        assert memory.list("capsules", scope={"sessionId": CRASHED})[0]["status"] == "open"
    mate.at(T0 + 8 * 24 * HOUR)
    mate.send("SessionStart", "s-mate-0004", source="startup")

    def closed(project: Path) -> dict[str, bytes]:
        with Memory(project / ".kindling") as memory:
            capsule = memory.list("capsules", scope={"sessionId": CRASHED})[0]
            assert capsule["status"] == "closed" and capsule["summaryId"]
            found = [memory.get(capsule["id"]), memory.get(capsule["summaryId"])]
        return {Path(f.path).name: Path(f.path).read_bytes() for f in found}

    assert closed(mine) == closed(theirs)
