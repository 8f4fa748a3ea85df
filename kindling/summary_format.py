"""The line format of a structured session summary, shared by what writes, forgets and ranks it.

A structured summary's content is one line per part, `Label: text [id id ...]`: the label
says which part (LABELS), and the trailing tags are the short ids of the observations the
line was built from, so forgetting one of them redacts exactly its lines and nothing else.
Some parts state the problem (PROBLEM_LABELS: what was asked, tried, still fails), the rest
the answer; search weighs a summary's problem lines as it weighs raw output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

LABELS = (
    "Summary",
    "Asked",
    "Tried",
    "Root cause",
    "Changed",
    "Still failing",
    "Next",
    "Interrupted",
    "Last message",
    "Recorded",
)
# Parts that state the problem or what happened to the session, not what answers it.
PROBLEM_LABELS = frozenset({"Asked", "Tried", "Still failing", "Interrupted", "Recorded"})
# Source tags name observations by at least this many characters of their id.
MIN_SOURCE_ID = 8
SOURCES = re.compile(r" \[([0-9a-f][0-9a-f-]{7,35}(?: [0-9a-f][0-9a-f-]{7,35})*)\]$")
LABEL = re.compile(r"^[A-Z][A-Za-z ]{0,30}: ")


def fold(text: str) -> str:
    """`text` on one line, runs of whitespace as one space (as hooks title and cite prompts)."""
    return " ".join(text.split())


def sourced(line: str, ids: Iterable[str]) -> str:
    """A summary line on one line, ending in the (short) ids of the observations it rests on."""
    flat = fold(line)
    tags = " ".join(dict.fromkeys(ids))
    return f"{flat} [{tags}]" if tags else flat


def sources_of(line: str) -> list[str]:
    """The id prefixes a summary line names as its sources (none for an untagged line)."""
    found = SOURCES.search(line)
    return found.group(1).split(" ") if found else []


def parts_of(content: str) -> dict[str, str] | None:
    """A summary in this format read back: label -> text (sources dropped); None otherwise."""
    out = {}
    for line in content.split("\n"):
        label, sep, text = line.partition(": ")
        if not sep or label not in LABELS or label in out:
            return None
        tags = sources_of(line)
        if tags:
            text = text[: -len(" [" + " ".join(tags) + "]")]
        out[label] = text
    return out or None


def answer_part(content: str) -> str | None:
    """The lines of a structured summary that state the answer (no problem lines), or None
    when the content is not in this format."""
    parts = parts_of(content)
    if parts is None:
        return None
    return "\n".join(text for label, text in parts.items() if label not in PROBLEM_LABELS)
