"""Noting what hooks do, for `kindling status` (read back by kindling.activity).

The report is rewritten whole under a lock, so many hooks at once each leave their mark;
losing it loses nothing but this report.
"""

from __future__ import annotations

import json

from kindling import platform
from kindling.activity import activity_path, read_activity
from kindling.clock import now_ms
from kindling.fileio import write_atomic
from kindling.store import Store

KEEP_ERRORS = 10
KEEP_UNKNOWN = 20
MAX_MESSAGE_CHARS = 300


def note_activity(
    store: Store,
    event: str,
    *,
    recorded: str | None = None,
    error: str | None = None,
    known: bool = True,
) -> None:
    """Add one hook run to the report; never raises (the report must not break a hook)."""
    path = activity_path(store)
    now = now_ms()
    try:
        store.ensure_state()
        with platform.locked_file(f"{path}.lock"):
            data = read_activity(store)
            if not known:
                seen = data["unknownEvents"].get(event, {"count": 0})
                data["unknownEvents"][event] = {"at": now, "count": seen.get("count", 0) + 1}
                names = sorted(data["unknownEvents"], key=lambda n: -data["unknownEvents"][n]["at"])
                data["unknownEvents"] = {n: data["unknownEvents"][n] for n in names[:KEEP_UNKNOWN]}
            else:
                last = data["events"].get(event, {})
                entry = {"at": now, "count": int(last.get("count", 0)) + 1}
                if recorded:
                    entry["recorded"] = recorded
                data["events"][event] = entry
            if error:
                data["errors"] = [
                    *data["errors"][-(KEEP_ERRORS - 1) :],
                    {"at": now, "event": event, "message": error[:MAX_MESSAGE_CHARS]},
                ]
            body = json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8")
            write_atomic(path, body, durable=False)
    except OSError:
        pass
