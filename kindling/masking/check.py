"""What a text would be stored as, and what was masked in it, by kind: `kindling mask --check`."""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from kindling.masking import mask_text
from kindling.masking.gate import CONFUSABLES
from kindling.masking.text import labelled_spans


class Checked(NamedTuple):
    """A text as the store would keep it, how many secrets it lost, and of which kinds."""

    stored: str
    masked: int
    kinds: dict[str, int]  # kind of finding -> how many secrets it recognised


def check(text: str) -> Checked:
    """Mask `text` as every write does, and say which kinds of finding masked what."""
    stored, masked = mask_text(text)
    view = text if text.isascii() else text.translate(CONFUSABLES)
    kinds: Counter[str] = Counter()
    seen: list[tuple[int, int]] = []
    for label, (start, end) in sorted(
        labelled_spans(view, look=False), key=lambda found: (found[1][0], -found[1][1])
    ):
        if end <= start or any(s <= start and end <= e for s, e in seen):
            continue  # a secret two findings recognise counts for the first
        seen.append((start, end))
        kinds[label] += 1
    if masked and not kinds:
        kinds["private key"] = masked  # PEM blocks are masked before the other findings run
    return Checked(stored, masked, dict(sorted(kinds.items())))
