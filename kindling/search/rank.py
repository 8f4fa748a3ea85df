"""How candidates are scored: relevance, the episode they belong to, and a little recency.

    score     = relevance + episode + recency                  (each part >= 0, sum <= 1)
    strength  = coverage * (1 + s / (s + K)) / 2               s = -bm25, the FTS5 match
    relevance = W_RELEVANCE * kind_weight * strength
    episode   = W_EPISODE * strength of the best hit of its session that reaches it (below)
    recency   = W_RECENCY * max(0, 1 - age / 30 days)

Coverage (kindling.search.coverage) is the idf-weighted share of the query's terms an entity
holds, so rare specific terms outweigh common ones and one common word of a pasted error is
worth little. bm25 (term frequency, text length) moves a match within the upper half of its
coverage: s / (s + K) maps it to [0, 1) on one fixed curve, so a weak match stays weak however
good or bad the other matches are, and a term most texts hold (bm25 near 0 in a small store)
still counts by its coverage. Conclusions (summaries, findings, diffs) weigh
fully; raw output (errors, commands, tool calls) less, since it states a problem, not its
answer. A hit passes its strength on to the conclusions that followed it in its session (the
next few findings and diffs, and the next summary), and a conclusion that is a hit to the
findings and diffs just before it: pasting an error finds the fix. Recency only breaks
near-ties. Everything is arithmetic on stored values, so results reproduce.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kindling.index import Hit

# bm25 at which a match is half saturated: about one rare term's worth.
K = 8.0
W_RELEVANCE = 0.55
# About W_RELEVANCE times the raw kinds' weight: a conclusion reached from an error starts
# level with that error, and its own words decide which comes first.
W_EPISODE = 0.4
W_RECENCY = 0.05
RECENCY_WINDOW_MS = 30 * 24 * 60 * 60 * 1000
# Raw output states a problem; a finding, a diff or a summary states what was concluded.
KIND_WEIGHT = {"error": 0.7, "command": 0.7, "tool_call": 0.7}
CONCLUSION_KINDS = ("file_diff", "message")
# How far a hit's strength reaches in its session: the next this many findings/diffs and the
# next summary; for a hit that is itself a conclusion, also this many findings/diffs before it.
EPISODE_REACH = 4
# Only the best hits (by bm25) pass strength on: their sessions are looked up.
EPISODE_SOURCES = 30


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

    @property
    def score(self) -> float:
        return round_score(self.relevance + self.episode + self.recency)


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


def kind_weight(hit: Hit) -> float:
    return KIND_WEIGHT.get(hit.kind or "", 1.0)


def is_conclusion(hit: Hit) -> bool:
    return hit.type == "summaries" or hit.kind in CONCLUSION_KINDS


def strength(bm25: float, covered: float) -> float:
    """How well one entity matches the query, in [0, 1): coverage, moved by bm25."""
    return covered * (1 + saturate(bm25)) / 2


def score_hits(
    hits: list[Hit], reached: dict[int, list[Hit]], covered: dict[int, float], now: int
) -> list[Scored]:
    """Every matched hit and every conclusion it reaches (`reached`: by hit rowid), scored,
    best first."""
    scored: dict[int, Scored] = {}
    strengths = {hit.rowid: strength(hit.bm25, covered.get(hit.rowid, 0.0)) for hit in hits}
    for hit in hits:
        weight = kind_weight(hit)
        scored[hit.rowid] = Scored(
            hit, W_RELEVANCE * weight * strengths[hit.rowid], kind_weight=weight, matched=True
        )
    for source in hits[:EPISODE_SOURCES]:
        passed = W_EPISODE * strengths[source.rowid]
        for target in reached.get(source.rowid, ()):
            item = scored.get(target.rowid)
            if item is None:
                item = scored[target.rowid] = Scored(target, kind_weight=kind_weight(target))
            if passed > item.episode:
                item.episode = passed
                item.episode_from = source.id
    for item in scored.values():
        item.recency = W_RECENCY * recency(item.hit.ts, now)
    return sorted(scored.values(), key=order)


def order(item: Scored) -> tuple:
    """Best score first, then newest, then id (and type), so the order is total."""
    return (-item.score, -item.hit.ts, item.hit.id, item.hit.type)


_SPACE = re.compile(r"\s+")


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
