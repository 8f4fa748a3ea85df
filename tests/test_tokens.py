"""Names in every case style meet in the same tokens, at index time and at query time."""

from __future__ import annotations

import sqlite3

import pytest

from kindling.index.tokens import camel_parts, index_extra, query_terms, searchable
from kindling.search.fts_query import plain


@pytest.mark.parametrize(
    ("token", "parts"),
    [
        ("busyTimeout", ["busy", "Timeout"]),
        ("useLocalStorageState", ["use", "Local", "Storage", "State"]),
        ("WarnDefaultEncoding", ["Warn", "Default", "Encoding"]),
        ("HTTPServer", ["HTTP", "Server"]),
        ("parseHTTPResponse", ["parse", "HTTP", "Response"]),
        ("utf8Decode", ["utf8Decode"]),  # no split after a digit: codes stay whole
        ("0xC0000005", ["0xC0000005"]),
        ("SHA256", ["SHA256"]),
        ("TS2307", ["TS2307"]),
        ("E11000", ["E11000"]),
        ("0x80070005", ["0x80070005"]),
        ("lowercase", ["lowercase"]),
        ("ÉcoleNormale", ["École", "Normale"]),
    ],
)
def test_camel_parts(token, parts):
    assert camel_parts(token) == parts


@pytest.mark.parametrize(
    ("text", "extra"),
    [
        ("PRAGMA busy_timeout = 60000", "busytimeout"),  # snake: joined
        ("maxmemory-policy allkeys-lru", "maxmemorypolicy allkeyslru"),  # kebab: joined
        ("call useLocalStorageState()", "use local storage state"),  # camel: parts
        ("MAX_RETRY_COUNT", "maxretrycount"),  # screaming snake
        ("snake_caseName", "snakecasename case name"),  # mixed: both
        ("os.path.join and src/app/db.go", ""),  # dotted and paths: the tokenizer splits them
        ("worker/db/engine.py:12", ""),
        ("TS2307 errno 104 E11000 0x80070005", ""),  # codes and numbers stay whole
        ("plain words only", ""),
    ],
)
def test_index_extra(text, extra):
    assert index_extra(text) == extra


@pytest.mark.parametrize(
    ("query", "forms"),
    [
        ("busyTimeout", [(("busytimeout",), ("busy", "timeout"))]),
        ("busy_timeout", [(("busytimeout",), ("busy", "timeout"))]),
        ("busy-timeout", [(("busytimeout",), ("busy", "timeout"))]),
        ("BusyTimeout", [(("busytimeout",), ("busy", "timeout"))]),
        ("BUSY_TIMEOUT", [(("busytimeout",), ("busy", "timeout"))]),
        ("db.go", [(("db",),), (("go",),)]),
        ("TS2307", [(("ts2307",),)]),
        ("errno 104", [(("errno",),), (("104",),)]),
    ],
)
def test_query_terms(query, forms):
    assert [t.forms for t in query_terms(query)] == forms


SPELLINGS = ["busyTimeout", "busy_timeout", "busy-timeout", "BusyTimeout", "BUSY_TIMEOUT"]


@pytest.mark.parametrize("stored", SPELLINGS)
@pytest.mark.parametrize("asked", SPELLINGS)
def test_every_spelling_finds_every_other(stored, asked):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61')")
    conn.execute("INSERT INTO t(body) VALUES (?)", (searchable(f"set {stored} = 60000"),))
    conn.execute("INSERT INTO t(body) VALUES (?)", ("a busy day, no timeout",))
    rows = conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (plain(asked),)).fetchall()
    assert rows == [(1,)]


def test_words_of_a_name_find_it_and_the_whole_name_ranks_above_its_parts():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61')")
    docs = ["const [v, set] = useLocalStorageState(key)", "use the local state of storage"]
    for doc in docs:
        conn.execute("INSERT INTO t(body) VALUES (?)", (searchable(doc),))
    found = conn.execute(
        "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)",
        (plain("use local storage state"),),
    ).fetchall()
    assert sorted(found) == [(1,), (2,)]
    best = conn.execute(
        "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)",
        (plain("useLocalStorageState"),),
    ).fetchall()
    assert best[0] == (1,)


def test_index_extra_is_linear_in_one_huge_token():
    huge = "a" * 1_000_000 + "B" + "c" * 1_000_000
    assert index_extra(huge) == f"{'a' * 1_000_000} b{'c' * 1_000_000}"
