"""One adapter per coding agent: its hook payloads in, Claude Code's shape out, and back.

Every agent's events run through the one pipeline Claude Code's do (kindling.agents.hooks):
an adapter only translates. `normalize` turns the agent's event and payload into the Claude
Code event and payload the pipeline reads (session id namespaced per agent, the project
folder chosen, tool names and fields mapped, the agent named under payload.AGENT_KEY);
`answer` turns the context the pipeline found into the agent's own output form.
"""

from __future__ import annotations

from kindling.agents.adapters.base import Adapter, Normalized
from kindling.errors import KindlingError

__all__ = ["Adapter", "Normalized", "get", "names"]


def names() -> tuple[str, ...]:
    """Every agent with an adapter, Claude Code first."""
    from kindling.agents.agent_ids import AGENTS

    return tuple(AGENTS)


def get(name: str) -> Adapter:
    """The adapter of agent `name`; a KindlingError names the known ones otherwise."""
    from kindling.agents.adapters import claude_code, codex, cursor, gemini, opencode

    found = {
        "claude-code": claude_code.ADAPTER,
        "codex": codex.ADAPTER,
        "gemini": gemini.ADAPTER,
        "cursor": cursor.ADAPTER,
        "opencode": opencode.ADAPTER,
    }.get(name)
    if found is None:
        raise KindlingError(f"unknown agent {name!r}; choose one of {', '.join(names())}")
    return found
