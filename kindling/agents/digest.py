"""How a Claude Code session's capsule closes: with a summary that says what happened.

The summary is built from all the capsule's observations, no side files and no model
(kindling.agents.summary): what was asked, tried, found, changed, left failing and left to
do, then Claude's last turn-end message; or, when the agent logged its own summary, that
first. Evidence refs point at the observations it rests on. A capsule left open by a session
that never ended closes the same way at a later SessionStart, its summary saying it was
interrupted: in the clone that ran it once it has been idle for STALE_AFTER_MS, in any other
clone only once it is abandoned (kindling.agents.abandoned).
"""

from __future__ import annotations

from kindling.agents import abandoned, owned
from kindling.agents.agent_ids import is_hook_session
from kindling.agents.summary import MAX_EVIDENCE, MAX_SUMMARY_CHARS, Closing, build
from kindling.clock import now_ms
from kindling.errors import KindlingError

STALE_AFTER_MS = abandoned.STALE_AFTER_MS

__all__ = [
    "MAX_EVIDENCE",
    "MAX_SUMMARY_CHARS",
    "STALE_AFTER_MS",
    "Closing",
    "close_session_capsule",
    "close_stale",
    "closing_summary",
    "members",
]


def members(memory, capsule: dict) -> list[dict]:
    """The capsule's live observations, oldest first (one indexed query by session)."""
    wanted = set(capsule["observationIds"])
    session = capsule["scopeIds"].get("sessionId")
    if not wanted or session is None:
        return []
    listed = memory.list("observations", scope={"sessionId": session}, limit=None)
    found = [o for o in listed if o["id"] in wanted and not o["redacted"]]
    return sorted(found, key=lambda o: (o["ts"], o["id"]))


def closing_summary(memory, capsule: dict, *, interrupted: bool = False) -> Closing | None:
    """The summary a Claude Code session capsule closes with; None when nothing was recorded."""
    found = members(memory, capsule)
    if not found:
        return None
    return build(found, capsule["observationIds"], interrupted=interrupted)


def close_session_capsule(memory, capsule: dict, *, interrupted: bool = False) -> dict:
    """Close a session capsule with its closing summary (or none when it recorded nothing);
    `interrupted`: its session never ended (closed as stale)."""
    closing = closing_summary(memory, capsule, interrupted=interrupted)
    # A stale capsule is closed by whichever clone starts a session first, maybe several: each
    # writes the same bytes for the same observations, so their pushes merge cleanly.
    if closing is None:
        return memory.close_capsule(capsule["id"], settled=interrupted).entity
    return memory.close_capsule(
        capsule["id"],
        summary=closing.text,
        confidence=closing.confidence,
        evidence=closing.evidence,
        settled=interrupted,
    ).entity


def close_stale(memory, repo_ids: tuple[str, ...] | None, current_session: str) -> list[str]:
    """Close hooked agents' session capsules this clone ran, idle for STALE_AFTER_MS, and
    anyone's abandoned ones (kindling.agents.abandoned); the ids closed.

    `repo_ids` limits this to capsules of those repoIds (None: every capsule in the store).
    """
    now = now_ms()
    closed = []
    for capsule in memory.open_capsules():
        scope = capsule["scopeIds"]
        if not is_hook_session(capsule):
            continue
        if scope.get("sessionId") == current_session:
            continue
        if repo_ids is not None and scope.get("repoId") not in repo_ids:
            continue
        mine = owned.owns(memory.store, capsule)
        if not abandoned.may_close(memory.store, memory.last_activity(capsule), now, mine=mine):
            continue  # a teammate's session may still be alive: only its owner closes it
        try:
            closed.append(close_session_capsule(memory, capsule, interrupted=True)["id"])
        except KindlingError:
            continue  # closed meanwhile by its own SessionEnd
    return closed
