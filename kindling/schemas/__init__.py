"""JSON Schemas (draft 4) of the four entities and the export bundle, shipped as package data.

`kindling.model.validate` and `kindling.bundle.format.check_bundle` stay the rule Kindling
itself applies; the schemas state the same rule for other tools (editors, CI checks, other
languages). docs/formats.md names the few limits no schema keyword can express.
"""

from __future__ import annotations

import json
from importlib import resources

# Schema name -> the entity type (objects/ folder) it describes; the bundle holds all four.
NAMES = {
    "observation": "observations",
    "capsule": "capsules",
    "summary": "summaries",
    "pin": "pins",
    "bundle": None,
}


def file_name(name: str) -> str:
    """The schema's file name, which is also how the bundle schema refers to it."""
    if name not in NAMES:
        raise KeyError(f"no schema named {name!r} (known: {', '.join(NAMES)})")
    return f"{name}.schema.json"


def load(name: str) -> dict:
    """The parsed schema `name` (observation, capsule, summary, pin or bundle)."""
    text = resources.files(__name__).joinpath(file_name(name)).read_text(encoding="utf-8")
    return json.loads(text)
