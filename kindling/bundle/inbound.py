"""Bundle entities as capture would store them: secrets masked, tombstones emptied.

The masking is `kindling.masking`'s (which remembers its answers for the short strings a
bundle repeats); what this adds is keeping the bundle's own dict when nothing changes, so a
large import holds one copy of each entity.
"""

from __future__ import annotations

from kindling.masking import mask_json, mask_scope_ids, mask_text

# The free-text field masked on the way in, as capture masks it (observations: see below).
FREE_TEXT = {"capsules": "intent", "summaries": "content", "pins": "reason"}


def inbound_entity(entity_type: str, entity: dict) -> tuple[dict, int]:
    """The entity as capture would store it, and how many secrets were masked; the bundle's
    own dict when nothing changes."""
    changes: dict = {}
    s = 0
    if "scopeIds" in entity:
        scope, s = mask_scope_ids(entity["scopeIds"])
        if s:
            changes["scopeIds"] = scope
    n = m = 0
    if entity_type == "observations":
        if entity["redacted"]:
            if entity["provenance"] != {}:
                changes["provenance"] = {}
        else:
            content, n = mask_text(entity["content"])
            provenance, m = mask_json(entity["provenance"])
            if n + m:
                changes.update(content=content, provenance=provenance)
    else:
        field = FREE_TEXT[entity_type]
        if isinstance(entity[field], str):
            text, n = mask_text(entity[field])
            if n:
                changes[field] = text
    return ({**entity, **changes} if changes else entity), n + m + s
