"""Retrieval through the API: exact scores, order, tiers, scope, expiry, redaction, max and the
token budget, all with KINDLING_NOW fixed."""

from __future__ import annotations

import os

import pytest
from entities import NOW, capsule, observation, pin, summary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kindling import canonical
from kindling.errors import KindlingError, ValidationError
from kindling.memory import Memory
from kindling.search.retrieve import score
from kindling.store import Store

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


def ranked(result):
    return [(c["entity"]["id"], c["score"]) for c in result["candidates"]]


# ---------------------------------------------------------------- scores and order


def test_exact_scores_best_match_and_recency(store, mem):
    store.write(
        "observations", observation("a", "token expired", ts=NOW - 15 * DAY)
    )  # best bm25 (short): norm 1
    store.write(
        "observations", observation("b", f"token {FILLER}", ts=NOW)
    )  # worst bm25: norm 0, but brand new
    store.write("observations", observation("c", "nothing relevant here"))
    result = mem.search("token")
    assert ranked(result) == [("a", 0.85), ("b", 0.3)]
    assert result["provenance"]["totalCandidates"] == 2


def test_scores_that_disagree_with_sqlite_rerank_every_match(store, mem, monkeypatch):
    # SQLite orders by its own copy of the formula; if Python's ever differed, every match is
    # scored again here, so the best by Python's score wins even outside SQLite's top rows.
    from kindling.search import retrieve as retrieve_module

    store.write("observations", observation("a", "token expired", ts=NOW - 15 * DAY))
    store.write("observations", observation("b", f"token {FILLER}", ts=NOW))
    store.write("observations", observation("c", f"token {FILLER} {FILLER}", ts=NOW - 40 * DAY))
    assert ranked(mem.search("token", max_results=1)) == [("a", 0.85)]
    real = retrieve_module.score

    def oldest_first(bm25, best, worst, ts, now):
        return round(1 - real(0, 0, 0, ts, now), 4)

    monkeypatch.setattr(retrieve_module, "score", oldest_first)
    result = mem.search("token", max_results=2)
    assert [c["entity"]["id"] for c in result["candidates"]] == ["c", "a"]
    assert [c["score"] for c in result["candidates"]] == [
        oldest_first(0, 0, 0, NOW - 40 * DAY, NOW),
        oldest_first(0, 0, 0, NOW - 15 * DAY, NOW),
    ]
    assert result["provenance"]["totalCandidates"] == 3


def test_equal_matches_score_half_plus_recency(store, mem):
    store.write("observations", observation("new", "retry parser", ts=NOW))
    store.write("observations", observation("days", "retry parser", ts=NOW - 3 * DAY))
    store.write("observations", observation("old", "retry parser", ts=NOW - 45 * DAY))
    assert ranked(mem.search("parser")) == [("new", 0.65), ("days", 0.62), ("old", 0.35)]


def test_ties_break_by_time_then_id(store, mem):
    for eid in ("z", "m", "a"):
        store.write("observations", observation(eid, "flag cache", ts=NOW - 40 * DAY))
    store.write("observations", observation("newer", "flag cache", ts=NOW - 35 * DAY))
    assert ranked(mem.search("cache")) == [
        ("newer", 0.35),
        ("a", 0.35),
        ("m", 0.35),
        ("z", 0.35),
    ]


def test_future_timestamps_are_clamped_to_one(store, mem):
    store.write("observations", observation("future", "token", ts=NOW + 30 * DAY))
    store.write("observations", observation("other", f"token {FILLER}", ts=NOW - 60 * DAY))
    assert ranked(mem.search("token")) == [("future", 1.0), ("other", 0.0)]


def test_score_formula():
    assert score(-2.0, -2.0, -1.0, NOW, NOW) == 1.0
    assert score(-1.0, -2.0, -1.0, NOW - 30 * DAY, NOW) == 0.0
    assert score(-1.5, -2.0, -1.0, NOW - 15 * DAY, NOW) == 0.5
    assert score(-7.0, -7.0, -7.0, NOW - 90 * DAY, NOW) == 0.35


def test_more_and_rarer_shared_words_rank_first(store, mem):
    store.write(
        "observations", observation("both", "jwt token expired in middleware", ts=NOW - DAY)
    )
    store.write("observations", observation("rare", "jwt middleware rewrite", ts=NOW - DAY))
    store.write("observations", observation("common", "token token refresh", ts=NOW - DAY))
    for n in range(6):
        store.write("observations", observation(f"noise{n}", f"token noise {n}", ts=NOW - DAY))
    ids = [
        c["entity"]["id"] for c in mem.search("how did we fix the expired jwt token?")["candidates"]
    ]
    assert ids[0] == "both"
    assert ids.index("rare") < ids.index("common")


