"""Text and JSON from outside (hook payloads, MCP messages, CLI text): odd input is kept.

What an agent sends is memory worth having, so nothing here refuses a value the store cannot
hold; it keeps the nearest value it can, visibly:

- A lone surrogate (an unpaired `\\ud800` escape, or argv bytes that are not UTF-8) becomes
  U+FFFD, and so does any byte that is not UTF-8: entity files are UTF-8, which cannot hold it.
- A number the store cannot hold exactly is kept as its text, digits and all: an integer
  outside the signed 64-bit range provenance allows (kindling.model.MAX_JSON_INT), and a float
  JSON cannot write (`1e400`, which reads as infinity, `NaN`, `Infinity`). Text, not a clamped
  number: a clamped exit code or count would record a value nobody sent.
- Nesting deeper than MAX_DEPTH is cut there: the deeper value becomes TOO_DEEP. That is far
  below the 64 levels provenance may hold, and below what any parser after this one takes.

The one exception is text a person marked `<private>`: every string that comes in through here
has it taken out (kindling.agents.private), so it reaches no file, index or summary.

Parsing is json's C scanner with hooks for the numbers, then one walk over the result for the
strings and the depth; only a document too deep for the scanner is first cut in its text.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from kindling.agents.private import strip_private
from kindling.model import MAX_JSON_INT

MAX_DEPTH = 32
TOO_DEEP = "[nested too deep]"
REPLACEMENT = "\ufffd"

_SURROGATE = re.compile("[\ud800-\udfff]")
# Characters in the longest integer the store holds (its minimum, sign included); anything
# longer is out of range without converting it, which Python refuses past 4,300 digits.
_INT_CHARS = len(str(-MAX_JSON_INT - 1))
# A JSON string (escapes included) or a bracket: enough to follow nesting outside strings.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def keep_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (UTF-8 cannot hold one) and every
    `<private>` section taken out."""
    text = strip_private(text)
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def keep_int(digits: str) -> int | str:
    """An integer written in `digits`: an int when the store can hold it, else the digits."""
    if len(digits) <= _INT_CHARS:
        value = int(digits)
        if -MAX_JSON_INT - 1 <= value <= MAX_JSON_INT:
            return value
    return digits


def _keep_float(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text


# NaN, Infinity and -Infinity (which json reads though JSON has none) stay as their names.
_DECODER = json.JSONDecoder(parse_int=keep_int, parse_float=_keep_float, parse_constant=str)


def loads(data: bytes | str) -> Any:
    """A JSON document from outside, odd input kept; ValueError when it is not JSON at all."""
    if isinstance(data, (bytes, bytearray)):
        text = bytes(data).decode("utf-8-sig", "replace")
    else:
        text = data
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        try:
            value = _DECODER.decode(_cut_deep(text))
        except RecursionError:
            raise ValueError("brackets nested too deeply that never close") from None
    return _kept(value, 0)


def _kept(value: Any, depth: int) -> Any:
    """`value` as `loads` parsed it, surrogates replaced and nesting cut: the one walk."""
    if isinstance(value, str):
        return keep_text(value)
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        return {keep_text(k): _kept(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        return [_kept(v, depth + 1) for v in value]
    return value


def _cut_deep(text: str) -> str:
    """JSON text with each value nested deeper than MAX_DEPTH written as TOO_DEEP instead.

    Only for documents too deep for json's recursive scanner: it follows brackets outside
    strings, so it never needs to recurse itself. Text that is not JSON stays not JSON.
    """
    parts: list[str] = []
    depth = 0
    start = None  # where the value being cut began
    kept_to = 0
    for found in _STRING_OR_BRACKET.finditer(text):
        token = found.group()
        if token in "[{":
            depth += 1
            if depth == MAX_DEPTH + 1:
                start = found.start()
        elif token in "]}":
            if depth == MAX_DEPTH + 1 and start is not None:
                parts.append(text[kept_to:start])
                parts.append(json.dumps(TOO_DEEP))
                kept_to = found.end()
                start = None
            depth -= 1
    parts.append(text[kept_to:])
    return "".join(parts)
