"""Inflections of ordinary English words, so `token` finds `tokens` and `fail` finds `failed`.

This is not a stemmer. A stemmer cuts every word to a stem at index time and so conflates
words that only look alike (porter's `ordering`/`order`, `general`/`generic`,
`university`/`universe`). Here a query word gains a few spelled-out forms (plural and third
person, past and -ing, -ion nouns of verbs), each kept only when the store holds it, and a
match on such a form counts for less than the word itself (kindling.search.coverage), so the
exact word still ranks first. Identifiers, codes and anything with a digit, a capital inside
or a separator are left exact, and so are words shorter than MIN_LENGTH.
"""

from __future__ import annotations

import re

# Shorter words are too often abbreviations or names (`ci`, `os`, `npm`, `tsc`).
MIN_LENGTH = 4
_PLAIN = re.compile(r"[a-z]+")
_VOWELS = frozenset("aeiou")
# Endings after which a plural takes -es: bus/buses, box/boxes, match/matches.
_SIBILANT = ("s", "x", "z", "ch", "sh")
# Words ending in s that are not plurals: class, status, analysis, alias.
_NOT_PLURAL = ("ss", "us", "is", "as")


def _consonant(c: str) -> bool:
    return c.isalpha() and c not in _VOWELS


def _doubles(base: str) -> bool:
    """True when -ed/-ing double the last letter: stop/stopped, plan/planned (short CVC)."""
    return (
        len(base) <= 4
        and len(base) >= 3
        and _consonant(base[-1])
        and base[-1] not in "wxy"
        and base[-2] in _VOWELS
        and _consonant(base[-3])
    )


def _verb_forms(base: str) -> set[str]:
    """A verb's -s, -ed and -ing forms."""
    out = {base + ("es" if base.endswith(_SIBILANT) else "s")}
    if base.endswith("e"):
        out |= {base + "d", base[:-1] + "ing"}
    elif base.endswith("y") and len(base) > 1 and _consonant(base[-2]):
        out |= {base[:-1] + "ied", base + "ing", base[:-1] + "ies"}
    else:
        out |= {base + "ed", base + "ing"}
        if _doubles(base):
            out |= {base + base[-1] + "ed", base + base[-1] + "ing"}
    return out


def _bases(word: str) -> set[str]:
    """The words `word` may be an inflection of."""
    out: set[str] = set()
    if word.endswith("ies") and len(word) > 4:
        out.add(word[:-3] + "y")
    elif word.endswith("es") and word[:-2].endswith(_SIBILANT):
        out |= {word[:-2], word[:-1]}  # boxes -> box, caches -> cache
    elif word.endswith("s") and not word.endswith(_NOT_PLURAL):
        out.add(word[:-1])
    for ending in ("ed", "ing"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            stem = word[: -len(ending)]
            if ending == "ed" and stem.endswith("i"):
                out.add(stem[:-1] + "y")  # retried -> retry
                continue
            out |= {stem, stem + "e"}  # failed -> fail, parsed -> parse
            if len(stem) >= 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                out.add(stem[:-1])  # stopped -> stop
            elif stem.endswith("ck"):
                out.add(stem[:-1])  # panicked -> panic
    if word.endswith("ation") and len(word) > 7:
        out |= {word[:-5] + "ate", word[:-5] + "e"}  # validation, configuration
    elif word.endswith("ion") and len(word) > 6:
        out |= {word[:-3], word[:-3] + "e"}  # connection -> connect, deletion -> delete
    return {b for b in out if len(b) >= 3}


def _nouns(verb: str) -> set[str]:
    """The -ion nouns a verb may have: connect/connection, validate/validation."""
    if verb.endswith("ate"):
        return {verb[:-1] + "ion"}
    if verb.endswith("e"):
        return {verb[:-1] + "ation", verb[:-1] + "ion"}
    if verb.endswith(("ct", "rt", "pt")):
        return {verb + "ion"}
    return set()


def inflections(word: str) -> list[str]:
    """Other forms of a plain lower-case word (the word itself left out), sorted; none for
    identifiers, codes and short words. Callers keep the ones their store holds."""
    if len(word) < MIN_LENGTH or not _PLAIN.fullmatch(word):
        return []
    # An inflected word gives its bases and their forms; a base word its own forms.
    bases = _bases(word) or {word}
    forms: set[str] = set(bases)
    for base in bases:
        forms |= _verb_forms(base) | _nouns(base)
    forms.discard(word)
    return sorted(f for f in forms if len(f) >= 3)
