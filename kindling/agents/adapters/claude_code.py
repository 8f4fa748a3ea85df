"""Claude Code: its payloads are the pipeline's own shape, so this adapter only names them.

Source: https://code.claude.com/docs/en/hooks (hook events, input fields, and the
`hookSpecificOutput.additionalContext` answer of SessionStart and UserPromptSubmit).
"""

from __future__ import annotations

from kindling.agents.adapters.base import Adapter, Normalized
from kindling.agents.adapters.common import additional_context
from kindling.agents.payload import AGENT_KEY

NAME = "claude-code"

# Every documented Claude Code hook event: what it records.
RECORDS_TOOL = "tool"
RECORDS_MESSAGE = "message"
RECORDS_NOTHING = None
EVENTS: dict[str, str | None] = {
    "SessionStart": RECORDS_NOTHING,  # handled by the pipeline: capsule + context
    "UserPromptSubmit": RECORDS_MESSAGE,
    "PreToolUse": RECORDS_NOTHING,
    "PermissionRequest": RECORDS_NOTHING,
    "PostToolUse": RECORDS_TOOL,
    "PostToolUseFailure": RECORDS_TOOL,
    "Notification": RECORDS_MESSAGE,
    "SubagentStart": RECORDS_NOTHING,
    "SubagentStop": RECORDS_MESSAGE,
    "Stop": RECORDS_MESSAGE,
    "PreCompact": RECORDS_MESSAGE,
    "PostCompact": RECORDS_MESSAGE,
    "SessionEnd": RECORDS_NOTHING,  # handled by the pipeline: closes the capsule
}
# The original Kindling plugin's names for the events (its hooks/hooks.json), and the rest in
# the same kebab case.
ALIASES = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-tool-use": "PreToolUse",
    "permission-request": "PermissionRequest",
    "post-tool-use": "PostToolUse",
    "post-tool-use-failure": "PostToolUseFailure",
    "notification": "Notification",
    "subagent-start": "SubagentStart",
    "subagent-stop": "SubagentStop",
    "stop": "Stop",
    "pre-compact": "PreCompact",
    "post-compact": "PostCompact",
    "session-end": "SessionEnd",
}
_NAMES: dict[str, str | None] = {**{e: e for e in EVENTS}, **ALIASES}


def normalize(event: str, payload: dict) -> Normalized:
    """Claude Code's payload as it is (an AGENT_KEY it may carry is dropped)."""
    return Normalized(_NAMES[event] or event, {k: v for k, v in payload.items() if k != AGENT_KEY})


def answer(event: str, text: str | None) -> str | None:
    """`hookSpecificOutput.additionalContext` for SessionStart and UserPromptSubmit."""
    return additional_context(_NAMES.get(event) or event, text)


ADAPTER = Adapter(NAME, _NAMES, normalize, answer)
