"""OpenCode: a plugin (kindling/plugin/opencode/kindling.js) sends its events to this hook.

Source: https://opencode.ai/docs/plugins (V1 docs, read 2026-12-02): plugins are JS/TS files
in `.opencode/plugins/` loaded at startup, each returning hooks: `event` (bus events such as
`session.created`, `session.idle`, `session.deleted`, `session.compacted`),
`chat.message`, `tool.execute.before` / `tool.execute.after` (input `tool`, `sessionID`,
`callID`; output `title`, `output`, `metadata`) and the experimental
`experimental.chat.system.transform`. Hooks run in sequence, in process; the plugin runs
`kindling hook --agent opencode EVENT` with the JSON below on stdin, in the background for
capture and awaited only where an answer is used.

The plugin's payload (its own, since OpenCode hooks are functions, not commands):
`{"hook_event_name", "session_id", "cwd", "prompt"?, "tool"?, "args"?, "output"?, "title"?,
"exit"?}`. OpenCode has no documented way to put context into a session at its start; the
plugin adds the start context to the system prompt through the experimental transform hook
(a documented-as-experimental API), and nothing at a prompt.
"""

from __future__ import annotations

import json
from typing import Any

from kindling.agents.adapters.base import Adapter, Normalized
from kindling.agents.adapters.common import normalize_with
from kindling.agents.payload import text_of

NAME = "opencode"
EVENTS: dict[str, str | None] = {
    "session.created": "SessionStart",
    "chat.message": "UserPromptSubmit",
    "tool.execute.after": "PostToolUse",
    "session.idle": "Stop",
    "session.compacted": None,
    "session.deleted": "SessionEnd",
}
TOOLS = {"bash": "Bash", "edit": "Edit", "write": "Write", "read": "Read"}
# OpenCode's argument names -> Claude Code's
_ARGS = {"filePath": "file_path", "oldString": "old_string", "newString": "new_string"}


def _tool(payload: dict) -> tuple[str, dict[str, Any]]:
    tool = text_of(payload.get("tool")) or "tool"
    args = payload.get("args") if isinstance(payload.get("args"), dict) else {}
    tool_input = {_ARGS.get(k, k): v for k, v in args.items()}
    mapped = TOOLS.get(tool, tool)
    output = text_of(payload.get("output"))
    changes: dict[str, Any] = {"tool_name": mapped, "tool_input": tool_input}
    code = payload.get("exit")
    if mapped == "Bash" and isinstance(code, int) and not isinstance(code, bool) and code != 0:
        changes["error"] = f"Exit code {code}\n{output}"
        return "PostToolUseFailure", changes
    changes["tool_response"] = {"stdout": output} if mapped == "Bash" else output
    if mapped in ("Edit", "Write"):
        changes["tool_response"] = {}
    return "PostToolUse", changes


def normalize(event: str, payload: dict) -> Normalized:
    """The plugin's payload in the pipeline's shape."""
    return normalize_with(NAME, EVENTS, _tool, event, payload)


def answer(event: str, text: str | None) -> str | None:
    """session.created: `{"context": text}` for the plugin to add to the system prompt."""
    if event == "session.created" and text:
        return json.dumps({"context": text}, ensure_ascii=False)
    return None


ADAPTER = Adapter(NAME, EVENTS, normalize, answer, injects_prompt_context=False)
