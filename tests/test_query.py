"""Turning typed text into FTS5 queries: plain words, honoured syntax, and safe fallbacks."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kindling.search.fts_query import (
    MAX_TERMS,
    Compiled,
    compile_query,
    explicit,
    looks_explicit,
    plain,
    plain_terms,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "JWT validation failed: token expired",
            Compiled(None, '"jwt" OR "validation" OR "failed" OR "token" OR "expired"'),
        ),
        ("how did we fix the expired token?", Compiled(None, '"fix" OR "expired" OR "token"')),
        ("foo(bar", Compiled(None, '"foo" OR "bar"')),
        ('"', Compiled(None, None)),
        ("", Compiled(None, None)),
        ("   \t\n", Compiled(None, None)),
        ("the", Compiled(None, '"the"')),  # only stop words: keep them rather than find nothing
        ("NOT", Compiled(None, '"not"')),
        ("AND OR NOT", Compiled(None, '"and" OR "or" OR "not"')),
        ("Token token TOKEN", Compiled(None, '"token"')),
        ("foo-bar", Compiled(None, '("foobar" OR "foo bar")')),
        ("busyTimeout", Compiled(None, '("busytimeout" OR "busy timeout")')),
        ("TS2307 E11000 0x80070005", Compiled(None, '"ts2307" OR "e11000" OR "0x80070005"')),
        ("body:foo", Compiled(None, '"body" OR "foo"')),
        ("日本語 テスト", Compiled(None, '"日本語" OR "テスト"')),
        ("auth*", Compiled('"auth"*', '"auth"')),
        (
            '"token expired" auth',
            Compiled('"token expired" AND "auth"', '"token" OR "expired" OR "auth"'),
        ),
        (
            "(jwt OR auth) NOT cache",
            Compiled('("jwt" OR "auth") NOT "cache"', '"jwt" OR "auth" OR "cache"'),
        ),
        ("jwt AND", Compiled(None, '"jwt"')),
        ("x (b", Compiled(None, '"x" OR "b"')),
        ('"token-expired"*', Compiled('"token expired"*', '("tokenexpired" OR "token expired")')),
        ("busyTimeout OR retry", Compiled(None, '("busytimeout" OR "busy timeout") OR "retry"')),
        (
            "busyTimeout NOT retry",
            Compiled(
                '("busytimeout" OR "busy timeout") NOT "retry"',
                '("busytimeout" OR "busy timeout") OR "retry"',
            ),
        ),
    ],
)
def test_compile(text, expected):
    assert compile_query(text) == expected


def test_plain_words_keep_order_and_cap():
    many = " ".join(f"w{i}" for i in range(200))
    terms = plain(many).split(" OR ")
    assert len(terms) == MAX_TERMS
    assert terms[:2] == ['"w0"', '"w1"']


def test_cap_keeps_what_the_keep_function_picks_in_query_order():
    many = " ".join(f"w{i}" for i in range(100))

    def rarest_last(terms, n):  # pretend the last terms are the rarest
        return terms[-n:]

    terms = plain(many, rarest_last).split(" OR ")
    assert len(terms) == MAX_TERMS
    assert terms[0] == f'"w{100 - MAX_TERMS}"' and terms[-1] == '"w99"'


def test_lone_surrogates_are_replaced():
    assert compile_query("\udcff token") == Compiled(None, '"token"')


def test_operators_only_count_in_upper_case():
    assert not looks_explicit("this and that or not")
    assert looks_explicit("this AND that")
    assert explicit("this and that") == '"this" AND "and" AND "that"'


_FTS = sqlite3.connect(":memory:")
_FTS.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61')")
_FTS.execute("INSERT INTO t(body) VALUES ('token expired in the auth middleware')")


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


for _query in NASTY:
    test_every_compiled_query_is_valid_fts5 = example(_query)(
        test_every_compiled_query_is_valid_fts5
    )


# Every way FTS5's query grammar can be malformed, or look like syntax when it is pasted text:
# each falls back to the words it holds (never to nothing, never to an AND of everything).
MALFORMED = [
    ("foo(bar", ["foo", "bar"]),
    ("(foo", ["foo"]),
    ("foo)", ["foo"]),
    (")(", []),
    ('"foo', ["foo"]),
    ('foo"bar', ["foo", "bar"]),
    ('"" foo', ["foo"]),
    ("foo AND", ["foo"]),
    ("AND foo", ["foo"]),
    ("foo OR", ["foo"]),
    ("OR foo", ["foo"]),
    ("NOT foo", ["foo"]),
    ("foo NOT", ["foo"]),
    ("foo AND AND bar", ["foo", "bar"]),
    ("foo OR OR bar", ["foo", "bar"]),
    ("foo AND (", ["foo"]),
    ("*", []),
    ("foo **", ["foo"]),
    ("*foo", ["foo"]),
    ("^foo", ["foo"]),
    ("+foo", ["foo"]),
    ("foo + bar", ["foo", "bar"]),
    ("body:foo", ["body", "foo"]),
    ("{body}: foo", ["body", "foo"]),
    ("-body: foo", ["body", "foo"]),
    ("NEAR(foo bar", ["near", "foo", "bar"]),
    ("NEAR(foo bar, 2)", ["near", "foo", "bar", "2"]),
    ("NEAR(foo bar, x)", ["near", "foo", "bar", "x"]),
    ("(foo OR bar", ["foo", "bar"]),
    ("foo OR bar)", ["foo", "bar"]),
    ('"foo bar" "', ["foo", "bar"]),
    ("(" * 300 + "foo OR bar" + ")" * 300, ["foo", "bar"]),
    ("(" * 300 + "foo", ["foo"]),
    ("Error: (a OR b) failed [x]", ["error", "b", "failed", "x"]),
    ("TypeError: f(...) is not a function", ["typeerror", "f", "function"]),
]


@pytest.mark.parametrize(("text", "expected"), MALFORMED)
def test_malformed_syntax_falls_back_to_the_words(text, expected):
    compiled = compile_query(text)
    if compiled.explicit is not None:
        _FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (compiled.explicit,)).fetchall()
    assert [t.text for t in plain_terms(text)] == expected
    assert (compiled.plain is None) == (not expected)
    assert " AND " not in (compiled.plain or "")


def test_pasted_text_is_words_even_with_operators_and_quotes():
    for text in (
        "NOT NULL constraint failed: users.email",
        'KeyError: "user_id" OR missing',
        '{"error": "E11000 duplicate key"}',
        "https://example.com/a?b=(c)",
    ):
        assert not looks_explicit(text), text
        assert compile_query(text).explicit is None


def test_huge_and_deep_input_is_words_without_recursion():
    deep = "(" * 5000 + "x OR y" + ")" * 5000
    assert compile_query(deep) == Compiled(None, '"x" OR "y"')
    big = "lorem ipsum dolor " * 60_000 + "needle"  # about a megabyte
    compiled = compile_query(big)
    assert compiled.explicit is None
    assert compiled.plain == '"lorem" OR "ipsum" OR "dolor" OR "needle"'
