"""Text for people: stored content shown on a terminal, never acted on; text on one line."""

from __future__ import annotations

import re

# Characters a terminal acts on rather than shows: C0 controls but tab and newline, DEL, C1
# controls (\x9b is a one-byte CSI), and the bidi and line-separator marks that reorder text.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: object) -> str:
    """Text for a terminal: every control character shown as an escape, never acted on."""
    return _UNSAFE.sub(_escape, str(text))


def one_line(text: str, width: int = 100) -> str:
    """Text folded onto one line and cut to `width` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
