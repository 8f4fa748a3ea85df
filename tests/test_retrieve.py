"""Retrieval through the API: exact scores, order, tiers, scope, expiry, redaction, max and the
token budget, all with KINDLING_NOW fixed."""

from __future__ import annotations

import os

import entities
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kindling import canonical
from kindling.errors import KindlingError, ValidationError
from kindling.memory import Memory
from kindling.search import rank
from kindling.search.request import SearchRequest
from kindling.search.retrieve import retrieve
from kindling.store import Store

NOW = 1_750_000_000_000
DAY = 86_400_000
FILLER = " ".join(f"filler{n}" for n in range(30))


@pytest.fixture
def store(store_dir, monkeypatch) -> Store:
    monkeypatch.setenv("KINDLING_NOW", str(NOW))
    return Store(store_dir)


@pytest.fixture
def mem(store):
    with Memory(store.root) as memory:
        yield memory


def obs(store, eid, content, *, ts=NOW, kind="message", redacted=False, **scope):
    """Write an observation (the shared builder's) and return it."""
    text = "[redacted]" if redacted else content
    entity = entities.observation(eid, text, ts=ts, kind=kind, redacted=redacted, **scope)
    store.write("observations", entity)
    return entity


def summary(store, sid, content, capsule_id, *, ts=NOW, **scope):
    """Write a summary (the shared builder's) and return it."""
    entity = entities.summary(sid, content, capsuleId=capsule_id, ts=ts, **scope)
    store.write("summaries", entity)
    return entity


def capsule(store, cid, *, opened, closed=None, summary_id=None, **scope):
    entity = {
        "id": cid,
        "type": "session",
        "intent": "work",
        "status": "open" if closed is None else "closed",
        "openedAt": opened,
        "scopeIds": scope,
        "observationIds": [],
    }
    if closed is not None:
        entity["closedAt"] = closed
    if summary_id is not None:
        entity["summaryId"] = summary_id
    store.write("capsules", entity)
    return entity


def pin(store, pid, target, *, created=NOW, expires=None, target_type="observation", **scope):
    entity = {
        "id": pid,
        "targetType": target_type,
        "targetId": target,
        "reason": f"note for {target}",
        "createdAt": created,
        "expiresAt": expires,
        "scopeIds": scope,
    }
    store.write("pins", entity)
    return entity


def ranked(result):
    return [(c["entity"]["id"], c["score"]) for c in result["candidates"]]


# ---------------------------------------------------------------- scores and order


def explained(result):
    return [(c["entity"]["id"], c["score"], c["explain"]) for c in result["candidates"]]


def test_relevance_outweighs_recency(store, mem):
    obs(store, "exact", "token expired in the jwt middleware", ts=NOW - 25 * DAY)
    obs(store, "weak", f"token {FILLER}", ts=NOW)  # one common word, brand new
    for n in range(4):
        obs(store, f"other{n}", f"unrelated note {n}")
    result = mem.search("jwt token expired")
    assert [c["entity"]["id"] for c in result["candidates"]] == ["exact", "weak"]
    assert result["provenance"]["totalCandidates"] == 2


def test_equal_matches_break_by_recency_within_a_bounded_part(store, mem):
    obs(store, "new", "retry parser one", ts=NOW)
    obs(store, "days", "retry parser two", ts=NOW - 3 * DAY)
    obs(store, "old", "retry parser six", ts=NOW - 45 * DAY)
    result = mem.search("parser", explain=True)
    rows = explained(result)
    assert [r[0] for r in rows] == ["new", "days", "old"]
    relevance = {r[2]["relevance"] for r in rows}
    assert len(relevance) == 1  # same match: only recency differs
    assert [r[2]["recency"] for r in rows] == [
        rank.W_RECENCY,
        pytest.approx(rank.W_RECENCY * 0.9),
        0.0,
    ]


