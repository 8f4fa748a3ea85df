"""Turning typed text into FTS5 queries: plain words, honoured syntax, and safe fallbacks."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kindling.search.fts_query import Compiled, compile_query, explicit, looks_explicit, plain


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
        ("foo-bar", Compiled(None, '"foo" OR "bar"')),
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
        ('"token-expired"*', Compiled('"token expired"*', '"token" OR "expired"')),
    ],
)
def test_compile(text, expected):
    assert compile_query(text) == expected


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


_FTS = sqlite3.connect(":memory:")
_FTS.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'porter unicode61')")
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
