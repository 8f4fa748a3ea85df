"""Reading the index: lookups by id, prefix and scope, ranked full-text matches, counts.

`Index` (kindling.index) inherits these. They only ever read, and expect the index to have
been brought in step with the files first (`Index.sync`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from kindling.index import episodes, schema
from kindling.index.episodes import Episode, Fixer, Step
from kindling.index.scan import ObjectPaths
from kindling.index.schema import Hit, Problem
from kindling.index.tokens import index_extra
from kindling.model import ENTITY_TYPES
from kindling.store import Found


def problem_files(conn: sqlite3.Connection, paths: ObjectPaths) -> list[Problem]:
    """Files the last sync could not index, by path."""
    rows = conn.execute("SELECT path, problem FROM files WHERE problem IS NOT NULL ORDER BY path")
    return [Problem(paths.abspath(p), reason) for p, reason in rows]


class IndexReader:
    """The read-only half of an Index."""

    conn: sqlite3.Connection
    paths: ObjectPaths

    def _indexed(self, row: tuple) -> Found:
        return Found(row[0], schema.load(row[1]), self.paths.abspath(row[2]))

    def get(self, entity_id: str, entity_type: str | None = None) -> Found | None:
        """The entity with this exact id (of any type when none is given), or None."""
        sql = (
            "SELECT e.type, e.json, f.path FROM entities e JOIN files f ON f.id = e.rowid "
            "WHERE e.id = ? AND e.shadowed = 0"
        )
        params: list = [entity_id]
        if entity_type is not None:
            sql += " AND e.type = ?"
            params.append(entity_type)
        sql += f" ORDER BY {schema.TYPE_ORDER.replace('type', 'e.type')} LIMIT 1"
        row = self.conn.execute(sql, params).fetchone()
        return self._indexed(row) if row else None

    def match_prefix(self, prefix: str, limit: int = 10) -> list[Found]:
        """Entities (any type) whose id starts with `prefix`, by id."""
        if not prefix:
            return []
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self.conn.execute(
            "SELECT e.type, e.json, f.path FROM entities e JOIN files f ON f.id = e.rowid "
            "WHERE e.id >= ? AND e.id < ? AND e.shadowed = 0 "
            f"ORDER BY e.id, {schema.TYPE_ORDER.replace('type', 'e.type')} LIMIT ?",
            (prefix, upper, limit),
        ).fetchall()
        return [self._indexed(r) for r in rows]

    def entities(
        self,
        entity_type: str,
        *,
        scope: dict | None = None,
        kinds: list[str] | None = None,
        since: int | None = None,
        limit: int | None = None,
    ) -> list[dict]:
        """Entities of one type in scope, newest first (then id ascending)."""
        where, params = filters(entity_type, scope=scope, kinds=kinds, since=since)
        # A session holds few rows: find them by session, then sort (`+` keeps the planner,
        # which has no statistics, from walking every row of the type in time order instead).
        order = "+e.time DESC, e.id" if scope and scope.get("sessionId") else "e.time DESC, e.id"
        sql = f"SELECT json FROM entities e WHERE {where} ORDER BY {order}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [schema.load(r[0]) for r in self.conn.execute(sql, params)]

    def open_capsules(self, session_id: str | None = None) -> list[dict]:
        """Open capsules (of one session when given), most recently opened first."""
        sql = (
            "SELECT json FROM entities WHERE type = 'capsules' AND status = 'open' AND shadowed = 0"
        )
        params: list = []
        if session_id is not None:
            sql += " AND session = ?"
            params.append(session_id)
        sql += " ORDER BY time DESC, id"
        return [schema.load(r[0]) for r in self.conn.execute(sql, params)]

    def summarised_capsules(self, scope: dict | None = None, *, by: str = "opened") -> list[dict]:
        """Capsules in scope that name a summary, most recently opened (or closed) first."""
        where, params = filters("capsules", scope=scope)
        if by == "closed":
            order = "e.closed_at DESC, e.id"
            where += " AND e.closed_at IS NOT NULL"
        else:
            order = "e.time DESC, e.id"
        where += " AND e.summary_id IS NOT NULL"
        sql = f"SELECT json FROM entities e WHERE {where} ORDER BY {order}"
        return [schema.load(r[0]) for r in self.conn.execute(sql, params)]

    def match(
        self,
        fts_query: str,
        *,
        scope: dict | None = None,
        kinds: list[str] | None = None,
        since: int | None = None,
        exclude: Iterable[tuple[str, str]] = (),
        limit: int = 100,
    ) -> tuple[int, list[Hit]]:
        """(number of searchable entities matching an FTS5 expression, the best `limit` by bm25).

        Ties in bm25 go to the newer entity, then the smaller id, so the pool is deterministic.
        """
        where, params = self._searchable(scope=scope, kinds=kinds, since=since, exclude=exclude)
        sql = f"""
            WITH m AS MATERIALIZED (
                SELECT e.rowid AS rid, e.type AS type, e.id AS id, e.time AS ts, e.kind AS kind,
                       e.session AS session, e.role AS role, bm25(fts) AS b
                FROM fts CROSS JOIN entities e ON e.rowid = fts.rowid
                WHERE fts MATCH ? AND ({where})
            )
            SELECT rid, type, id, ts, kind, session, role, b, (SELECT count(*) FROM m) FROM m
            ORDER BY b, ts DESC, id, type
            LIMIT ?
        """
        rows = self.conn.execute(sql, [fts_query, *params, limit]).fetchall()
        total = rows[0][8] if rows else 0
        return total, [Hit(*r[:8]) for r in rows]

    def document_frequencies(self, tokens: Iterable[str]) -> tuple[int, dict[str, int]]:
        """(indexed texts in all, how many of them hold each token, as the index stores it)."""
        total = self.conn.execute("SELECT count(*) FROM fts_docsize").fetchone()[0]
        found: dict[str, int] = {}
        for token in sorted(set(tokens)):
            # One lookup per token: fts5vocab seeks on `term = ?` but scans every term for IN.
            row = self.conn.execute("SELECT doc FROM fts_terms WHERE term = ?", (token,)).fetchone()
            found[token] = row[0] if row else 0
        return total, found

    def episodes(self, around: Iterable[tuple[str, int, str]], limit: int) -> dict[str, Episode]:
        """The episodes around steps ((session, ts, id), best first): kindling.index.episodes."""
        return episodes.load(self.conn, around, limit=limit)

    def fixed_later(self, errors: Iterable[Step]) -> dict[int, Fixer]:
        """Errors a later success on their subject fixed (kindling.index.episodes)."""
        return episodes.fixed_later(self.conn, errors)

    def fixed_errors(self, ids: Iterable[str]) -> dict[str, str]:
        """Of these observations, the errors a later success fixed: error id -> success id
        (the rule search uses, kindling.index.episodes.fixed_later)."""
        errors = [s for s in episodes.steps(self.conn, ids) if s.kind == "error"]
        by_rowid = {s.rowid: s.id for s in errors}
        return {by_rowid[r]: fixer.id for r, fixer in self.fixed_later(errors).items()}

    def searchable_among(
        self,
        rowids: Iterable[int],
        *,
        scope: dict | None = None,
        kinds: list[str] | None = None,
        since: int | None = None,
        exclude: Iterable[tuple[str, str]] = (),
    ) -> set[int]:
        """Those of `rowids` that are searchable in scope, minus `exclude`."""
        wanted = sorted(set(rowids))
        if not wanted:
            return set()
        where, params = self._searchable(scope=scope, kinds=kinds, since=since, exclude=exclude)
        marks = ", ".join("?" * len(wanted))
        # NOT INDEXED: found by rowid, never by walking a type's rows in time order.
        sql = (
            f"SELECT e.rowid FROM entities e NOT INDEXED JOIN fts_docsize d ON d.id = e.rowid "
            f"WHERE e.rowid IN ({marks}) AND ({where})"
        )
        return {r[0] for r in self.conn.execute(sql, [*wanted, *params])}

    def _searchable(
        self,
        *,
        scope: dict | None,
        kinds: list[str] | None,
        since: int | None,
        exclude: Iterable[tuple[str, str]],
    ) -> tuple[str, list]:
        """SQL conditions on `e` selecting searchable entities in scope, minus `exclude`."""
        types = ["observations"] if kinds else ["observations", "summaries"]
        where, params = [], []
        for etype in types:
            w, p = filters(etype, scope=scope, kinds=kinds, since=since)
            where.append(f"({w})")
            params.extend(p)
        sql = " OR ".join(where)
        exclude = sorted(exclude)
        if exclude:
            pairs = ", ".join(["(?, ?)"] * len(exclude))
            sql = f"({sql}) AND (e.type, e.id) NOT IN (VALUES {pairs})"
            params.extend(v for pair in exclude for v in pair)
        return sql, params

    def rows(self, rowids: list[int]) -> dict[int, dict]:
        """Entities by index rowid (as `match` returns them)."""
        if not rowids:
            return {}
        marks = ", ".join("?" * len(rowids))
        rows = self.conn.execute(
            f"SELECT rowid, json FROM entities WHERE rowid IN ({marks})", rowids
        )
        return {rid: schema.load(data) for rid, data in rows}

    def name_spellings(self, rowids: Iterable[int]) -> dict[int, str]:
        """The other spellings of the names in each searchable text, as the index holds them
        after the text (kindling.index.tokens.searchable): rowid -> those words."""
        wanted = sorted(set(rowids))
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        rows = self.conn.execute(
            f"SELECT e.rowid, e.json FROM entities e NOT INDEXED "
            f"JOIN fts_docsize d ON d.id = e.rowid WHERE e.rowid IN ({marks})",
            wanted,
        )
        return {rowid: index_extra(schema.load(blob)["content"]) for rowid, blob in rows}

    def counts(self) -> dict:
        """Entities by type, plus redacted observations and open capsules."""
        out = {t: 0 for t in ENTITY_TYPES}
        out.update(redacted=0, openCapsules=0)
        rows = self.conn.execute(
            "SELECT type, count(*), sum(redacted), sum(status = 'open') FROM entities "
            "WHERE shadowed = 0 GROUP BY type"
        )
        for etype, n, redacted, open_ in rows:
            out[etype] = n
            out["redacted"] += redacted or 0
            out["openCapsules"] += open_ or 0
        return out

    def problems(self) -> list[Problem]:
        """Files the last sync could not index, by path."""
        return problem_files(self.conn, self.paths)

    def duplicates(self) -> list[tuple[str, str, list[str]]]:
        """(type, id, paths) for every id held by more than one file; the first path wins."""
        rows = self.conn.execute(
            "SELECT e.type, e.id, f.path, e.shadowed FROM entities e "
            "JOIN files f ON f.id = e.rowid "
            "WHERE (e.type, e.id) IN (SELECT type, id FROM entities WHERE shadowed = 1) "
            "ORDER BY e.type, e.id, e.shadowed, f.path"
        ).fetchall()
        out: dict[tuple[str, str], list[str]] = {}
        for etype, eid, path, _ in rows:
            out.setdefault((etype, eid), []).append(self.paths.abspath(path))
        return [(t, i, paths) for (t, i), paths in out.items()]

    def dump(self) -> dict:
        """Everything the index holds, keyed by path, for comparing two indexes in tests/fsck."""
        files = {
            row[0]: row[1:]
            for row in self.conn.execute(
                "SELECT path, type, size, hash, problem FROM files ORDER BY path"
            )
        }
        columns = ", ".join(f"e.{c.strip()}" for c in schema.ENTITY_COLUMNS.split(",")[1:])
        rows = self.conn.execute(
            f"SELECT f.path, e.shadowed, {columns}, d.sz FROM entities e JOIN files f "
            "ON f.id = e.rowid LEFT JOIN fts_docsize d ON d.id = e.rowid ORDER BY f.path"
        )
        entities = {row[0]: row[1:] for row in rows}
        counts = self.conn.execute(
            "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM entities), "
            "(SELECT count(*) FROM fts_docsize)"
        ).fetchone()
        return {"files": files, "entities": entities, "counts": counts}


def filters(
    entity_type: str,
    *,
    scope: dict | None = None,
    kinds: list[str] | None = None,
    since: int | None = None,
    alias: str = "e",
) -> tuple[str, list]:
    """SQL conditions (and parameters) selecting winning entities of a type in scope."""
    where = [f"{alias}.type = ?", f"{alias}.shadowed = 0"]
    params: list = [entity_type]
    for key, value in (scope or {}).items():
        column = f"{alias}.{schema.SCOPE_COLUMNS[key]}"
        if entity_type == "pins":
            # A pin matches a field it shares, or one it does not carry at all.
            where.append(f"({column} IS NULL OR {column} = ?)")
        else:
            where.append(f"{column} = ?")
        params.append(value)
    if kinds:
        where.append(f"{alias}.kind IN ({', '.join('?' * len(kinds))})")
        params.extend(kinds)
    if since is not None:
        where.append(f"{alias}.time >= ?")
        params.append(since)
    return " AND ".join(where), params
