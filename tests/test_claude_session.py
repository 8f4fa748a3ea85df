"""A whole Claude Code session replayed through `kindling hook`, then the repository cloned.

Payloads are shaped as Claude Code's hooks reference documents them: the common fields
(session_id, transcript_path, cwd, permission_mode, hook_event_name) and each event's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_kindling

ORIGIN = "git@github.com:acme/acme-api.git"
REPO_ID = "github.com/acme/acme-api"
FIRST = "0f8e5a2c-1d3b-4c5e-9f70-a1b2c3d4e5f6"
SECOND = "7b6a5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
PROMPT = "Users get logged out right after login; the JWT expiry check in validateToken looks wrong"
FIX = (
    "Fixed the logout bug: validateToken compared the JWT exp claim (seconds) with Date.now() "
    "(milliseconds), so every token looked expired. It now compares with "
    "Math.floor(Date.now() / 1000), and npm test -- auth passes."
)
SUBAGENT = "Searched the middleware: only validateToken.ts reads payload.exp."
COMPACTED = "The user reported logouts after login; the failing auth test points at exp handling."


@pytest.fixture(autouse=True)
def no_claude_env(monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)


def git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def base(event: str, project: Path, session: str) -> dict:
    return {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/x/{session}.jsonl",
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
    }


def hook(event: str, body: dict, project: Path, env: dict | None = None) -> dict | None:
    """Run `kindling hook EVENT` as Claude Code does; the additionalContext it answers with."""
    result = run_kindling(
        "hook", event, input=json.dumps(body).encode(), cwd=project, env=env or {}
    )
    assert result.returncode == 0
    assert result.stderr == b"", result.stderr.decode()
    if not result.stdout.strip():
        return None
    out = json.loads(result.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == event
    return out["additionalContext"]


def tool(event: str, project: Path, session: str, name: str, tool_input: dict, **fields) -> dict:
    return {**base(event, project, session), "tool_name": name, "tool_input": tool_input, **fields}


def replay_first_session(project: Path) -> dict[str, str | None]:
    """Every documented event once or more, as a real debugging session produces them."""
    source = project / "src" / "middleware" / "validateToken.ts"
    s = FIRST
    answers = {}
    steps = [
        ("SessionStart", {**base("SessionStart", project, s), "source": "startup", "model": "m"}),
        ("UserPromptSubmit", {**base("UserPromptSubmit", project, s), "prompt": PROMPT}),
        (
            "PreToolUse",
            tool("PreToolUse", project, s, "Read", {"file_path": str(source)}, tool_use_id="t1"),
        ),
        (
            "PostToolUse",
            tool(
                "PostToolUse",
                project,
                s,
                "Read",
                {"file_path": str(source)},
                tool_response={"type": "text", "file": {"filePath": str(source), "content": "x"}},
                tool_use_id="t1",
            ),
        ),
        (
            "PostToolUseFailure",
            tool(
                "PostToolUseFailure",
                project,
                s,
                "Bash",
                {"command": "npm test -- auth", "description": "Run the auth tests"},
                tool_use_id="t2",
                error="Exit code 1\nFAIL test/auth.test.ts\n  TokenExpiredError: jwt expired",
                is_interrupt=False,
            ),
        ),
        (
            "SubagentStart",
            {**base("SubagentStart", project, s), "agent_id": "a1", "agent_type": "Explore"},
        ),
        (
            "SubagentStop",
            {
                **base("SubagentStop", project, s),
                "stop_hook_active": False,
                "agent_id": "a1",
                "agent_type": "Explore",
                "agent_transcript_path": "/home/dev/.claude/a1.jsonl",
                "last_assistant_message": SUBAGENT,
            },
        ),
        (
            "PermissionRequest",
            tool("PermissionRequest", project, s, "Edit", {"file_path": str(source)}),
        ),
        (
            "PostToolUse",
            tool(
                "PostToolUse",
                project,
                s,
                "Edit",
                {
                    "file_path": str(source),
                    "old_string": "if (payload.exp < Date.now()) {",
                    "new_string": "if (payload.exp < Math.floor(Date.now() / 1000)) {",
                    "replace_all": False,
                },
                tool_response={
                    "filePath": str(source),
                    "structuredPatch": [
                        {
                            "oldStart": 3,
                            "oldLines": 1,
                            "newStart": 3,
                            "newLines": 1,
                            "lines": [
                                "-  if (payload.exp < Date.now()) {",
                                "+  if (payload.exp < Math.floor(Date.now() / 1000)) {",
                            ],
                        }
                    ],
                },
                tool_use_id="t3",
            ),
        ),
        (
            "PostToolUse",
            tool(
                "PostToolUse",
                project,
                s,
                "Bash",
                {"command": "npm test -- auth", "description": "Run the auth tests"},
                tool_response={"stdout": "42 passed\n", "stderr": "", "interrupted": False},
                tool_use_id="t4",
            ),
        ),
        (
            "Notification",
            {
                **base("Notification", project, s),
                "message": "Claude is waiting for your input",
                "notification_type": "idle_prompt",
            },
        ),
        (
            "PreCompact",
            {**base("PreCompact", project, s), "trigger": "manual", "custom_instructions": ""},
        ),
        (
            "PostCompact",
            {**base("PostCompact", project, s), "trigger": "manual", "compact_summary": COMPACTED},
        ),
        ("SessionStart", {**base("SessionStart", project, s), "source": "compact"}),
        (
            "Stop",
            {**base("Stop", project, s), "stop_hook_active": False, "last_assistant_message": FIX},
        ),
        ("SessionEnd", {**base("SessionEnd", project, s), "reason": "prompt_input_exit"}),
    ]
    for event, body in steps:
        answers[event] = hook(event, body, project)
    return answers


def stored(store: Path, entity_type: str) -> list[dict]:
    from kindling.memory import Memory

    with Memory(store) as memory:
        return memory.list(entity_type, limit=None)


@pytest.fixture
def repo(tmp_path) -> Path:
    """acme-api: a git repository with an origin remote, a source file and a Kindling store."""
    project = tmp_path / "acme-api"
    (project / "src" / "middleware").mkdir(parents=True)
    (project / "src" / "middleware" / "validateToken.ts").write_text(
        "export function validateToken(payload) {\n  // check expiry\n"
        "  if (payload.exp < Date.now()) {\n    throw new Error('expired');\n  }\n}\n"
    )
    git("init", "-q", "-b", "main", cwd=project)
    git("remote", "add", "origin", ORIGIN, cwd=project)
    assert run_kindling("init", cwd=project).returncode == 0
    git("add", "-A", cwd=project)
    git("commit", "-q", "-m", "start", cwd=project)
    return project


def test_a_documented_session_then_a_teammates_clone(repo, tmp_path):
    answers = replay_first_session(repo)
    assert answers["UserPromptSubmit"] is None  # nothing earlier to recall

    store = repo / ".kindling"
    (capsule,) = stored(store, "capsules")
    assert capsule["status"] == "closed"
    assert capsule["intent"] == PROMPT
    assert capsule["scopeIds"] == {"sessionId": FIRST, "repoId": REPO_ID, "agentId": "claude-code"}
    (summary,) = stored(store, "summaries")
    lines = summary["content"].split("\n")
    assert lines[0].startswith(f"Asked: {PROMPT} [")
    assert lines[1].startswith(
        "Changed: src/middleware/validateToken.ts; then passed: Bash: npm test -- auth ["
    )
    assert lines[-1].startswith(f"Last message: {FIX} [")
    observations = {o["id"]: o for o in stored(store, "observations")}
    assert set(summary["evidenceRefs"]) <= set(capsule["observationIds"]) == set(observations)
    contents = [o["content"] for o in observations.values()]
    assert "Bash: npm test -- auth -> exit 1\nFAIL test/auth.test.ts" in "\n".join(contents)
    assert any(c.startswith("--- a/src/middleware/validateToken.ts\n") for c in contents)
    assert any(c.startswith(f"Subagent Explore reported:\n{SUBAGENT}") for c in contents)
    assert not any(str(repo) in json.dumps(o) for o in observations.values())  # no machine paths

    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "memory of the logout fix", cwd=repo)
    clone = tmp_path / "work" / "teammate-checkout"
    clone.parent.mkdir()
    git("clone", "-q", str(repo), str(clone), cwd=tmp_path)
    git("remote", "set-url", "origin", "https://github.com/acme/acme-api.git", cwd=clone)

    start = {**base("SessionStart", clone, SECOND), "source": "startup"}
    context = hook("SessionStart", start, clone)
    assert "Nothing stored yet" not in context
    assert f"# Kindling memory for {REPO_ID}" in context
    assert PROMPT[:60] in context  # the previous session's intent
    assert "Math.floor(Date.now() / 1000)" in context  # its summary, from last_assistant_message
    assert SECOND in context
    (opened,) = [c for c in stored(clone / ".kindling", "capsules") if c["status"] == "open"]
    assert opened["id"] in context and opened["scopeIds"]["repoId"] == REPO_ID

    prompt = "After login users are logged out again: is the JWT exp check still comparing seconds?"
    asked = {**base("UserPromptSubmit", clone, SECOND), "prompt": prompt}
    recalled = hook("UserPromptSubmit", asked, clone)
    # Everything relevant was in the session's context already: nothing is repeated.
    assert recalled is None or not set(_ids(recalled)) & set(_ids(context))

    # Weeks of other work later, the start context has moved on; the prompt brings the fix back.
    other_work(clone / ".kindling")
    third = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
    later = hook("SessionStart", {**base("SessionStart", clone, third), "source": "startup"}, clone)
    assert "Math.floor" not in later and "rate limiter" in later
    asked = {**base("UserPromptSubmit", clone, third), "prompt": prompt}
    recalled = hook("UserPromptSubmit", asked, clone)
    # The fix: the session's summary, whose last message states it.
    assert recalled is not None and f"[{summary['id'][:12]}]" in recalled
    assert "Last message: Fixed the logout bug" in recalled
    assert len(recalled) <= 2_400
    again = hook("UserPromptSubmit", asked, clone)
    assert again is None or not set(_ids(again)) & set(_ids(recalled))


def other_work(store: Path) -> None:
    """Four later sessions on other subjects, recorded and summarised."""
    from kindling.memory import Memory

    with Memory(store) as memory:
        for n in range(4):
            scope = {"sessionId": f"later-{n}", "repoId": REPO_ID, "agentId": "claude-code"}
            cap = memory.open_capsule(f"tune the rate limiter, part {n}", scope=scope).entity
            for step in range(20):
                memory.log(f"rate limiter bucket size {step} tried in part {n}", scope=scope)
            memory.close_capsule(cap["id"], summary=f"rate limiter part {n}: buckets of 50 work")


def _ids(text: str) -> list[str]:
    return [line.rsplit("[", 1)[1].rstrip("]") for line in text.splitlines() if line.endswith("]")]


@pytest.mark.slow
def test_fifty_background_tool_calls_at_once_lose_nothing(repo):
    hook("SessionStart", {**base("SessionStart", repo, FIRST), "source": "startup"}, repo)
    processes = []
    for i in range(50):
        body = tool(
            "PostToolUse",
            repo,
            FIRST,
            "Bash",
            {"command": f"echo step {i}"},
            tool_response={"stdout": f"step {i}\n", "stderr": "", "interrupted": False},
            tool_use_id=f"toolu_{i}",
        )
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "kindling", "hook", "PostToolUse"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=repo,
            )
        )
        processes[-1].stdin.write(json.dumps(body).encode())
        processes[-1].stdin.close()
    for process in processes:
        assert process.wait(timeout=300) == 0
        assert process.stderr.read() == b""
    commands = [o for o in stored(repo / ".kindling", "observations") if o["kind"] == "command"]
    assert sorted(o["provenance"]["toolUseId"] for o in commands) == sorted(
        f"toolu_{i}" for i in range(50)
    )
    (capsule,) = stored(repo / ".kindling", "capsules")
    assert {o["id"] for o in commands} <= set(capsule["observationIds"])
    status = run_kindling("status", "--json", cwd=repo)
    assert json.loads(status.stdout)["capture"]["events"]["PostToolUse"]["count"] == 50


def test_a_session_that_never_ended_is_closed_at_the_next_start(repo):
    hook("SessionStart", {**base("SessionStart", repo, FIRST), "source": "startup"}, repo)
    hook("UserPromptSubmit", {**base("UserPromptSubmit", repo, FIRST), "prompt": PROMPT}, repo)
    failing = tool(
        "PostToolUseFailure",
        repo,
        FIRST,
        "Bash",
        {"command": "npm run lint"},
        error="Exit code 2\nlint errors",
    )
    hook("PostToolUseFailure", failing, repo)
    later = {"KINDLING_NOW": str(_now() + 5 * 60 * 60 * 1000)}
    context = hook(
        "SessionStart", {**base("SessionStart", repo, SECOND), "source": "startup"}, repo, env=later
    )
    capsules = {c["scopeIds"]["sessionId"]: c for c in stored(repo / ".kindling", "capsules")}
    assert capsules[FIRST]["status"] == "closed" and capsules[SECOND]["status"] == "open"
    (summary,) = stored(repo / ".kindling", "summaries")
    assert "\nStill failing: Bash: npm run lint -> exit 2 (lint errors) [" in summary["content"]
    assert "\nInterrupted: the session never ended; its last activity was at " in summary["content"]
    assert "Open problems" in context and "npm run lint -> exit 2" in context


def _now() -> int:
    from kindling.clock import now_ms

    return now_ms()


def test_status_shows_capture_errors_and_unknown_events(repo):
    hook("SessionStart", {**base("SessionStart", repo, FIRST), "source": "startup"}, repo)
    odd = run_kindling(
        "hook", "FutureEvent", input=json.dumps(base("FutureEvent", repo, FIRST)).encode(), cwd=repo
    )
    assert odd.returncode == 0 and odd.stdout == b""
    assert len(odd.stderr.decode().strip().splitlines()) == 1
    bad = run_kindling(
        "hook", "PostToolUse", input=json.dumps(base("PostToolUse", repo, FIRST)).encode(), cwd=repo
    )
    assert bad.returncode == 0 and b"no tool_name" in bad.stderr
    status = run_kindling("status", cwd=repo).stdout.decode()
    assert "SessionStart:" in status and "1 run(s) -> cap_" in status
    assert "Hook errors (last 1):" in status and "no tool_name" in status
    assert "Unknown hook events seen (ignored): FutureEvent (1)" in status
    # Beside the index in the git directory: nothing in the work tree for git to show.
    assert (repo / ".git" / "kindling").is_dir()
    assert list((repo / ".git" / "kindling").glob("*/hooks.json"))
    assert not list((repo / ".kindling").glob("*hooks*"))
    ignored = git("status", "--porcelain", "--ignored", "--", ".kindling", cwd=repo)
    assert "!!" not in ignored  # nothing derived left in the store for git to ignore


# ---------------------------------------------------------------- which repository


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:acme/acme-api.git",
        "https://github.com/acme/acme-api.git",
        "https://user:secret-token@github.com/acme/acme-api",
        "ssh://git@GitHub.com:22/acme/acme-api.git/",
        "git://github.com/acme/acme-api",
    ],
)
def test_every_form_of_the_remote_names_one_repository(url):
    from kindling.repo_identity import normalise_remote

    assert normalise_remote(url) == REPO_ID


def test_worktrees_and_renamed_clones_share_the_id(repo, tmp_path):
    from kindling.repo_identity import identify

    assert identify(repo / "src" / "middleware") == (REPO_ID, "acme-api", repo)
    worktree = tmp_path / "hotfix-tree"
    git("worktree", "add", "-q", str(worktree), "-b", "hotfix", cwd=repo)
    assert (worktree / ".git").is_file()  # gitdir: ... -> commondir -> the shared config
    assert identify(worktree).id == REPO_ID
    plain = tmp_path / "no-git-here"
    plain.mkdir()
    assert identify(plain) == ("no-git-here", "no-git-here", plain)
    git("init", "-q", str(tmp_path / "no-origin"), cwd=tmp_path)
    assert identify(tmp_path / "no-origin").id == "no-origin"


def test_the_config_is_read_as_git_writes_it():
    from kindling.repo_identity import origin_url

    text = (
        '[core]\n\tbare = false\n[remote "upstream"]\n\turl = https://github.com/up/x.git\n'
        '# a comment\n[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
        '\turl = git@github.com:acme/acme-api.git\n[branch "main"]\n\tremote = origin\n'
    )
    assert origin_url(text) == "git@github.com:acme/acme-api.git"
    assert origin_url("[core]\n") is None


# ---------------------------------------------------------------- mask first, then cut


def test_a_cut_never_leaves_half_a_secret(repo):
    from kindling.agents.hooks import record_for

    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join("MIIEowIBAAKCAQEA7x9Qm3fK2pLz8vYt4Rw1sN0bHc5JdXe6UaGi" for _ in range(200))
        + "\n-----END RSA PRIVATE KEY-----\n"
    )
    # Cut first, the kept tail would be key lines without their BEGIN line: unmaskable.
    output = "build step\n" * 2_000 + pem + "done\n"
    body = tool(
        "PostToolUse",
        repo,
        FIRST,
        "Bash",
        {"command": "cat deploy/key.pem"},
        tool_response={"stdout": output, "stderr": "", "interrupted": False},
    )
    found = record_for("PostToolUse", body)
    assert "kindling cut" in found.content  # it was cut...
    assert (
        "MIIEowIBAAKCAQEA7x9Qm3fK2pLz8vYt4Rw1sN0bHc5JdXe6UaGi" not in found.content
    )  # ...after masking
    assert "MIIEowIBAAKCAQEA7x9Qm3fK2pLz8vYt4Rw1sN0bHc5JdXe6UaGi" not in json.dumps(
        found.provenance
    )

    prompt = "x" * 30_000 + " password=hunter2hunter2hunter2 " + "y" * 30_000
    message = record_for(
        "UserPromptSubmit", {**base("UserPromptSubmit", repo, FIRST), "prompt": prompt}
    )
    assert "hunter2hunter2hunter2" not in message.content
