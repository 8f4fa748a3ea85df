"""Cursor: hooks in `.cursor/hooks.json` (`{"version": 1, "hooks": {event: [{command}]}}`).

Source: https://cursor.com/docs/agent/hooks (read 2026-12-02; hooks since Cursor 1.7, the
session and tool-failure events in the 2.x releases). Every hook gets `conversation_id`,
`generation_id`, `hook_event_name`, `workspace_roots` (and `cursor_version`, `model`);
sessionStart answers `additional_context`; beforeSubmitPrompt `prompt` answers only
`continue` (no injected context: prompt recall is not offered); afterShellExecution
`command`, `output`, `duration`; afterFileEdit `file_path`, `edits` (`old_string`,
`new_string`); afterMCPExecution `tool_name`, `tool_input` (JSON text), `result_json`;
postToolUseFailure `tool_name`, `tool_input`, `error_message`; afterAgentResponse `text`;
preCompact; sessionEnd `reason`. The after* hooks are fire-and-forget.

Not found in the docs, read conservatively: a `timeout` per hook (none is written), and
whether a shell command's exit status reaches afterShellExecution (it is recorded as run;
postToolUseFailure records a failure). postToolUse is not hooked: afterShellExecution,
afterFileEdit and afterMCPExecution already record those calls, with their details.
"""

from __future__ import annotations

import json
from typing import Any

from kindling.agents.adapters.base import Adapter, Normalized
from kindling.agents.adapters.common import first_root, maybe_json, native_session, shaped
from kindling.agents.payload import text_of

NAME = "cursor"
EVENTS: dict[str, str | None] = {
    "sessionStart": "SessionStart",
    "beforeSubmitPrompt": "UserPromptSubmit",
    "beforeShellExecution": None,
    "beforeMCPExecution": None,
    "beforeReadFile": None,
    "preToolUse": None,
    "postToolUse": None,
    "afterShellExecution": "PostToolUse",
    "afterFileEdit": "PostToolUse",
    "afterMCPExecution": "PostToolUse",
    "postToolUseFailure": "PostToolUseFailure",
    "afterAgentResponse": "Stop",
    "afterAgentThought": None,
    "stop": None,
    "preCompact": "PreCompact",
    "sessionEnd": "SessionEnd",
}


def _changes(event: str, payload: dict) -> dict[str, Any]:
    if event == "afterShellExecution":
        return {
            "tool_name": "Bash",
            "tool_input": {"command": text_of(payload.get("command"))},
            "tool_response": {"stdout": text_of(payload.get("output"))},
        }
    if event == "afterFileEdit":
        edits = payload.get("edits") if isinstance(payload.get("edits"), list) else []
        return {
            "tool_name": "MultiEdit",
            "tool_input": {"file_path": text_of(payload.get("file_path")), "edits": edits},
            "tool_response": {},
        }
    if event == "afterMCPExecution":
        tool = text_of(payload.get("tool_name")) or "tool"
        return {
            "tool_name": f"MCP:{tool}",
            "tool_input": maybe_json(payload.get("tool_input")),
            "tool_response": maybe_json(payload.get("result_json")),
        }
    if event == "postToolUseFailure":
        return {"tool_input": maybe_json(payload.get("tool_input"))}
    if event == "afterAgentResponse":
        return {"last_assistant_message": text_of(payload.get("text"))}
    return {}


def normalize(event: str, payload: dict) -> Normalized:
    """Cursor's payload in the pipeline's shape: conversation_id the session, the first
    workspace root the project."""
    target = EVENTS[event] or event
    native = native_session(payload, "conversation_id", "session_id")
    changes = _changes(event, payload)
    root = first_root(payload)
    if root is not None:
        changes["cwd"] = root
    if target == "SessionStart" and not isinstance(payload.get("source"), str):
        changes["source"] = "startup"
    return Normalized(target, shaped(NAME, target, payload, native, **changes))


def answer(event: str, text: str | None) -> str | None:
    """sessionStart: `additional_context`; beforeSubmitPrompt: `continue` (always true)."""
    if event == "beforeSubmitPrompt":
        return json.dumps({"continue": True})
    if event == "sessionStart" and text:
        return json.dumps({"additional_context": text}, ensure_ascii=False)
    return None


ADAPTER = Adapter(NAME, EVENTS, normalize, answer, injects_prompt_context=False)
