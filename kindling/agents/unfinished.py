"""Unfinished work: the latest Claude Code session of a repository that stopped without ending.

A session is interrupted when its capsule is still open for another session that has gone
idle (IDLE_AFTER_MS without a new observation: the process is gone, or nobody is there), or
when its capsule was closed although the session never ended: its summary says so (a line
starting `Interrupted:`), or its own records do (no SessionEnd, and the last record that is
not a notification is not a Stop, so a turn was cut off). Sessions are read newest first; a
session that ended normally stops the look, so work someone finished later is not brought
back. The session-start context opens with what is found here.
"""

from __future__ import annotations

from typing import NamedTuple

from kindling.agents.agent_ids import is_hook_session
from kindling.agents.intent import INTENT_WAITING
from kindling.agents.payload import one_line, short_id, when
from kindling.errors import KindlingError
from kindling.index.traits import file_of, hook_of

# An open capsule of another session with no record for this long belongs to a session that
# is gone (or waits for nobody); a live one records every tool call and turn.
IDLE_AFTER_MS = 2 * 60 * 1000
LOOK_BACK = 8  # session capsules read, newest first
LAST_RECORDS = 5  # the records read back from a capsule's end
FILES_SHOWN = 6
INTERRUPTED_MARK = "Interrupted:"
# Records that may follow a finished turn: an idle notification, the session's end.
_AFTER_A_TURN = ("Notification", "SessionEnd")


class Unfinished(NamedTuple):
    """The interrupted session: its capsule, when it last recorded, and what it left."""

    capsule: dict
    last_ts: int
    files: list[str]
    failure: dict | None
    summary_id: str | None


def ago(ms: int) -> str:
    """A duration in milliseconds as `just now`, `12 min ago`, `3 h ago` or `2 d ago`."""
    minutes = max(ms, 0) // 60_000
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes} min ago"
    if minutes < 48 * 60:
        return f"{minutes // 60} h ago"
    return f"{minutes // (24 * 60)} d ago"


def _last_records(memory, capsule: dict) -> list[dict]:
    """The capsule's last few records, newest first (forgotten ones skipped)."""
    found = []
    for obs_id in reversed(capsule["observationIds"][-LAST_RECORDS:]):
        try:
            obs = memory.get(obs_id).entity
        except KindlingError:
            continue
        if not obs.get("redacted"):
            found.append(obs)
    return found


def _summary_says_interrupted(memory, capsule: dict) -> bool:
    if not capsule.get("summaryId"):
        return False
    try:
        content = memory.get(capsule["summaryId"]).entity["content"]
    except KindlingError:
        return False
    return any(line.lstrip().startswith(INTERRUPTED_MARK) for line in content.splitlines())


def _cut_off(records: list[dict]) -> bool:
    """No SessionEnd among the last records, and the last turn did not end with a Stop."""
    hooks = [hook_of(obs) for obs in records]
    if "SessionEnd" in hooks:
        return False
    last = next((h for h in hooks if h not in _AFTER_A_TURN), None)
    return last != "Stop"


def _is_claude_session(capsule: dict) -> bool:
    return is_hook_session(capsule)  # any hooked agent's session, Claude Code's or another's


def latest_interrupted(
    memory, capsules: list[dict], current_session: str | None, now: int
) -> Unfinished | None:
    """The latest interrupted session among `capsules` (newest first), or None."""
    for capsule in capsules:
        session = capsule["scopeIds"].get("sessionId")
        if not _is_claude_session(capsule) or session == current_session:
            continue
        if capsule["intent"].endswith(INTENT_WAITING):
            continue  # nothing was asked in it
        records = _last_records(memory, capsule)
        last_ts = records[0]["ts"] if records else capsule["openedAt"]
        if capsule["status"] == "open":
            if now - last_ts < IDLE_AFTER_MS:
                continue  # another session at work right now
        elif not (_summary_says_interrupted(memory, capsule) or _cut_off(records)):
            return None  # ended normally: later work is not unfinished
        files, failure = _left_behind(memory, session)
        return Unfinished(capsule, last_ts, files, failure, capsule.get("summaryId"))
    return None


def _left_behind(memory, session: str) -> tuple[list[str], dict | None]:
    """The files a session changed (first changed first) and its last failure, unless fixed."""
    scope = {"sessionId": session}
    diffs = memory.list("observations", scope=scope, kinds=["file_diff"], limit=200)
    files = list(dict.fromkeys(f for f in map(file_of, reversed(diffs)) if f))
    errors = [
        e
        for e in memory.list("observations", scope=scope, kinds=["error"], limit=5)
        if not e["redacted"]
    ]
    failure = errors[0] if errors else None
    if failure is not None and memory.fixed_errors([failure["id"]]):
        failure = None
    return files, failure


def unfinished_lines(found: Unfinished, now: int) -> list[tuple[str, str | None]]:
    """The context block's lines for an interrupted session, with the ids each shows."""
    capsule = found.capsule
    still = "still open" if capsule["status"] == "open" else "closed without an end"
    lines: list[tuple[str, str | None]] = [
        (
            f"- Intent: {one_line(capsule['intent'], 300)}  [{short_id(capsule['id'])}]",
            capsule["id"],
        ),
        (
            f"- Last active {ago(now - found.last_ts)} ({when(found.last_ts)}), "
            f"session {capsule['scopeIds'].get('sessionId')}, its capsule {still}",
            None,
        ),
    ]
    if found.files:
        shown = ", ".join(found.files[:FILES_SHOWN])
        hidden = len(found.files) - FILES_SHOWN
        more = f" and {hidden} more" if hidden > 0 else ""
        lines.append((f"- Files changed: {one_line(shown, 400)}{more}", None))
    if found.failure is not None:
        # Its first line only: the error itself is among the open problems below.
        failure = found.failure
        first = one_line(failure["content"].strip().split("\n", 1)[0], 160)
        lines.append(
            (f"- Last failure ({when(failure['ts'])}): {first}  [{short_id(failure['id'])}]", None)
        )
    if found.summary_id:
        summary = short_id(found.summary_id)
        lines.append((f"- Its closing summary: `kindling show {summary}`", found.summary_id))
    return lines
