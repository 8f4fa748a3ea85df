"""`kindling hook [--agent NAME] EVENT` as a process: the payload from stdin, hook JSON on
stdout for the agent, a one-line note on stderr, and exit status 0 whatever happened."""

from __future__ import annotations

import sys

from kindling.agents.hooks import HookResult, run_hook
from kindling.settings import find_store
from kindling.terminal import safe_text


def run_hook_command(
    event: str, store: str | None, agent: str = "claude-code", from_agent: str | None = None
) -> None:
    """Read the payload, run the hook, print its answer and note; never raises."""
    try:
        data = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read()
        if store is not None:  # what --store and KINDLING_STORE accept everywhere, as git -C
            store = find_store(store)
        result = run_hook(event, data, store=store, agent=agent, from_agent=from_agent)
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent
        result = HookResult(message=f"kindling hook {event}: {exc}; nothing recorded")
    if result.stdout:
        # For the agent, not a terminal: kept exact, and UTF-8 whatever the locale (it is JSON).
        sys.stdout.buffer.write(result.stdout.encode() + b"\n")
        sys.stdout.flush()
    if result.message:
        sys.stderr.write(safe_text(result.message) + "\n")
        sys.stderr.flush()
