"""The session-start context block: unfinished work first, fixed errors never listed, recent
activity without what the summaries say, task switches in the intent, and the MCP tools that
keep a live session in one capsule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kindling.agents.hooks import run_hook
from kindling.clock import now_ms
from kindling.memory import Memory

CRASHED = "0f8e5a2c-1d3b-4c5e-9f70-a1b2c3d4e5f6"
NEXT = "7b6a5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
THIRD = "5a5a5a5a-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
PROMPT = "Users get logged out right after login; the JWT expiry check in validateToken looks wrong"
MINUTE = 60 * 1000


@pytest.fixture(autouse=True)
def no_claude_env(monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)


def send(project: Path, event: str, session: str, **fields) -> str | None:
    """Run one hook in this process as Claude Code would; the context it answers with."""
    body = {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/x/{session}.jsonl",
        "cwd": str(project),
        "hook_event_name": event,
        **fields,
    }
    result = run_hook(event, json.dumps(body).encode())
    assert result.message is None, result.message
    if result.stdout is None:
        return None
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def edit(project: Path, session: str, name: str = "validateToken.ts") -> None:
    path = str(project / "src" / "middleware" / name)
    send(
        project,
        "PostToolUse",
        session,
        tool_name="Edit",
        tool_input={"file_path": path, "old_string": "exp < now", "new_string": "exp < now / 1000"},
        tool_response={"filePath": path},
        tool_use_id="toolu_edit",
    )


def fail(project: Path, session: str, command: str = "npm test -- auth") -> None:
    send(
        project,
        "PostToolUseFailure",
        session,
        tool_name="Bash",
        tool_input={"command": command},
        error="Exit code 1\nTypeError: token expiry compared in the wrong unit",
        tool_use_id="toolu_fail",
    )


def crash(project: Path) -> None:
    """A session that asks, edits and fails, then stops without a Stop or a SessionEnd."""
    send(project, "SessionStart", CRASHED, source="startup")
    send(project, "UserPromptSubmit", CRASHED, prompt=PROMPT)
    edit(project, CRASHED)
    fail(project, CRASHED)


def later(monkeypatch, ms: int) -> None:
    monkeypatch.setenv("KINDLING_NOW", str(now_ms() + ms))


def section(context: str, title: str) -> list[str]:
    """The item lines under a heading of the block (empty when the heading is absent)."""
    lines = context.splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith(title)]
    if not starts:
        return []
    out = []
    for line in lines[starts[0] + 1 :]:
        if not line.startswith("- "):
            break
        out.append(line)
    return out


# ---------------------------------------------------------------- unfinished work


def test_a_crash_is_unfinished_work_at_the_next_start(project, monkeypatch):
    crash(project)
    later(monkeypatch, 3 * MINUTE)
    context = send(project, "SessionStart", NEXT, source="startup")
    lines = context.splitlines()
    assert lines[0].startswith("# Kindling memory for ")
    assert lines[2].startswith("Unfinished work")  # first, right after the header
    unfinished = "\n".join(section(context, "Unfinished work"))
    assert f"Intent: {PROMPT}" in unfinished
    assert "Last active 3 min ago" in unfinished and "still open" in unfinished
    assert "Files changed: src/middleware/validateToken.ts" in unfinished
    assert "Last failure" in unfinished and "npm test -- auth" in unfinished
    # The new session's own line follows, and the failure is still an open problem.
    assert f"Session {NEXT}" in context
    assert any("npm test -- auth" in line for line in section(context, "Open problems"))


def test_a_session_at_work_right_now_is_not_unfinished(project, monkeypatch):
    crash(project)
    later(monkeypatch, 30 * 1000)  # another terminal, still working
    context = send(project, "SessionStart", NEXT, source="startup")
    assert "Unfinished work" not in context


def test_a_crash_is_unfinished_work_hours_later(project, monkeypatch):
    crash(project)
    later(monkeypatch, 5 * 60 * MINUTE)
    context = send(project, "SessionStart", NEXT, source="startup")
    capsules = {c["scopeIds"]["sessionId"]: c for c in stored(project, "capsules")}
    assert capsules[CRASHED]["status"] == "closed"  # closed at this start, as never ended
    unfinished = "\n".join(section(context, "Unfinished work"))
    assert "Last active 5 h ago" in unfinished and "closed without an end" in unfinished
    assert f"Intent: {PROMPT}" in unfinished
    summary_id = capsules[CRASHED]["summaryId"]
    assert summary_id[:12] in unfinished  # its summary is named here, not repeated below
    assert not any(summary_id[:12] in line for line in section(context, "Recent session"))


def test_a_session_that_ended_is_not_unfinished(project, monkeypatch):
    crash(project)
    later(monkeypatch, 5 * 60 * MINUTE)
    send(project, "SessionStart", NEXT, source="startup")
    send(project, "UserPromptSubmit", NEXT, prompt="Pick up the logout bug where it stopped")
    send(project, "Stop", NEXT, last_assistant_message="Fixed: exp is in seconds.")
    send(project, "SessionEnd", NEXT, reason="prompt_input_exit")
    later(monkeypatch, 6 * 60 * MINUTE)
    context = send(project, "SessionStart", THIRD, source="startup")
    assert "Unfinished work" not in context  # later work ended normally


def test_resuming_the_crashed_session_does_not_show_itself(project, monkeypatch):
    crash(project)
    later(monkeypatch, 10 * MINUTE)
    context = send(project, "SessionStart", CRASHED, source="resume")
    assert "Unfinished work" not in context


# ---------------------------------------------------------------- problems and activity


def test_fixed_errors_are_never_listed(project):
    send(project, "SessionStart", CRASHED, source="startup")
    send(project, "UserPromptSubmit", CRASHED, prompt=PROMPT)
    fail(project, CRASHED, "npm run lint")
    send(
        project,
        "PostToolUse",
        CRASHED,
        tool_name="Bash",
        tool_input={"command": "npm run lint"},
        tool_response={"stdout": "no problems\n", "stderr": "", "interrupted": False},
        tool_use_id="toolu_ok",
    )
    send(project, "Stop", CRASHED, last_assistant_message="Lint passes now.")
    context = send(project, "SessionStart", CRASHED, source="compact")
    (error,) = [o for o in stored(project, "observations") if o["kind"] == "error"]
    assert error["id"][:8] not in context
    assert "Open problems" not in context
    assert not any("[error]" in line for line in section(context, "Recent activity"))


def test_recent_activity_leaves_out_what_summaries_say_and_labels_abandoned_attempts(memory):
    scope = {"sessionId": "s1", "repoId": "acme"}
    run = {"subject": "Bash: npm test", "tool": "Bash"}
    failure = "Bash: npm test -> exit 1\nTypeError: cannot read property exp of undefined"
    cap = memory.open_capsule("fix the token check", scope=scope).entity

    def diff(name: str) -> dict:
        prov = {"file": f"src/{name}", "subject": f"Edit: src/{name}", "tool": "Edit"}
        text = f"--- a/src/{name}\n+++ b/src/{name}\n@@ -1 +1 @@\n-old\n+new {name}"
        return memory.log(text, kind="file_diff", scope=scope, provenance=prov).entity

    memory.log(failure, kind="error", scope=scope, provenance=run)
    tried = diff("cache.ts")
    memory.log(failure, kind="error", scope=scope, provenance=run)
    fix = diff("token.ts")
    passed = memory.log(
        "Bash: npm test -> exit 0\n42 passed", kind="command", scope=scope, provenance=run
    ).entity
    note = memory.log("exp is in seconds; Date.now() is in ms", scope=scope).entity
    memory.close_capsule(
        cap["id"], summary="Compare exp with Date.now() / 1000", evidence=[fix["id"], passed["id"]]
    )

    from kindling.agents.context import session_context
    from kindling.repo_identity import identify

    context, shown = session_context(memory, identify(memory.store.root.parent), None, None)
    activity = section(context, "Recent activity")
    text = "\n".join(activity)
    assert fix["id"][:8] not in text and passed["id"][:8] not in text  # the summary says them
    assert note["id"][:8] in text
    (attempt,) = [line for line in activity if tried["id"][:8] in line]
    assert "abandoned attempt" in attempt
    assert "[error" not in text  # both failures were fixed by the passing run
    assert "Open problems" not in context


# ---------------------------------------------------------------- intent


def test_the_intent_follows_a_task_switch(project):
    send(project, "SessionStart", CRASHED, source="startup")
    send(project, "UserPromptSubmit", CRASHED, prompt=PROMPT)
    send(project, "UserPromptSubmit", CRASHED, prompt="yes, go ahead and run the tests")
    send(project, "UserPromptSubmit", CRASHED, prompt="the token still expires too early")
    (capsule,) = stored(project, "capsules")
    assert capsule["intent"] == PROMPT  # follow-ups of the same task
    second = "Now write a README section about deploying to Fly.io with the Dockerfile"
    send(project, "UserPromptSubmit", CRASHED, prompt=second)
    (capsule,) = stored(project, "capsules")
    assert capsule["intent"] == f"{PROMPT}; then: {second}"
    third = "Refactor the billing module so invoices are generated asynchronously by a worker"
    send(project, "UserPromptSubmit", CRASHED, prompt=third)
    (capsule,) = stored(project, "capsules")
    assert len(capsule["intent"]) <= 200
    first, *_, last = capsule["intent"].split("; then: ")
    assert first.startswith("Users get logged out") and last.startswith("Refactor the billing")


def test_switched_intents_are_deterministic_and_bounded():
    from kindling.agents.intent import starts_new_task, switched

    assert not starts_new_task(PROMPT, "commit it")
    assert not starts_new_task(PROMPT, "TypeError: cannot read property 'exp' of undefined here")
    assert starts_new_task(PROMPT, "Add a dark mode toggle to the settings page header")
    intent = PROMPT
    for n in range(6):
        intent = switched(intent, f"task number {n} about something else entirely " * 5)
        assert len(intent) <= 200
    assert intent.startswith("Users get logged out") and intent.count("; then: ") == 2


# ---------------------------------------------------------------- MCP: one session, one capsule


@pytest.fixture
def served(project):
    pytest.importorskip("mcp")
    from kindling.agents import mcp_tools

    with Memory(project / ".kindling") as memory:
        yield mcp_tools, mcp_tools.Served([memory]), memory


def test_the_start_block_never_says_to_close_the_session_capsule(project):
    context = send(project, "SessionStart", CRASHED, source="startup")
    assert "capsule_close" not in context and "`summarize`" in context


def test_summarize_keeps_the_session_in_one_capsule(project, served):
    tools, stores, memory = served
    send(project, "SessionStart", CRASHED, source="startup")
    send(project, "UserPromptSubmit", CRASHED, prompt=PROMPT)
    result = tools.summarize(stores, text="Fixed: exp is in seconds.", session_id=CRASHED)
    obs = memory.get(result.structured_content["id"]).entity
    assert obs["kind"] == "message"
    assert obs["provenance"] == {"source": "mcp", "summary": "agent"}
    assert obs["scopeIds"]["sessionId"] == CRASHED
    (capsule,) = memory.list("capsules")
    assert capsule["status"] == "open" and obs["id"] in capsule["observationIds"]
    send(project, "UserPromptSubmit", CRASHED, prompt="thanks, one more check please")
    (capsule,) = memory.list("capsules")
    assert capsule["status"] == "open"  # later records land in the same capsule


def test_capsule_close_on_a_live_session_keeps_it_open(project, served):
    tools, stores, memory = served
    send(project, "SessionStart", CRASHED, source="startup")
    (capsule,) = memory.list("capsules")
    result = tools.capsule_close(stores, capsule_id=capsule["id"], summary="Done: exp fixed.")
    text = result.content[0].text
    assert text.startswith(f"kept {capsule['id']} open") and "live Claude Code session" in text
    assert result.structured_content["keptOpen"] is True
    assert memory.get(capsule["id"]).entity["status"] == "open"
    logged = memory.get(result.structured_content["summaryObservation"]).entity
    assert logged["provenance"]["summary"] == "agent" and logged["content"] == "Done: exp fixed."
    # Any other capsule (here one an MCP client opened) closes as before.
    other = memory.open_capsule("a review", scope={"sessionId": "mcp-1"}).entity
    closed = tools.capsule_close(stores, capsule_id=other["id"], summary="reviewed")
    assert closed.structured_content["capsule"]["status"] == "closed"


def test_mcp_log_into_a_capsule_carries_its_session(project, served):
    tools, stores, memory = served
    send(project, "SessionStart", CRASHED, source="startup")
    (capsule,) = memory.list("capsules")
    result = tools.log(stores, content="exp is in seconds", capsule_id=capsule["id"][:12])
    obs = memory.get(result.structured_content["id"]).entity
    assert obs["scopeIds"]["sessionId"] == CRASHED
    assert obs["scopeIds"]["repoId"] == capsule["scopeIds"]["repoId"]
    with pytest.raises(Exception, match="not the capsule's"):
        tools.log(stores, content="x", capsule_id=capsule["id"], scope={"sessionId": "other"})


@pytest.mark.parametrize("budget", [50, 60, 80, 120, 200])
def test_no_heading_without_an_item_at_small_budgets(served, budget):
    tools, stores, memory = served
    scope = {"sessionId": "s1", "repoId": "acme-api"}
    for i in range(12):
        memory.log(f"token refresh attempt {i}: " + "the token expired early " * 12, scope=scope)
        memory.log(f"refresh failed {i}: " + "401 Unauthorized " * 20, kind="error", scope=scope)
    cap = memory.open_capsule("fix the refresh", scope=scope).entity
    memory.close_capsule(cap["id"], summary="refresh now waits for the token " * 20)
    first = memory.list("observations", limit=1)[0]
    memory.pin("observation", first["id"], note="keep " * 30)
    answers = [
        tools.context(stores, max_tokens=budget).content[0].text,
        tools.search(stores, query="token refresh", max_tokens=budget).content[0].text,
        tools.recent(stores, limit=50, max_tokens=budget).content[0].text,
        tools.recent(stores, type="pins", max_tokens=budget).content[0].text,
    ]
    for text in answers:
        assert len(text) <= budget * 4 * 1.1
        lines = text.splitlines()
        for n, line in enumerate(lines):
            if line.endswith(":") or line.endswith("match(es)") or " recent " in line:
                assert n + 1 < len(lines) and lines[n + 1].startswith("- "), (budget, text)
    empty = tools.recent(stores, type="capsules", scope={"sessionId": "nobody"})
    assert empty.content[0].text == "no capsules found"


def stored(project: Path, entity_type: str) -> list[dict]:
    with Memory(project / ".kindling") as memory:
        return memory.list(entity_type, limit=None)
