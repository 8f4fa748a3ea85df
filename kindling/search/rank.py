"""How candidates are scored: relevance, the episode they answer, recency, and supersession.

    score     = (relevance + episode + recency) * (1 - SUPERSEDED_CUT if superseded)
    strength  = coverage * (1 + s / (s + K)) / 2               s = -bm25, the FTS5 match
    relevance = W_RELEVANCE * kind_weight * strength
    episode   = W_EPISODE * strength of the best match whose episode it answers (below)
    recency   = W_RECENCY * max(0, 1 - age / 30 days)

Coverage (kindling.search.coverage) is the idf-weighted share of the query's terms an entity
holds, so rare specific terms outweigh common ones and one common word of a pasted error is
worth little. bm25 (term frequency, text length) moves a match within the upper half of its
coverage: s / (s + K) maps it to [0, 1) on one fixed curve, so a weak match stays weak however
good or bad the other matches are.

What an entity is decides its kind weight: conclusions (summaries, diffs, what the agent
reported) weigh fully; raw output (errors, commands, tool calls) less, since it states a
problem, not its answer; an error that was fixed, and a diff the same failure came back
after (a failed attempt), less again; what a person asked and session bookkeeping least.

Episodes (kindling.index.episodes) carry a match to its answer: a match passes its strength
on to the conclusions of its session that answer it (the summary, the fix of a fixed error,
the findings after it), so pasting an error finds the fix, above the error itself.

Supersession: when a later episode of the same repository addressed the same problem as an
earlier one the query finds (it met an error with the same signature and fixed it; or it is
where one of the earlier one's failing runs first passed again; or, both answering the query
within SUPERSEDE_SHARE of the best, it changed a file the earlier one changed, one the query
does not name, matching COVERS of the query terms the earlier one matched), it supersedes
the earlier one: the earlier one's entities lose SUPERSEDED_CUT of
their score, and at least enough to score below BELOW times the later episode's best, and
name what superseded them. Recency only breaks near-ties.
Everything is arithmetic on stored values, so results reproduce.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from kindling.index import Episode, Fixer, Hit, Step
from kindling.index.episodes import RAW_KINDS

# bm25 at which a match is half saturated: about one rare term's worth.
K = 8.0
W_RELEVANCE = 0.55
# Above W_RELEVANCE times the raw kinds' weight: a conclusion reached from an error ranks
# above that error, and its own words decide the order among conclusions.
W_EPISODE = 0.4
W_RECENCY = 0.05
RECENCY_WINDOW_MS = 30 * 24 * 60 * 60 * 1000
# Raw output states a problem; a finding, a diff or a summary states what was concluded.
RAW_WEIGHT = 0.6
SPENT_WEIGHT = 0.45  # an error that was fixed, a failed attempt
ASKED_WEIGHT = 0.3  # a person's prompt, a session marker
# How many conclusions a match reaches on each side of it in its session.
EPISODE_REACH = 4
# Only the best matches (by bm25) pass strength on, from at most EPISODES sessions.
EPISODE_SOURCES = 30
EPISODES = 12
# Errors of those episodes whose later fix is looked up.
FIX_LOOKUPS = 24
# Supersession: both episodes answer the query at least this share of the best one's score;
SUPERSEDE_SHARE = 0.4
# one that changed the same file matches at least this (idf-weighted) share of the query
# terms the earlier one matched: the same problem, not another change to a busy file.
COVERS = 0.5
# A superseded item loses this share of its score, and scores at most BELOW times the best
# score of the episode that superseded it.
SUPERSEDED_CUT = 0.5
BELOW = 0.9


@dataclass
class Scored:
    """One candidate's score and its parts."""

    hit: Hit
    relevance: float = 0.0
    episode: float = 0.0
    recency: float = 0.0
    kind_weight: float = 1.0
    matched: bool = False
    episode_from: str | None = None
    episode_rowid: int | None = None
    episode_from_problem: bool = False  # reached from raw output or a question, not a finding
    fixed_by: str | None = None
    superseded_by: str | None = None
    ceiling: float = 1.0  # a superseded item scores below the episode that superseded it

    @property
    def unsuperseded(self) -> float:
        return self.relevance + self.episode + self.recency

    @property
    def supersession(self) -> float:
        """The (negative) part supersession takes off the score."""
        if not self.superseded_by:
            return 0.0
        kept = min(self.unsuperseded * (1 - SUPERSEDED_CUT), self.ceiling)
        return kept - self.unsuperseded

    @property
    def score(self) -> float:
        return round_score(self.unsuperseded + self.supersession)


def round_score(x: float) -> float:
    """Clamped to [0, 1], rounded half up at the tenth decimal (as Math.round(x * 1e10) / 1e10)."""
    return int(min(1.0, max(0.0, x)) * 1e10 + 0.5) / 1e10