def test_ties_break_by_time_then_id(store, mem):
    for eid in ("z", "m", "a"):
        obs(store, eid, f"flag cache {eid}{eid}", ts=NOW - 40 * DAY)
    obs(store, "newer", "flag cache nn", ts=NOW - 35 * DAY)
    ranking = ranked(mem.search("cache"))
    assert [eid for eid, _ in ranking] == ["newer", "a", "m", "z"]
    assert len({value for _, value in ranking}) == 1


def test_future_timestamps_count_as_now(store, mem):
    obs(store, "future", "token", ts=NOW + 30 * DAY)
    result = mem.search("token", explain=True)
    ((eid, value, parts),) = explained(result)
    assert parts["recency"] == rank.W_RECENCY
    assert 0.0 <= value <= 1.0


def test_score_formula_parts():
    assert rank.saturate(0.0) == 0.0
    assert rank.saturate(-rank.K) == 0.5
    assert rank.saturate(+3.0) == 0.0  # bm25 is never positive, but a bad value stays at 0
    assert rank.strength(-rank.K, 1.0) == 0.75
    assert rank.strength(-rank.K, 0.0) == 0.0
    assert rank.recency(NOW - 15 * DAY, NOW) == 0.5
    assert rank.recency(NOW - 60 * DAY, NOW) == 0.0
    assert rank.round_score(0.123456789049) == 0.123456789
    assert rank.round_score(0.12345678905) == 0.1234567891
    assert rank.round_score(1.5) == 1.0
    assert rank.W_RELEVANCE + rank.W_EPISODE + rank.W_RECENCY == pytest.approx(1.0)


def test_score_parts_add_up_and_explain_changes_nothing_else(store, mem):
    obs(store, "e", "TypeError: cannot read busyTimeout of undefined", kind="error", sessionId="s")
    obs(store, "f", "Root cause: config was loaded late", ts=NOW + 1, sessionId="s")
    obs(store, "d", "--- a/db.py\n+busy_timeout = 60000", kind="file_diff", ts=NOW + 2)
    obs(store, "x", "undefined behaviour in the cache", ts=NOW - 50 * DAY)
    query = "TypeError: cannot read busyTimeout of undefined"
    with_parts = mem.search(query, explain=True)
    assert len(with_parts["candidates"]) == 4
    for _, value, parts in explained(with_parts):
        total = parts["relevance"] + parts["episode"] + parts["recency"]
        assert value == rank.round_score(total)
        assert abs(value - total) < 1e-9
        assert 0.0 <= parts["coverage"] <= 1.0
    plain = mem.search(query)
    assert [{k: v for k, v in c.items() if k != "explain"} for c in with_parts["candidates"]] == (
        plain["candidates"]
    )


# ---------------------------------------------------------------- what ranks where


def test_pasting_an_error_finds_the_fix_of_its_session(store, mem):
    error = "sqlite3.OperationalError: database is locked [SQL: UPDATE episodes SET x=?]"
    obs(store, "s1.err", error, kind="error", ts=NOW - 10 * DAY, sessionId="s1")
    obs(
        store,
        "s1.cause",
        "Root cause: two writers share the file",
        ts=NOW - 10 * DAY + 5,
        sessionId="s1",
    )
    obs(
        store,
        "s1.fix",
        "--- a/engine.py\n+PRAGMA busy_timeout = 60000",
        kind="file_diff",
        ts=NOW - 10 * DAY + 9,
        sessionId="s1",
    )
    obs(
        store,
        "s2.cause",
        "Root cause: the database migration held a lock",
        ts=NOW - DAY,
        sessionId="s2",
    )
    for n in range(5):
        obs(store, f"noise{n}", f"database backup {n} finished", ts=NOW - n * DAY)
    result = mem.search(error, explain=True)
    ids = [c["entity"]["id"] for c in result["candidates"]]
    # The fix shares no word with the error, yet ranks with it, above every other match.
    assert set(ids[:3]) == {"s1.cause", "s1.fix", "s1.err"}
    parts = {eid: p for eid, _, p in explained(result)}
    assert parts["s1.fix"]["episodeFrom"] == "s1.err"
    assert parts["s1.fix"]["bm25"] is None  # found through its episode, not its words
    assert parts["s2.cause"]["episode"] == 0.0
    assert "s2.cause" not in ids[:3]


