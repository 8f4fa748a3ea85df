"""What fsck reports: the kinds of finding, one finding, the whole report."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

# Finding kinds, in the order a report lists them.
CHECKS = (
    "conflict",
    "parse",
    "invalid",
    "noncanonical",
    "misplaced",
    "stray",
    "duplicate",
    "dangling",
    "temp",
    "index",
)
SYMLINK = (
    "a symlink: Kindling never follows one in a store (it may have come in a commit "
    "and point anywhere); remove it"
)
# The kinds `fsck --fix` repairs.
FIXABLE = ("noncanonical", "misplaced", "temp", "index")
SCRUBBED = (
    "the index held words a forget took from this file (that forget, or the pull of it, was "
    "cut short)"
)
SCRUB_FIX = "scrubbed from the index by fsck's sync"


def display(path: str | os.PathLike) -> str:
    """A path made printable and JSON-safe whatever bytes its name holds."""
    raw = os.fsencode(path)
    return raw.decode("utf-8", "backslashreplace")


@dataclass
class Finding:
    """One thing wrong: the store-relative path, which check found it, why, and any repair."""

    path: str
    check: str
    reason: str
    fixed: str | None = None

    def as_dict(self) -> dict:
        return {"path": self.path, "check": self.check, "reason": self.reason, "fixed": self.fixed}


@dataclass
class FsckReport:
    """Everything fsck found in one store."""

    store: Path
    checked: int = 0
    problems: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing is left wrong (every problem found was repaired)."""
        return all(p.fixed for p in self.problems)

    def as_dict(self) -> dict:
        return {
            "store": display(self.store),
            "ok": self.ok,
            "checked": self.checked,
            "problems": [p.as_dict() for p in self.problems],
        }
