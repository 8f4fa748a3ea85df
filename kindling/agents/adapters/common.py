"""What every adapter does alike: the Claude Code shaped payload and the usual answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kindling.agents.adapters.base import Normalized
from kindling.agents.agent_ids import session_id
from kindling.agents.payload import AGENT_KEY
from kindling.errors import KindlingError


def native_session(payload: dict, *keys: str) -> str:
    """The agent's own session id: the first of `keys` holding a non-empty string."""
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value
    raise KindlingError(f"hook payload has no {' or '.join(keys)}")


def shaped(agent: str, event: str, payload: dict, native: str, **fields: Any) -> dict:
    """`payload` as the pipeline reads it: Claude Code's keys, this agent's namespaced session
    id and its name under AGENT_KEY; `fields` add or replace keys (None removes one)."""
    out = {k: v for k, v in payload.items() if k != AGENT_KEY}
    out.update(
        {"session_id": session_id(agent, native), "hook_event_name": event, AGENT_KEY: agent}
    )
    for key, value in fields.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def first_root(payload: dict) -> str | None:
    """The first workspace root an IDE sends (`workspace_roots`), else its `cwd`."""
    roots = payload.get("workspace_roots")
    if isinstance(roots, list):
        for root in roots:
            if isinstance(root, str) and root:
                return root
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


def maybe_json(value: Any) -> Any:
    """A value some agents send as JSON text (Cursor's MCP tool_input): parsed when it is."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def additional_context(event: str, text: str | None) -> str | None:
    """Claude Code's answer shape (also Codex's and Gemini's): hookSpecificOutput."""
    if not text:
        return None
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return json.dumps(output, ensure_ascii=False)


def normalize_with(
    agent: str,
    events: dict[str, str | None],
    tool: Callable[[dict], tuple[str, dict[str, Any]]],
    event: str,
    payload: dict,
    **changes: Any,
) -> Normalized:
    """The usual mapping: the event under its pipeline name with `changes`, except a tool
    event, whose name (success or failure) and changes `tool` decides."""
    target = events[event] or event
    if target == "PostToolUse":
        target, changes = tool(payload)
    native = native_session(payload, "session_id")
    return Normalized(target, shaped(agent, target, payload, native, **changes))
