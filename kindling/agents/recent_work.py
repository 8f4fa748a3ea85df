"""Recent activity for the session-start context: what the summaries shown do not already say.

From the repository's latest observations it keeps the telling ones (findings, errors,
changes before commands and prompts; file reads and markers left out), leaves out what is
shown elsewhere in the block (pins, summaries and the observations their evidenceRefs name,
open problems) and every error a later success fixed (Memory.fixed_errors), and labels the
abandoned attempts: diffs after which the same failure came back, as the episode rules of
kindling.index.episodes.follow find them in each session's records.
"""

from __future__ import annotations

from kindling.index.episodes import of_observations
from kindling.index.traits import hook_of

CONTEXT_ACTIVITY = 8
ABANDONED = "abandoned attempt: the same failure came back after it"
_FINDING_HOOKS = ("Stop", "SubagentStop", "PostCompact")


def rank(obs: dict) -> int:
    """How telling an observation is, 0 first; 9 is not worth the space."""
    hook, kind = hook_of(obs), obs["kind"]
    prov = obs.get("provenance") or {}
    if hook in _FINDING_HOOKS or (kind == "message" and hook is None):
        return 0
    if kind == "error":
        return 1
    if kind == "file_diff":
        return 2
    if kind == "command":
        return 3
    if hook == "UserPromptSubmit":
        return 4
    if kind == "tool_call" and prov.get("tool") != "Read":
        return 5
    return 9  # file reads, session markers, notifications: not worth the space


def abandoned_attempts(window: list[dict]) -> set[str]:
    """Ids of the diffs in `window` after which the same failure came back in their session."""
    sessions: dict[str, list[dict]] = {}
    for obs in window:
        session = (obs.get("scopeIds") or {}).get("sessionId")
        if session is not None:
            sessions.setdefault(session, []).append(obs)
    found: set[str] = set()
    for records in sessions.values():
        records.sort(key=lambda o: (o["ts"], o["id"]))
        episode = of_observations(records)
        found.update(records[n]["id"] for n in episode.attempts)
    return found


def recent_activity(memory, window: list[dict], shown: set[str]) -> list[tuple[dict, str | None]]:
    """The observations worth showing from `window` (newest first), each with its label."""
    useful = [o for o in window if not o["redacted"] and o["id"] not in shown and rank(o) < 9]
    errors = [o["id"] for o in useful if o["kind"] == "error"]
    fixed = memory.fixed_errors(errors) if errors else {}
    useful = [o for o in useful if o["id"] not in fixed]
    chosen = sorted(useful, key=lambda o: (rank(o), -o["ts"]))[:CONTEXT_ACTIVITY]
    chosen.sort(key=lambda o: -o["ts"])
    attempts = abandoned_attempts(window)
    return [(o, ABANDONED if o["id"] in attempts else None) for o in chosen]
