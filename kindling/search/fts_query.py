"""Turning what a person (or an agent) types into an FTS5 query that cannot fail.

Plain text becomes an OR of its words with common stop words dropped, so documents sharing
more and rarer words rank first. Text using FTS5 syntax (quoted phrases, AND/OR/NOT,
parentheses, `prefix*`) is honoured as written, re-emitted in a normalised form in which every
word is quoted. Text that looks like syntax but is not valid (`foo(bar`, a lone `"`) falls back
to plain words; it is never an error.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Runs of letters and digits: how the `unicode61` tokenizer splits text into tokens.
_WORD = re.compile(r"[^\W_]+")
_OPERATORS = ("AND", "OR", "NOT")
# More distinct words than this add time, not better results.
MAX_TERMS = 64

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each either
    else ever few for from further get got had has have having he her here hers herself him
    himself his how i if in into is it its itself just let me might more most much must my
    myself neither no nor not now of off on once one only or other ought our ours ourselves out
    over own same shall she should so some such than that the their theirs them themselves then
    there these they this those though through thus to too under until up upon us very was we
    were what whatever when where whether which while who whom whose why will with within
    without would yet you your yours yourself yourselves
    """.split()
)


class Compiled(NamedTuple):
    """FTS5 MATCH expressions to try in order: the syntax as written, then plain words."""

    explicit: str | None
    plain: str | None

    @property
    def empty(self) -> bool:
        return self.explicit is None and self.plain is None


def clean(text: str) -> str:
    """The query text with anything that cannot be UTF-8 (lone surrogates) replaced."""
    return text.encode("utf-8", "replace").decode("utf-8")


def words(text: str) -> list[str]:
    """The search words of a text, in order, as the tokenizer would split them."""
    return _WORD.findall(text)


def _quote(tokens: list[str]) -> str:
    return '"' + " ".join(tokens) + '"'


def plain(text: str) -> str | None:
    """An OR of the distinct words of `text`, stop words dropped (kept if nothing else is)."""
    found = words(text)
    distinct = list(dict.fromkeys(w.lower() for w in found))
    kept = [w for w in distinct if w not in STOP_WORDS] or distinct
    if not kept:
        return None
    return " OR ".join(_quote([w]) for w in kept[:MAX_TERMS])


def looks_explicit(text: str) -> bool:
    """True when the text uses any FTS5 syntax: quotes, parentheses, operators or `word*`."""
    if '"' in text or "(" in text or ")" in text:
        return True
    if re.search(r"[^\W_]\*", text):
        return True
    return any(tok in _OPERATORS for tok in text.split())


# ---------------------------------------------------------------- explicit syntax

_LEX = re.compile(r'\s+|"(?:[^"]|"")*"\*?|\(|\)|[^\s"()]+|"')


class _Invalid(Exception):
    pass


def _lex(text: str) -> list[tuple[str, str]]:
    """(kind, FTS5 text) tokens: 'term', 'op' (AND/OR/NOT), '(' or ')'."""
    out = []
    for match in _LEX.finditer(text):
        tok = match.group()
        if tok.isspace():
            continue
        if tok in ("(", ")"):
            out.append((tok, tok))
        elif tok == '"':
            raise _Invalid("unbalanced quote")
        elif tok.startswith('"'):
            prefix = tok.endswith("*")
            body = tok[1 : -2 if prefix else -1].replace('""', '"')
            tokens = words(body)
            if not tokens:
                raise _Invalid("empty phrase")
            out.append(("term", _quote(tokens) + ("*" if prefix else "")))
        elif tok in _OPERATORS:
            out.append(("op", tok))
        else:
            prefix = tok.endswith("*")
            tokens = words(tok)
            if tokens:  # bare punctuation is no term at all
                out.append(("term", _quote(tokens) + ("*" if prefix else "")))
    return out


class _Parser:
    """FTS5's grammar: OR binds loosest, then AND (or adjacency), then NOT."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise _Invalid("unexpected end")
        self.pos += 1
        return tok

    def parse(self) -> str:
        expr = self.or_expr()
        if self.peek() is not None:
            raise _Invalid("unexpected token")
        return expr

    def or_expr(self) -> str:
        parts = [self.and_expr()]
        while self.peek() == ("op", "OR"):
            self.take()
            parts.append(self.and_expr())
        return " OR ".join(parts)

    def and_expr(self) -> str:
        parts = [self.not_expr()]
        while True:
            tok = self.peek()
            if tok == ("op", "AND"):
                self.take()
            elif tok is None or tok[0] not in ("term", "("):
                break
            parts.append(self.not_expr())
        return " AND ".join(parts)

    def not_expr(self) -> str:
        expr = self.primary()
        while self.peek() == ("op", "NOT"):
            self.take()
            expr = f"{expr} NOT {self.primary()}"
        return expr

    def primary(self) -> str:
        kind, text = self.take()
        if kind == "term":
            return text
        if kind == "(":
            inner = self.or_expr()
            if self.take()[0] != ")":
                raise _Invalid("unclosed parenthesis")
            return f"({inner})"
        raise _Invalid(f"unexpected {text}")


def explicit(text: str) -> str | None:
    """The text as an FTS5 expression when it is valid syntax, else None."""
    try:
        tokens = _lex(text)
        if not tokens or sum(1 for kind, _ in tokens if kind == "term") > MAX_TERMS:
            return None
        return _Parser(tokens).parse()
    except _Invalid:
        return None


def compile_query(text: str) -> Compiled:
    """What to hand FTS5 for a user's query text."""
    text = clean(text)
    written = explicit(text) if looks_explicit(text) else None
    fallback = plain(text)
    if written == fallback:
        written = None
    return Compiled(written, fallback)
