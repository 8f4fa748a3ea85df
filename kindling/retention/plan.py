"""Which observations a policy retires: old raw output whose summary keeps what it taught.

An observation is retired when all of these hold, and kept otherwise:

- its kind is one the policy names as raw output (never an error or a message);
- it is old: its `ts` is more than `keepDays` before the store's horizon (the newest
  timestamp in the store), and its session is not one of its repository's newest
  `keepSessions` sessions;
- every capsule that names it is closed and its summary is in the store (the summary keeps
  the knowledge), and some capsule names it;
- no pin names it, no summary names it as evidence, it is not forgotten (the redacted record
  is what tells a pull that it was forgotten), and it is not a fix: a success that fixed an
  error, or a diff that led to one (kindling.index.episodes' rules, in its session; and the
  first later success on the error's subject in the same repository, in any session).

Everything is read from the files and the policy alone, so every clone makes the same plan.
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import NamedTuple

from kindling.index.episodes import SUCCESS_KINDS, Episode, Step, follow
from kindling.retention.census import Census
from kindling.retention.policy import DAY_MS, Policy


class Retiree(NamedTuple):
    """One observation a plan retires."""

    id: str
    kind: str
    path: str
    size: int


class Plan(NamedTuple):
    """What applying a policy to a store would retire (sorted by id)."""

    policy: Policy
    horizon: int
    cutoff: int
    retire: list[Retiree]
    observations: int  # observation files in the store

    def by_kind(self) -> dict[str, tuple[int, int]]:
        """kind -> (files, bytes) retired."""
        files: Counter[str] = Counter()
        size: Counter[str] = Counter()
        for item in self.retire:
            files[item.kind] += 1
            size[item.kind] += item.size
        return {k: (files[k], size[k]) for k in sorted(files)}

    @property
    def bytes(self) -> int:
        return sum(item.size for item in self.retire)


def make_plan(census: Census, policy: Policy) -> Plan:
    """The plan of `policy` for the store `census` describes."""
    cutoff = census.horizon - policy.keep_days * DAY_MS
    protected = protected_ids(census)
    recent = recent_sessions(census, policy.keep_sessions)
    covered = summarised(census)
    retire = []
    for ident, seen in census.observations.items():
        step = seen.step
        if (
            step.kind in policy.kinds
            and step.ts < cutoff
            and not step.redacted
            and ident in covered
            and ident not in protected
            and (step.repo, step.session) not in recent
        ):
            retire.append(Retiree(ident, step.kind, seen.path, seen.size))
    retire.sort()
    return Plan(policy, census.horizon, cutoff, retire, len(census.observations))


def protected_ids(census: Census) -> set[str]:
    """Pinned observations, summaries' evidence, and every fix of an error."""
    keep = set(census.pinned)
    for refs in census.summaries.values():
        keep.update(refs)
    keep.update(fixes(census))
    return keep


def summarised(census: Census) -> set[str]:
    """Observations named by some capsule, where every capsule naming them is closed with its
    summary in the store."""
    good: set[str] = set()
    bad: set[str] = set()
    for capsule in census.capsules.values():
        done = capsule["status"] == "closed" and capsule["summaryId"] in census.summaries
        (good if done else bad).update(capsule["observationIds"])
    return good - bad


def recent_sessions(census: Census, keep: int) -> set[tuple[str | None, str | None]]:
    """(repo, session) of each repository's newest `keep` sessions, by their newest step."""
    if keep <= 0:
        return set()
    newest: dict[tuple[str | None, str | None], tuple[int, str]] = {}
    for seen in census.observations.values():
        step = seen.step
        key = (step.repo, step.session)
        newest[key] = max(newest.get(key, (0, "")), (step.ts, step.id))
    by_repo: dict[str | None, list[tuple[tuple[int, str], str | None]]] = {}
    for (repo, session), last in newest.items():
        by_repo.setdefault(repo, []).append((last, session or ""))
    out = set()
    for repo, sessions in by_repo.items():
        sessions.sort(reverse=True)
        out.update((repo, session or None) for _, session in sessions[:keep])
    return out


def fixes(census: Census) -> set[str]:
    """Ids of the successes that fixed an error and of the diffs that led to them."""
    sessions: dict[str, list[Step]] = {}
    for seen in census.observations.values():
        if seen.step.session is not None:
            sessions.setdefault(seen.step.session, []).append(seen.step)
    out: set[str] = set()
    unfixed: list[Step] = []
    for session, steps in sessions.items():
        steps.sort(key=lambda s: s.key)
        episode = follow(Episode(session, steps))
        for success in episode.fixed.values():
            out.add(success.id)
        for diffs in episode.fix_of.values():
            out.update(d.id for d in diffs)
        unfixed.extend(
            s
            for s in steps
            if s.kind == "error" and not s.redacted and s.rowid not in episode.fixed
        )
    out.update(_fixed_later(census, unfixed))
    return out


def _fixed_later(census: Census, errors: list[Step]) -> set[str]:
    """For errors their session did not fix: the first later success on the same subject in
    the same repository, in any session (as kindling.index.episodes.fixed_later finds it)."""
    successes: dict[tuple[str | None, str], list[tuple[int, str]]] = {}
    for seen in census.observations.values():
        step = seen.step
        if step.kind in SUCCESS_KINDS and step.subject and not step.redacted:
            successes.setdefault((step.repo, step.subject), []).append(step.key)
    for keys in successes.values():
        keys.sort()
    out = set()
    for error in errors:
        keys = successes.get((error.repo, error.subject or ""), [])
        at = bisect.bisect_right(keys, (error.ts, "\U0010ffff"))
        if at < len(keys):
            out.add(keys[at][1])
    return out
