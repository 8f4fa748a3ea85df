"""Retrieval: pins, the current summary and ranked full-text candidates, within a token budget.

The result is the RetrieveResult of retrieval.txt, with entities exactly as stored. Everything
is deterministic for a given store, query and `now` (KINDLING_NOW), so results reproduce. How
candidates are scored is in kindling.search.rank; with `explain`, each candidate carries the
parts of its score, which add up to it, and the result says why its current summary was
chosen. The current summary is the scope's session's with a sessionId, else the summary of
the episode that best answers the query (Ranked.take_summary), or none.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from kindling import canonical
from kindling.clock import now_ms
from kindling.index import Index
from kindling.model import PLURAL, REDACTED_CONTENT
from kindling.search import coverage, rank
from kindling.search.context import TermSet, match_context
from kindling.search.fts_query import any_of, compile_query, plain_terms, words
from kindling.search.request import SearchRequest, as_request
from kindling.summary_format import answer_part

PROVIDER = "local-fts"
# Matches (best by bm25) that are scored: enough that coverage, episodes and the kind weight
# can reorder them, few enough that scoring costs the same at any store size. A --max up to
# POOL therefore always returns a prefix of a larger one.
POOL = 100
# A summary becomes the current summary when it, or the match its episode came from, holds at
# least this share of the query's weight: an answer's episode holds most of a question's rare
# words, a summary sharing one common word little of them.
SUMMARY_MIN = 0.5
# The token estimate: characters of the compact JSON of the result per token.
CHARS_PER_TOKEN = 4


def retrieve(
    index: Index, request: SearchRequest | str, *, now: int | None = None, **options: Any
) -> dict:
    """The RetrieveResult for a request over an index that is already in step with the files.

    `request` is a SearchRequest, or a query whose keyword options build one (see
    SearchRequest.checked). With `explain`, every candidate also has "explain": the parts
    of its score, and the result says why its current summary was chosen.
    """
    request = as_request(request, options)
    now = now_ms() if now is None else now
    scope = request.scope
    with index.snapshot():
        pins = pin_tier(index, scope, now, include_redacted=request.include_redacted)
        exclude = {(PLURAL[p["pin"]["targetType"]], p["target"]["id"]) for p in pins}
        summary = current_summary(index, scope) if "sessionId" in scope else None
        if summary is not None:
            exclude.add(("summaries", summary["id"]))
        ranked = candidate_tier(index, request, exclude, now)
        if "sessionId" in scope:
            why = {"rule": "session", "sessionId": scope["sessionId"]}
        else:
            summary, why = ranked.take_summary(index)
    candidates = ranked.candidates(request.max_results)
    result: dict = {"pins": pins}
    if summary is not None:
        result["currentSummary"] = summary
    result["candidates"] = candidates
    result["provenance"] = {
        "query": request.query,
        "scopeIds": dict(scope),
        "totalCandidates": ranked.total,
        "returnedCandidates": len(candidates),
        "truncatedDueToTokenBudget": False,
        "providerUsed": PROVIDER,
    }
    if request.explain:
        result["explain"] = {"currentSummary": why}
    if request.max_tokens is not None:
        fit_budget(result, request.max_tokens)
    return result


def pin_tier(index: Index, scope: dict, now: int, *, include_redacted: bool = False) -> list:
    """Active pins in scope, newest first, each with its target (skipped when it is gone);
    a target pinned in several scopes is shown once, with its newest pin."""
    out = []
    shown = set()
    for pin in index.entities("pins", scope=scope):
        if pin["expiresAt"] is not None and pin["expiresAt"] <= now:
            continue
        if pin["targetId"] in shown:
            continue
        found = index.get(pin["targetId"], PLURAL[pin["targetType"]])
        if found is None:
            continue
        if found.entity.get("redacted") and not include_redacted:
            continue
        shown.add(pin["targetId"])
        out.append({"pin": pin, "target": found.entity})
    return out


def current_summary(index: Index, scope: dict) -> dict | None:
    """The session's latest-opened summarised capsule's summary (a scope with a sessionId)."""
    for capsule in index.summarised_capsules(scope, by="opened"):
        found = index.get(capsule["summaryId"], "summaries")
        if found is not None and found.entity["content"] != REDACTED_CONTENT:
            return found.entity  # a forgotten summary says nothing worth showing first
    return None


def names_it(index: Index, summary: dict) -> bool:
    """Whether the summary's capsule names it as its summary (it is no orphan)."""
    found = index.get(summary["capsuleId"], "capsules")
    return found is not None and found.entity.get("summaryId") == summary["id"]


