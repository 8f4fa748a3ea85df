"""`kindling search` and `kindling reindex` through the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kindling.memory import Memory
from kindling.search.fts_query import clean
from kindling.store import Store

NOW = 1_750_416_064_123
DAY = 86_400_000


@pytest.fixture
def story(store_dir, monkeypatch):
    """The spec's example: a pinned error, a summary of a closed session, two candidates."""
    monkeypatch.setenv("KINDLING_NOW", str(NOW))
    store = Store(store_dir)
    base = {"provenance": {}, "redacted": False}
    store.write(
        "observations",
        {
            **base,
            "id": "9c20f3a1-2b4d-4f8e-9a1c-7e0d5b6f2a33",
            "kind": "error",
            "content": "JWT validation failed: token expired",
            "ts": NOW - 3600_000,
            "scopeIds": {"sessionId": "session-1", "repoId": "my-project"},
        },
    )
    store.write(
        "observations",
        {
            **base,
            "id": "5f1c0d2e-0000-4000-8000-000000000001",
            "kind": "message",
            "content": "auth middleware rejects valid tokens after the upgrade",
            "ts": NOW - 2 * DAY,
            "scopeIds": {"sessionId": "session-1", "repoId": "my-project"},
        },
    )
    store.write(
        "observations",
        {
            **base,
            "id": "77aa0d2e-0000-4000-8000-000000000002",
            "kind": "command",
            "content": "npm test -- auth\nall 42 auth tests pass",
            "ts": NOW - 40 * DAY,
            "scopeIds": {"repoId": "my-project"},
        },
    )
    store.write(
        "summaries",
        {
            "id": "sum_1b2c",
            "content": "Fixed JWT expiration check in middleware",
            "confidence": 0.85,
            "evidenceRefs": [],
            "capsuleId": "cap_8a3f",
            "ts": NOW - 600_000,
            "scopeIds": {"repoId": "my-project"},
        },
    )
    store.write(
        "capsules",
        {
            "id": "cap_8a3f",
            "type": "session",
            "intent": "investigating the auth failures",
            "status": "closed",
            "openedAt": NOW - 7200_000,
            "closedAt": NOW - 600_000,
            "scopeIds": {"repoId": "my-project"},
            "observationIds": [],
            "summaryId": "sum_1b2c",
        },
    )
    store.write(
        "pins",
        {
            "id": "pin_4d5e",
            "targetType": "observation",
            "targetId": "9c20f3a1-2b4d-4f8e-9a1c-7e0d5b6f2a33",
            "reason": "root cause — keep handy",
            "createdAt": NOW - 1000,
            "expiresAt": None,
            "scopeIds": {"sessionId": "session-1"},
        },
    )
    return store


EXPECTED = """\
Search Results for: "JWT expiration auth tokens"
==================================================

Pins (1):

1. [PIN] pin_4d5e
   Type: observation
   Content: JWT validation failed: token expired
   Note: root cause — keep handy

Current Summary:

sum_1b2c (confidence: 0.85)
   Content: Fixed JWT expiration check in middleware
   Capsule: cap_8a3f
   Time: 2025-06-20 10:31:04 +00:00

Candidates (2):

1. 5f1c0d2e-0000-4000-8000-000000000001 (score: 0.20)
   Type: observation
   Content: auth middleware rejects valid tokens after the upgrade
   Time: 2025-06-18 10:41:04 +00:00

2. 77aa0d2e-0000-4000-8000-000000000002 (score: 0.03)
   Type: observation
   Content: npm test -- auth
            all 42 auth tests pass
   Time: 2025-05-11 10:41:04 +00:00
"""


@pytest.fixture
def utc_zone(monkeypatch):
    """Local time pinned to UTC for this test (and the zone restored after it)."""
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_human_output_groups_the_tiers(story, run, utc_zone):
    result = run("search", "JWT expiration auth tokens")
    assert result.exit_code == 0, result.output
    assert result.stdout == EXPECTED
    assert result.stderr == ""


