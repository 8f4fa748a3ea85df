"""Two plain FTS5 baselines over the same store's searchable text, in a separate database.

- `fts5-and`: default unicode61 tokenizer, every query word required, ordered by FTS5 rank.
- `fts5-or-porter`: porter stemming, any query word, ordered by bm25().

Both see what Kindling indexes: observation content (unless redacted) and summary content.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from kindling import Memory

WORD = re.compile(r"\w+", re.UNICODE)
NAMES = ("fts5-and", "fts5-or-porter")


def words(query: str) -> list[str]:
    """The query's words, lowercased, each safe to quote as an FTS5 string."""
    return list(dict.fromkeys(w.lower() for w in WORD.findall(query)))


def _match(query: str, joiner: str) -> str | None:
    found = words(query)
    # \w never matches a double quote, so quoting each word cannot break out of the string.
    return f" {joiner} ".join(f'"{w}"' for w in found) if found else None


def searchable(store_path: Path) -> list[tuple[str, str]]:
    """(id, text) of every observation and summary in the store, as Kindling indexes them."""
    rows = []
    with Memory(store_path) as memory:
        store = memory.store
        for entity_type in ("observations", "summaries"):
            for stored in store.walk(entity_type):
                entity, _ = store.load_path(entity_type, stored.path)
                if entity_type == "observations" and entity["redacted"]:
                    continue
                rows.append((entity["id"], entity["content"]))
    rows.sort()
    return rows


class Baselines:
    """Both baseline tables, built in memory from the store's text."""

    def __init__(self, store_path: Path) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE plain USING fts5(id UNINDEXED, body)")
        self.conn.execute(
            "CREATE VIRTUAL TABLE porter USING fts5(id UNINDEXED, body, "
            "tokenize = 'porter unicode61')"
        )
        rows = searchable(store_path)
        for table in ("plain", "porter"):
            self.conn.executemany(f"INSERT INTO {table}(id, body) VALUES (?, ?)", rows)
        self.size = len(rows)

    def rank(self, name: str, query: str, limit: int = 10) -> list[str]:
        """The top `limit` ids for `query` by the named baseline."""
        if name == "fts5-and":
            table, expression = "plain", _match(query, "AND")
            order = "rank"
        elif name == "fts5-or-porter":
            table, expression = "porter", _match(query, "OR")
            order = f"bm25({table})"
        else:
            raise ValueError(f"unknown baseline {name!r}")
        if expression is None:
            return []
        sql = f"SELECT id FROM {table} WHERE {table} MATCH ? ORDER BY {order}, id LIMIT ?"
        return [row[0] for row in self.conn.execute(sql, (expression, limit))]

    def close(self) -> None:
        self.conn.close()
