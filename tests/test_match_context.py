"""matchContext stays a short window, whatever the text: built in one linear pass."""

from __future__ import annotations

import sqlite3

import pytest

from kindling.index import schema as index_schema
from kindling.index.tokens import query_terms
from kindling.memory import Memory
from kindling.search.context import MARKS, WIDTH, TermSet, match_context
from kindling.store import Store

NOW = 1_750_000_000_000
BOUND = WIDTH + 2 + 4 * MARKS  # two ellipses, and ** around at most MARKS words


def context(content: str, query: str) -> str | None:
    return match_context(content, TermSet(query_terms(query)))


def test_short_text_is_shown_whole_with_matches_in_bold():
    assert context("JWT validation failed", "jwt failed") == "**JWT** validation **failed**"


def test_no_match_gives_no_context():
    assert context("nothing here", "absent") is None


def test_window_around_a_late_match_is_cut_with_ellipses():
    text = " ".join(f"w{n}" for n in range(1000)).replace("w500", "needle")
    out = context(text, "needle")
    assert out.startswith("…") and out.endswith("…")
    assert "**needle**" in out
    assert len(out) <= BOUND


def test_names_match_in_any_spelling():
    assert "**busy_timeout**" not in context("set busy_timeout = 1", "busyTimeout")
    assert context("call useLocalStorageState()", "local storage") == (
        "call **useLocalStorageState**()"
    )


@pytest.mark.parametrize(
    "text",
    [
        "x" * 30_000,  # one 30,000-character token
        "needle" + "x" * 30_000,
        "x" * 30_000 + "needle",
        "needle " * 20_000,  # a word repeated 20,000 times
        "needle" * 20_000,  # ... without spaces: one huge token
        ("a" * 5000 + " ") * 40 + "needle",
        "\n" * 50_000 + "needle" + "\n" * 50_000,
    ],
)
def test_pathological_texts_stay_within_the_bound(text):
    out = context(text, "needle x")
    assert out is None or len(out) <= BOUND


@pytest.fixture
def mem(store_dir, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", str(NOW))
    store = Store(store_dir)

    def add(eid: str, content: str) -> None:
        store.write(
            "observations",
            {
                "id": eid,
                "kind": "command",
                "content": content,
                "provenance": {},
                "ts": NOW,
                "scopeIds": {},
                "redacted": False,
            },
        )

    with Memory(store.root) as memory:
        memory.add = add
        yield memory


def test_match_context_through_search_is_bounded(mem):
    mem.add("repeat", "needle " * 20_000)
    mem.add("token", "needle " + "y" * 30_000)
    result = mem.search("needle")
    assert {c["entity"]["id"] for c in result["candidates"]} == {"repeat", "token"}
    for candidate in result["candidates"]:
        assert len(candidate["matchContext"]) <= BOUND
        assert "needle" in candidate["matchContext"]


def test_an_old_index_is_rebuilt_on_first_read(mem):
    mem.add("snake", "PRAGMA busy_timeout = 60000")
    assert [c["entity"]["id"] for c in mem.search("busyTimeout")["candidates"]] == ["snake"]
    mem.close()
    # The 0.1 layout: one porter-stemmed column holding the content only, schema 8.
    conn = sqlite3.connect(mem.store.index_path)
    conn.execute("DROP TABLE fts_terms")
    conn.execute("DROP TABLE fts")
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5(body, tokenize = 'porter unicode61')")
    rows = conn.execute("SELECT rowid, json FROM entities").fetchall()
    conn.executemany(
        "INSERT INTO fts(rowid, body) VALUES (?, ?)",
        [(rowid, index_schema.load(blob)["content"]) for rowid, blob in rows],
    )
    conn.execute("PRAGMA user_version = 8")
    conn.commit()
    conn.close()
    with Memory(mem.store.root) as again:
        found = again.search("busyTimeout")
        assert [c["entity"]["id"] for c in found["candidates"]] == ["snake"]
        version = again.index.conn.execute("PRAGMA user_version").fetchone()[0]
        assert version == index_schema.SCHEMA_VERSION
