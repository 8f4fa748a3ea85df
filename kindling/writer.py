"""Writing entities: the file first, then its index rows, so what was just written is found at
once. Capture and the bundle importer both write through a `Writer`.

The file is the truth: an index that cannot take a file loses nothing, since the next sync
reads it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kindling.errors import KindlingError
from kindling.store import Store, WrittenFile

if TYPE_CHECKING:
    from kindling.index import Index


class Written(NamedTuple):
    """An entity just stored, where, and how many secrets were masked on the way in."""

    entity_type: str
    entity: dict
    path: Path
    masked: int = 0


class Writer:
    """Writes one store's entity files and records them in its index.

    `index` opens the index (or returns the open one) when a write needs it.
    """

    def __init__(self, store: Store, index: Callable[[], Index]) -> None:
        self.store = store
        self._index = index

    def write(self, entity_type: str, entity: dict, masked: int = 0) -> Written:
        """Validate and durably write one entity, then index it."""
        path, data = self.store.write(entity_type, entity)
        try:
            self._index().record(entity_type, path, data, entity)
        except (sqlite3.Error, KindlingError):
            pass  # the file is written; the next sync heals the index
        return Written(entity_type, entity, path, masked)

    def record_many(self, written: Iterable[WrittenFile]) -> None:
        """Index files just written in bulk, at once."""
        try:
            self._index().record_many(written)
        except (sqlite3.Error, KindlingError):
            pass  # the files are written; the next sync indexes them

    def open_index(self) -> None:
        """Open the index now (building it, when new), ahead of a bulk write.

        Opened at the first record instead, a new index would be built by reading back every
        file written so far. A failure waits for that first record.
        """
        with contextlib.suppress(sqlite3.Error, KindlingError):
            self._index()
