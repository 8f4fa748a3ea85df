"""Gemini CLI: hooks in `.gemini/settings.json`, its own event and tool names.

Source: google-gemini/gemini-cli docs/hooks/reference.md and docs/hooks/index.md (commit
06c0d81, read 2026-12-02; https://geminicli.com/docs/hooks/reference). Every hook gets
`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`; SessionStart
`source`; BeforeAgent `prompt`; AfterTool `tool_name`, `tool_input`, `tool_response`
(`llmContent`, `returnDisplay`, optional `error`); AfterAgent `prompt`, `prompt_response`;
PreCompress `trigger`; Notification `notification_type`, `message`; SessionEnd `reason`.
SessionStart and BeforeAgent answer `hookSpecificOutput.additionalContext`; exit 0 means
stdout is parsed as JSON, so every answer here is JSON (`{}` when there is nothing to say).
Hooks run synchronously (Gemini waits for them; timeout in milliseconds, default 60,000);
SessionEnd is best effort ("the CLI will not wait"), PreCompress fires asynchronously. The
hooks system is switched on by `tools.enableHooks` in settings.json. Tool names: the docs'
Claude Code mapping (run_shell_command = Bash, replace = Edit, write_file = Write,
read_file = Read).
"""

from __future__ import annotations

import json
from typing import Any

from kindling.agents.adapters.base import Adapter, Normalized
from kindling.agents.adapters.common import additional_context, normalize_with
from kindling.agents.payload import text_of

NAME = "gemini"
EVENTS: dict[str, str | None] = {
    "SessionStart": "SessionStart",
    "BeforeAgent": "UserPromptSubmit",
    "AfterAgent": "Stop",
    "BeforeTool": None,
    "AfterTool": "PostToolUse",
    "BeforeModel": None,
    "AfterModel": None,
    "BeforeToolSelection": None,
    "Notification": "Notification",
    "PreCompress": "PreCompact",
    "SessionEnd": "SessionEnd",
}
TOOLS = {"run_shell_command": "Bash", "replace": "Edit", "write_file": "Write", "read_file": "Read"}


def _output(response: Any) -> str:
    if isinstance(response, dict):
        for key in ("llmContent", "returnDisplay", "output"):
            if response.get(key):
                return text_of(response[key])
        return ""
    return text_of(response)


def _tool(payload: dict) -> tuple[str, dict[str, Any]]:
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    tool_input = dict(tool_input)
    if "file_path" not in tool_input and isinstance(tool_input.get("absolute_path"), str):
        tool_input["file_path"] = tool_input["absolute_path"]
    response = payload.get("tool_response")
    mapped = TOOLS.get(tool, tool) if isinstance(tool, str) else tool
    changes: dict[str, Any] = {"tool_name": mapped, "tool_input": tool_input}
    error = response.get("error") if isinstance(response, dict) else None
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        changes["error"] = text_of(message) or json.dumps(error)
        return "PostToolUseFailure", changes
    if mapped == "Bash":
        changes["tool_response"] = {"stdout": _output(response)}
    elif mapped not in ("Edit", "Write"):
        changes["tool_response"] = _output(response)
    else:
        changes["tool_response"] = {}
    return "PostToolUse", changes


def normalize(event: str, payload: dict) -> Normalized:
    """Gemini's payload in the pipeline's shape (its turn's answer is `prompt_response`)."""
    if (EVENTS[event] or event) == "Stop":
        answer = text_of(payload.get("prompt_response"))
        return normalize_with(NAME, EVENTS, _tool, event, payload, last_assistant_message=answer)
    return normalize_with(NAME, EVENTS, _tool, event, payload)


def answer(event: str, text: str | None) -> str | None:
    """`hookSpecificOutput.additionalContext` under Gemini's event name; `{}` otherwise."""
    return additional_context(event, text) or "{}"


ADAPTER = Adapter(NAME, EVENTS, normalize, answer)
