"""Words and identifiers as code writes them: the same splitting at index and at query time.

The FTS5 `unicode61` tokenizer splits text at anything that is not a letter or a digit, so
`busy_timeout` becomes `busy` + `timeout` while `busyTimeout` stays one token `busytimeout`.
Neither then finds the other. Here every identifier-like run is also read as its parts (split
at `_`, `-` and lower-to-upper case changes) and as its parts joined (`busytimeout`), so all
case styles of one name meet in the same tokens. Letters and digits are never split apart:
`TS2307`, `E11000` and `0x80070005` stay whole.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

# Runs of letters and digits: how the `unicode61` tokenizer splits text into tokens.
WORD = re.compile(r"[^\W_]+")
# A name as code writes it: word characters joined by `_`, `-` or `.` (no leading/trailing).
RUN = re.compile(r"[^\W_]+(?:[_.\-]*[^\W_]+)*")
# Case changes inside a token: `busyTimeout` -> busy|Timeout, `HTTPServer` -> HTTP|Server.
_CAMEL = re.compile(r"(?<=[^\W\d_])(?<![A-Z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# A run that is worth splitting at all: it has a separator or an inner capital.
_COMPOUND = re.compile(r"[_\-.]|[^\W_][A-Z]")
# Where a text has a name worth splitting: most texts have none, and are not walked.
_HINGE = re.compile(r"[^\W_][_\-][^\W_]|[^\W\d_][A-Z]")


class Term(NamedTuple):
    """One query term: the forms that count as a match, the whole form first.

    `forms` are token sequences (one token, or a phrase of parts); matching any one is a match.
    `variants` are other inflections of a plain word (kindling.search.inflect) the store holds:
    they match too, for less.
    """

    text: str
    forms: tuple[tuple[str, ...], ...]
    variants: tuple[str, ...] = ()


def words(text: str) -> list[str]:
    """The search words of a text, in order, as the tokenizer would split them."""
    return WORD.findall(text)


def camel_parts(token: str) -> list[str]:
    """A letters-and-digits token split at its case changes (`useLocalStorage` -> 3 parts).

    A case change right after a digit does not split (`utf8Decode`, `8007000A`), and neither
    does a hex literal (`0xC0000005`): codes stay whole.
    """
    if token[:2] in ("0x", "0X"):
        return [token]
    if token.isascii() and (token.islower() or token.isupper()):
        return [token]  # one case throughout: no change to split at (most tokens)
    return [p for p in _CAMEL.split(token) if p]


def index_extra(text: str) -> str:
    """Extra tokens indexed after an entity's text so every spelling of its names matches.

    For `busyTimeout`: `busy timeout`; for `busy_timeout` or `maxmemory-policy`: the joined
    `busytimeout` / `maxmemorypolicy`. One pass over the text (linear in its length).
    """
    extra: list[str] = []
    if "_" not in text and "-" not in text and text == text.lower():
        return ""  # no separator and no capital: nothing to split (checked at memchr speed)
    if not _HINGE.search(text):
        return ""
    for run in dict.fromkeys(RUN.findall(text)):  # each distinct name once, in order
        if run.isalnum() and run[1:].islower():
            continue  # a plain word (no separator, no inner capital): no other spelling
        forms = _run_forms(run)
        if forms:
            extra.extend(forms)
    return " ".join(extra)


@functools.lru_cache(maxsize=65_536)
def _run_forms(run: str) -> tuple[str, ...]:
    """The extra tokens of one name (none for a plain word); names recur across a store's
    texts, so a bulk index works each out once."""
    if not _COMPOUND.search(run):
        return ()
    extra: list[str] = []
    for piece in run.split(".") if "." in run else (run,):
        if "_" in piece or "-" in piece:
            tokens = WORD.findall(piece)
            if len(tokens) > 1:  # snake or kebab: the joined name (camel parts joined too)
                extra.append("".join(tokens).lower())
        else:  # a run's piece holds letters, digits, `_` and `-`: here one token, or none
            tokens = [piece] if piece else []
        for token in tokens:
            if token.isascii() and (token.islower() or token.isupper()):
                continue  # what camel_parts would leave whole, without the call
            parts = camel_parts(token)
            if len(parts) > 1:  # camel: the parts, in order
                extra.append(" ".join(parts).lower())
    return tuple(extra)


def searchable(content: str) -> str:
    """The text the index holds for some content: the content, then its extra name tokens."""
    extra = index_extra(content)
    return f"{content}\n{extra}" if extra else content


def query_terms(text: str) -> list[Term]:
    """The distinct terms of plain query text, in order; compound names carry all their forms."""
    out: dict[str, Term] = {}
    for match in RUN.finditer(text):
        run = match.group()
        if not _COMPOUND.search(run):
            key = run.lower()
            out.setdefault(key, Term(key, ((key,),)))
            continue
        for piece in run.split("."):
            tokens = WORD.findall(piece)
            parts: list[str] = []
            for token in tokens:
                parts.extend(p.lower() for p in camel_parts(token))
            if not parts:
                continue
            if len(parts) == 1:
                out.setdefault(parts[0], Term(parts[0], ((parts[0],),)))
                continue
            joined = "".join(parts)
            out.setdefault(joined, Term(piece.lower(), ((joined,), tuple(parts))))
    return list(out.values())
