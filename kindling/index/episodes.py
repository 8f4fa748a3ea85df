"""Episodes: what happened around a match in its session, read from the index in time order.

A session is an episode of work: something fails, changes are tried, one of them makes the
failing run pass, the agent says what it found, the capsule closes with a summary. From the
traits the index keeps per observation (kindling.index.traits) this module follows that
story mechanically, the same way for search, prompt recall and the session-start context:

- an error is *fixed* by the first later success (a command or tool call that did not fail)
  on the same subject: in its own session, or in any later one of the same repository;
- a diff is part of the *fix* when that success followed it, and a failed *attempt* when the
  same failure came back after it;
- an episode's *conclusions* are its summary, its fix and any other diffs, and what the
  agent reported (messages that are neither a prompt nor a marker).

Only windows of a session around the steps asked about are read (WINDOW_AFTER steps after,
WINDOW_BEFORE before), so a session of any length costs the same.
"""

from __future__ import annotations

import bisect
import functools
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from kindling.index.traits import traits

WINDOW_AFTER = 40
WINDOW_BEFORE = 20
RAW_KINDS = ("error", "command", "tool_call")
CONCLUSION_KINDS = ("file_diff", "message")
SUCCESS_KINDS = ("command", "tool_call", "file_diff")

_STEP_COLUMNS = (
    "e.rowid, e.type, e.id, e.time, e.kind, e.session, e.repo, e.subject, e.signature, e.role, "
    "e.file, e.redacted"
)


class Step(NamedTuple):
    """One observation or summary of a session, as the index holds it."""

    rowid: int
    type: str
    id: str
    ts: int
    kind: str | None
    session: str | None
    repo: str | None
    subject: str | None
    signature: str | None
    role: str | None
    file: str | None
    redacted: int

    @property
    def key(self) -> tuple[int, str]:
        return (self.ts, self.id)

    @property
    def is_conclusion(self) -> bool:
        """A summary, a diff, or a message that is neither a prompt nor a marker."""
        if self.type == "summaries":
            return True
        return self.kind in CONCLUSION_KINDS and self.role is None and not self.redacted


@dataclass
class Episode:
    """What the loaded windows of one session show (steps oldest first)."""

    session: str
    steps: list[Step] = field(default_factory=list)
    summary: Step | None = None
    fixed: dict[int, Step] = field(default_factory=dict)  # error rowid -> the success
    fix: set[int] = field(default_factory=set)  # diffs a fixing success followed
    attempts: set[int] = field(default_factory=set)  # diffs the same failure came back after
    fix_of: dict[int, list[Step]] = field(default_factory=dict)  # error rowid -> its fix diffs
    failing: set[str] = field(default_factory=set)  # subjects still failing at its end

    @property
    def repo(self) -> str | None:
        for step in self.steps:
            if step.repo is not None:
                return step.repo
        return self.summary.repo if self.summary else None

    @property
    def start(self) -> int:
        return self.steps[0].ts if self.steps else (self.summary.ts if self.summary else 0)

    @property
    def failed(self) -> bool:
        """Whether something failed in it."""
        return any(s.kind == "error" and not s.redacted for s in self.steps)

    @property
    def signatures(self) -> set[str]:
        return {s.signature for s in self.steps if s.signature}

    @property
    def files(self) -> set[str]:
        """Files the episode changed (or tried to)."""
        return {s.file for s in self.steps if s.file}

    def conclusions(self) -> list[Step]:
        """Its summary first, then the fix, then the other conclusions, newest first."""
        out = [self.summary] if self.summary else []
        rest = [s for s in self.steps if s.is_conclusion and s.rowid not in self.attempts]
        rest.sort(key=lambda s: (s.rowid not in self.fix, -s.ts, s.id))
        return out + rest

    @functools.cached_property
    def _found(self) -> tuple[list[Step], list[tuple[int, str]]]:
        """Its conclusions that were no failed attempt, oldest first, and their keys (read
        once follow() has run)."""
        found = [s for s in self.steps if s.is_conclusion and s.rowid not in self.attempts]
        return found, [s.key for s in found]

    def answers(self, step: Step, reach: int) -> list[Step]:
        """The conclusions a step of this episode leads to: for a fixed error, its fix and
        what was reported after the fixing run; for other raw output, the next `reach`
        conclusions after it; for a conclusion, those before and after it. Never a failed
        attempt; always the summary."""
        out = [self.summary] if self.summary and self.summary.rowid != step.rowid else []
        found, keys = self._found
        after = bisect.bisect_right(keys, step.key)
        later = found[after:]
        success = self.fixed.get(step.rowid)
        if success is not None:
            out.extend(self.fix_of.get(step.rowid, ()))
            out.extend(s for s in later if s.key > success.key and s.kind == "message")
        elif step.type == "summaries" or step.kind in CONCLUSION_KINDS and step.role is None:
            before = bisect.bisect_left(keys, step.key)
            out.extend(found[max(0, before - reach) : before])
        out.extend(later[:reach])
        seen: set[int] = set()
        return [s for s in out if not (s.rowid in seen or seen.add(s.rowid))][: 2 * reach + 1]


