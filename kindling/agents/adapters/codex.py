"""Codex CLI: hooks in `.codex/hooks.json`, payloads and answers in Claude Code's shape.

Sources (read 2026-12-02): https://developers.openai.com/codex/hooks.md (events, where hooks
are found, trust: "Non-managed command hooks must be reviewed and trusted before they run",
project `.codex/` hooks load only in a trusted project, matching hooks run concurrently,
SessionEnd for the main thread), and the input/output JSON schemas in openai/codex
`codex-rs/hooks/schema/generated/*.command.{input,output}.schema.json` (commit bde5e18):
common `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `model`, `turn_id`;
SessionStart `source`; UserPromptSubmit `prompt`; PostToolUse `tool_name`, `tool_input`,
`tool_response`, `tool_use_id`; Stop `last_assistant_message`; PostCompact `trigger`;
SessionStart and UserPromptSubmit answer `hookSpecificOutput.additionalContext`.

Not documented, read conservatively: Codex has no PostToolUseFailure, so a Bash response
carrying a non-zero `exit_code` (or `exitCode`) is recorded as a failure; `apply_patch`'s
`tool_input` holds the patch text (under `command`, `input` or `patch`), recorded as a diff of
the first file it names.
"""

from __future__ import annotations

import re
from typing import Any

from kindling.agents.adapters.base import Adapter, Normalized
from kindling.agents.adapters.common import additional_context, normalize_with

NAME = "codex"
EVENTS: dict[str, str | None] = {
    "SessionStart": "SessionStart",
    "UserPromptSubmit": "UserPromptSubmit",
    "PreToolUse": None,
    "PermissionRequest": None,
    "PostToolUse": "PostToolUse",
    "SubagentStart": None,
    "SubagentStop": "SubagentStop",
    "Stop": "Stop",
    "PreCompact": "PreCompact",
    "PostCompact": "PostCompact",
    "SessionEnd": "SessionEnd",
}
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


def _exit_code(response: Any) -> Any:
    if isinstance(response, dict):
        for key in ("exit_code", "exitCode"):
            if isinstance(response.get(key), int) and not isinstance(response.get(key), bool):
                return response[key]
    return None


def _patch(tool_input: Any) -> str:
    if isinstance(tool_input, str):
        return tool_input
    if isinstance(tool_input, dict):
        for key in ("command", "input", "patch"):
            if isinstance(tool_input.get(key), str):
                return tool_input[key]
    return ""


def _tool(payload: dict) -> tuple[str, dict[str, Any]]:
    """(Claude Code event, the fields that change) for a PostToolUse payload."""
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if tool == "apply_patch":
        patch = _patch(tool_input)
        files = _PATCH_FILE.findall(patch)
        return "PostToolUse", {
            "tool_name": "ApplyPatch",
            "tool_input": {"file_path": files[0].strip() if files else "?", "patch": patch},
        }
    code = _exit_code(payload.get("tool_response"))
    if tool == "Bash" and code not in (None, 0):
        response = payload["tool_response"]
        output = response.get("output") or response.get("stdout") or response.get("stderr") or ""
        return "PostToolUseFailure", {"error": f"Exit code {code}\n{output}"}
    return "PostToolUse", {}


def normalize(event: str, payload: dict) -> Normalized:
    """Codex's payload in the pipeline's shape (its fields already are Claude Code's)."""
    return normalize_with(NAME, EVENTS, _tool, event, payload)


def answer(event: str, text: str | None) -> str | None:
    """`hookSpecificOutput.additionalContext`, as Claude Code's (Codex reads the same)."""
    return additional_context(event, text)


ADAPTER = Adapter(NAME, EVENTS, normalize, answer)