def test_max_is_a_prefix_of_a_larger_max(store, mem):
    for n in range(30):
        store.write(
            "observations",
            observation(f"o{n:02d}", "cache " * (1 + n % 4) + "miss", ts=NOW - n % 7 * DAY),
        )
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
    store.write("observations", observation("t1", "token one", sessionId="s1"))
    store.write("observations", observation("t2", "token two", sessionId="s1"))
    store.write("observations", observation("t3", "token three", sessionId="s1"))
    store.write("observations", observation("t4", "token four", sessionId="s1"))
    store.write("pins", pin("pin_old", "t1", createdAt=NOW - 10))
    store.write(
        "pins",
        pin("pin_new", "t2", createdAt=NOW - 5, expiresAt=NOW + 1),
    )
    store.write("pins", pin("pin_expired", "t3", expiresAt=NOW))  # expiresAt must be after now
    store.write("pins", pin("pin_other_session", "t4", sessionId="s2"))
    store.write("pins", pin("pin_missing", "gone"))
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
    store.write("observations", observation("x", "cache", sessionId="s1", repoId="r1"))
    store.write("pins", pin("pin_session", "x", sessionId="s1"))
    store.write("pins", pin("pin_repo", "x", sessionId="s1", repoId="r2"))
    result = mem.search("cache", scope={"sessionId": "s1", "repoId": "r1"})
    assert [p["pin"]["id"] for p in result["pins"]] == ["pin_session"]


def test_redacted_targets_only_with_include_redacted(store, mem):
    store.write("observations", observation("secret", "[redacted]", redacted=True))
    store.write("pins", pin("pin_secret", "secret"))
    assert mem.search("")["pins"] == []
    result = mem.search("redacted", include_redacted=True)
    assert [p["target"]["content"] for p in result["pins"]] == ["[redacted]"]
    assert result["candidates"] == []  # redacted text is gone: it never matches
    assert mem.search("token", include_redacted=True)["candidates"] == []


def test_current_summary_for_a_session_is_its_latest_opened_capsules(store, mem):
    store.write(
        "summaries",
        summary("sum_a", "first fix for the token bug", capsuleId="cap_a", sessionId="s1"),
    )
    store.write(
        "summaries", summary("sum_b", "second token fix", capsuleId="cap_b", sessionId="s1")
    )
    store.write(
        "capsules",
        capsule("cap_a", openedAt=NOW - 100, closedAt=NOW - 1, summaryId="sum_a", sessionId="s1"),
    )
    store.write(
        "capsules",
        capsule("cap_b", openedAt=NOW - 50, closedAt=NOW - 40, summaryId="sum_b", sessionId="s1"),
    )
    store.write(
        "capsules", capsule("cap_c", openedAt=NOW - 10, sessionId="s1")
    )  # newest, but no summary yet
    store.write(
        "capsules",
        capsule("cap_d", openedAt=NOW, closedAt=NOW, summaryId="sum_gone", sessionId="s1"),
    )
    result = mem.search("token", scope={"sessionId": "s1"})
    assert result["currentSummary"]["id"] == "sum_b"
    assert [c["entity"]["id"] for c in result["candidates"]] == ["sum_a"]  # not sum_b again
    # Without a session: the most recently *closed* capsule with a summary.
    assert mem.search("token")["currentSummary"]["id"] == "sum_a"


def test_current_summary_ties_break_by_id(store, mem):
    store.write("summaries", summary("sum_x", "x", capsuleId="cap_2"))
    store.write("summaries", summary("sum_y", "y", capsuleId="cap_1"))
    store.write(
        "capsules", capsule("cap_2", openedAt=NOW, closedAt=NOW, summaryId="sum_x", sessionId="s")
    )
    store.write(
        "capsules", capsule("cap_1", openedAt=NOW, closedAt=NOW, summaryId="sum_y", sessionId="s")
    )
    assert mem.search("", scope={"sessionId": "s"})["currentSummary"]["id"] == "sum_y"
    assert mem.search("")["currentSummary"]["id"] == "sum_y"


def test_summaries_are_candidates_and_scope_is_exact(store, mem):
    store.write(
        "summaries", summary("sum_1", "fixed the jwt expiry", capsuleId="cap_1", repoId="r1")
    )
    store.write("observations", observation("o1", "jwt expiry seen", repoId="r1", sessionId="s1"))
    store.write("observations", observation("o2", "jwt expiry seen", repoId="r2"))
    store.write("observations", observation("o3", "jwt expiry seen"))
    result = mem.search("jwt", scope={"repoId": "r1"})
    assert sorted(c["entity"]["id"] for c in result["candidates"]) == ["o1", "sum_1"]
    assert result["provenance"]["scopeIds"] == {"repoId": "r1"}
    assert "currentSummary" not in result  # no capsule names sum_1


