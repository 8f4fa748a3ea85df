"""How a Claude Code session's capsule closes: with a summary that says what happened.

The summary is Claude's own last Stop message (with the compaction summary when the context
was compacted), both found again among the capsule's observations, no side files; without
one, a mechanical digest: files changed, commands that failed then passed, errors still
open. Evidence refs point at the observations it rests on. A capsule left open by a session
that never ended closes the same way at the next SessionStart in that repository, once it
has been idle for STALE_AFTER_MS.
"""

from __future__ import annotations

from typing import NamedTuple

from kindling.agents.payload import SOURCE, cut, one_line
from kindling.clock import now_ms
from kindling.errors import KindlingError
from kindling.index.traits import hook_of, subject_of

STALE_AFTER_MS = 4 * 60 * 60 * 1000  # four hours without a new observation
MAX_SUMMARY_CHARS = 6_000
MAX_EVIDENCE = 20
LISTED = 8


class Closing(NamedTuple):
    """A capsule's closing summary, how sure it is, and the observations it rests on."""

    text: str
    confidence: float
    evidence: list[str]


def _members(memory, capsule: dict) -> list[dict]:
    """The capsule's observations, oldest first (one indexed query by session)."""
    wanted = set(capsule["observationIds"])
    session = capsule["scopeIds"].get("sessionId")
    if not wanted or session is None:
        return []
    listed = memory.list("observations", scope={"sessionId": session}, limit=None)
    members = [o for o in listed if o["id"] in wanted and not o["redacted"]]
    return sorted(members, key=lambda o: (o["ts"], o["id"]))


def _strip_label(content: str) -> str:
    first, _, rest = content.partition("\n")
    return rest if first.endswith(":") and rest else content


def mechanical(members: list[dict]) -> tuple[list[str], list[str]]:
    """(digest lines, evidence ids): files changed, fixed failures, failures still open."""
    files: dict[str, str] = {}
    failed: dict[str, str] = {}
    fixed: dict[str, tuple[str, str]] = {}
    for obs in members:
        subject = subject_of(obs)
        prov = obs.get("provenance") or {}
        if obs["kind"] == "file_diff" and isinstance(prov.get("file"), str):
            files.setdefault(prov["file"], obs["id"])
        if subject is None:
            continue
        if obs["kind"] == "error":
            failed[subject] = obs["id"]
            fixed.pop(subject, None)
        elif subject in failed and obs["kind"] in ("command", "tool_call", "file_diff"):
            fixed[subject] = (failed.pop(subject), obs["id"])
    lines, evidence = [], []
    if files:
        shown = list(files)[:LISTED]
        more = f" and {len(files) - LISTED} more" if len(files) > LISTED else ""
        lines.append(f"Files changed: {', '.join(shown)}{more}.")
        evidence.extend(list(files.values())[:LISTED])
    for subject, (error_id, fix_id) in list(fixed.items())[:LISTED]:
        lines.append(f"Failed, then passed: {one_line(subject, 200)}.")
        evidence.extend([error_id, fix_id])
    for subject, error_id in list(failed.items())[:LISTED]:
        lines.append(f"Still failing: {one_line(subject, 200)}.")
        evidence.append(error_id)
    return lines, evidence


def closing_summary(memory, capsule: dict) -> Closing | None:
    """The summary a Claude Code session capsule closes with; None when nothing was recorded."""
    members = _members(memory, capsule)
    if not members:
        return None
    last = {}
    for obs in members:
        hook = hook_of(obs)
        if hook in ("Stop", "PostCompact"):
            last[hook] = obs
    digest, evidence = mechanical(members)
    parts: list[str] = []
    confidence = 0.5
    if "Stop" in last:
        parts.append(_strip_label(last["Stop"]["content"]))
        evidence.insert(0, last["Stop"]["id"])
        confidence = 0.8
    if "PostCompact" in last:
        parts.append(
            "Earlier in the session (compaction summary): "
            + _strip_label(last["PostCompact"]["content"])
        )
        evidence.insert(0, last["PostCompact"]["id"])
    if not parts:
        prompts = [o for o in members if hook_of(o) == "UserPromptSubmit"]
        asked = f"Asked: {one_line(prompts[0]['content'], 300)}" if prompts else ""
        parts.append(" ".join([asked, *digest]).strip() or _activity_line(members))
    elif digest:
        parts.append(" ".join(line for line in digest if line.startswith("Files changed")))
    text = cut("\n\n".join(p for p in parts if p.strip()), MAX_SUMMARY_CHARS)[0]
    return Closing(text, confidence, list(dict.fromkeys(evidence))[:MAX_EVIDENCE])


def _activity_line(members: list[dict]) -> str:
    kinds: dict[str, int] = {}
    for obs in members:
        kinds[obs["kind"]] = kinds.get(obs["kind"], 0) + 1
    counted = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return f"Session recorded {counted}; no changes or failures."


def close_session_capsule(memory, capsule: dict) -> dict:
    """Close a session capsule with its closing summary (or none when it recorded nothing)."""
    closing = closing_summary(memory, capsule)
    if closing is None:
        return memory.close_capsule(capsule["id"]).entity
    return memory.close_capsule(
        capsule["id"],
        summary=closing.text,
        confidence=closing.confidence,
        evidence=closing.evidence,
    ).entity


def _last_activity(memory, capsule: dict) -> int:
    for obs_id in reversed(capsule["observationIds"]):
        try:
            return memory.get(obs_id).entity["ts"]
        except KindlingError:
            continue
    return capsule["openedAt"]


def close_stale(memory, repo_ids: tuple[str, ...] | None, current_session: str) -> list[str]:
    """Close Claude Code session capsules idle for STALE_AFTER_MS; the ids closed.

    `repo_ids` limits this to capsules of those repoIds (None: every capsule in the store).
    """
    now = now_ms()
    closed = []
    for capsule in memory.open_capsules():
        scope = capsule["scopeIds"]
        if capsule["type"] != "session" or scope.get("agentId") != SOURCE:
            continue
        if scope.get("sessionId") == current_session:
            continue
        if repo_ids is not None and scope.get("repoId") not in repo_ids:
            continue
        if now - _last_activity(memory, capsule) < STALE_AFTER_MS:
            continue
        try:
            closed.append(close_session_capsule(memory, capsule)["id"])
        except KindlingError:
            continue  # closed meanwhile by its own SessionEnd
    return closed