class Ranked:
    """The scored candidates of one search, best first, before they are cut to size."""

    def __init__(self, request: SearchRequest, total: int = 0) -> None:
        self.request = request
        self.total = total
        self.items: list[rank.Scored] = []
        self.entities: dict[int, dict] = {}
        self.contents: dict[int, str] = {}
        self.matched: dict[int, dict[str, str]] = {}
        self.covered: dict[int, float] = {}
        self.weights: coverage.Weights | None = None
        self.terms: TermSet | None = None

    def answered(self, item: rank.Scored) -> float:
        """How much of the query an item holds, or (for a summary, or a conclusion reached
        from an error, a run or a question) the match its episode came from; counting the
        plain words the store never saw (coverage.coverage, absolute)."""
        rowid = item.hit.rowid
        source = item.episode_rowid
        if source is not None and (item.hit.type == "summaries" or item.episode_from_problem):
            if self.covered.get(source, 0.0) > self.covered.get(rowid, 0.0):
                rowid = source
        assert self.weights is not None
        return coverage.coverage(self.matched.get(rowid, {}), self.weights, absolute=True)

    def take_summary(self, index: Index) -> tuple[dict | None, dict]:
        """The summary of the episode that best answers the query, taken out of the
        candidates: the best-scored summary its capsule names that (or the match its episode
        came from) holds at least SUMMARY_MIN of the query (absolute idf-weighted coverage);
        when a later episode superseded it, the later episode's summary. And why."""
        for item in self.items:
            if item.hit.type != "summaries":
                continue
            answered = self.answered(item)
            if answered < SUMMARY_MIN or not names_it(index, self.entities[item.hit.rowid]):
                continue
            chosen, why = self.entities[item.hit.rowid], {}
            if item.superseded_by:
                later = index.get(item.superseded_by, "summaries")
                if later is None or not names_it(index, later.entity):
                    continue  # superseded by an episode without a summary: its items rank
                chosen, why = later.entity, {"supersedes": item.hit.id}
            self.items = [i for i in self.items if i.hit.id != chosen["id"]]
            self.total -= 1
            why = {
                "rule": "best answer",
                "score": item.score,
                "coverage": answered,
                "threshold": SUMMARY_MIN,
                "summaryId": chosen["id"],
                **why,
            }
            if item.episode_from:
                why["episodeFrom"] = item.episode_from
            return chosen, why
        return None, {"rule": "none above threshold", "threshold": SUMMARY_MIN}

    def candidates(self, limit: int) -> list[dict]:
        """The best `limit` candidates (near-duplicates shown once), as the result has them."""
        out = []
        for item in rank.dedupe(self.items, self.contents, limit):
            rowid = item.hit.rowid
            candidate: dict = {"entity": self.entities[rowid], "score": item.score}
            if self.terms is not None:
                context = match_context(self.contents[rowid], self.terms)
                if context:
                    candidate["matchContext"] = context
            if item.superseded_by:
                candidate["supersededBy"] = item.superseded_by
            if self.request.explain and self.weights is not None:
                found = self.matched.get(rowid, {})
                covered = self.covered.get(rowid, 0.0)
                candidate["explain"] = explanation(item, found, self.weights, covered)
                candidate["explain"]["answered"] = self.answered(item)
            out.append(candidate)
        return out


