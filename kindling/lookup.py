"""Finding entities by id or prefix, and a session's open capsule, over the store and its index.

A full id is found by its path alone (no index); a prefix or a session's open capsule needs
the index, brought in step with the files first through the `sync` given (for a capsule,
a sync of the capsule files alone).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kindling.errors import KindlingError, NotFoundError
from kindling.model import ENTITY_TYPES, SINGULAR, check_id
from kindling.store import Found, Store

if TYPE_CHECKING:
    from kindling.index import Index, SyncReport

MIN_PREFIX = 6


class Lookup:
    """Resolves references for one store; `index()` opens the index only when needed."""

    def __init__(
        self, store: Store, index: Callable[[], Index], sync: Callable[..., SyncReport]
    ) -> None:
        self.store = store
        self._index = index
        self._sync = sync

    def resolve(self, ref: str, entity_type: str | None = None) -> Found:
        """Find an entity by full id or by a unique prefix of at least 6 characters."""
        check_id(ref)
        what = SINGULAR[entity_type] if entity_type else "entity"
        for etype in (entity_type,) if entity_type else ENTITY_TYPES:
            entity = self.store.load(etype, ref)
            if entity is not None:
                return Found(etype, entity, str(self.store.path_for(etype, ref)))
        if len(ref) < MIN_PREFIX:
            raise NotFoundError(
                f"no {what} with id {ref!r} (id prefixes need {MIN_PREFIX}+ characters)"
            )
        self._sync()
        matches = [
            m
            for m in self._index().match_prefix(ref, limit=11)
            if entity_type is None or m.entity_type == entity_type
        ]
        if not matches:
            raise NotFoundError(f"no {what} with id or prefix {ref!r}")
        if len(matches) > 1:
            shown = ", ".join(f"{m.entity['id']} ({SINGULAR[m.entity_type]})" for m in matches[:10])
            more = " and more" if len(matches) > 10 else ""
            raise KindlingError(f"id prefix {ref!r} is ambiguous: {shown}{more}")
        return matches[0]

    def load_for_update(self, entity_type: str, entity_id: str) -> dict:
        """An entity's current file contents (call with its lock held)."""
        entity = self.store.load(entity_type, entity_id)
        if entity is None:
            raise NotFoundError(f"no {SINGULAR[entity_type]} with id {entity_id!r}")
        return entity

    def open_session_capsule(self, session_id: str) -> dict | None:
        """The open session capsule of a session, when there is one.

        Only the capsule files are checked, never the (many more) observations, and always
        afresh: another process may have opened or closed one a moment ago.
        """
        self._sync(types=("capsules",))
        for capsule in self._index().open_capsules(session_id):
            if capsule["type"] == "session":
                current = self.store.load("capsules", capsule["id"])
                if current is not None and current["status"] == "open":
                    return current
        return None