def test_kind_and_since_filters(store, mem):
    store.write("observations", observation("e1", "parser crash", kind="error", ts=NOW - 2 * DAY))
    store.write("observations", observation("e2", "parser crash", kind="error", ts=NOW))
    store.write("observations", observation("c1", "parser crash", kind="command", ts=NOW))
    store.write("summaries", summary("sum_1", "parser crash fixed", capsuleId="cap_1"))
    by_kind = mem.search("parser", kinds=["error"])
    assert [c["entity"]["id"] for c in by_kind["candidates"]] == ["e2", "e1"]
    since = mem.search("parser", since=NOW - DAY)
    assert sorted(c["entity"]["id"] for c in since["candidates"]) == ["c1", "e2", "sum_1"]


def test_empty_query_returns_pins_and_summary_only(store, mem):
    store.write("observations", observation("o", "anything"))
    store.write("pins", pin("pin_1", "o"))
    store.write("summaries", summary("sum_1", "anything", capsuleId="cap_1"))
    store.write("capsules", capsule("cap_1", openedAt=NOW, closedAt=NOW, summaryId="sum_1"))
    for query in ("", "   ", "?!", '"'):
        result = mem.search(query)
        assert [p["pin"]["id"] for p in result["pins"]] == ["pin_1"]
        assert result["currentSummary"]["id"] == "sum_1"
        assert result["candidates"] == []
        assert result["provenance"]["totalCandidates"] == 0


def test_result_shape(store, mem):
    store.write(
        "observations", observation("o1", "JWT validation failed: token expired", sessionId="s1")
    )
    result = mem.search("JWT validation failed: token expired", scope={"sessionId": "s1"})
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
                "score": 0.65,
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
    store.write("observations", observation("long", " ".join(words)))
    context = mem.search("needle")["candidates"][0]["matchContext"]
    assert "**needle**" in context
    assert not context.startswith("w0 ")
    assert len(context.split()) <= 16


def test_explicit_syntax_is_honoured(store, mem):
    store.write("observations", observation("phrase", "the token expired today"))
    store.write("observations", observation("apart", "expired: the old token"))
    store.write("observations", observation("prefix", "authentication middleware"))
    assert [c["entity"]["id"] for c in mem.search('"token expired"')["candidates"]] == ["phrase"]
    assert [c["entity"]["id"] for c in mem.search("auth*")["candidates"]] == ["prefix"]
    not_apart = mem.search("token NOT old")["candidates"]
    assert [c["entity"]["id"] for c in not_apart] == ["phrase"]
    assert len(mem.search("token OR authentication")["candidates"]) == 3


# ---------------------------------------------------------------- token budget


def test_token_budget_drops_lowest_candidates_first(store, mem):
    store.write("observations", observation("p", "pinned note about the cache"))
    store.write("pins", pin("pin_1", "p"))
    for n in range(8):
        store.write(
            "observations", observation(f"c{n}", f"cache entry {n} " + "x" * 200, ts=NOW - n * DAY)
        )
    full = mem.search("cache", max_results=20)
    assert full["provenance"]["returnedCandidates"] == 8

    def chars(result):
        return len(canonical.encode_compact(result).decode("utf-8"))

    budget = (chars(full) - 1) // 4  # one character too few for everything
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
    store.write(
        "observations", observation("a", "token expired in auth", ts=NOW - DAY, sessionId="s1")
    )
    store.write(
        "observations", observation("b", "auth cache miss", ts=NOW - 2 * DAY, sessionId="s1")
    )
    store.write(
        "observations", observation("c", "token refresh", ts=NOW - 40 * DAY, sessionId="s2")
    )
    store.write("summaries", summary("sum_1", "token fix", capsuleId="cap_1", sessionId="s1"))
    store.write(
        "capsules",
        capsule("cap_1", openedAt=NOW - 5, closedAt=NOW - 1, summaryId="sum_1", sessionId="s1"),
    )
    store.write("pins", pin("pin_1", "b", sessionId="s1"))
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
    store.write("observations", observation("o", "first words"))
    assert ranked(mem.search("first")) == [("o", 0.65)]
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
        store.write("observations", observation(f"d{n:02d}", " ".join(words), ts=NOW - age))
    with Memory(store.root) as mem:
        full = mem.search("cache miss", max_results=100)
        keys = [(-c["score"], -c["entity"]["ts"], c["entity"]["id"]) for c in full["candidates"]]
        assert keys == sorted(keys)
        assert all(0.0 <= c["score"] <= 1.0 for c in full["candidates"])
        cut = mem.search("cache miss", max_results=max_results)
        assert cut["candidates"] == full["candidates"][:max_results]
