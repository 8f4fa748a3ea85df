"""Arguments a tool's input schema refuses, said in one line a person (or a model) can act on.

The validation library's own text spans several lines, names its internal error types and
links to its documentation; what the caller needs is which argument, what it must be, and
what was sent instead: `limit must be an integer from 1 to 200 (got "lots")`. What an
argument must be is read from the same JSON schema the tool publishes, so the message and
the schema never disagree.
"""

from __future__ import annotations

import json
from typing import Any

from kindling.agents.intake import keep_text

MAX_PROBLEMS = 3
MAX_CHARS = 300
SHOWN_CHARS = 40
_PLURALS = {"string": "strings", "integer": "integers", "number": "numbers", "object": "objects"}


def argument_problem(tool: str, errors: list[dict], schema: dict) -> str:
    """One line naming what is wrong with a call's arguments (`errors` as pydantic lists them)."""
    # What is wrong -> the arguments it is wrong with, and what each sent: arguments that
    # fail alike share one clause, so a list of ten bad kinds stays one short line.
    alike: dict[str, list[tuple[str, str | None]]] = {}
    for error in errors:
        subject, verdict, sent = _problem(tool, error, schema)
        if all(s != subject for s, _ in alike.get(verdict, [])):
            alike.setdefault(verdict, []).append((subject, sent))
    problems = []
    for verdict, cases in alike.items():
        subjects = ", ".join(s for s, _ in cases)
        sent = cases[0][1]
        problems.append(
            f"{subjects} {verdict}" + (f" (got {sent})" if len(cases) == 1 and sent else "")
        )
    if not problems:
        return f"{tool}: the arguments do not match its input schema"
    shown = "; ".join(problems[:MAX_PROBLEMS])
    if len(problems) > MAX_PROBLEMS:
        shown += f" (and {len(problems) - MAX_PROBLEMS} more)"
    return shown if len(shown) <= MAX_CHARS else shown[: MAX_CHARS - 1] + "…"


def _problem(tool: str, error: dict, schema: dict) -> tuple[str, str, str | None]:
    """(which argument, what is wrong with it, what was sent when that helps)."""
    defs = schema.get("$defs", {})
    node, names = _resolve(schema, defs), []
    for part in error.get("loc", ()):
        if isinstance(part, int) and node.get("type") == "array":
            node = _resolve(node.get("items", {}), defs)
            names.append(f"[{part}]")
        elif isinstance(part, str) and part in node.get("properties", {}):
            node = _resolve(node["properties"][part], defs)
            names.append(f".{part}" if names else part)
        elif error.get("type") == "extra_forbidden" and isinstance(part, str):
            fields = ", ".join(node.get("properties", {}))
            owner = "".join(names) or tool
            return (
                owner,
                f"has no field {part!r}" + (f" (it takes {fields})" if fields else ""),
                None,
            )
        # Anything else names a branch of the validator, not a part of the arguments.
    where = "".join(names) or "the arguments"
    if error.get("type") == "missing":
        return where, "is required", None
    return where, f"must be {_expected(node, defs)}", _shown(error.get("input"))


def _resolve(node: dict, defs: dict) -> dict:
    """The schema a value must match: references followed, an optional value's null dropped."""
    for _ in range(10):  # references in these schemas are shallow; never loop on a cycle
        if "$ref" in node:
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        elif "anyOf" in node:
            forms = [f for f in node["anyOf"] if f.get("type") != "null"]
            if len(forms) != 1:
                return node
            node = forms[0]
        else:
            break
    return node


def _expected(node: dict, defs: dict) -> str:
    if "enum" in node:
        return "one of " + ", ".join(str(v) for v in node["enum"])
    kind = node.get("type")
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        low, high = node.get("minimum"), node.get("maximum")
        if low is not None and high is not None:
            return f"{noun} from {low} to {high}"
        if low is not None:
            return f"{noun} of at least {low}"
        return f"{noun} of at most {high}" if high is not None else noun
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        return "a string"
    if kind == "array":
        items = _resolve(node.get("items", {}), defs)
        if "enum" in items:
            what = "values from " + ", ".join(str(v) for v in items["enum"])
        else:
            what = _PLURALS.get(items.get("type"), "values")
        low, high = node.get("minItems"), node.get("maxItems")
        if low is not None and high is not None:
            return f"a list of {low} to {high} {what}"
        if low is not None:
            return f"a list of at least {low} {what}"
        return f"a list of at most {high} {what}" if high is not None else f"a list of {what}"
    if kind == "object":
        fields = node.get("properties")
        if fields and node.get("additionalProperties") is False:
            return f"an object with any of the fields {', '.join(fields)}"
        return "a JSON object"
    if "anyOf" in node:
        return " or ".join(_expected(_resolve(f, defs), defs) for f in node["anyOf"])
    return "a value of the published schema"


def _shown(value: Any) -> str:
    """What was sent, short and on one line."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        # Python will not write an int of more than 4,300 digits as text, nor should this line.
        return str(value) if value.bit_length() <= 128 else "a number too large to show"
    if isinstance(value, float):
        return json.dumps(value) if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, str):
        text = value if len(value) <= SHOWN_CHARS else value[: SHOWN_CHARS - 1] + "…"
        return json.dumps(keep_text(text), ensure_ascii=False)
    if isinstance(value, list):
        return f"a list of {len(value)}" if value else "an empty list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"
