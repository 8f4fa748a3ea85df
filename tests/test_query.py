"""Turning typed text into FTS5 queries: plain words, honoured syntax, and safe fallbacks."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kindling.search.fts_query import Compiled, compile_query, explicit, looks_explicit, plain


# A few exact expressions, as documentation of the compiler's output...
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "JWT validation failed: token expired",
            Compiled(None, '"jwt" OR "validation" OR "failed" OR "token" OR "expired"'),
        ),
        ("how did we fix the expired token?", Compiled(None, '"fix" OR "expired" OR "token"')),
        ("", Compiled(None, None)),
        ("the", Compiled(None, '"the"')),  # only stop words: keep them rather than find nothing
        ("auth*", Compiled('"auth"*', '"auth"')),
        (
            '"token expired" auth',
            Compiled('"token expired" AND "auth"', '"token" OR "expired" OR "auth"'),
        ),
        (
            "(jwt OR auth) NOT cache",
            Compiled('("jwt" OR "auth") NOT "cache"', '"jwt" OR "auth" OR "cache"'),
        ),
        ('"token-expired"*', Compiled('"token expired"*', '"token" OR "expired"')),
    ],
)
def test_compile(text, expected):
    assert compile_query(text) == expected


# ...and for the rest, what a query finds in a small table, tried as retrieval tries it.
_FTS = sqlite3.connect(":memory:")
_FTS.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'porter unicode61')")
ROWS = {
    1: "token expired in the auth middleware",
    2: "JWT validation failed",
    3: "the cache was stale",
    4: "foo bar",
    5: "日本語 テスト",
    6: "x marks b",
    7: "the tokens were not refreshed",
}
_FTS.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", ROWS.items())


def matches(text: str) -> set[int]:
    """Rows the first usable expression finds (a syntax error falls back to plain words)."""
    for expression in compile_query(text):
        if expression is None:
            continue
        try:
            rows = _FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,))
            return {rowid for (rowid,) in rows}
        except sqlite3.OperationalError:
            continue
    return set()


@pytest.mark.parametrize(
    ("text", "explicit_syntax", "found"),
    [
        ("foo(bar", False, {4}),
        ('"', False, set()),
        ("   \t\n", False, set()),
        ("NOT", False, {7}),
        ("AND OR NOT", False, {7}),
        ("Token token TOKEN", False, {1, 7}),
        ("foo-bar", False, {4}),
        ("body:foo", False, {4}),
        ("日本語 テスト", False, {5}),
        ("auth*", True, {1}),
        ('"token expired" auth', True, {1}),
        ("(jwt OR auth) NOT cache", True, {1, 2}),
        ("(jwt OR cache) NOT stale", True, {2}),
        ("jwt AND", False, {2}),
        ("x (b", False, {6}),
        ('"token-expired"*', True, {1}),
        ("tok*", True, {1, 7}),
        ("the", False, {1, 3, 7}),
    ],
)
def test_what_a_query_finds(text, explicit_syntax, found):
    assert (compile_query(text).explicit is not None) == explicit_syntax
    assert matches(text) == found


def test_plain_words_keep_order_and_cap():
    many = " ".join(f"w{i}" for i in range(200))
    terms = plain(many).split(" OR ")
    assert len(terms) == 64
    assert terms[:2] == ['"w0"', '"w1"']


def test_lone_surrogates_are_replaced():
    assert compile_query("\udcff token") == Compiled(None, '"token"')


def test_operators_only_count_in_upper_case():
    assert not looks_explicit("this and that or not")
    assert looks_explicit("this AND that")
    assert explicit("this and that") == '"this" AND "and" AND "that"'


# Hostile input seen in the wild or feared; always tried, beside hypothesis's own examples.
NASTY = [
    "",
    " ",
    '"',
    '""',
    '"""',
    "'",
    "(",
    ")",
    "()",
    "foo(bar",
    "JWT validation failed: token expired",
    "AND",
    "OR OR OR",
    "NOT token",
    "token NOT",
    "*",
    "**",
    "auth**",
    "-token",
    "+token",
    "^token",
    "NEAR(token expired, 2)",
    "col:token",
    "content:",
    "{token}",
    "[token]",
    "a\x00b",
    "\\",
    "%_%",
    "' OR 1=1 --",
    "'; DROP TABLE fts; --",
    "SELECT * FROM entities",
    "🔥🔥🔥",
    "ｔｏｋｅｎ",
    "Ü ß ø",
    "日本語のテキスト",
    "x" * 5000,
    "token " * 3000,
    '"unterminated phrase',
    "(nested (parens) (",
    "AND token OR",
    "token AND AND expired",
    "\t\n\r",
    "--max",
    "-",
]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
    | st.text('"()*: AND OR NOT ab-^+', max_size=30)
)
def test_every_compiled_query_is_valid_fts5(text):
    compiled = compile_query(text)
    for expression in compiled:
        if expression is not None:
            _FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()
    if compiled.plain is None:  # no words at all: nothing can be found
        assert matches(text) == set()


for _query in NASTY:
    test_every_compiled_query_is_valid_fts5 = example(_query)(
        test_every_compiled_query_is_valid_fts5
    )