def test_episode_reaches_only_forward_from_raw_output(store, mem):
    obs(store, "before", "Root cause noted earlier", ts=NOW - 10, sessionId="s")
    obs(store, "err", "ZeroDivisionError in totals", kind="error", ts=NOW - 5, sessionId="s")
    obs(store, "after", "Fixed by guarding the divisor", ts=NOW, sessionId="s")
    ids = [c["entity"]["id"] for c in mem.search("ZeroDivisionError")["candidates"]]
    assert sorted(ids) == ["after", "err"]  # not the finding from before the error


def test_conclusions_outweigh_raw_output_of_the_same_match(store, mem):
    obs(store, "cmd", "pytest tests/test_cache.py", kind="command", sessionId="a")
    obs(store, "msg", "pytest tests/test_cache.py", kind="message", sessionId="b")
    obs(store, "other", "nothing to see")
    result = mem.search("test_cache", explain=True)
    ids = [c["entity"]["id"] for c in result["candidates"]]
    # Same normalised content: only the best of the two is kept.
    assert ids == ["msg"]
    assert result["provenance"]["totalCandidates"] == 2


def test_near_identical_candidates_collapse_to_the_best(store, mem):
    obs(store, "a", "Build  FAILED:\nmissing module", ts=NOW - DAY)
    obs(store, "b", "build failed: missing   module", ts=NOW)
    obs(store, "c", "build failed: missing module foo", ts=NOW)
    ids = [c["entity"]["id"] for c in mem.search("build failed missing module")["candidates"]]
    assert ids[0] in {"a", "b", "c"} and len(ids) == 2
    assert ("a" in ids) != ("b" in ids)


def test_identifiers_match_across_styles(store, mem):
    obs(store, "snake", "PRAGMA busy_timeout = 60000")
    obs(store, "kebab", "maxmemory-policy allkeys-lru")
    obs(store, "camel", "export function useLocalStorageState(key)")
    obs(store, "prose", "the busy season has no timeout")
    assert ranked(mem.search("busyTimeout"))[0][0] == "snake"
    assert [i for i, _ in ranked(mem.search("maxmemoryPolicy"))] == ["kebab"]
    assert ranked(mem.search("use local storage state"))[0][0] == "camel"
    assert ranked(mem.search("use_local_storage_state"))[0][0] == "camel"


def test_no_stemming_conflation(store, mem):
    obs(store, "ordering", "ordering of the results is stable")
    obs(store, "order", "order 66 shipped")
    obs(store, "locale", "locale file missing")
    obs(store, "local", "local branch deleted")
    obs(store, "generic", "generic handler registered")
    obs(store, "general", "general protection fault")
    # Another inflection matches, for less than the word as typed.
    assert [i for i, _ in ranked(mem.search("ordering"))] == ["ordering", "order"]
    assert [i for i, _ in ranked(mem.search("order"))] == ["order", "ordering"]
    # Words that merely share a stem never meet.
    assert [i for i, _ in ranked(mem.search("locale"))] == ["locale"]
    assert [i for i, _ in ranked(mem.search("local"))] == ["local"]
    assert [i for i, _ in ranked(mem.search("generic"))] == ["generic"]


