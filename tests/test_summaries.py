"""The structured closing summary of a Claude Code session: its parts, its sources, forgetting
line by line, the agent's own summary, and `kindling summarize --rebuild`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kindling.agents import digest
from kindling.agents.hooks import run_hook
from kindling.cli import cli
from kindling.memory import Memory
from kindling.model import REDACTED_CONTENT
from kindling.summary_format import parts_of, sources_of

SESSION = "5e1f0c2a-7b3d-4e9f-8a6c-0d1e2f3a4b5c"
START = 1_780_000_000_000  # 2026-05-28 20:26:40 UTC
ASK = "The upload times out for big files; fix the upload timeout in the uploader client"
SWITCH = "Now add a --verbose flag to the upload command line"
CAUSE = (
    "The root cause is that the client opens a fresh connection for every chunk, because "
    "the session object is created inside the loop."
)
LAST = (
    "Added --verbose to the upload command. Lint still fails on an unused import in cli.py. "
    "Next, remove the unused logging import and run ruff again."
)


@pytest.fixture(autouse=True)
def no_claude_env(monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "uploader"
    folder.mkdir()
    Memory.init(folder).close()
    return folder


class Session:
    """Hook calls of one Claude Code session, fed in process a minute apart."""

    def __init__(self, project: Path, monkeypatch, session: str = SESSION, start: int = START):
        self.project, self.monkeypatch, self.session = project, monkeypatch, session
        self.now = start
        self.ids: list[str] = []

    def call(self, event: str, **fields) -> str | None:
        self.now += 60_000
        self.monkeypatch.setenv("KINDLING_NOW", str(self.now))
        body = {
            "session_id": self.session,
            "transcript_path": f"/tmp/{self.session}.jsonl",
            "cwd": str(self.project),
            "hook_event_name": event,
            **fields,
        }
        result = run_hook(event, json.dumps(body).encode(), str(self.project / ".kindling"))
        assert result.message is None or "masked" in result.message, result.message
        if event not in ("SessionStart", "SessionEnd"):
            self.ids.append(result.recorded)
        return result.recorded

    def start(self):
        return self.call("SessionStart", source="startup")

    def prompt(self, text):
        return self.call("UserPromptSubmit", prompt=text)

    def bash(self, command, stdout):
        response = {"stdout": stdout, "stderr": "", "interrupted": False}
        return self.call(
            "PostToolUse", tool_name="Bash", tool_input={"command": command}, tool_response=response
        )

    def fail(self, command, error):
        return self.call(
            "PostToolUseFailure",
            tool_name="Bash",
            tool_input={"command": command},
            error=f"Exit code 1\n{error}",
        )

    def edit(self, path, old, new):
        tool_input = {"file_path": str(self.project / path), "old_string": old, "new_string": new}
        return self.call("PostToolUse", tool_name="Edit", tool_input=tool_input, tool_response={})

    def stop(self, message):
        return self.call("Stop", stop_hook_active=False, last_assistant_message=message)

    def end(self):
        return self.call("SessionEnd", reason="prompt_input_exit")


def debugging_session(s: Session) -> dict[str, str]:
    """A timeout fixed after one failed attempt, then a flag added, lint left failing."""
    s.start()
    ids = {"ask": s.prompt(ASK)}
    ids["fail1"] = s.fail(
        "pytest tests/test_upload.py -q",
        "FAILED tests/test_upload.py::test_big_file\nTimeoutError: upload took longer than 30s",
    )
    ids["attempt"] = s.edit("src/upload/client.py", "timeout=30", "timeout=300")
    ids["fail2"] = s.fail(
        "pytest tests/test_upload.py -q",
        "FAILED tests/test_upload.py::test_big_file\nTimeoutError: upload took longer than 300s",
    )
    ids["cause"] = s.stop(f"Raising the timeout did not help. {CAUSE} I will move it out.")
    ids["fix"] = s.edit(
        "src/upload/client.py", "    session = Session()\n", "session = Session()\n"
    )
    ids["check"] = s.bash("pytest tests/test_upload.py -q", "12 passed in 3.1s\n")
    ids["switch"] = s.prompt(SWITCH)
    ids["flag"] = s.edit("src/upload/cli.py", "def main():", "def main(verbose=False):")
    ids["lint"] = s.fail(
        "ruff check src", "src/upload/cli.py:3:8: F401 `logging` imported but unused"
    )
    ids["last"] = s.stop(LAST)
    return ids


def summary_of(project: Path) -> dict:
    with Memory(project / ".kindling") as memory:
        (summary,) = memory.list("summaries", limit=None)
        return summary


def line(content: str, label: str) -> str:
    (found,) = [x for x in content.split("\n") if x.startswith(f"{label}: ")]
    return found


def test_a_debugging_sessions_summary_has_every_part_in_order(project, monkeypatch):
    s = Session(project, monkeypatch)
    ids = debugging_session(s)
    s.end()
    summary = summary_of(project)
    content = summary["content"]
    labels = [x.split(": ", 1)[0] for x in content.split("\n")]
    assert labels == [
        "Asked",
        "Tried",
        "Root cause",
        "Changed",
        "Still failing",
        "Next",
        "Last message",
    ]
    parts = parts_of(content)
    assert parts["Asked"] == f"{ASK}; then: {SWITCH}"
    assert parts["Tried"] == (
        "src/upload/client.py, but Bash: pytest tests/test_upload.py -q still failed "
        "(TimeoutError: upload took longer than 300s)"
    )
    assert parts["Root cause"] == CAUSE
    assert parts["Changed"] == (
        "src/upload/client.py, src/upload/cli.py; then passed: Bash: pytest tests/test_upload.py -q"
    )
    assert parts["Still failing"] == (
        "Bash: ruff check src -> exit 1 (src/upload/cli.py:3:8: F401 `logging` imported but unused)"
    )
    assert parts["Next"] == "Next, remove the unused logging import and run ruff again."
    assert parts["Last message"] == LAST
    assert "Interrupted" not in parts
    # Each line names its sources; the evidence starts with the fix and the passing check.
    assert [ids[k][:8] for k in ("ask", "switch")] == sources_of(line(content, "Asked"))
    assert sources_of(line(content, "Tried")) == [ids[k][:8] for k in ("attempt", "fail2")]
    assert sources_of(line(content, "Root cause")) == [ids["cause"][:8]]
    assert summary["evidenceRefs"][:4] == [ids["fix"], ids["flag"], ids["check"], ids["cause"]]
    assert summary["confidence"] == 0.8


def test_the_same_session_gives_the_same_bytes(project, monkeypatch):
    s = Session(project, monkeypatch)
    debugging_session(s)
    with Memory(project / ".kindling") as memory:
        (capsule,) = memory.open_capsules()
        first = digest.closing_summary(memory, capsule)
        monkeypatch.setenv("KINDLING_NOW", str(START + 10**9))  # the clock never shows
        again = digest.closing_summary(memory, capsule)
    assert first == again
    assert first.text.encode() == again.text.encode()


def test_a_session_that_never_ended_says_it_was_interrupted(project, monkeypatch):
    s = Session(project, monkeypatch)
    s.start()
    s.prompt(ASK)
    last = s.fail("pytest tests/test_upload.py -q", "TimeoutError: upload took longer than 30s")
    later = Session(project, monkeypatch, session="9a8b7c6d-0000-4000-8000-000000000001")
    later.now = s.now + 5 * 60 * 60 * 1000
    later.start()  # closes the stale capsule
    parts = parts_of(summary_of(project)["content"])
    moment = "2026-05-28 20:29 UTC"
    assert parts["Interrupted"] == f"the session never ended; its last activity was at {moment}"
    assert parts["Still failing"].startswith("Bash: pytest tests/test_upload.py -q -> exit 1")
    assert sources_of(line(summary_of(project)["content"], "Interrupted")) == [last[:8]]


def test_forgetting_one_observation_redacts_only_its_lines(project, monkeypatch):
    s = Session(project, monkeypatch)
    ids = debugging_session(s)
    s.end()
    before = summary_of(project)["content"].split("\n")
    with Memory(project / ".kindling") as memory:
        memory.forget(ids["lint"])
    after = summary_of(project)["content"].split("\n")
    assert len(after) == len(before)
    for old, new in zip(before, after, strict=True):
        if old.startswith("Still failing: "):
            assert new == f"Still failing: {REDACTED_CONTENT} [{ids['lint'][:8]}]"
        else:
            assert new == old
    assert "F401" not in "\n".join(after)


def test_forgetting_the_prompt_takes_it_from_every_line_built_from_it(project, monkeypatch):
    s = Session(project, monkeypatch)
    ids = debugging_session(s)
    s.end()
    with Memory(project / ".kindling") as memory:
        memory.forget(ids["ask"])
    content = summary_of(project)["content"]
    assert line(content, "Asked").startswith(f"Asked: {REDACTED_CONTENT} [")
    assert "uploader client" not in content
    assert line(content, "Root cause").endswith(f"[{ids['cause'][:8]}]")


def test_private_sections_never_reach_a_summary(project, monkeypatch):
    s = Session(project, monkeypatch)
    s.start()
    s.prompt("fix the login bug <private>my password is hunter2</private> in auth.py please")
    s.fail("pytest -q", "AssertionError: <private>token abc123</private> expired")
    s.stop("Done. <private>The staging key is sk-secret-xyz.</private> The cause was a typo.")
    s.end()
    content = summary_of(project)["content"]
    for secret in ("hunter2", "abc123", "sk-secret-xyz", "private>"):
        assert secret not in content
    assert "fix the login bug" in content and "The cause was a typo." in content


def test_the_agents_own_summary_comes_first(project, monkeypatch):
    s = Session(project, monkeypatch)
    ids = debugging_session(s)
    with Memory(project / ".kindling") as memory:
        scope = {"sessionId": SESSION, "repoId": "uploader", "agentId": "claude-code"}
        for text in ("A first draft.", "Fixed the upload timeout by reusing one session."):
            s.now += 60_000
            agent = memory.log(
                text, scope=scope, ts=s.now, provenance={"source": "mcp", "summary": "agent"}
            ).entity
    s.end()
    summary = summary_of(project)
    parts = parts_of(summary["content"])
    assert list(parts) == ["Summary", "Changed", "Still failing"]
    assert parts["Summary"] == "Fixed the upload timeout by reusing one session."
    assert sources_of(summary["content"].split("\n")[0]) == [agent["id"][:8]]
    assert summary["confidence"] > 0.8
    assert ids["fix"] in summary["evidenceRefs"]


def _legacy_store(project: Path, monkeypatch) -> str:
    """A session closed by the earlier hooks (Stop message first), and one a person closed; the
    latter's capsule id."""
    s = Session(project, monkeypatch)
    debugging_session(s)
    with Memory(project / ".kindling") as memory:
        (capsule,) = memory.open_capsules()
        old = f"{LAST}\n\nFiles changed: src/upload/client.py, src/upload/cli.py."
        memory.close_capsule(capsule["id"], summary=old, confidence=0.8, evidence=[s.ids[-1]])
        other = Session(project, monkeypatch, session="0c0c0c0c-0000-4000-8000-000000000002")
        other.start()
        other.prompt("rename the config loader")
        (mine,) = memory.open_capsules("0c0c0c0c-0000-4000-8000-000000000002")
        memory.close_capsule(mine["id"], summary="Renamed the loader; nothing else to do.")
        return mine["id"]


