"""Retrieval: pins, the current summary and ranked full-text candidates, within a token budget.

The result is the RetrieveResult of retrieval.txt, with entities exactly as stored. Everything
is deterministic for a given store, query and `now` (KINDLING_NOW), so results reproduce:

    score = round(clamp(0.7 * norm + 0.3 * recency, 0, 1), 10)   (half up)

where `norm` maps bm25 over all matching candidates linearly from the worst (0) to the best
(1), 0.5 when all are equal, and `recency = max(0, 1 - (now - ts) / 30 days)`. Candidates are
sorted by score, then ts (newest first), then id, and cut to `max_results`.
"""

from __future__ import annotations

import sqlite3

from kindling import canonical
from kindling.clock import now_ms
from kindling.errors import ValidationError
from kindling.index import Index, RankKey
from kindling.model import (
    MAX_COUNT,
    MAX_TIMESTAMP_MS,
    OBSERVATION_KINDS,
    PLURAL,
    is_timestamp,
    scope_errors,
)
from kindling.search.fts_query import Compiled, clean, compile_query

PROVIDER = "local-fts"
NORM_WEIGHT = 0.7
RECENCY_WEIGHT = 0.3
RECENCY_WINDOW_MS = 30 * 24 * 60 * 60 * 1000
SNIPPET_TOKENS = 16
# The token estimate: characters of the compact JSON of the result per token.
CHARS_PER_TOKEN = 4


def score(bm25: float, best: float, worst: float, ts: int, now: int) -> float:
    """A candidate's score in [0, 1] (bm25 is lower for better matches, as FTS5 gives it).

    Rounded half up at the tenth decimal in floating point, as `Math.round(x * 1e10) / 1e10`
    does: the same arithmetic SQLite sorts by, so the order and the scores always agree.
    """
    norm = 0.5 if worst == best else (worst - bm25) / (worst - best)
    recency = max(0.0, 1 - (now - ts) / RECENCY_WINDOW_MS)
    x = min(1.0, max(0.0, NORM_WEIGHT * norm + RECENCY_WEIGHT * recency))
    return int(x * 1e10 + 0.5) / 1e10


def estimate_tokens(value: object) -> float:
    """About how many tokens a value costs: characters of its compact JSON / 4."""
    return len(canonical.encode_compact(value).decode("utf-8")) / CHARS_PER_TOKEN


def retrieve(
    index: Index,
    query: str,
    *,
    scope: dict | None = None,
    kinds: list[str] | None = None,
    since: int | None = None,
    max_results: int = 10,
    max_tokens: int | None = None,
    include_redacted: bool = False,
    now: int | None = None,
) -> dict:
    """The RetrieveResult for `query` over an index that is already in step with the files."""
    check_search_options(query, scope, kinds, since, max_results, max_tokens)
    now = now_ms() if now is None else now
    scope = dict(scope or {})
    kinds = list(dict.fromkeys(kinds)) if kinds else None
    text = clean(query)
    with index.snapshot():
        pins = pin_tier(index, scope, now, include_redacted=include_redacted)
        summary = current_summary(index, scope)
        exclude = {(PLURAL[p["pin"]["targetType"]], p["target"]["id"]) for p in pins}
        if summary is not None:
            exclude.add(("summaries", summary["id"]))
        total, candidates = candidate_tier(
            index,
            compile_query(text),
            scope=scope,
            kinds=kinds,
            since=since,
            exclude=exclude,
            now=now,
            max_results=max_results,
        )
    result: dict = {"pins": pins}
    if summary is not None:
        result["currentSummary"] = summary
    result["candidates"] = candidates
    result["provenance"] = {
        "query": text,
        "scopeIds": scope,
        "totalCandidates": total,
        "returnedCandidates": len(candidates),
        "truncatedDueToTokenBudget": False,
        "providerUsed": PROVIDER,
    }
    if max_tokens is not None:
        fit_budget(result, max_tokens)
    return result


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def check_search_options(
    query: object,
    scope: dict | None,
    kinds: list[str] | None,
    since: int | None,
    max_results: int,
    max_tokens: int | None,
) -> None:
    """Raise one ValidationError naming every bad retrieval option."""
    errors = []
    if not isinstance(query, str):
        errors.append("query must be a string")
    errors.extend(scope_errors(scope or {}, "scope"))
    for kind in kinds or ():
        if kind not in OBSERVATION_KINDS:
            errors.append(f"invalid kind {kind!r}: use one of {', '.join(OBSERVATION_KINDS)}")
    if since is not None and not is_timestamp(since):
        errors.append(f"since must be an integer from 0 to {MAX_TIMESTAMP_MS} (epoch milliseconds)")
    if not _count(max_results):
        errors.append(f"max results must be an integer from 0 to {MAX_COUNT}")
    if max_tokens is not None and not _count(max_tokens):
        errors.append(f"max tokens must be an integer from 0 to {MAX_COUNT}")
    if errors:
        raise ValidationError("; ".join(errors))


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
        if found is not None:
            return found.entity
    return None


def candidate_tier(
    index: Index,
    compiled: Compiled,
    *,
    scope: dict,
    kinds: list[str] | None,
    since: int | None,
    exclude: set[tuple[str, str]],
    now: int,
    max_results: int,
) -> tuple[int, list[dict]]:
    """(number of matching candidates, the best `max_results` of them with scores)."""
    rank = RankKey(NORM_WEIGHT, RECENCY_WEIGHT, RECENCY_WINDOW_MS, now)
    for expression in (compiled.explicit, compiled.plain):
        if expression is None:
            continue

        def fetch(limit: int | None, expression: str = expression) -> list[tuple]:
            return index.match(
                expression,
                rank=rank,
                scope=scope,
                kinds=kinds,
                since=since,
                exclude=sorted(exclude),
                limit=limit,
            )

        try:
            rows = fetch(max(max_results, 1))  # one row at least: it carries the count
        except sqlite3.OperationalError:
            continue  # not valid FTS5 after all: try the plain words instead
        if not rows:
            return 0, []
        scored = [(score(r[4], r[5], r[6], r[3], now), r) for r in rows]
        if any(int(value * 1e10 + 0.5) != row[8] for value, row in scored):
            # SQLite's arithmetic and ours disagree (never seen): rank every match here.
            scored = [(score(r[4], r[5], r[6], r[3], now), r) for r in fetch(None)]
            scored.sort(key=lambda sr: (-sr[0], -sr[1][3], sr[1][2], sr[1][1]))
        best = scored[:max_results]
        rowids = [r[0] for _, r in best]
        entities = index.rows(rowids)
        contexts = index.snippets(expression, rowids, tokens=SNIPPET_TOKENS)
        candidates = []
        for value, row in best:
            item = {"entity": entities[row[0]], "score": value}
            if contexts.get(row[0]):
                item["matchContext"] = contexts[row[0]]
            candidates.append(item)
        return rows[0][7], candidates
    return 0, []


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