def test_inflections_of_plain_words_match(store, mem):
    obs(store, "tokens", "the refresh tokens expired overnight")
    obs(store, "failed", "the nightly build failed twice")
    obs(store, "auth", "authentication is delegated to the gateway")
    obs(store, "code", "TS2307 in loader.ts; buildTokens() undefined")
    # `tokens` also is a part of the name buildTokens, so both are found.
    assert [i for i, _ in ranked(mem.search("token"))] == ["tokens", "code"]
    assert [i for i, _ in ranked(mem.search("failing"))] == ["failed"]
    assert [i for i, _ in ranked(mem.search("authenticate"))] == ["auth"]
    # Codes and names stay exact: TS2306 is another error, buildToken another name.
    assert ranked(mem.search("TS2306")) == []
    assert ranked(mem.search("buildToken")) == []
    explained = mem.search("token", explain=True)["candidates"][0]["explain"]
    assert explained["matched"]["token"]["in"] == "variant"


def test_huge_pasted_queries_are_answered_by_their_rarest_terms(store, mem):
    obs(store, "hit", "ZeroDivisionError raised in totals")
    obs(store, "common", "common words everywhere")
    trace = " ".join(f"frame{n} common" for n in range(100_000))  # about 1.3 MB, 100,001 terms
    result = mem.search(trace + "\nZeroDivisionError: division by zero")
    assert [c["entity"]["id"] for c in result["candidates"]][0] == "hit"
    deep = "(" * 300 + "ZeroDivisionError" + ")" * 300
    assert [c["entity"]["id"] for c in mem.search(deep)["candidates"]] == ["hit"]


def test_results_are_deterministic(store, mem):
    for n in range(40):
        obs(
            store,
            f"o{n:02d}",
            f"cache miss {n % 3} retry",
            ts=NOW - (n % 5) * DAY,
            sessionId=f"s{n % 4}",
            kind=["message", "error", "file_diff", "command"][n % 4],
        )
    first = mem.search("cache miss retry", max_results=30, explain=True)
    for _ in range(3):
        assert mem.search("cache miss retry", max_results=30, explain=True) == first


def test_more_and_rarer_shared_words_rank_first(store, mem):
    obs(store, "both", "jwt token expired in middleware", ts=NOW - DAY)
    obs(store, "rare", "jwt middleware rewrite", ts=NOW - DAY)
    obs(store, "common", "token token refresh", ts=NOW - DAY)
    for n in range(6):
        obs(store, f"noise{n}", f"token noise {n}", ts=NOW - DAY)
    ids = [
        c["entity"]["id"] for c in mem.search("how did we fix the expired jwt token?")["candidates"]
    ]
    assert ids[0] == "both"
    assert ids.index("rare") < ids.index("common")


def test_max_is_a_prefix_of_a_larger_max(store, mem):
    for n in range(30):
        obs(store, f"o{n:02d}", "cache " * (1 + n % 4) + f"miss {n}", ts=NOW - (n % 7) * DAY)
    big = mem.search("cache miss", max_results=50)
    assert big["provenance"]["totalCandidates"] == 30
    for m in (0, 1, 3, 10):
        small = mem.search("cache miss", max_results=m)
        assert small["candidates"] == big["candidates"][:m]
        assert small["provenance"]["totalCandidates"] == 30
        assert small["provenance"]["returnedCandidates"] == m
    assert len(mem.search("cache miss")["candidates"]) == 10  # the default


# ---------------------------------------------------------------- the tiers


def test_pins_tier_expiry_scope_order_and_exclusion(store, mem):
    obs(store, "t1", "token one", sessionId="s1")
    obs(store, "t2", "token two", sessionId="s1")
    obs(store, "t3", "token three", sessionId="s1")
    obs(store, "t4", "token four", sessionId="s1")
    pin(store, "pin_old", "t1", created=NOW - 10)
    pin(store, "pin_new", "t2", created=NOW - 5, expires=NOW + 1)
    pin(store, "pin_expired", "t3", expires=NOW)  # expiresAt must be after now
    pin(store, "pin_other_session", "t4", sessionId="s2")
    pin(store, "pin_missing", "gone")
    result = mem.search("token", scope={"sessionId": "s1"})
    assert [p["pin"]["id"] for p in result["pins"]] == ["pin_new", "pin_old"]
    assert [p["target"]["id"] for p in result["pins"]] == ["t2", "t1"]
    assert {c["entity"]["id"] for c in result["candidates"]} == {"t3", "t4"}
    assert result["provenance"]["totalCandidates"] == 2
    unscoped = mem.search("token")
    assert [p["pin"]["id"] for p in unscoped["pins"]] == [
        "pin_other_session",  # created at NOW: the newest
        "pin_new",
        "pin_old",
    ]