def test_summarize_rebuild_rewrites_the_hooks_summaries_only(project, monkeypatch):
    person_capsule = _legacy_store(project, monkeypatch)
    store = str(project / ".kindling")
    with Memory(store) as memory:
        before = {s["capsuleId"]: s for s in memory.list("summaries", limit=None)}
    dry = CliRunner().invoke(cli, ["--store", store, "summarize", "--rebuild", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.startswith("would rewrite summary ")
    assert "1 would rewrite, 0 already up to date; 1 left alone" in dry.output
    with Memory(store) as memory:
        assert {s["capsuleId"]: s for s in memory.list("summaries", limit=None)} == before

    done = CliRunner().invoke(cli, ["--store", store, "summarize", "--rebuild", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    (rewritten,) = report["rewritten"]
    assert [s["capsuleId"] for s in report["skipped"]] == [person_capsule]
    with Memory(store) as memory:
        after = {s["capsuleId"]: s for s in memory.list("summaries", limit=None)}
    assert after[person_capsule] == before[person_capsule]
    new = after[rewritten["capsuleId"]]
    assert new["id"] == rewritten["summaryId"] == before[rewritten["capsuleId"]]["id"]
    assert new["ts"] == before[rewritten["capsuleId"]]["ts"]
    assert list(parts_of(new["content"]))[:2] == ["Asked", "Tried"]

    again = CliRunner().invoke(cli, ["--store", store, "summarize", "--rebuild"])
    assert again.exit_code == 0
    assert again.output == (
        "Nothing to rewrite: 1 already up to date; 1 left alone (not written by the hooks)\n"
    )
    with Memory(store) as memory:
        assert {s["capsuleId"]: s for s in memory.list("summaries", limit=None)} == after


def test_summarize_usage_and_bad_input(project):
    store = str(project / ".kindling")
    usage = CliRunner().invoke(cli, ["--store", store, "summarize"])
    assert usage.exit_code == 2 and "pass --rebuild" in usage.output
    bad = CliRunner().invoke(
        cli, ["--store", store, "summarize", "--rebuild", "--capsule", "nope00"]
    )
    assert bad.exit_code == 1
    assert bad.output.startswith("Error: ") and len(bad.output.strip().splitlines()) == 1
