"""The baseline: plain FTS5 over the same searchable text, restricted to the probe's repository.

Any word of the prompt (`\\w+`, lowercased, each quoted, joined by OR), the `porter unicode61`
tokenizer, ordered by bm25() then id, as evals/retrieval's `fts5-or-porter`. It indexes what
Kindling indexes: observation content unless redacted, and summary content, read back from
the built store into an in-memory SQLite database with each entity's repoId. As search it is
scored on its top 10; as recall, its top 3 count as injected.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from kindling import Memory

WORD = re.compile(r"\w+", re.UNICODE)
NAME = "fts5-or-porter"
RECALL_TOP = 3


def words(query: str) -> list[str]:
    """The query's words, lowercased, each safe to quote as an FTS5 string."""
    return list(dict.fromkeys(w.lower() for w in WORD.findall(query)))


def match_expression(query: str) -> str | None:
    found = words(query)
    # \w never matches a double quote, so quoting each word cannot break out of the string.
    return " OR ".join(f'"{w}"' for w in found) if found else None


def searchable(store_path: Path) -> list[tuple[str, str, str, str | None]]:
    """(id, kind, text, repoId) of every observation and summary, as Kindling indexes them.

    `kind` is the observation's kind, or "summary".
    """
    rows = []
    with Memory(store_path) as memory:
        store = memory.store
        for entity_type in ("observations", "summaries"):
            for stored in store.walk(entity_type):
                entity, _ = store.load_path(entity_type, stored.path)
                if entity_type == "observations" and entity["redacted"]:
                    continue
                kind = entity["kind"] if entity_type == "observations" else "summary"
                repo = (entity.get("scopeIds") or {}).get("repoId")
                rows.append((entity["id"], kind, entity["content"], repo))
    rows.sort()
    return rows


class Baseline:
    """The porter table, built in memory from the store's text."""

    def __init__(self, store_path: Path) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute(
            "CREATE VIRTUAL TABLE porter USING fts5(id UNINDEXED, repo UNINDEXED, body, "
            "tokenize = 'porter unicode61')"
        )
        rows = searchable(store_path)
        self.conn.executemany(
            "INSERT INTO porter(id, repo, body) VALUES (?, ?, ?)",
            [(i, repo, text) for i, _, text, repo in rows],
        )
        self.entities = {i: (kind, text, repo) for i, kind, text, repo in rows}
        self.size = len(rows)

    def rank(self, query: str, repo_ids: tuple[str, ...], limit: int = 10) -> list[str]:
        """The top `limit` ids for `query` among the entities of these repoIds."""
        expression = match_expression(query)
        if expression is None or not repo_ids:
            return []
        marks = ", ".join("?" for _ in repo_ids)
        sql = (
            f"SELECT id FROM porter WHERE porter MATCH ? AND repo IN ({marks}) "
            "ORDER BY bm25(porter), id LIMIT ?"
        )
        return [row[0] for row in self.conn.execute(sql, (expression, *repo_ids, limit))]

    def close(self) -> None:
        self.conn.close()