def test_pin_scope_matches_fields_it_lacks(store, mem):
    obs(store, "x", "cache", sessionId="s1", repoId="r1")
    pin(store, "pin_session", "x", sessionId="s1")
    pin(store, "pin_repo", "x", sessionId="s1", repoId="r2")
    result = mem.search("cache", scope={"sessionId": "s1", "repoId": "r1"})
    assert [p["pin"]["id"] for p in result["pins"]] == ["pin_session"]


def test_a_target_pinned_in_two_scopes_is_shown_once_with_its_newest_pin(store, mem):
    obs(store, "x", "cache", sessionId="s1", repoId="r1")
    pin(store, "pin_session", "x", sessionId="s1", created=NOW - 5)
    pin(store, "pin_repo", "x", repoId="r1", created=NOW - 1)
    result = mem.search("cache")
    assert [(p["pin"]["id"], p["target"]["id"]) for p in result["pins"]] == [("pin_repo", "x")]
    assert result["candidates"] == []  # a pinned entry is never a candidate too
    scoped = mem.search("cache", scope={"sessionId": "s1", "repoId": "r2"})  # not pin_repo's
    assert [p["pin"]["id"] for p in scoped["pins"]] == ["pin_session"]


def test_redacted_targets_only_with_include_redacted(store, mem):
    obs(store, "secret", "token", redacted=True)
    pin(store, "pin_secret", "secret")
    assert mem.search("")["pins"] == []
    result = mem.search("redacted", include_redacted=True)
    assert [p["target"]["content"] for p in result["pins"]] == ["[redacted]"]
    assert result["candidates"] == []  # redacted text is gone: it never matches
    assert mem.search("token", include_redacted=True)["candidates"] == []


def test_current_summary_for_a_session_is_its_latest_opened_capsules(store, mem):
    summary(store, "sum_a", "first fix for the token bug", "cap_a", sessionId="s1")
    summary(store, "sum_b", "second token fix", "cap_b", sessionId="s1")
    capsule(store, "cap_a", opened=NOW - 100, closed=NOW - 1, summary_id="sum_a", sessionId="s1")
    capsule(store, "cap_b", opened=NOW - 50, closed=NOW - 40, summary_id="sum_b", sessionId="s1")
    capsule(store, "cap_c", opened=NOW - 10, sessionId="s1")  # newest, but no summary yet
    capsule(store, "cap_d", opened=NOW, closed=NOW, summary_id="sum_gone", sessionId="s1")
    result = mem.search("token", scope={"sessionId": "s1"})
    assert result["currentSummary"]["id"] == "sum_b"
    assert [c["entity"]["id"] for c in result["candidates"]] == ["sum_a"]  # not sum_b again
    why = mem.search("token", scope={"sessionId": "s1"}, explain=True)["explain"]
    assert why["currentSummary"] == {"rule": "session", "sessionId": "s1"}


