"""`<private>...</private>`: text a person marks as never to be stored, taken out on the way in.

Every text from outside (hook payloads of every agent, MCP messages, `kindling log`) passes
through kindling.agents.intake, which calls `strip_private` on each string before anything
reads it: no record, intent, summary, provenance or index ever sees what was inside. The
tags are matched case-insensitively, nested ones count, a stray closing tag is dropped, and an
unclosed `<private>` hides everything after it (the safe reading of a cut-off message).
"""

from __future__ import annotations

import re

PRIVATE_MARK = "[private]"
_TAG = re.compile(r"<\s*(/?)\s*private\s*>", re.IGNORECASE)
_LOOK = re.compile(r"<\s*/?\s*private", re.IGNORECASE)


def has_private(text: str) -> bool:
    """Whether `text` holds a `<private>` or `</private>` tag."""
    return "<" in text and _LOOK.search(text) is not None


def strip_private(text: str) -> str:
    """`text` with each `<private>...</private>` section replaced by PRIVATE_MARK."""
    if not has_private(text):
        return text
    out: list[str] = []
    depth = 0
    kept_to = 0
    for tag in _TAG.finditer(text):
        closing = tag.group(1) == "/"
        if depth == 0:
            out.append(text[kept_to : tag.start()])
            if not closing:
                out.append(PRIVATE_MARK)
                depth = 1
        elif closing:
            depth -= 1
        else:
            depth += 1
        kept_to = tag.end()
    if depth == 0:
        out.append(text[kept_to:])
    return "".join(out)
