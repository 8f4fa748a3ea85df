"""Bundle entities as capture would store them: secrets masked, tombstones emptied.

A bundle repeats the same short strings across thousands of entities (session and repo ids,
file paths, tool names), so a `Masker` keeps what masking made of each short string for the
length of one import. The masking itself is `kindling.masking`'s, unchanged: the same gate
decides whether the patterns run, and whatever it lets through is masked by the same code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kindling.masking import mask_json, mask_text
from kindling.secret_gate import might_hold_secret

# The free-text field masked on the way in, as capture masks it (observations: see `entity`).
FREE_TEXT = {"capsules": "intent", "summaries": "content", "pins": "reason"}
SHORT = 100  # characters: strings up to this long are remembered
REMEMBERED = 16_384  # strings remembered at most (then forgotten all at once): bounded memory
T = TypeVar("T")


def _remembered(cache: dict[str, T], compute: Callable[[str], T], text: str) -> T:
    """`compute(text)`, kept in `cache` for a short text (emptied whole once full)."""
    if len(text) > SHORT:
        return compute(text)
    found = cache.get(text)
    if found is None:
        if len(cache) >= REMEMBERED:
            cache.clear()
        found = cache[text] = compute(text)
    return found


class Masker:
    """Masks bundle entities for one import, remembering its results for short strings."""

    def __init__(self) -> None:
        self._texts: dict[str, tuple[str, int]] = {}
        self._gates: dict[str, bool] = {}

    def text(self, text: str) -> tuple[str, int]:
        """`kindling.masking.mask_text`, remembered for short strings."""
        return _remembered(self._texts, mask_text, text)

    def _gate(self, text: str) -> bool:
        return _remembered(self._gates, might_hold_secret, text)

    def might_hold_secret(self, value: object) -> bool:
        """`kindling.secret_gate.json_might_hold_secret`, remembered for short strings."""
        if isinstance(value, str):
            return self._gate(value)
        # Loops rather than any(): this runs for every value of every bundle entity.
        if isinstance(value, dict):
            for k, v in value.items():
                if (isinstance(k, str) and self._gate(k)) or self.might_hold_secret(v):
                    return True
        elif isinstance(value, (list, tuple)):
            for v in value:
                if self.might_hold_secret(v):
                    return True
        return False

    def json(self, value: object) -> tuple[object, int]:
        """`kindling.masking.mask_json`: the value itself when the gate finds nothing."""
        if not self.might_hold_secret(value):
            return value, 0
        return mask_json(value)

    def scope_ids(self, scope: dict) -> tuple[dict, int]:
        """`kindling.masking.mask_scope_ids`: the same dict when nothing is masked."""
        total = 0
        for value in scope.values():
            if isinstance(value, str):
                total += self.text(value)[1]
        if not total:
            return scope, 0
        return {k: self.text(v)[0] if isinstance(v, str) else v for k, v in scope.items()}, total

    def entity(self, entity_type: str, entity: dict) -> tuple[dict, int]:
        """The entity as capture would store it, and how many secrets were masked.

        The bundle's own dict is returned when nothing changes, so a large import holds one
        copy.
        """
        changes: dict = {}
        scope, s = self.scope_ids(entity["scopeIds"]) if "scopeIds" in entity else ({}, 0)
        if s:
            changes["scopeIds"] = scope
        if entity_type == "observations":
            if entity["redacted"]:
                if entity["provenance"] != {}:
                    changes["provenance"] = {}
                return ({**entity, **changes} if changes else entity), s
            content, n = self.text(entity["content"])
            provenance, m = self.json(entity["provenance"])
            if n + m:
                changes.update(content=content, provenance=provenance)
        else:
            field = FREE_TEXT[entity_type]
            n = m = 0
            if isinstance(entity[field], str):
                text, n = self.text(entity[field])
                if n:
                    changes[field] = text
        return ({**entity, **changes} if changes else entity), n + m + s
