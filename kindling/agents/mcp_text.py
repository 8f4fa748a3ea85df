"""Compact MCP tool results: a short text for the model and lean structured content.

A token is counted as retrieval counts it: CHARS_PER_TOKEN characters (see
kindling.search.retrieve). Text results stay within `max_tokens` by that count: lines are
added while they fit, and a long entity's content is cut (masked first) to what is left.
The structured content carries the same items, with the same cut content, for programs.
"""

from __future__ import annotations

import math

from kindling.agents.payload import cut, one_line, short_id, when
from kindling.model import SINGULAR, entity_time
from kindling.search.retrieve import CHARS_PER_TOKEN

MIN_ITEM_CHARS = 60
QUERY_SHOWN = 200  # characters of the query repeated in a search's first line
DEFAULT_TOKENS = 1_000


def tokens(text: str) -> int:
    """Tokens a text costs by the ~4 characters/token rule."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class Budget:
    """Lines of text kept within a number of characters."""

    def __init__(self, max_tokens: int) -> None:
        self.left = max_tokens * CHARS_PER_TOKEN
        self.lines: list[str] = []
        self.full = False

    def add(self, line: str) -> bool:
        """Add a line when it fits whole; False (and full) when it does not."""
        if len(line) + 1 > self.left:
            self.full = True
            return False
        self.lines.append(line)
        self.left -= len(line) + 1
        return True

    def room(self, reserved: int = 0) -> int:
        """Characters left for one more line's content, after `reserved` characters of label."""
        return self.left - reserved - 1

    def text(self) -> str:
        return "\n".join(self.lines)


def _label(entity_type: str, entity: dict) -> str:
    what = entity.get("kind") or entity.get("type") or SINGULAR[entity_type]
    ts = entity_time(entity_type, entity)
    return f"[{short_id(entity['id'])}] {what} {when(ts)}"


def _content(entity_type: str, entity: dict) -> str:
    if entity_type == "capsules":
        return f"[{entity['status']}] {entity['intent']}"
    if entity_type == "pins":
        note = f" (note: {entity['reason']})" if entity.get("reason") else ""
        return f"pins {entity['targetType']} {entity['targetId']}{note}"
    return entity["content"]


def _item(budget: Budget, label: str, content: str, *, flat: bool = True) -> str | None:
    """Add `label | content`, the content cut to what the budget has left; the content kept."""
    head = f"- {label} | "
    room = budget.room(len(head))
    if room < MIN_ITEM_CHARS and room < len(content):
        budget.full = True
        return None
    shown = one_line(content, room) if flat else cut(content, room)[0]
    if not flat and len(shown) > room:
        shown = shown[: max(room - 1, 0)] + "…"
    return shown if budget.add(head + shown) else None


def render_search(result: dict, max_tokens: int) -> tuple[str, dict]:
    """A RetrieveResult as text within `max_tokens`, and its lean structured form.

    The first line names the query and the matches; it is written only above at least one
    item (else a line says why nothing is listed)."""
    budget = Budget(max_tokens)
    prov = result["provenance"]
    query = one_line(prov["query"], QUERY_SHOWN)
    heading = f"search {query!r}: {prov['totalCandidates']} match(es)"
    budget.left -= len(heading) + 1
    pins, results = [], []
    summary = None
    for item in result["pins"]:
        pin, target = item["pin"], item["target"]
        note = f" (note: {pin['reason']})" if pin.get("reason") else ""
        label = f"PIN [{short_id(pin['id'])}] -> {_label(pin['targetType'] + 's', target)}"
        shown = _item(budget, label, target["content"] + note)
        if shown is None:
            break
        pins.append({"pinId": pin["id"], "id": target["id"], "content": shown})
    current = result.get("currentSummary")
    if current is not None and not budget.full:
        shown = _item(budget, f"SUMMARY {_label('summaries', current)}", current["content"])
        if shown is not None:
            summary = {"id": current["id"], "ts": current["ts"], "content": shown}
    for candidate in result["candidates"]:
        entity = candidate["entity"]
        etype = "observations" if "kind" in entity else "summaries"
        label = f"{candidate['score']:.2f} {_label(etype, entity)}"
        if candidate.get("supersededBy"):
            label += f" (superseded by [{short_id(candidate['supersededBy'])}])"
        shown = _item(budget, label, entity["content"])
        if shown is None:
            break
        row = {"id": entity["id"], "type": SINGULAR[etype], "score": candidate["score"]}
        if "kind" in entity:
            row["kind"] = entity["kind"]
        row.update(ts=entity_time(etype, entity), content=shown)
        if candidate.get("matchContext"):
            row["match"] = candidate["matchContext"]
        if candidate.get("supersededBy"):
            row["supersededBy"] = candidate["supersededBy"]
        results.append(row)
    if budget.lines:
        budget.lines.insert(0, heading)
    elif result["pins"] or current is not None or result["candidates"]:
        budget.lines = [f"{heading}; none fits in max_tokens={max_tokens}: raise it"]
    else:
        budget.lines = [f"search {query!r}: no matches"]
    truncated = len(results) < len(result["candidates"]) or prov["truncatedDueToTokenBudget"]
    structured = {
        "query": prov["query"],
        "pins": pins,
        "summary": summary,
        "results": results,
        "total": prov["totalCandidates"],
        "truncated": truncated,
    }
    return budget.text(), structured


def render_entities(
    found: list[tuple[str, dict]],
    max_tokens: int,
    *,
    heading: str,
    flat: bool = True,
    empty: str = "nothing found",
) -> tuple[str, dict]:
    """(type, entity) pairs as text within `max_tokens`, and their lean structured form.

    `heading` is written only above at least one item; `empty` when there is none."""
    if not found:
        return empty, {"items": [], "truncated": False}
    budget = Budget(max_tokens)
    budget.left -= 48 + len(heading) + 1  # the heading, and the closing "more not shown" line
    items = []
    for entity_type, entity in found:
        shown = _item(budget, _label(entity_type, entity), _content(entity_type, entity), flat=flat)
        if shown is None:
            break
        row = {k: v for k, v in entity.items() if k not in ("content", "provenance")}
        row["type"] = SINGULAR[entity_type]
        if "content" in entity:
            row["content"] = shown
        items.append(row)
    if items:
        budget.lines.insert(0, heading)
    if len(items) < len(found):
        more = "more " if items else ""
        budget.lines.append(f"[{len(found) - len(items)} {more}not shown: raise max_tokens]")
    return budget.text(), {"items": items, "truncated": len(items) < len(found)}
