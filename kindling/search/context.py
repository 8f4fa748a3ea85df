"""matchContext: where a candidate matched, found in its text in one linear pass.

FTS5's snippet() is quadratic in the number of hits inside one document (a word repeated
20,000 times takes seconds), so the window is cut here instead: at most WIDTH characters of
the content around the first matching word, `…` marking each cut, the first MARKS matched
words in **bold**.
"""

from __future__ import annotations

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


def match_context(content: str, terms: TermSet) -> str | None:
    """A window of at most WIDTH characters of `content` around its first match, or None."""
    first = None
    for m in WORD.finditer(content):
        term, _ = terms.which(m.group())
        if term is not None:
            first = m
            break
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