def test_current_summary_without_a_session_is_the_one_that_answers(store, mem):
    fix = "Uploads failed with EntityTooSmall: multipart part size raised to 8 MiB"
    summary(store, "sum_u", fix, "cap_u", sessionId="su")
    summary(store, "sum_b", "Renamed the billing export columns", "cap_b", sessionId="sb")
    capsule(store, "cap_u", opened=NOW - 100, closed=NOW - 90, summary_id="sum_u", sessionId="su")
    capsule(store, "cap_b", opened=NOW - 50, closed=NOW - 40, summary_id="sum_b", sessionId="sb")
    obs(store, "err", "PUT part 3 -> 400 EntityTooSmall", kind="error", sessionId="su")
    obs(store, "other", "the upload page has a new icon", sessionId="sx")
    result = mem.search("EntityTooSmall when uploading", explain=True)
    assert result["currentSummary"]["id"] == "sum_u"  # not the latest closed, sum_b
    assert "sum_u" not in [c["entity"]["id"] for c in result["candidates"]]
    why = result["explain"]["currentSummary"]
    assert why["rule"] == "best answer" and why["coverage"] >= why["threshold"]
    assert mem.search("billing export")["currentSummary"]["id"] == "sum_b"
    # Nothing relevant: no current summary at all, and explain says so.
    unrelated = mem.search("kubernetes ingress annotations", explain=True)
    assert "currentSummary" not in unrelated
    assert unrelated["explain"]["currentSummary"]["rule"] == "none above threshold"


def test_current_summary_ties_break_by_id(store, mem):
    summary(store, "sum_x", "x", "cap_2")
    summary(store, "sum_y", "y", "cap_1")
    capsule(store, "cap_2", opened=NOW, closed=NOW, summary_id="sum_x", sessionId="s")
    capsule(store, "cap_1", opened=NOW, closed=NOW, summary_id="sum_y", sessionId="s")
    assert mem.search("", scope={"sessionId": "s"})["currentSummary"]["id"] == "sum_y"
    assert "currentSummary" not in mem.search("")  # no session and nothing asked: none


def test_summaries_are_candidates_and_scope_is_exact(store, mem):
    summary(store, "sum_1", "fixed the jwt expiry", "cap_1", repoId="r1")
    obs(store, "o1", "jwt expiry seen", repoId="r1", sessionId="s1")
    obs(store, "o2", "jwt expiry seen", repoId="r2")
    obs(store, "o3", "jwt expiry seen")
    result = mem.search("jwt", scope={"repoId": "r1"})
    assert sorted(c["entity"]["id"] for c in result["candidates"]) == ["o1", "sum_1"]
    assert result["provenance"]["scopeIds"] == {"repoId": "r1"}
    assert "currentSummary" not in result  # no capsule names sum_1


def test_kind_and_since_filters(store, mem):
    obs(store, "e1", "parser crash one", kind="error", ts=NOW - 2 * DAY)
    obs(store, "e2", "parser crash two", kind="error", ts=NOW)
    obs(store, "c1", "parser crash three", kind="command", ts=NOW)
    summary(store, "sum_1", "parser crash fixed", "cap_1")
    by_kind = mem.search("parser", kinds=["error"])
    assert [c["entity"]["id"] for c in by_kind["candidates"]] == ["e2", "e1"]
    since = mem.search("parser", since=NOW - DAY)
    assert sorted(c["entity"]["id"] for c in since["candidates"]) == ["c1", "e2", "sum_1"]


def test_empty_query_returns_pins_and_summary_only(store, mem):
    obs(store, "o", "anything")
    pin(store, "pin_1", "o")
    summary(store, "sum_1", "anything", "cap_1", sessionId="s")
    capsule(store, "cap_1", opened=NOW, closed=NOW, summary_id="sum_1", sessionId="s")
    for query in ("", "   ", "?!", '"'):
        result = mem.search(query, scope={"sessionId": "s"})
        assert [p["pin"]["id"] for p in result["pins"]] == ["pin_1"]
        assert result["currentSummary"]["id"] == "sum_1"
        assert result["candidates"] == []
        assert result["provenance"]["totalCandidates"] == 0
        assert "currentSummary" not in mem.search(query)  # nothing asked, nothing answers