def test_words_may_be_given_unquoted_and_repo_as_a_path(story, run):
    quoted = run("search", "auth tokens", "--repo", "./work/my-project", "--json")
    unquoted = run("search", "auth", "tokens", "--repo", "my-project", "--json")
    assert quoted.exit_code == 0 and quoted.stdout == unquoted.stdout
    assert json.loads(quoted.stdout)["provenance"]["scopeIds"] == {"repoId": "my-project"}


def test_json_is_the_retrieve_result_as_the_api_returns_it(story, run):
    result = run("search", "auth", "--session", "session-1", "--max", "1", "--json")
    assert result.exit_code == 0
    with Memory(story.root) as mem:
        expected = mem.search("auth", scope={"sessionId": "session-1"}, max_results=1)
    assert json.loads(result.stdout) == expected
    assert set(expected) == {"pins", "candidates", "provenance"}  # no session summary here


def test_explain_shows_parts_that_add_up(story, run):
    result = run("search", "auth tokens", "--explain")
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.stdout.splitlines()]
    sums = [line for line in lines if line.startswith("Score ")]
    assert len(sums) == 2
    for line in sums:
        # "Score S = relevance R + episode E + recency C"
        words = line.replace("=", " ").replace("+", " ").split()
        score, parts = float(words[1]), [float(words[i]) for i in (3, 5, 7)]
        assert abs(score - sum(parts)) < 2e-4  # four decimals each
    assert "Matched: auth (text, idf" in result.stdout
    plain = run("search", "auth tokens")
    assert "Matched:" not in plain.stdout


def test_explain_in_json_only_when_asked(story, run):
    asked = json.loads(run("search", "auth tokens", "--json", "--explain").stdout)
    assert all("explain" in c for c in asked["candidates"])
    first = asked["candidates"][0]["explain"]
    assert set(first) == {
        "relevance",
        "episode",
        "recency",
        "bm25",
        "coverage",
        "kindWeight",
        "episodeFrom",
        "matched",
        "supersession",
        "fixedBy",
        "supersededBy",
        "answered",
    }
    assert asked["explain"]["currentSummary"]["rule"] in ("best answer", "none above threshold")
    plain = json.loads(run("search", "auth tokens", "--json").stdout)
    assert all("explain" not in c for c in plain["candidates"])
    for with_parts, without in zip(asked["candidates"], plain["candidates"], strict=True):
        assert {k: v for k, v in with_parts.items() if k != "explain"} == without


def test_max_tokens_and_kind_and_since(story, run):
    tight = json.loads(run("search", "auth", "--max-tokens", "150", "--json").stdout)
    assert tight["provenance"]["truncatedDueToTokenBudget"] is True
    assert tight["provenance"]["returnedCandidates"] < tight["provenance"]["totalCandidates"]
    kinds = json.loads(run("search", "auth", "--kind", "command", "--json").stdout)
    assert [c["entity"]["kind"] for c in kinds["candidates"]] == ["command"]
    since = json.loads(run("search", "auth", "--since", str(NOW - DAY * 5), "--json").stdout)
    assert [c["entity"]["kind"] for c in since["candidates"]] == ["message"]
    assert run("search", "x", "--kind", "shout").exit_code == 2
    assert run("search", "x", "--max", "-1").exit_code == 2


def test_an_option_the_request_refuses_is_one_line_and_exit_one(story, run):
    result = run("search", "auth", "--session", " ")
    assert result.exit_code == 1
    assert result.output.strip() == "Error: scope.sessionId must be a non-empty string"


def test_no_results(store_dir, run):
    result = run("search", "anything")
    assert result.exit_code == 0
    assert result.stdout == 'Search Results for: "anything"\n' + "=" * 50 + "\n\nNo results.\n"


def test_logged_then_found_at_once(store_dir, run):
    logged = run("log", "flaky retry in the parser", "--session", "s9")
    assert logged.exit_code == 0
    found = json.loads(run("search", "parser", "--json").stdout)
    assert [c["entity"]["id"] for c in found["candidates"]] == [logged.stdout.strip()]


# A few hostile queries end to end; test_query runs many more through the compiler and FTS5.
NASTY_CLI = [
    ("", []),
    ("NOT tokens", ["5f1c0d2e-0000-4000-8000-000000000001"]),
    ("auth**", ["5f1c0d2e-0000-4000-8000-000000000001", "77aa0d2e-0000-4000-8000-000000000002"]),
    ("' OR 1=1 --", []),
    ("--max", []),
]


