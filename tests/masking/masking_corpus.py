"""Read a masking corpus (format: tests/masking/README.md) into cases."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARKED = re.compile("⟦(.*?)⟧", re.DOTALL)


@dataclass(frozen=True)
class Case:
    kind: str  # "secret" or "keep"
    name: str
    text: str  # the input, markers removed
    secrets: tuple[str, ...]  # the marked parts, which must disappear
    expected: str  # the input with each marked part replaced by the mask


def load(name: str, mask: str = "[REDACTED]") -> list[Case]:
    """The cases of tests/masking/<name>."""
    cases: list[Case] = []
    header: tuple[str, str] | None = None
    lines: list[str] = []

    def close() -> None:
        if header is not None:
            raw = "\n".join(lines).rstrip("\n")
            secrets = tuple(MARKED.findall(raw))
            plain = raw.replace("⟦", "").replace("⟧", "")
            cases.append(Case(header[0], header[1], plain, secrets, MARKED.sub(mask, raw)))

    for line in (HERE / name).read_text(encoding="utf-8").split("\n"):
        if line.startswith("=== "):
            close()
            kind, case_name = line[4:].split(" ", 1)
            header, lines = (kind, case_name), []
        elif header is not None:
            lines.append(line)
    close()
    return cases


@dataclass(frozen=True)
class Score:
    secrets: int
    caught: int  # secret cases with no marked part left
    exact: int  # secret cases masked exactly as marked, the rest intact
    keeps: int
    changed: list[str]  # names of keep cases that did not come out byte-identical
    missed: list[str]  # names of secret cases with a marked part left
    inexact: list[str]

    def line(self) -> str:
        return (
            f"recall {self.caught}/{self.secrets} "
            f"({100 * self.caught / max(self.secrets, 1):.1f}%), "
            f"exact {self.exact}/{self.secrets}, false positives {len(self.changed)}/{self.keeps}"
        )


def score(cases: list[Case], mask_text) -> Score:
    """How `mask_text` (text -> (masked, count)) does on `cases`."""
    caught = exact = 0
    missed: list[str] = []
    inexact: list[str] = []
    changed: list[str] = []
    for case in cases:
        out = mask_text(case.text)[0]
        if case.kind == "keep":
            if out != case.text:
                changed.append(case.name)
            continue
        if all(secret not in out for secret in case.secrets):
            caught += 1
        else:
            missed.append(case.name)
        if out == case.expected:
            exact += 1
        else:
            inexact.append(case.name)
    secrets = sum(c.kind == "secret" for c in cases)
    return Score(secrets, caught, exact, len(cases) - secrets, changed, missed, inexact)
