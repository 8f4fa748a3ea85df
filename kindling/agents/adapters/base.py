"""What an adapter is: the agent's events, its payload normalized, its answer shaped."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


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