def saturate(bm25: float) -> float:
    """bm25 (lower is better) as a match strength in [0, 1) on a fixed curve."""
    s = max(0.0, -bm25)
    return s / (s + K)


def recency(ts: int, now: int) -> float:
    """1 for now, falling linearly to 0 at 30 days old (and for the future, 1)."""
    return max(0.0, min(1.0, 1 - (now - ts) / RECENCY_WINDOW_MS))


def strength(bm25: float, covered: float) -> float:
    """How well one entity matches the query, in [0, 1): coverage, moved by bm25."""
    return covered * (1 + saturate(bm25)) / 2


def as_hit(step: Step) -> Hit:
    return Hit(step.rowid, step.type, step.id, step.ts, step.kind, step.session, step.role, 0.0)


class Story:
    """The episodes around the matches, and what they say of each entity."""

    def __init__(self, episodes: dict[str, Episode], fixed_later: dict[int, Fixer]) -> None:
        self.episodes = episodes
        self.fixed_later = fixed_later
        self._answers: dict[int, list[Step]] = {}
        self.steps: dict[int, tuple[Episode, Step]] = {}
        for episode in episodes.values():
            for step in (*episode.steps, *([episode.summary] if episode.summary else [])):
                self.steps[step.rowid] = (episode, step)
        # session -> the later sessions that fixed one of its errors
        self.fixed_in: dict[str, set[str]] = {}
        for rowid, fixer in fixed_later.items():
            found = self.steps.get(rowid)
            if found is not None and fixer.session and fixer.session != found[0].session:
                self.fixed_in.setdefault(found[0].session, set()).add(fixer.session)

    def fixed_by(self, rowid: int) -> str | None:
        found = self.steps.get(rowid)
        if found is not None and rowid in found[0].fixed:
            return found[0].fixed[rowid].id
        fixer = self.fixed_later.get(rowid)
        return fixer.id if fixer else None

    def attempt(self, rowid: int) -> bool:
        found = self.steps.get(rowid)
        return found is not None and rowid in found[0].attempts

    def kind_weight(self, hit: Hit) -> float:
        if hit.role is not None:
            return ASKED_WEIGHT
        if self.attempt(hit.rowid) or (hit.kind == "error" and self.fixed_by(hit.rowid)):
            return SPENT_WEIGHT
        return RAW_WEIGHT if hit.kind in RAW_KINDS else 1.0

    def answers(self, hit: Hit) -> list[Step]:
        """The conclusions a match leads to in its episode (worked out once per match)."""
        if hit.rowid not in self._answers:
            found = self.steps.get(hit.rowid)
            self._answers[hit.rowid] = found[0].answers(found[1], EPISODE_REACH) if found else []
        return self._answers[hit.rowid]


def unfixed_errors(episodes: dict[str, Episode], first: list[Hit], limit: int) -> list[Step]:
    """Errors of the episodes not fixed within them (whose later fix is worth looking up):
    those among `first` in its order, then the newest of the rest."""
    order = {hit.rowid: n for n, hit in enumerate(first)}
    errors = [
        step
        for episode in episodes.values()
        for step in episode.steps
        if step.kind == "error" and not step.redacted and step.rowid not in episode.fixed
    ]
    errors.sort(key=lambda s: (order.get(s.rowid, len(order)), -s.ts, s.id))
    return errors[:limit]


class Asked(NamedTuple):
    """The query as supersession reads it: its words, and the query terms (with their idf)
    each match holds."""

    words: frozenset[str]
    matched: dict[int, Iterable[str]]
    idf: dict[str, float]

    def terms(self, episode: Episode, scored: dict[int, Scored]) -> set[str]:
        """The query terms the episode's scored matches hold."""
        steps = episode.steps + ([episode.summary] if episode.summary else [])
        return {t for s in steps if s.rowid in scored for t in self.matched.get(s.rowid, ())}

    def share(self, part: set[str], whole: set[str]) -> float:
        """The idf-weighted share of `whole` that `part` holds."""
        total = sum(self.idf.get(t, 0.0) for t in whole)
        return sum(self.idf.get(t, 0.0) for t in part & whole) / total if total else 0.0


NOTHING_ASKED = Asked(frozenset(), {}, {})


