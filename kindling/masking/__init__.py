"""Mask secrets in text and JSON before anything is written to the store.

The store is committed and pushed, so a secret that reaches it is a leaked secret. Masking
replaces only the secret part (`api_key=[REDACTED]`, `Bearer [REDACTED]`) so the rest stays
readable, and it is idempotent: masked text masks to itself and counts 0. What counts as a
secret is described in `kindling.masking.text` (free text) and `kindling.masking.structured`
(JSON values, argument lists, scope ids).

These entry points look first with the cheap `kindling.masking.gate`; the patterns are
compiled only when the gate says a secret may be present.
"""

from __future__ import annotations

from kindling.masking import custom
from kindling.masking.gate import MASK, json_might_hold_secret, might_hold_secret, remembered

__all__ = ["MASK", "mask_json", "mask_scope_ids", "mask_text", "mask_then_cut"]


def mask_text(text: str) -> tuple[str, int]:
    """Return `text` with every secret replaced by MASK, and how many were replaced."""
    # With a repository's patterns, every text is searched and nothing is remembered (the
    # remembered answers are Kindling's own, right for any store).
    if custom.in_use() is not custom.NONE and custom.active():
        # (active() raises for a repository's bad masking.json: the write is refused)
        from kindling.masking.text import mask_text as mask

        return mask(text)
    if not might_hold_secret(text):
        return text, 0
    return _mask(text)


# A scope value the gate lets through (repoId `github.com/acme/auth-service`) recurs on every
# entity of an import: 12 us to mask, 0.24 us remembered.
@remembered
def _mask(text: str) -> tuple[str, int]:
    from kindling.masking.text import mask_text as mask

    return mask(text)


def mask_json(value: object) -> tuple[object, int]:
    """A masked copy of a JSON value and how many secrets were masked; `value` is untouched."""
    repository = custom.in_use() is not custom.NONE and custom.active()
    if not repository and not json_might_hold_secret(value):
        return value, 0
    from kindling.masking.structured import mask_json as mask

    return mask(value)


def mask_scope_ids(scope: dict) -> tuple[dict, int]:
    """A copy of a scopeIds object with secrets masked inside its string values."""
    masked, total = {}, 0
    for key, value in scope.items():
        if isinstance(value, str):
            value, count = mask_text(value)
            total += count
        masked[key] = value
    return masked, total


def _outside_mask(text: str, pos: int, forward: bool) -> int:
    """`pos` moved off any MASK it falls inside, to the MASK's end or start."""
    start = text.rfind(MASK, max(0, pos - len(MASK) + 1), pos + len(MASK) - 1)
    if start < 0 or not start < pos < start + len(MASK):
        return pos
    return start + len(MASK) if forward else start


def mask_then_cut(text: str, limit: int) -> tuple[str, int, bool]:
    """Mask the whole of `text`, then keep its head and tail within `limit` characters.

    Masking first means a secret that straddles the cut is still recognised, so no piece of
    it is kept; the cut never splits a MASK. Returns the text, how many secrets were masked
    and whether anything was cut (what is cut is replaced by a one-line notice).
    """
    masked, count = mask_text(text)
    if len(masked) <= limit:
        return masked, count, False
    head_end = _outside_mask(masked, limit * 2 // 3, forward=False)
    tail_start = _outside_mask(masked, len(masked) - (limit - limit * 2 // 3), forward=True)
    cut = tail_start - head_end
    notice = f"\n[... kindling cut {cut:,} of {len(masked):,} characters here ...]\n"
    return masked[:head_end] + notice + masked[tail_start:], count, True