def follow(episode: Episode) -> Episode:
    """Work out which errors the episode's steps fixed, its fix and its failed attempts."""
    failing: dict[str, list[Step]] = {}  # subject -> errors on it not yet fixed
    failing_since: dict[str, int] = {}  # subject -> index of its latest error
    signatures: dict[str, int] = {}  # signature -> index of its latest error
    for n, step in enumerate(episode.steps):
        if step.type != "observations" or step.redacted:
            continue
        if step.kind == "error":
            since = max(
                failing_since.get(step.subject or "", -1),
                signatures.get(step.signature or "", -1),
            )
            if since >= 0:
                # The same failure again: what was changed since the last one did not help.
                episode.attempts.update(
                    s.rowid for s in episode.steps[since + 1 : n] if s.kind == "file_diff"
                )
            if step.subject:
                failing.setdefault(step.subject, []).append(step)
                failing_since[step.subject] = n
            if step.signature:
                signatures[step.signature] = n
        elif step.kind in SUCCESS_KINDS and step.subject in failing:
            errors = failing.pop(step.subject)
            since = failing_since.pop(step.subject)
            diffs = [
                s
                for s in episode.steps[since + 1 : n + 1]
                if s.kind == "file_diff" and s.rowid not in episode.attempts
            ]
            for error in errors:
                episode.fixed[error.rowid] = step
                episode.fix_of[error.rowid] = diffs
                if error.signature:
                    signatures.pop(error.signature, None)
            episode.fix.update(d.rowid for d in diffs)
    episode.failing = set(failing)
    return episode


def of_observations(observations: list[dict]) -> Episode:
    """The episode of one session's observations (entities, in time order), followed; each
    step's rowid is its position in the list. For callers holding the entities already."""
    steps = []
    for n, obs in enumerate(observations):
        scope = obs.get("scopeIds") or {}
        steps.append(
            Step(
                n,
                "observations",
                obs["id"],
                obs["ts"],
                obs["kind"],
                scope.get("sessionId"),
                scope.get("repoId"),
                *traits("observations", obs),
                int(bool(obs.get("redacted"))),
            )
        )
    return follow(Episode(steps[0].session or "" if steps else "", steps))


def load(
    conn: sqlite3.Connection, around: Iterable[tuple[str, int, str]], *, limit: int = 12
) -> dict[str, Episode]:
    """The episodes of the sessions of `around` ((session, ts, id) of steps, best first): for
    the first `limit` sessions, windows around each step and the session's latest summary."""
    windows: dict[str, dict[int, Step]] = {}
    covered: dict[str, list[tuple[tuple[int, str], tuple[int, str]]]] = {}
    for session, ts, entity_id in around:
        if session is None:
            continue
        if session not in windows:
            if len(windows) >= limit:
                continue
            windows[session] = {}
            covered[session] = []
        key = (ts, entity_id)
        if any(low <= key <= high for low, high in covered[session]):
            continue
        steps = windows[session]
        after = _steps(conn, session, key, ">=", WINDOW_AFTER)
        before = _steps(conn, session, key, "<", WINDOW_BEFORE)
        for step in (*before, *after):
            steps[step.rowid] = step
        low = before[-1].key if len(before) == WINDOW_BEFORE else (0, "")
        high = after[-1].key if len(after) == WINDOW_AFTER else (2**63, "\uffff")
        covered[session].append((low, high))
    out = {}
    for session, steps in windows.items():
        episode = Episode(session, sorted(steps.values(), key=lambda s: s.key))
        episode.summary = _summary(conn, session)
        out[session] = follow(episode)
    return out


