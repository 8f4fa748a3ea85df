"""What hooks did lately, as `kindling status` reads it: a hook that exits 0 has no one to tell.

One small JSON file beside the index, in the store's state folder outside the work tree
(`hooks.json`, see kindling.statedir): per event the last capture and a count, the last few
errors, and every unknown event name seen. The hooks write it (kindling.agents.activity);
reading it needs nothing but the store.
"""

from __future__ import annotations

import json
from pathlib import Path

from kindling.fileio import read_regular
from kindling.store import Store

ACTIVITY_NAME = "hooks.json"


def activity_path(store: Store) -> Path:
    """Where the hook activity of `store` is kept (beside its index)."""
    return store.state / ACTIVITY_NAME


def read_activity(store: Store) -> dict:
    """The hook activity report; empty sections when no hook has run or the file is unreadable."""
    empty: dict = {"events": {}, "errors": [], "unknownEvents": {}}
    try:
        data = json.loads(read_regular(activity_path(store)) or b"")
    except (OSError, ValueError):
        return empty
    if not isinstance(data, dict):
        return empty
    return {key: data.get(key, value) for key, value in empty.items()}
