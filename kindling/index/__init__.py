"""The derived SQLite FTS5 index of a store: a cache of the entity files, never the truth.

Modules, in the order they depend on each other:
- tokens: how names in text and queries split into words (busyTimeout = busy_timeout);
- traits: an observation's subject, error signature, role and changed file, kept per row;
- schema: tables, SCHEMA_VERSION, row shapes and the searchable text of an entity;
- scan: stat keys and reading entity files from disk (no SQLite);
- handoff: folder mtimes and the contract under which readers trust a running watcher;
- episodes: a session's story around a match: fixed errors, the fix, failed attempts;
- read: lookups, the FTS5 match pool, episodes, counts and problem files;
- scrub: deleting rows that held forgotten text so that nothing of it stays in the file;
- bulk: recording files an import just wrote without reading them back;
- sync: the incremental sync that brings the tables in step with the files;
- rebuild: building the index from nothing, and verifying it;
- db: `Index`, which opens the database and ties the rest together.
"""

from kindling.index.db import Index
from kindling.index.episodes import Episode, Fixer, Step
from kindling.index.schema import FileRead, Hit, Problem, SyncReport

__all__ = ["Episode", "FileRead", "Fixer", "Hit", "Index", "Problem", "Step", "SyncReport"]