def score_hits(
    hits: list[Hit],
    story: Story,
    covered: dict[int, float],
    now: int,
    allowed: set[int],
    asked: Asked = NOTHING_ASKED,
) -> list[Scored]:
    """Every matched hit and every conclusion it reaches that is `allowed`, scored, best
    first. `asked`: the query as supersession reads it."""
    scored: dict[int, Scored] = {}
    strengths = {hit.rowid: strength(hit.bm25, covered.get(hit.rowid, 0.0)) for hit in hits}
    for hit in hits:
        weight = story.kind_weight(hit)
        scored[hit.rowid] = Scored(
            hit,
            W_RELEVANCE * weight * strengths[hit.rowid],
            kind_weight=weight,
            matched=True,
            fixed_by=story.fixed_by(hit.rowid) if hit.kind == "error" else None,
        )
    for source in hits[:EPISODE_SOURCES]:
        passed = W_EPISODE * strengths[source.rowid]
        for step in story.answers(source):
            if step.rowid not in allowed and step.rowid not in strengths:
                continue
            item = scored.get(step.rowid)
            if item is None:
                target = as_hit(step)
                item = scored[step.rowid] = Scored(target, kind_weight=story.kind_weight(target))
            if passed > item.episode:
                item.episode = passed
                item.episode_from = source.id
                item.episode_rowid = source.rowid
                item.episode_from_problem = source.kind in RAW_KINDS or source.role is not None
    for item in scored.values():
        item.recency = W_RECENCY * recency(item.hit.ts, now)
    supersede(scored, story, asked)
    return sorted(scored.values(), key=order)


def supersede(scored: dict[int, Scored], story: Story, asked: Asked) -> None:
    """Mark the entities of every episode a later one of the same repository supersedes: a
    later episode that met the same error (a signature in common) and fixed it, or one that
    changed a file the earlier one changed, when both answer the query about as well."""
    best: dict[str, float] = {}
    for item in scored.values():
        session = item.hit.session
        if session in story.episodes:
            best[session] = max(best.get(session, 0.0), item.unsuperseded)
    if not best:
        return
    top = max(best.values())
    found = sorted((story.episodes[s] for s in best), key=lambda e: (e.start, e.session))
    by: dict[str, tuple[str, float]] = {}
    for n, earlier in enumerate(found):
        for later in reversed(found[n + 1 :]):  # the latest one that qualifies
            if later.repo != earlier.repo or later.start <= earlier.start:
                continue
            if _supersedes(later, earlier, story, best, top, asked, scored) and later.conclusions():
                by[earlier.session] = (
                    _representative(later, later.conclusions(), scored),
                    best[later.session],
                )
                break
    for item in scored.values():
        if item.hit.session in by:
            item.superseded_by, later_best = by[item.hit.session]
            item.ceiling = BELOW * later_best


def _supersedes(
    later: Episode,
    earlier: Episode,
    story: Story,
    best: dict[str, float],
    top: float,
    asked: Asked,
    scored: dict[int, Scored],
) -> bool:
    """Whether `later` addressed the problem `earlier` did: it met an error with the same
    signature and fixed it; or it is where one of the earlier one's failing runs first
    passed again; or, both answering the query nearly as well, it changed a file the earlier
    one changed while matching most of the query terms the earlier one matched (a file the
    query names does not count: every episode that touched it answers as well)."""
    if earlier.signatures & later.signatures and later.fix:
        return True
    if later.session in story.fixed_in.get(earlier.session, ()):
        return True  # where the earlier one's failing run first passed again
    if min(best[later.session], best[earlier.session]) < SUPERSEDE_SHARE * top:
        return False
    shared = [
        f for f in earlier.files & later.files if not set(_PATH_WORD.findall(f)) <= asked.words
    ]
    if not shared:
        return False
    return asked.share(asked.terms(later, scored), asked.terms(earlier, scored)) >= COVERS


def _representative(episode: Episode, conclusions: list[Step], scored: dict[int, Scored]) -> str:
    """What to name as superseding: the episode's summary, else its best-scored conclusion."""
    if episode.summary is not None:
        return episode.summary.id
    ranked = [c for c in conclusions if c.rowid in scored]
    if ranked:
        return max(ranked, key=lambda c: (scored[c.rowid].unsuperseded, c.ts)).id
    return conclusions[0].id


def order(item: Scored) -> tuple:
    """Best score first, then newest, then id (and type), so the order is total."""
    return (-item.score, -item.hit.ts, item.hit.id, item.hit.type)


_SPACE = re.compile(r"\s+")
_PATH_WORD = re.compile(r"[^\W_]+")


def dedupe(items: list[Scored], contents: dict[int, str], limit: int) -> list[Scored]:
    """The first `limit` items, near-identical ones (same content up to case and spacing)
    collapsed to the best."""
    seen: set[str] = set()
    out: list[Scored] = []
    for item in items:
        if len(out) >= limit:
            break
        key = _SPACE.sub(" ", contents.get(item.hit.rowid, "")).strip().lower()
        if key in seen:
            continue
        seen.add(key)
        out.append(item)
    return out
