"""Which Claude Code sessions this clone ran, kept where no commit can reach.

Each clone that opens a session's capsule notes it in the store's state folder
(kindling.statedir: `<git dir>/kindling/<key>/sessions/`), never in the work tree, so the note
is this clone's alone and never travels with a push. It says which capsules the session had
here, which is the latest, and whether the session ended here: ids only, no words of the
memory. Teammates see the same capsule without the note: they leave a
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
from kindling.model import is_valid_id

DIRNAME = "sessions"
MAX_NOTE_BYTES = 256 * 1024
MAX_OWNED = 1000  # capsule ids kept per session: far more than any session opens


class Owned(NamedTuple):
    """This clone's note about one session."""

    capsule_id: str  # the latest capsule this clone opened for it
    owned: tuple[str, ...]  # every capsule id this clone opened for the session
    ended: bool  # the session's SessionEnd closed `capsule_id` here


def _path(store, session_id: str) -> Path:
    return store.state / DIRNAME / (hashing.hexdigest(session_id.encode("utf-8"))[:32] + ".json")


def recall(store, session_id: str) -> Owned | None:
    """This clone's note about `session_id`, or None when the session never ran here."""
    try:
        raw = read_regular(_path(store, session_id), follow_symlinks=False, limit=MAX_NOTE_BYTES)
        data = canonical.decode(raw) if raw else None
    except (OSError, canonical.DecodeError, KindlingError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("owned"), list):
        return None
    ids = tuple(i for i in data["owned"] if is_valid_id(i))
    latest = data.get("capsuleId")
    if latest not in ids:
        return None
    return Owned(latest, ids, data.get("ended") is True)


def remember(store, capsule: dict, *, ended: bool = False) -> None:
    """Note that this clone runs (or ended) `capsule`'s session; best effort, never raises.

    Only ids go in the note, never words of the memory: forgetting need not look here.
    """
    session = capsule.get("scopeIds", {}).get("sessionId")
    if not isinstance(session, str):
        return
    before = recall(store, session)
    owned = list(before.owned) if before else []
    if capsule["id"] not in owned:
        owned.append(capsule["id"])
    note = {"capsuleId": capsule["id"], "ended": ended, "owned": owned[-MAX_OWNED:]}
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
