"""Shared looks at one text, computed once per text: its lower-cased form and its long runs.

A 100 KB tool output is searched by many finders; a literal search costs about as much as
a pass over the text, so finders look up what they need here instead of each scanning.
"""

from __future__ import annotations

import functools
import re

# Characters a token (or a base64 segment) is made of; every vendor token, with its prefix,
# is a run of at least RUN_LEAST of them.
RUN_LEAST = 20


@functools.lru_cache(maxsize=4)
def lowered(view: str) -> str:
    """`view` in lower case (the same length: the views are ASCII-mapped)."""
    return view.lower()


# Token characters become `a`, all others a space: a run of one letter is found faster than
# a run of a character class.
_AS_A = str.maketrans(
    {c: ("a" if re.fullmatch(r"[A-Za-z0-9_.~+/=-]", chr(c)) else " ") for c in range(128)}
)
_A_RUN = re.compile(rf"a{{{RUN_LEAST},}}")


@functools.lru_cache(maxsize=4)
def runs(view: str) -> tuple[tuple[int, int], ...]:
    """Every run of token characters of at least RUN_LEAST characters, as (start, end)."""
    return tuple(m.span() for m in _A_RUN.finditer(view.translate(_AS_A)))


def has(view: str, *words: str) -> bool:
    """Whether the lower-cased `view` holds any of `words` (lower-case)."""
    low = lowered(view)
    return any(word in low for word in words)