def candidate_tier(
    index: Index, request: SearchRequest, exclude: set[tuple[str, str]], now: int
) -> Ranked:
    """Every candidate the query finds, scored (see kindling.search.rank)."""
    text = request.query
    keep = coverage.rarest(index)
    terms = coverage.with_variants(index, plain_terms(text, keep))
    compiled = compile_query(text, keep)._replace(plain=any_of(terms))
    options = dict(scope=request.scope, kinds=request.kinds, since=request.since, exclude=exclude)
    total, hits = 0, []
    for expression in compiled:
        if expression is None:
            continue
        try:
            total, hits = index.match(expression, limit=max(POOL, request.max_results), **options)
        except sqlite3.OperationalError:
            continue  # not valid FTS5 after all: try the plain words instead
        if hits:
            break  # syntax that finds nothing falls back to the words too
    ranked = Ranked(request, total)
    if not hits:
        return ranked
    sources = hits[: rank.EPISODE_SOURCES]
    episodes = index.episodes(((h.session, h.ts, h.id) for h in sources), rank.EPISODES)
    unfixed = rank.unfixed_errors(episodes, sources, rank.FIX_LOOKUPS)
    story = rank.Story(episodes, index.fixed_later(unfixed))
    reached = {s.rowid for h in sources for s in story.answers(h)} - {h.rowid for h in hits}
    allowed = index.searchable_among(reached, **options)
    entities = index.rows([h.rowid for h in hits] + sorted(allowed))
    contents = {rowid: entity["content"] for rowid, entity in entities.items()}
    weights = coverage.weights(index, terms)
    # Only matches have a coverage; a conclusion reached through its episode did not match.
    spellings = index.name_spellings(h.rowid for h in hits)
    matched = {
        h.rowid: coverage.matches(contents[h.rowid], weights, spellings.get(h.rowid)) for h in hits
    }
    covered = {rowid: coverage.coverage(found, weights) for rowid, found in matched.items()}
    for hit in hits:
        if hit.type == "summaries":
            covered[hit.rowid] = summary_coverage(contents[hit.rowid], covered[hit.rowid], weights)
    asked = rank.Asked(frozenset(w.lower() for w in words(text)), matched, weights.idf)
    ranked.items = rank.score_hits(hits, story, covered, now, allowed, asked)
    ranked.total += sum(1 for item in ranked.items if not item.matched)
    ranked.entities, ranked.contents = entities, contents
    ranked.matched, ranked.covered, ranked.weights = matched, covered, weights
    ranked.terms = TermSet(terms)
    return ranked


def summary_coverage(content: str, covered: float, weights: coverage.Weights) -> float:
    """A structured summary's coverage: its answer lines weigh fully, its problem lines (what
    was asked, tried, still fails) as raw output does (kindling.summary_format)."""
    answer = answer_part(content)
    if answer is None:
        return covered
    held = coverage.coverage(coverage.matches(answer, weights), weights)
    return max(held, rank.RAW_WEIGHT * covered)


def explanation(
    item: rank.Scored, matched: dict[str, str], weights: coverage.Weights, covered: float
) -> dict:
    """The parts of a candidate's score (they add up to it) and what they came from."""
    return {
        "relevance": item.relevance,
        "episode": item.episode,
        "recency": item.recency,
        "bm25": item.hit.bm25 if item.matched else None,
        "coverage": covered,
        "supersession": item.supersession,
        "kindWeight": item.kind_weight,
        "episodeFrom": item.episode_from,
        "fixedBy": item.fixed_by,
        "supersededBy": item.superseded_by,
        "matched": {t: {"in": where, "idf": weights.idf[t]} for t, where in matched.items()},
    }


def fit_budget(result: dict, max_tokens: int) -> None:
    """Drop the lowest candidates until the result is within `max_tokens` (pins never go)."""
    limit = max_tokens * CHARS_PER_TOKEN
    candidates = result["candidates"]
    provenance = result["provenance"]

    def size(keep: int) -> int:
        trial = dict(result, candidates=candidates[:keep])
        trial["provenance"] = dict(
            provenance,
            returnedCandidates=keep,
            truncatedDueToTokenBudget=keep < len(candidates),
        )
        return len(canonical.encode_compact(trial).decode("utf-8"))

    if size(len(candidates)) <= limit:
        return
    low, high = 0, len(candidates) - 1  # the largest count that fits lies in [low, high]
    while low < high:
        mid = (low + high + 1) // 2
        if size(mid) <= limit:
            low = mid
        else:
            high = mid - 1
    result["candidates"] = candidates[:low]
    provenance["returnedCandidates"] = low
    provenance["truncatedDueToTokenBudget"] = True
