"""How much of a query an entity covers: the idf-weighted share of its terms it contains.

    coverage = sum(idf of the query terms the text holds) / sum(idf of all query terms)

with idf = ln(1 + (N - df + 0.5) / (df + 0.5)) as bm25 has it (N: indexed texts, df: texts
holding the term). A rare specific term (an error code, a function name) counts for much more
than a common word, and a text matching one common word of a long pasted error covers little
of it however short it is. Terms found nowhere in the store are left out of the sum: no
candidate could match them. A term matches when any of its forms occurs (a phrase form as
consecutive tokens), in the text or in the other spellings of its names; a text holding only
another inflection of a plain word (`tokens` for `token`, kindling.search.inflect) matches
it for VARIANT_WEIGHT of its idf, so the word as typed ranks first.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from typing import NamedTuple

from kindling.index import Index
from kindling.index.tokens import WORD, Term, index_extra
from kindling.search.inflect import inflections

# Distinct query terms whose rarity is looked up when a query has too many to search them all.
RARITY_LOOKUPS = 512
# What a match on another inflection of a word is worth, against the word itself.
VARIANT_WEIGHT = 0.7


_MARKS = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")


def fold(text: str) -> str:
    """Text as the `unicode61` tokenizer stores its tokens: lower case, diacritics removed."""
    low = text.lower()
    if low.isascii():
        return low
    return _MARKS.sub("", unicodedata.normalize("NFKD", low))


def _tokens(text: str) -> str:
    """The folded tokens of a text, each between spaces, for phrase lookups by substring."""
    return " " + " ".join(WORD.findall(fold(text))) + " "


class Weights(NamedTuple):
    """The query's terms with their idf (0 for a term no text holds), and `unseen`: what the
    plain words no text holds would weigh if one text held each."""

    terms: list[Term]
    idf: dict[str, float]
    unseen: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.idf.values())


def _form_tokens(term: Term) -> list[tuple[str, ...]]:
    forms = [tuple(fold(t) for t in form) for form in term.forms]
    return forms + [(v,) for v in term.variants]


def with_variants(index: Index, terms: list[Term]) -> list[Term]:
    """The terms, each plain word with the other inflections of it that the store holds."""
    wanted = {t.text: inflections(t.text) for t in terms if len(t.forms) == 1}
    wanted = {text: forms for text, forms in wanted.items() if forms}
    if not wanted:
        return terms
    _, df = index.document_frequencies(v for forms in wanted.values() for v in forms)
    out = []
    for term in terms:
        held = tuple(v for v in wanted.get(term.text, ()) if df[v])
        out.append(term._replace(variants=held) if held else term)
    return out


def frequencies(index: Index, terms: list[Term]) -> dict[str, int]:
    """Each term's document frequency: its most frequent form's (a phrase: its rarest token's)."""
    tokens = {t for term in terms for form in _form_tokens(term) for t in form}
    _, df = index.document_frequencies(tokens)
    return {
        term.text: max(min(df[t] for t in form) for form in _form_tokens(term)) for term in terms
    }


def weights(index: Index, terms: list[Term]) -> Weights:
    """The idf of each query term in this index."""
    tokens = {t for term in terms for form in _form_tokens(term) for t in form}
    n, df = index.document_frequencies(tokens)
    idf = {}
    unseen = 0.0
    for term in terms:
        d = max(min(df[t] for t in form) for form in _form_tokens(term))
        idf[term.text] = math.log(1 + (n - d + 0.5) / (d + 0.5)) if d else 0.0
        if not d and term.text.isalpha():  # numbers and codes in pasted text are noise
            unseen += math.log(1 + (n - 0.5) / 1.5)
    return Weights(terms, idf, unseen)


def rarest(index: Index) -> Callable[[list[Term], int], list[Term]]:
    """A Keep function for fts_query: the `n` rarest terms that occur at all, in query order.

    Only the first and the last RARITY_LOOKUPS / 2 distinct terms are looked up (a pasted
    error leads with its message, a stack trace ends with it), so a megabyte of pasted text
    costs a bounded number of lookups.
    """

    def keep(terms: list[Term], n: int) -> list[Term]:
        if len(terms) > RARITY_LOOKUPS:
            half = RARITY_LOOKUPS // 2
            terms = terms[:half] + terms[-half:]
        df = frequencies(index, terms)
        counted = sorted((df[t.text], i) for i, t in enumerate(terms) if df[t.text])
        return [terms[i] for i in sorted(i for _, i in counted[:n])]

    return keep


def matches(content: str, weights: Weights, extra: str | None = None) -> dict[str, str]:
    """The query terms `content` holds, each with where: 'text', 'names' (another spelling of
    a name) or 'variant' (another inflection of the word). `extra`: the other spellings of
    its names when known (the index holds them), else worked out when a term needs them."""
    found: dict[str, str] = {}
    names = None if extra is None else _tokens(extra)
    text = _tokens(content)
    for term in weights.terms:
        phrases = [" " + " ".join(fold(t) for t in form) + " " for form in term.forms]
        if any(p in text for p in phrases):
            found[term.text] = "text"
            continue
        if names is None:
            names = _tokens(index_extra(content))
        if any(p in names for p in phrases):
            found[term.text] = "names"
        elif any(f" {v} " in text for v in term.variants):
            found[term.text] = "variant"
    return found


def coverage(matched: dict[str, str], weights: Weights, *, absolute: bool = False) -> float:
    """The idf-weighted share of the query's terms that were matched, in [0, 1]. Relative to
    the terms the store holds (for ranking), or, `absolute`, to every plain word asked about:
    how much of the question the store can answer at all."""
    total = weights.total + (weights.unseen if absolute else 0.0)
    if total <= 0:
        return 0.0
    held = sum(
        weights.idf[t] * (VARIANT_WEIGHT if where == "variant" else 1.0)
        for t, where in matched.items()
    )
    return min(1.0, held / total)
