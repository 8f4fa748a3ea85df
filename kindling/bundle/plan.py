"""An import's plan: one `Decision` per bundle entity, made before anything is written, and
the error that stops carrying it out part way (kindling.bundle.importer makes and carries out
the plan; kindling.bundle.report counts it)."""

from __future__ import annotations

from typing import NamedTuple

from kindling.errors import KindlingError


class Decision(NamedTuple):
    """What an import does with one bundle entity, and what it expected to find locally."""

    entity_type: str
    theirs: dict
    outcome: str  # one of kindling.bundle.report.OUTCOMES
    write: dict | None = None
    expect: bytes | None = None
    fields: tuple[str, ...] = ()
    reason: str = ""
    masked: int = 0

    @property
    def entity_id(self) -> str:
        return self.theirs["id"]


class ImportInterrupted(KindlingError):
    """A write failed part way through an import; `written` lists what was written before."""

    def __init__(self, message: str, written: list[Decision]) -> None:
        self.written = written
        n = len(written)
        super().__init__(
            f"{message}; {n} entit{'y was' if n == 1 else 'ies were'} written before it "
            "(listed above); running the same import again finishes it"
        )
