"""Shared looks at one text, computed once per text: its lower-cased form and its long runs.

A 100 KB tool output is searched by many finders; a literal search costs about as much as
a pass over the text, so finders look up what they need here instead of each scanning.
"""

from __future__ import annotations

import functools
import re

# Characters a token (or a base64 segment) is made of; every vendor token, with its prefix,
# is a run of at least RUN_LEAST of them.
RUN = re.compile(r"[A-Za-z0-9_.~+/=-]{20,}")
RUN_LEAST = 20


@functools.lru_cache(maxsize=4)
def lowered(view: str) -> str:
    """`view` in lower case (the same length: the views are ASCII-mapped)."""
    return view.lower()


@functools.lru_cache(maxsize=4)
def runs(view: str) -> tuple[tuple[int, int], ...]:
    """Every run of token characters of at least RUN_LEAST characters, as (start, end)."""
    return tuple(m.span() for m in RUN.finditer(view))


def has(view: str, *words: str) -> bool:
    """Whether the lower-cased `view` holds any of `words` (lower-case)."""
    low = lowered(view)
    return any(word in low for word in words)
