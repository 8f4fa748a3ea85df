"""One adapter per coding agent: its hook payloads in, Claude Code's shape out, and back.

Every agent's events run through the one pipeline Claude Code's do (kindling.agents.hooks):
an adapter only translates. `normalize` turns the agent's event and payload into the Claude
Code event and payload the pipeline reads (session id namespaced per agent, the project
folder chosen, tool names and fields mapped, the agent named under payload.AGENT_KEY);
`answer` turns the context the pipeline found into the agent's own output form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kindling.errors import KindlingError


class Normalized(NamedTuple):
    """What the pipeline runs: a Claude Code event name and a Claude Code shaped payload."""

    event: str
    payload: dict


class Adapter(NamedTuple):
    """How one agent's hooks reach the pipeline.

    `events` maps each of the agent's event names it accepts to the Claude Code event it
    becomes (None: accepted, nothing recorded). `injects_prompt_context`: the agent takes
    context back from its prompt event (else prompt recall is not even computed).
    """

    name: str
    events: dict[str, str | None]
    normalize: Callable[[str, dict], Normalized]
    answer: Callable[[str, str | None], str | None]
    injects_prompt_context: bool = True


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
