"""What the MCP tools do with a session's capsule: an agent's own summary, never an early close.

A Claude Code session's capsule belongs to its hooks: SessionStart opens it and SessionEnd
closes it with the session's summary, the latest agent summary (a `message` logged with
AGENT_SUMMARY as its provenance) when there is one. So `summarize` logs that message into
the session's open capsule and leaves it open, and `capsule_close` on the capsule of a live
Claude Code session does the same instead of closing it: a capsule closed mid-session would
split the session in two. Plain functions of a kindling.Memory; no MCP SDK here.
"""

from __future__ import annotations

from kindling.agents.context import repo_scopes
from kindling.agents.digest import STALE_AFTER_MS
from kindling.agents.payload import SOURCE
from kindling.clock import now_ms
from kindling.errors import KindlingError
from kindling.index.traits import provenance as provenance_of
from kindling.repo_identity import RepoIdentity

AGENT_SUMMARY = {"source": "mcp", "summary": "agent"}


def _recorded_by_hooks(memory, capsule: dict) -> bool:
    """A Claude Code session capsule: its observations come from the hooks."""
    if capsule["scopeIds"].get("agentId") == SOURCE:
        return True
    for obs_id in capsule["observationIds"][:1] + capsule["observationIds"][-1:]:
        try:
            obs = memory.get(obs_id).entity
        except KindlingError:
            continue
        if provenance_of(obs).get("source") == SOURCE:
            return True
    return False


def is_live_session(memory, capsule: dict) -> bool:
    """An open Claude Code session capsule whose session has not gone stale: its hooks will
    close it when the session ends."""
    if capsule["status"] != "open" or capsule["type"] != "session":
        return False
    if not _recorded_by_hooks(memory, capsule):
        return False
    return now_ms() - memory.last_activity(capsule) < STALE_AFTER_MS


def session_capsule(
    memory, repo: RepoIdentity, session_id: str | None, capsule_id: str | None
) -> dict:
    """The open session capsule a summary goes into: the one named, the session's, or the
    repository's only open Claude Code session capsule."""
    if capsule_id is not None:
        capsule = memory.resolve(capsule_id, "capsules").entity
        if capsule["status"] != "open":
            raise KindlingError(f"capsule {capsule['id']} is closed; nothing was logged")
        return capsule
    if session_id is not None:
        capsule = memory.open_session_capsule(session_id)
        if capsule is None:
            raise KindlingError(f"session {session_id!r} has no open session capsule")
        return capsule
    everything = repo_scopes(memory, repo) == [{}]
    candidates = [
        c
        for c in memory.open_capsules()
        if c["type"] == "session"
        and c["scopeIds"].get("agentId") == SOURCE
        and (everything or c["scopeIds"].get("repoId") in repo.ids)
    ]
    if len(candidates) == 1:
        return candidates[0]
    raise KindlingError(
        "name the session: pass session_id (the context block's first lines give it)"
        if candidates
        else "no open Claude Code session here; pass session_id or capsule_id"
    )


def summarize(
    memory,
    repo: RepoIdentity,
    text: str,
    *,
    session_id: str | None = None,
    capsule_id: str | None = None,
    evidence: list[str] | tuple[str, ...] = (),
):
    """Log the agent's own summary into the session's open capsule, which stays open."""
    capsule = session_capsule(memory, repo, session_id, capsule_id)
    provenance = dict(AGENT_SUMMARY)
    refs = [memory.resolve(ref, "observations").entity["id"] for ref in evidence]
    if refs:
        provenance["evidenceRefs"] = list(dict.fromkeys(refs))
    scope = dict(capsule["scopeIds"])
    scope.setdefault("repoId", repo.id)
    return memory.log(
        text, kind="message", scope=scope, provenance=provenance, capsule_id=capsule["id"]
    )


def log_scope(memory, scope: dict | None, capsule_id: str | None) -> dict:
    """`scope` completed with the sessionId and repoId of the capsule logged into."""
    scope = dict(scope or {})
    if capsule_id is None:
        return scope
    capsule = memory.resolve(capsule_id, "capsules").entity
    for key in ("sessionId", "repoId"):
        value = capsule["scopeIds"].get(key)
        if value is None:
            continue
        if scope.setdefault(key, value) != value:
            raise KindlingError(
                f"scope.{key} {scope[key]!r} is not the capsule's ({value!r}); "
                f"leave it out to log into {capsule['id']}"
            )
    return scope
