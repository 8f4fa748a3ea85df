"""Which Claude Code sessions this clone ran, kept where no commit can reach.

Each clone that opens a session's capsule notes it in the store's state folder
(kindling.statedir: `<git dir>/kindling/<key>/sessions/`), never in the work tree, so the note
is this clone's alone and never travels with a push. It says which capsules the session had
here, a copy of the latest one (to bring its file back when a `git switch` takes it away) and
whether the session ended here. Teammates see the same capsule without the note: they leave a
capsule that may still be alive to its owner (kindling.agents.digest).

The folder is outside the work tree but still only read as data: bounded, parsed, checked.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import NamedTuple

from kindling import canonical, hashing
from kindling.errors import KindlingError
from kindling.fileio import read_regular
from kindling.model import entity_errors, is_valid_id

DIRNAME = "sessions"
MAX_NOTE_BYTES = 256 * 1024
MAX_OWNED = 1000  # capsule ids kept per session: far more than any session opens


class Owned(NamedTuple):
    """This clone's note about one session."""

    capsule: dict  # the latest capsule this clone opened for it, as last written here
    owned: tuple[str, ...]  # every capsule id this clone opened for the session
    ended: bool  # the session's SessionEnd closed `capsule` here


def _path(store, session_id: str) -> Path:
    return store.state / DIRNAME / (hashing.hexdigest(session_id.encode("utf-8"))[:32] + ".json")


def recall(store, session_id: str) -> Owned | None:
    """This clone's note about `session_id`, or None when the session never ran here."""
    try:
        raw = read_regular(_path(store, session_id), follow_symlinks=False, limit=MAX_NOTE_BYTES)
        data = canonical.decode(raw) if raw else None
    except (OSError, canonical.DecodeError, KindlingError):
        return None
    if not isinstance(data, dict):
        return None
    capsule, owned = data.get("capsule"), data.get("owned")
    if entity_errors("capsules", capsule) or not isinstance(owned, list):
        return None
    ids = tuple(i for i in owned if is_valid_id(i))
    if capsule.get("scopeIds", {}).get("sessionId") != session_id or capsule["id"] not in ids:
        return None
    return Owned(capsule, ids, data.get("ended") is True)


def remember(store, capsule: dict, *, ended: bool = False) -> None:
    """Note that this clone runs (or ended) `capsule`'s session; best effort, never raises."""
    session = capsule.get("scopeIds", {}).get("sessionId")
    if not isinstance(session, str):
        return
    before = recall(store, session)
    owned = list(before.owned) if before else []
    if capsule["id"] not in owned:
        owned.append(capsule["id"])
    note = {"capsule": capsule, "ended": ended, "owned": owned[-MAX_OWNED:]}
    with contextlib.suppress(OSError, canonical.EncodeError):
        folder = store.ensure_state() / DIRNAME
        folder.mkdir(exist_ok=True)
        store.write_file(_path(store, session), canonical.encode(note), durable=False)


def owns(store, capsule: dict) -> bool:
    """True when this clone opened `capsule` for its session."""
    session = capsule.get("scopeIds", {}).get("sessionId")
    if not isinstance(session, str):
        return False
    note = recall(store, session)
    return note is not None and capsule["id"] in note.owned