def _steps(
    conn: sqlite3.Connection, session: str, key: tuple[int, str], direction: str, limit: int
) -> list[Step]:
    """Up to `limit` observations of a session from `key` on (>=) or before it (<), nearest
    first."""
    order = "e.time, e.id" if direction == ">=" else "e.time DESC, e.id DESC"
    rows = conn.execute(
        f"SELECT {_STEP_COLUMNS} FROM entities e WHERE e.session = ? AND e.type = 'observations' "
        f"AND e.shadowed = 0 AND (e.time, e.id) {direction} (?, ?) ORDER BY {order} LIMIT ?",
        (session, *key, limit),
    )
    return [Step(*r) for r in rows]


def _summary(conn: sqlite3.Connection, session: str) -> Step | None:
    """The session's latest summary that is not forgotten."""
    row = conn.execute(
        f"SELECT {_STEP_COLUMNS} FROM entities e JOIN fts_docsize d ON d.id = e.rowid "
        "WHERE e.session = ? AND e.type = 'summaries' AND e.shadowed = 0 "
        "ORDER BY e.time DESC, e.id DESC LIMIT 1",
        (session,),
    ).fetchone()
    return Step(*row) if row else None


class Fixer(NamedTuple):
    """The success that fixed an error, and its session."""

    id: str
    session: str | None


def fixed_later(conn: sqlite3.Connection, errors: Iterable[Step]) -> dict[int, Fixer]:
    """Errors that a later success fixed: error rowid -> the success. A success is a
    later command, tool call or diff on the error's subject in its repository, or one on the
    subject of a later error with the same signature there (the problem met again, fixed)."""
    out = {}
    for error in errors:
        row = None
        if error.subject:
            row = conn.execute(_FIXED_BY_SUBJECT, (error.subject, error.ts, error.repo)).fetchone()
        if row is None and error.signature:
            row = conn.execute(
                _FIXED_BY_SIGNATURE, (error.signature, error.ts, error.repo)
            ).fetchone()
        if row:
            out[error.rowid] = Fixer(*row)
    return out


_SUCCESS = "e.type = 'observations' AND e.kind IN ('command', 'tool_call', 'file_diff')"
_FIXED_BY_SUBJECT = (
    f"SELECT e.id, e.session FROM entities e WHERE e.subject = ? AND e.time > ? AND {_SUCCESS} "
    "AND e.shadowed = 0 AND e.repo IS ? ORDER BY e.time LIMIT 1"
)
_FIXED_BY_SIGNATURE = f"""
    SELECT e.id, e.session FROM entities again CROSS JOIN entities e
    WHERE again.signature = ? AND again.time > ? AND again.repo IS ? AND again.shadowed = 0
      AND e.subject = again.subject AND e.time > again.time AND {_SUCCESS}
      AND e.shadowed = 0 AND e.repo IS again.repo
    ORDER BY again.time, e.time LIMIT 1
"""


def steps(conn: sqlite3.Connection, ids: Iterable[str]) -> list[Step]:
    """The observations with these ids, as steps."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    marks = ", ".join("?" * len(wanted))
    rows = conn.execute(
        f"SELECT {_STEP_COLUMNS} FROM entities e WHERE e.id IN ({marks}) "
        "AND e.type = 'observations' AND e.shadowed = 0",
        wanted,
    )
    return [Step(*r) for r in rows]
