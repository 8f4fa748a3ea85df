"""matchContext: where a candidate matched, found in its text in one linear pass.

FTS5's snippet() is quadratic in the number of hits inside one document (a word repeated
20,000 times takes seconds), so the window is cut here instead: at most WIDTH characters of
the content around the first matching word, `…` marking each cut, the first MARKS matched
words in **bold**.
"""

from __future__ import annotations

import re

from kindling.index.tokens import WORD, Term, camel_parts

WIDTH = 200
# Characters of the window shown before the match.
LEAD = 60
# Words marked in **bold** at most, so the markers add at most 4 * MARKS characters.
MARKS = 10


def _stem_key(word: str) -> str:
    # A crude common prefix: `locked` and `locks` both locate `lock`; only used to find text.
    return word[: max(4, len(word) - 3)] if len(word) > 4 else word


class TermSet:
    """The query's terms as lookups: exact words, name parts and stem-like prefixes."""

    def __init__(self, terms: list[Term]) -> None:
        self.terms = terms
        self.exact: dict[str, str] = {}
        self.stems: dict[str, str] = {}
        for term in terms:
            for form in term.forms:
                for token in form:
                    self.exact.setdefault(token, term.text)
                    self.stems.setdefault(_stem_key(token), term.text)
            for variant in term.variants:
                self.exact.setdefault(variant, term.text)
        # Every matching word holds one of these: found by the regex engine, then checked.
        keys = sorted(set(self.stems) | set(self.exact), key=len, reverse=True)
        self.find = re.compile("|".join(map(re.escape, keys)), re.IGNORECASE) if keys else None

    def which(self, token: str) -> tuple[str | None, bool]:
        """(the term a text token matches or None, whether it matched exactly)."""
        low = token.lower()
        if low in self.exact:
            return self.exact[low], True
        parts = camel_parts(token)
        if len(parts) > 1:
            for part in parts:
                if part.lower() in self.exact:
                    return self.exact[part.lower()], True
        found = self.stems.get(_stem_key(low))
        return found, False


_WORD_BACK = re.compile(r"[^\W_]*")


def first_match(content: str, terms: TermSet) -> re.Match | None:
    """The first word of `content` that matches a query term, each word looked at once."""
    if terms.find is None:
        return None
    reverse = None
    pos = 0
    while True:
        hit = terms.find.search(content, pos)
        if hit is None:
            return None
        # The word holding the hit starts at or after `pos` (the end of the last word seen);
        # it is found by matching word characters backwards, in the reversed text.
        if reverse is None:
            reverse = content[::-1]
        back = _WORD_BACK.match(reverse, len(content) - hit.start())
        start = len(content) - back.end()
        word = WORD.match(content, start)
        if word is None:  # the hit is not inside a word (cannot happen: keys are words)
            pos = hit.end()
            continue
        if terms.which(word.group())[0] is not None:
            return word
        pos = word.end()


def match_context(content: str, terms: TermSet) -> str | None:
    """A window of at most WIDTH characters of `content` around its first match, or None."""
    first = first_match(content, terms)
    if first is None:
        return None
    start = max(0, first.start() - LEAD)
    end = min(len(content), start + WIDTH)
    window = content[start:end]
    out = []
    pos = 0
    for m in WORD.finditer(window):
        # A word cut by the window's edge is shown as it is, unmarked.
        whole = (m.start() > 0 or start == 0) and (m.end() < len(window) or end == len(content))
        if whole and len(out) < 2 * MARKS and terms.which(m.group())[0] is not None:
            out.append(window[pos : m.start()])
            out.append(f"**{m.group()}**")
            pos = m.end()
    out.append(window[pos:])
    text = " ".join("".join(out).split())
    return ("…" if start > 0 else "") + text + ("…" if end < len(content) else "")