@pytest.mark.parametrize(("query", "ids"), NASTY_CLI)
def test_nasty_queries_find_what_their_words_find(story, run, query, ids):
    result = run("search", "--json", "--", query)
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["provenance"]["query"] == clean(query)
    assert [c["entity"]["id"] for c in found["candidates"]] == ids
    assert [p["pin"]["id"] for p in found["pins"]] == ["pin_4d5e"]


def test_nasty_query_as_a_real_process(story):
    for query in ("\udcff\udcfe", "a\udc80b token"):
        proc = subprocess.run(
            [sys.executable, "-m", "kindling", "--store", str(story.root), "search", query],
            capture_output=True,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == b""
        title = f'Search Results for: "{clean(query)}"\n'.encode()
        assert proc.stdout.startswith(title)


# ---------------------------------------------------------------- problem files


def test_search_works_with_problem_files_and_says_so(story, run):
    bad = story.objects / "observations" / "ab" / "broken.json"
    bad.parent.mkdir(exist_ok=True)
    bad.write_bytes(b"<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> theirs\n")
    before = bad.read_bytes()
    result = run("search", "auth")
    assert result.exit_code == 0
    assert "Candidates (2):" in result.stdout
    assert "1 entity file could not be read" in result.stderr
    assert bad.read_bytes() == before


def test_reindex_reports_and_exits_one_on_problems(story, run):
    result = run("reindex")
    assert result.exit_code == 0
    assert result.stdout == "Indexed 6 entities: 0 added, 0 updated, 0 removed, 6 unchanged.\n"
    truncated = story.path_for("observations", "77aa0d2e-0000-4000-8000-000000000002")
    data = truncated.read_bytes()[:40]
    truncated.write_bytes(data)
    result = run("reindex")
    assert result.exit_code == 1
    assert result.stdout.startswith(
        "Indexed 5 entities: 0 added, 0 updated, 1 removed, 5 unchanged.\n"
        "Problem files (1), left untouched:\n"
        f"  {truncated}: not valid JSON"
    )
    full = run("reindex", "--full", "--json")
    assert full.exit_code == 1
    report = json.loads(full.stdout)
    assert (report["added"], report["updated"], report["removed"], report["unchanged"]) == (
        0,
        0,
        0,
        5,
    )
    assert report["problems"][0]["path"] == str(truncated)
    assert truncated.read_bytes() == data


def test_reindex_full_after_the_index_is_gone(story, run):
    story.index_path.unlink(missing_ok=True)
    result = run("reindex", "--full", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["unchanged"] == 6


# ---------------------------------------------------------------- the read path stays light


def test_search_imports_nothing_heavy(story):
    code = (
        "import sys\n"
        "from kindling.cli import cli\n"
        f"cli(['--store', {str(story.root)!r}, 'search', 'auth'], standalone_mode=False)\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('watchfiles', 'mcp', 'http', 'email', 'xml', 'selenium', 'asyncio') "
        "or m.startswith('kindling.bundle.format') or m == 'kindling.fsck')\n"
        "print(','.join(heavy), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ""


def test_an_index_row_no_check_foresaw_is_one_line_and_reindex_cures_it(story):
    from kindling.index import Index

    def kindling(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "kindling", "--store", str(story.root), *args],
            capture_output=True,
            text=True,
            env={**os.environ, "KINDLING_DEBUG": ""},
        )

    assert kindling("search", "auth").returncode == 0
    index = Index(story)
    with index.transaction() as conn:
        conn.execute("UPDATE entities SET time = 'abc'")  # edited by hand: not what we write
    index.close()
    broken = kindling("search", "auth")
    assert broken.returncode == 1
    assert broken.stderr.count("\n") == 1 and "Traceback" not in broken.stderr
    assert broken.stderr.startswith("Error: unexpected TypeError")
    assert "kindling reindex --full" in broken.stderr
    assert kindling("reindex", "--full").returncode == 0
    assert kindling("search", "auth").returncode == 0
