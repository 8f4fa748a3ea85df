"""Retrieval: pins, the current summary and ranked full-text candidates, within a token budget.

The result is the RetrieveResult of retrieval.txt, with entities exactly as stored. Everything
is deterministic for a given store, query and `now` (KINDLING_NOW), so results reproduce. How
candidates are scored is in kindling.search.rank; with `explain`, each candidate carries the
parts of its score, which add up to it.
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
from kindling.search.fts_query import any_of, compile_query, plain_terms
from kindling.search.request import SearchRequest, as_request

PROVIDER = "local-fts"
# Matches (best by bm25) that are scored: enough that coverage, episodes and the kind weight
# can reorder them, few enough that scoring costs the same at any store size. A --max up to
# POOL therefore always returns a prefix of a larger one.
POOL = 100
# The token estimate: characters of the compact JSON of the result per token.
CHARS_PER_TOKEN = 4


def retrieve(
    index: Index, request: SearchRequest | str, *, now: int | None = None, **options: Any
) -> dict:
    """The RetrieveResult for a request over an index that is already in step with the files.

    `request` is a SearchRequest, or a query whose keyword options build one (see
    SearchRequest.checked). With `explain`, every candidate also has "explain": the parts
    of its score.
    """
    request = as_request(request, options)
    now = now_ms() if now is None else now
    scope = request.scope
    with index.snapshot():
        pins = pin_tier(index, scope, now, include_redacted=request.include_redacted)
        summary = current_summary(index, scope)
        exclude = {(PLURAL[p["pin"]["targetType"]], p["target"]["id"]) for p in pins}
        if summary is not None:
            exclude.add(("summaries", summary["id"]))
        total, candidates = candidate_tier(index, request, exclude, now)
    result: dict = {"pins": pins}
    if summary is not None:
        result["currentSummary"] = summary
    result["candidates"] = candidates
    result["provenance"] = {
        "query": request.query,
        "scopeIds": dict(scope),
        "totalCandidates": total,
        "returnedCandidates": len(candidates),
        "truncatedDueToTokenBudget": False,
        "providerUsed": PROVIDER,
    }
    if request.max_tokens is not None:
        fit_budget(result, request.max_tokens)
    return result


def pin_tier(index: Index, scope: dict, now: int, *, include_redacted: bool = False) -> list:
    """Active pins in scope, newest first, each with its target (skipped when it is gone)."""
    out = []
    for pin in index.entities("pins", scope=scope):
        if pin["expiresAt"] is not None and pin["expiresAt"] <= now:
            continue
        found = index.get(pin["targetId"], PLURAL[pin["targetType"]])
        if found is None:
            continue
        if found.entity.get("redacted") and not include_redacted:
            continue
        out.append({"pin": pin, "target": found.entity})
    return out


def current_summary(index: Index, scope: dict) -> dict | None:
    """The session's latest-opened summarised capsule's summary, else the latest-closed one's."""
    by = "opened" if "sessionId" in scope else "closed"
    for capsule in index.summarised_capsules(scope, by=by):
        found = index.get(capsule["summaryId"], "summaries")
        if found is not None and found.entity["content"] != REDACTED_CONTENT:
            return found.entity  # a forgotten summary says nothing worth showing first
    return None


def candidate_tier(
    index: Index, request: SearchRequest, exclude: set[tuple[str, str]], now: int
) -> tuple[int, list[dict]]:
    """(number of candidates found, the best `max_results` of them with scores)."""
    text, max_results = request.query, request.max_results
    keep = coverage.rarest(index)
    terms = coverage.with_variants(index, plain_terms(text, keep))
    compiled = compile_query(text, keep)._replace(plain=any_of(terms))
    options = dict(scope=request.scope, kinds=request.kinds, since=request.since, exclude=exclude)
    total, hits = 0, []
    for expression in compiled:
        if expression is None:
            continue
        try:
            total, hits = index.match(expression, limit=max(POOL, max_results), **options)
        except sqlite3.OperationalError:
            continue  # not valid FTS5 after all: try the plain words instead
        if hits:
            break  # syntax that finds nothing falls back to the words too
    if not hits:
        return 0, []
    reached = {
        hit.rowid: index.episode(
            hit, reach=rank.EPISODE_REACH, backward=rank.is_conclusion(hit), **options
        )
        for hit in hits[: rank.EPISODE_SOURCES]
    }
    extra = [h for found in reached.values() for h in found]
    entities = index.rows([h.rowid for h in (*hits, *extra)])
    contents = {rowid: entity["content"] for rowid, entity in entities.items()}
    weights = coverage.weights(index, terms)
    # Only matches have a coverage; a conclusion reached through its episode did not match.
    matched = {h.rowid: coverage.matches(contents[h.rowid], weights) for h in hits}
    covered = {rowid: coverage.coverage(found, weights) for rowid, found in matched.items()}
    scored = rank.score_hits(hits, reached, covered, now)
    total += sum(1 for item in scored if not item.matched)
    best = rank.dedupe(scored, contents, max_results)
    lookup = TermSet(terms)
    candidates = []
    for item in best:
        rowid = item.hit.rowid
        candidate: dict = {"entity": entities[rowid], "score": item.score}
        context = match_context(contents[rowid], lookup)
        if context:
            candidate["matchContext"] = context
        if request.explain:
            found = matched.get(rowid, {})
            candidate["explain"] = explanation(item, found, weights, covered.get(rowid, 0.0))
        candidates.append(candidate)
    return total, candidates


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
        "kindWeight": item.kind_weight,
        "episodeFrom": item.episode_from,
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
