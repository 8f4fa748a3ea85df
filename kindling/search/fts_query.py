"""Turning what a person (or an agent) types into an FTS5 query that cannot fail.

Any text is a query. Plain text, pasted errors, stack traces, code, JSON and URLs alike, is
searched as its words: an OR of the distinct terms with common stop words dropped, so entities
sharing more and rarer terms rank first. A name in any case style also matches its other
spellings (`busyTimeout` is `("busytimeout" OR "busy timeout")`, see kindling.index.tokens).

Syntax is honoured only where a person clearly meant it: `OR`/`AND`/`NOT` between words,
`prefix*`, or "quoted phrases" in otherwise plain typing. That text is re-emitted in a
normalised form in which every word is quoted; when it is not valid (`foo(bar`, a lone `"`,
parentheses nested too deep) the words are searched instead. It is never an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from kindling.index.tokens import WORD, Term, camel_parts, query_terms

_OPERATORS = ("AND", "OR", "NOT")
# More distinct terms than this add time, not better results; the rarest are kept.
MAX_TERMS = 32
# Parentheses nested deeper than this are not something a person typed: read as words.
MAX_DEPTH = 16
# Characters of typed query syntax; text with any other punctuation (`:`, `=`, `[`, `{`, `'`)
# is pasted, so its quotes and parentheses are part of the text, not operators.
_TYPED = re.compile(r'[\w\s"()*\-.]*')

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

# Picks the terms to keep when there are more than MAX_TERMS (the caller knows how rare each is).
Keep = Callable[[list[Term], int], list[Term]]


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
    return WORD.findall(text)


def _quote(tokens: list[str] | tuple[str, ...]) -> str:
    return '"' + " ".join(tokens) + '"'


def term_expression(term: Term) -> str:
    """One term as FTS5: its only form, or all its forms (and variants) OR-ed in parentheses."""
    forms = [*term.forms, *((v,) for v in term.variants)]
    if len(forms) == 1:
        return _quote(forms[0])
    return "(" + " OR ".join(_quote(form) for form in forms) + ")"


def plain_terms(text: str, keep: Keep | None = None) -> list[Term]:
    """The distinct terms of `text`, stop words dropped (kept if nothing else is), capped."""
    found = query_terms(text)
    kept = [t for t in found if t.text not in STOP_WORDS] or found
    if len(kept) > MAX_TERMS:
        kept = keep(kept, MAX_TERMS) if keep else kept[:MAX_TERMS]
    return kept


def plain(text: str, keep: Keep | None = None) -> str | None:
    """An OR of the distinct terms of `text` (see plain_terms), or None when it has none."""
    return any_of(plain_terms(text, keep))


def any_of(terms: list[Term]) -> str | None:
    """An OR of the terms, or None when there are none."""
    return " OR ".join(term_expression(t) for t in terms) or None


def looks_explicit(text: str) -> bool:
    """True when the text uses FTS5 syntax a person would type: operators, `word*`, quotes."""
    if not _TYPED.fullmatch(text):
        return False  # pasted: quotes, stars, NOT next to colons, brackets, equals...
    tokens = text.split()
    if any(tok in _OPERATORS for tok in tokens[1:-1]):
        return True  # an operator between words, not a lone or trailing one
    return '"' in text or re.search(r"[^\W_]\*", text) is not None


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
            if not tokens:
                continue  # bare punctuation is no term at all
            if prefix:
                out.append(("term", _quote(tokens) + "*"))
                continue
            parts = [p for t in tokens for p in camel_parts(t)]
            if len(parts) > 1 and "." not in tok:  # a name: every spelling of it
                joined = "".join(parts).lower()
                forms = [_quote([joined]), _quote([p.lower() for p in parts])]
                out.append(("term", "(" + " OR ".join(forms) + ")"))
            else:
                out.append(("term", _quote(tokens)))
    return out


class _Parser:
    """FTS5's grammar: OR binds loosest, then AND (or adjacency), then NOT."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

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
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _Invalid("nested too deep")
            inner = self.or_expr()
            self.depth -= 1
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


def compile_query(text: str, keep: Keep | None = None) -> Compiled:
    """What to hand FTS5 for a user's query text."""
    text = clean(text)
    written = explicit(text) if looks_explicit(text) else None
    fallback = plain(text, keep)
    if written == fallback:
        written = None
    return Compiled(written, fallback)
