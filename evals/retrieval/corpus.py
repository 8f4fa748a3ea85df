"""The labelled corpus: bug sessions and queries as committed JSON, their checks and timeline."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
SESSION_FILES = ("sessions_a.json", "sessions_b.json", "sessions_c.json", "sessions_d.json")
QUERY_FILES = {"dev": "queries_dev.json", "heldout": "queries_heldout.json"}

REPO_ID = "github.com/acme/platform"
KINDS = ("command", "error", "tool_call", "file_diff", "message")
STYLES = ("question", "error", "identifier", "path", "paraphrase")

# The bug sessions run from late January to late September 2026; distractors run to the end of
# November, and every search is made as of the first of December.
FIRST_SESSION = datetime(2026, 1, 20, 9, 0, tzinfo=timezone.utc)
SESSION_SPACING = timedelta(days=8)
NOW = datetime(2026, 12, 1, 0, 0, tzinfo=timezone.utc)


def ms(moment: datetime) -> int:
    """Epoch milliseconds of an aware datetime."""
    return int(moment.timestamp() * 1000)


def load_sessions() -> list[dict]:
    """Every bug session, in timeline order."""
    sessions: list[dict] = []
    for name in SESSION_FILES:
        sessions.extend(json.loads((DATA / name).read_text(encoding="utf-8")))
    return sessions


def load_queries(split: str) -> list[dict]:
    """The queries of one split (`dev`, `heldout`) or of both (`all`)."""
    names = list(QUERY_FILES) if split == "all" else [split]
    queries: list[dict] = []
    for name in names:
        queries.extend(json.loads((DATA / QUERY_FILES[name]).read_text(encoding="utf-8")))
    return queries


def observation_id(session: dict, n: int) -> str:
    """The stable id of a session's n-th observation (1-based), as the labels spell it."""
    return f"{session['key']}.{n}"


def summary_id(session: dict) -> str:
    return f"sum_{session['key']}"


def capsule_id(session: dict) -> str:
    return f"cap_{session['key']}"


def session_start(index: int) -> datetime:
    """When the index-th session begins: every 8 days, at a varying hour of the working day."""
    return FIRST_SESSION + index * SESSION_SPACING + timedelta(hours=(index * 5) % 8)


def step_minutes(index: int, n: int) -> int:
    """Minutes between observation n-1 and n of session `index` (3 to 9, fixed)."""
    return 3 + (index * 7 + n * 3) % 7


def answer_ids(sessions: list[dict]) -> set[str]:
    """Every id a label may name: observations and summaries of the bug sessions."""
    ids = set()
    for session in sessions:
        ids.update(observation_id(session, n) for n in range(1, len(session["obs"]) + 1))
        if session.get("summary"):
            ids.add(summary_id(session))
    return ids


def problems(sessions: list[dict], splits: dict[str, list[dict]]) -> list[str]:
    """Everything wrong with the corpus files, as sentences; empty when they are well formed."""
    found = []
    keys = [s.get("key") for s in sessions]
    if len(set(keys)) != len(keys):
        found.append("session keys repeat")
    for session in sessions:
        key = session.get("key")
        if not str(session.get("source", "")).startswith("https://github.com/"):
            found.append(f"{key}: source must be a GitHub thread URL")
        obs = session.get("obs", [])
        if not 6 <= len(obs) <= 15:
            found.append(f"{key}: {len(obs)} observations (want 6-15)")
        kinds = {kind for kind, _ in obs}
        if kinds - set(KINDS):
            found.append(f"{key}: unknown kinds {sorted(kinds - set(KINDS))}")
        if kinds != set(KINDS):
            found.append(f"{key}: missing kinds {sorted(set(KINDS) - kinds)}")
        if any(not isinstance(text, str) or not text.strip() for _, text in obs):
            found.append(f"{key}: empty observation text")
    known = answer_ids(sessions)
    seen: dict[str, str] = {}
    for split, queries in splits.items():
        for query in queries:
            qid = query.get("id")
            if qid in seen:
                found.append(f"{qid}: in both {seen[qid]} and {split}")
            seen[qid] = split
            if query.get("style") not in STYLES:
                found.append(f"{qid}: style {query.get('style')!r} is not one of {STYLES}")
            if not str(query.get("query", "")).strip():
                found.append(f"{qid}: empty query")
            labels = query.get("relevant") or []
            if not labels:
                found.append(f"{qid}: no relevant ids")
            for label in labels:
                if label not in known:
                    found.append(f"{qid}: label {label!r} names nothing in the corpus")
    return found