def test_result_shape(store, mem):
    obs(store, "o1", "JWT validation failed: token expired", sessionId="s1")
    result = mem.search("JWT validation failed: token expired", scope={"sessionId": "s1"})
    # The only text holds every term (coverage 1), but so does the whole store (bm25 ~ 0):
    # relevance 0.55 * 1 * (1 + 0) / 2, recency 0.05.
    assert result["candidates"][0]["score"] == pytest.approx(0.325, abs=1e-6)
    score = result["candidates"][0]["score"]
    assert result == {
        "pins": [],
        "candidates": [
            {
                "entity": {
                    "id": "o1",
                    "kind": "message",
                    "content": "JWT validation failed: token expired",
                    "provenance": {},
                    "ts": NOW,
                    "scopeIds": {"sessionId": "s1"},
                    "redacted": False,
                },
                "score": score,
                "matchContext": "**JWT** **validation** **failed**: **token** **expired**",
            }
        ],
        "provenance": {
            "query": "JWT validation failed: token expired",
            "scopeIds": {"sessionId": "s1"},
            "totalCandidates": 1,
            "returnedCandidates": 1,
            "truncatedDueToTokenBudget": False,
            "providerUsed": "local-fts",
        },
    }


def test_match_context_is_a_snippet_around_the_match(store, mem):
    words = [f"w{n}" for n in range(60)]
    words[40] = "needle"
    obs(store, "long", " ".join(words))
    context = mem.search("needle")["candidates"][0]["matchContext"]
    assert "**needle**" in context
    assert context.startswith("…") and not context.startswith("…w0 ")
    assert len(context) <= 200 + 2 + 4


def test_explicit_syntax_is_honoured(store, mem):
    obs(store, "phrase", "the token expired today")
    obs(store, "apart", "expired: the old token")
    obs(store, "prefix", "authentication middleware")
    assert [c["entity"]["id"] for c in mem.search('"token expired"')["candidates"]] == ["phrase"]
    assert [c["entity"]["id"] for c in mem.search("auth*")["candidates"]] == ["prefix"]
    not_apart = mem.search("token NOT old")["candidates"]
    assert [c["entity"]["id"] for c in not_apart] == ["phrase"]
    assert len(mem.search("token OR authentication")["candidates"]) == 3


# ---------------------------------------------------------------- token budget


def test_token_budget_drops_lowest_candidates_first(store, mem):
    obs(store, "p", "pinned note about the cache")
    pin(store, "pin_1", "p")
    for n in range(8):
        obs(store, f"c{n}", f"cache entry {n} " + "x" * 200, ts=NOW - n * DAY)
    full = mem.search("cache", max_results=20)
    assert full["provenance"]["returnedCandidates"] == 8

    def chars(result):
        return len(canonical.encode_compact(result).decode("utf-8"))

    budget = (chars(full) - 40) // 4  # too few for everything
    cut = mem.search("cache", max_results=20, max_tokens=budget)
    kept = cut["provenance"]["returnedCandidates"]
    assert 0 < kept < 8
    assert cut["candidates"] == full["candidates"][:kept]
    assert cut["provenance"]["truncatedDueToTokenBudget"] is True
    assert cut["provenance"]["totalCandidates"] == 8
    assert chars(cut) <= budget * 4
    one_more = dict(cut, candidates=full["candidates"][: kept + 1])
    one_more["provenance"] = dict(cut["provenance"], returnedCandidates=kept + 1)
    assert chars(one_more) > budget * 4
    assert cut["pins"] == full["pins"]

    tiny = mem.search("cache", max_tokens=1)
    assert tiny["candidates"] == [] and len(tiny["pins"]) == 1  # pins are never dropped
    assert tiny["provenance"]["truncatedDueToTokenBudget"] is True
    roomy = mem.search("cache", max_results=20, max_tokens=10**6)
    assert roomy == full


# ---------------------------------------------------------------- the index is only a cache


