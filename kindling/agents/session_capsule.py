"""A session's capsule wherever the session goes: opened, taken up again or brought back.

A session records into one open capsule. Three things can take it away while the session
lives, and each is met here with what this clone knows of its own sessions
(kindling.agents.owned):

- a `git switch` to a branch without the capsule's file: the file is written back as the
  branch checked out before held it (git took it away only because it was committed there),
  so this branch holds the capsule and the records go on joining it (merging the branches
  later unites its member lists: kindling.git.merge);
- the capsule was closed while the session was paused (by this clone after STALE_AFTER_MS,
  or by a teammate once it was abandoned): the session goes on in a new capsule that starts
  with the first one's records, so the summary its owner ends it with covers all of it and
  is the newest of the session;
- the owner takes up a session idle past the abandonment limit: teammates may be closing it
  right now, so this clone closes it exactly as they would (the same bytes) and goes on in a
  new capsule.
"""

from __future__ import annotations

import contextlib

from kindling.agents import abandoned, digest, owned
from kindling.agents.agent_ids import label
from kindling.agents.intent import INTENT_WAITING
from kindling.clock import now_ms
from kindling.errors import KindlingError
from kindling.model import entity_errors


def session_capsule(memory, scope: dict, intent: str, *, starting: bool = False) -> dict:
    """The open capsule of `scope`'s session, taken up again or opened (with `intent`) when
    it has none; `starting`: at the session's start, when an abandoned one is let go."""
    session = scope["sessionId"]
    existing = memory.open_session_capsule(session)
    if existing is not None:
        if not (starting and _abandoned_here(memory, existing)):
            return existing
        _close_as_abandoned(memory, existing)
        taken = taken_up(memory, session, members=existing["observationIds"])
        if taken is not None:
            return taken
    taken = taken_up(memory, session)
    if taken is not None:
        return taken
    try:
        capsule = memory.open_capsule(intent, type="session", scope=scope).entity
    except KindlingError:
        # Another hook of the same session opened it between our look and our write.
        existing = memory.open_session_capsule(session)
        if existing is None:
            raise
        return existing
    owned.remember(memory.store, capsule)
    return capsule


def taken_up(memory, session: str, members: list[str] | None = None) -> dict | None:
    """The capsule this clone's session goes on in, when its own was taken away (its file
    gone or closed while the session lived); None when this clone never ran the session, it
    ended here, or its capsule cannot be found again. `members`: what the capsule held here
    before it was closed, when that is more than the closed file says."""
    note = owned.recall(memory.store, session)
    if note is None or note.ended:
        return None
    current = memory.store.load("capsules", note.capsule_id)
    if current is None:
        current = _committed(memory, note.capsule_id, session)
        if current is None:
            return None
        if current["status"] == "open":
            restored = memory.restore_capsule(current)
            return restored.entity if restored else memory.open_session_capsule(session)
    if current["status"] == "open":
        return current
    other = memory.open_session_capsule(session)
    if other is not None:
        return other  # it goes on already (another hook of the session was first)
    try:
        capsule = memory.open_capsule(
            current["intent"],
            type="session",
            scope=current["scopeIds"],
            observation_ids=[*current["observationIds"], *(members or ())],
        ).entity
    except KindlingError:
        return memory.open_session_capsule(session)
    owned.remember(memory.store, capsule)
    return capsule


def _committed(memory, capsule_id: str, session: str) -> dict | None:
    """The capsule as the commit checked out before this one holds it: a `git switch` took
    its file away only when it was committed there."""
    from kindling.git.committed import committed_entity

    found = committed_entity(memory.store.path_for("capsules", capsule_id))
    if found is None or entity_errors("capsules", found) or found["id"] != capsule_id:
        return None
    if found["type"] != "session" or found["scopeIds"].get("sessionId") != session:
        return None
    return found


def ensure(memory, scope: dict) -> None:
    """Before a record of a session this clone runs: make sure it has its capsule.

    Reads this clone's note and the capsule's file, no index: a hook's record pays for one
    look-up of its session's capsule already (in `Memory.log`).
    """
    session = scope.get("sessionId")
    if not isinstance(session, str) or taken_up(memory, session) is not None:
        return
    note = owned.recall(memory.store, session)
    if note is not None and not note.ended and memory.open_session_capsule(session) is None:
        # Its capsule cannot be found again (the file gone, no commit at hand): a new one.
        waiting = f"{label(scope.get('agentId', ''))} session in {scope.get('repoId')}"
        session_capsule(memory, scope, waiting + INTENT_WAITING)


def remember(memory, capsule: dict, *, ended: bool = False) -> None:
    """Keep this clone's copy of its session's capsule current (its intent, its end)."""
    if owned.owns(memory.store, capsule):
        owned.remember(memory.store, capsule, ended=ended)


def _abandoned_here(memory, capsule: dict) -> bool:
    """Idle past the abandonment limit: a teammate may have closed it (by the clock alone,
    since a teammate may have pulled more recently than this clone)."""
    idle = now_ms() - memory.last_activity(capsule)
    return idle >= abandoned.idle_limit_ms(memory.store, mine=False)


def _close_as_abandoned(memory, capsule: dict) -> None:
    """Close the owner's own capsule as a teammate would have: from what was pushed of it.

    A teammate saw the capsule as this clone last pushed it; records made here since (never
    pushed) would give this clone's close other bytes than theirs. So the file is first put
    back as the upstream branch holds it, closed from that, and the records made since go on
    in the next capsule (`taken_up`'s `members`).
    """
    from kindling.git.committed import committed_entity

    pushed = committed_entity(
        memory.store.path_for("capsules", capsule["id"]), revisions=("@{upstream}",)
    )
    ok = pushed is not None and not entity_errors("capsules", pushed)
    if ok and pushed["id"] == capsule["id"] and pushed["status"] == "open":
        with contextlib.suppress(KindlingError):
            rewound = memory.restore_capsule(pushed, rewind=True)
            capsule = rewound.entity if rewound is not None else capsule
    try:
        digest.close_session_capsule(memory, capsule, interrupted=True)
    except KindlingError:
        pass  # closed meanwhile
