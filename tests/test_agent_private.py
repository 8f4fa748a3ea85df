"""`<private>...</private>`: never stored, from any agent, `kindling log` or MCP.

The whole `.kindling` tree and the index database are searched byte for byte afterwards.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_agent_replay import codex, cursor, gemini, hook, opencode, repo  # noqa: F401

from kindling.agents.intake import loads
from kindling.agents.private import PRIVATE_MARK, strip_private
from kindling.cli import cli

SECRET = "hunter2-staging-db"
OTHER = "the-vault-path"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("a <private>x</private> b", f"a {PRIVATE_MARK} b"),
        ("a <PRIVATE>x</Private> b", f"a {PRIVATE_MARK} b"),
        ("a <private>x <private>y</private> z</private> b", f"a {PRIVATE_MARK} b"),
        ("a <private>never closed", f"a {PRIVATE_MARK}"),
        ("a </private> b", "a  b"),
        ("<private>x</private><private>y</private>", PRIVATE_MARK * 2),
        ("no tags, <privateKey> kept", "no tags, <privateKey> kept"),
    ],
)
def test_strip_private(text, kept):
    assert strip_private(text) == kept


def test_every_string_from_outside_loses_it():
    value = loads(
        json.dumps({"prompt": f"x <private>{SECRET}</private>", "n": [f"<private>{OTHER}"]})
    )
    assert value == {"prompt": f"x {PRIVATE_MARK}", "n": [PRIVATE_MARK]}


def files_holding(root: Path, needle: str) -> list[Path]:
    data = needle.encode()
    return [p for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]


def test_private_text_reaches_no_file(repo):  # noqa: F811
    secret = f"<private>{SECRET}</private>"
    prompt = f"Deploy the login fix; the staging password is {secret} so use it"
    # Claude Code, Codex, Gemini CLI, Cursor and OpenCode, each with the secret in a prompt and
    # in tool text; then `kindling log` (argv and stdin).
    claude = {"session_id": "c1", "cwd": str(repo), "transcript_path": "/t.jsonl"}
    hook("claude-code", "SessionStart", {**claude, "hook_event_name": "SessionStart"})
    hook(
        "claude-code",
        "UserPromptSubmit",
        {**claude, "hook_event_name": "UserPromptSubmit", "prompt": prompt},
    )
    hook(
        "claude-code",
        "PostToolUse",
        {
            **claude,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"psql -c 'select 1' # {secret}"},
            "tool_response": {"stdout": f"ok <private>{OTHER}", "stderr": ""},
        },
    )
    hook(
        "claude-code",
        "Stop",
        {**claude, "hook_event_name": "Stop", "last_assistant_message": f"Done with {secret}."},
    )
    hook("claude-code", "SessionEnd", {**claude, "hook_event_name": "SessionEnd"})
    hook("codex", "UserPromptSubmit", codex("UserPromptSubmit", repo, "t1", prompt=prompt))
    hook(
        "codex",
        "PostToolUse",
        codex(
            "PostToolUse",
            repo,
            "t1",
            tool_name="Bash",
            tool_input={"command": f"echo {secret}"},
            tool_response={"exit_code": 1, "output": f"<private>{OTHER}</private>"},
            tool_use_id="c",
        ),
    )
    hook("codex", "SessionEnd", codex("SessionEnd", repo, "t1"))
    hook("gemini", "BeforeAgent", gemini("BeforeAgent", repo, "g1", prompt=prompt))
    hook(
        "gemini",
        "AfterTool",
        gemini(
            "AfterTool",
            repo,
            "g1",
            tool_name="write_file",
            tool_input={"file_path": str(repo / "notes.md"), "content": f"x\n{secret}\ny"},
            tool_response={"llmContent": "ok"},
        ),
    )
    hook("cursor", "beforeSubmitPrompt", cursor("beforeSubmitPrompt", repo, "k1", prompt=prompt))
    hook(
        "cursor",
        "afterShellExecution",
        cursor("afterShellExecution", repo, "k1", command=f"curl {secret}", output="done"),
    )
    hook("opencode", "chat.message", opencode("chat.message", repo, "o1", prompt=prompt))
    env = {"KINDLING_STORE": str(repo / ".kindling")}
    assert CliRunner().invoke(cli, ["log", f"note {secret}"], env=env).exit_code == 0
    assert (
        CliRunner().invoke(cli, ["log", "-"], input=f"from stdin {secret}", env=env).exit_code == 0
    )
    assert CliRunner().invoke(cli, ["reindex"], env=env).exit_code == 0
    # Nothing under .kindling (entity files, index database, activity) holds it; the cache
    # and state folders of this test's home neither.
    roots = (repo, Path(os.environ["HOME"]))  # .kindling, and the index in .git/kindling
    databases = [p for root in roots for p in root.rglob("index.sqlite*")]
    assert databases  # the index is among the files searched
    assert any(files_holding(root, "staging password") for root in roots)  # the search works
    for root in roots:
        assert files_holding(root, SECRET) == []
        assert files_holding(root, OTHER) == []
    # The prompts were still recorded, and the capsule named after what is left of them.
    found = CliRunner().invoke(cli, ["search", "staging password", "--json"], env=env)
    assert PRIVATE_MARK in found.stdout