def test_deleting_the_index_changes_no_result(store):
    obs(store, "a", "token expired in auth", ts=NOW - DAY, sessionId="s1")
    obs(store, "b", "auth cache miss", ts=NOW - 2 * DAY, sessionId="s1")
    obs(store, "c", "token refresh", ts=NOW - 40 * DAY, sessionId="s2")
    summary(store, "sum_1", "token fix", "cap_1", sessionId="s1")
    capsule(store, "cap_1", opened=NOW - 5, closed=NOW - 1, summary_id="sum_1", sessionId="s1")
    pin(store, "pin_1", "b", sessionId="s1")
    queries = [
        ("token", None),
        ("auth", {"sessionId": "s1"}),
        ('"token expired"', None),
        ("", None),
    ]
    with Memory(store.root) as first:
        before = [first.search(q, scope=s) for q, s in queries]
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{store.index_path}{suffix}"):
            os.unlink(f"{store.index_path}{suffix}")
    with Memory(store.root) as second:
        after = [second.search(q, scope=s) for q, s in queries]
    assert after == before


def test_results_follow_the_files_without_reindex(store, mem):
    path = store.path_for("observations", "o")
    obs(store, "o", "first words")
    assert [i for i, _ in ranked(mem.search("first"))] == ["o"]
    path.write_bytes(path.read_bytes().replace(b"first words", b"other words"))
    assert mem.search("first")["candidates"] == []
    path.unlink()
    assert mem.search("other")["candidates"] == []


# ---------------------------------------------------------------- options


def test_kindling_now_is_required_to_be_an_integer(store, mem, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", "soon")
    with pytest.raises(KindlingError, match="KINDLING_NOW"):
        mem.search("x")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kinds": ["shout"]}, "invalid kind 'shout'"),
        ({"max_results": -1}, "max results"),
        ({"max_tokens": -5}, "max tokens"),
        ({"since": "yesterday"}, "since"),
        ({"scope": {"branch": "x"}}, "scope.branch is not a scope field"),
    ],
)
def test_invalid_options(mem, kwargs, message):
    with pytest.raises(ValidationError, match=message):
        mem.search("x", **kwargs)


def test_retrieve_reads_one_request(store, mem):
    obs(store, "e1", "token expired in the middleware", kind="error")
    obs(store, "m1", "token refreshed", kind="message")
    request = SearchRequest.checked("token", kinds=["error"], max_results=5, explain=True)
    mem.sync()
    by_request = retrieve(mem.index, request, now=NOW)
    assert by_request == retrieve(
        mem.index, "token", now=NOW, kinds=["error"], max_results=5, explain=True
    )
    assert by_request == mem.search(request)
    assert [c["entity"]["id"] for c in by_request["candidates"]] == ["e1"]
    assert "explain" in by_request["candidates"][0]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    docs=st.lists(
        st.tuples(
            st.lists(
                st.sampled_from(["cache", "miss", "retry", "flag", "x"]), min_size=1, max_size=6
            ),
            st.integers(-5 * DAY, 45 * DAY),
        ),
        min_size=1,
        max_size=25,
    ),
    max_results=st.integers(0, 30),
)
def test_order_always_agrees_with_the_scores(store_dir, monkeypatch, docs, max_results):
    """Whatever the data, candidates come sorted by score, then newest, then id, and a
    smaller --max is a prefix of a larger one."""
    monkeypatch.setenv("KINDLING_NOW", str(NOW))
    store = Store(store_dir)
    for path in store.objects.glob("observations/*/*.json"):
        path.unlink()
    for n, (words, age) in enumerate(docs):
        obs(store, f"d{n:02d}", " ".join(words), ts=NOW - age)
    with Memory(store.root) as mem:
        full = mem.search("cache miss", max_results=100)
        keys = [(-c["score"], -c["entity"]["ts"], c["entity"]["id"]) for c in full["candidates"]]
        assert keys == sorted(keys)
        assert all(0.0 <= c["score"] <= 1.0 for c in full["candidates"])
        cut = mem.search("cache miss", max_results=max_results)
        assert cut["candidates"] == full["candidates"][:max_results]
