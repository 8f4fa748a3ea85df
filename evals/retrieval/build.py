"""Write the corpus into a Kindling store, once per corpus version (cached by content hash).

Entities go through Kindling's own store writer (which validates each one) with ids taken
from the corpus, so labels can name them; then `Memory.reindex(full=True)` builds the index
exactly as Kindling would. Contents are masked the way `Memory.log` masks them.
"""

from __future__ import annotations

import hashlib
import shutil
from datetime import timedelta
from pathlib import Path

import corpus
import distractors

from kindling import Memory
from kindling.masking import mask_text

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
# The files whose content decides the store: change one and the store is rebuilt.
INPUTS = ("corpus.py", "distractors.py", "build.py", *(f"data/{n}" for n in corpus.SESSION_FILES))


def corpus_hash() -> str:
    """A short hash of every file the store is built from."""
    digest = hashlib.sha256()
    for name in INPUTS:
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def all_sessions() -> list[dict]:
    """Bug sessions (with their start times) and distractor sessions, each with a `start`."""
    bugs = corpus.load_sessions()
    for index, session in enumerate(bugs):
        session["start"] = corpus.ms(corpus.session_start(index))
        session["index"] = index
    return bugs + distractors.generate(bugs)


def _entities(session: dict) -> list[tuple[str, dict]]:
    """The observations, capsule and summary of one session, in writing order."""
    key, index = session["key"], session["index"]
    scope = {"repoId": corpus.REPO_ID, "sessionId": key}
    ts, out, ids = session["start"], [], []
    for n, (kind, text) in enumerate(session["obs"], start=1):
        if n > 1:
            ts += corpus.step_minutes(index, n) * 60_000
        oid = corpus.observation_id(session, n)
        ids.append(oid)
        content, _ = mask_text(text)
        out.append(
            (
                "observations",
                {
                    "id": oid,
                    "kind": kind,
                    "content": content,
                    "provenance": {"source": "eval"},
                    "ts": ts,
                    "scopeIds": scope,
                    "redacted": False,
                },
            )
        )
    # Every other session is a capsule; those with a summary are closed with it.
    if not session.get("summary") and index % 2:
        return out
    capsule = {
        "id": corpus.capsule_id(session),
        "type": "session",
        "intent": session["intent"],
        "status": "closed",
        "openedAt": session["start"],
        "closedAt": ts + 60_000,
        "scopeIds": scope,
        "observationIds": ids,
    }
    if session.get("summary"):
        capsule["summaryId"] = corpus.summary_id(session)
        content, _ = mask_text(session["summary"])
        out.append(
            (
                "summaries",
                {
                    "id": capsule["summaryId"],
                    "content": content,
                    "confidence": 0.9,
                    "evidenceRefs": ids[-3:],
                    "capsuleId": capsule["id"],
                    "ts": ts + 60_000,
                    "scopeIds": scope,
                },
            )
        )
    out.append(("capsules", capsule))
    return out


def build(target: Path) -> dict:
    """Create a store at `target` holding the whole corpus; returns counts by entity type."""
    memory = Memory.init(store=target)
    counts = {"observations": 0, "capsules": 0, "summaries": 0}
    with memory:
        for session in all_sessions():
            for entity_type, entity in _entities(session):
                memory.store.write(entity_type, entity, durable=False)
                counts[entity_type] += 1
        memory.reindex(full=True)
    return counts


def cached_store(rebuild: bool = False) -> Path:
    """The store for the current corpus, built on first use and reused while it is unchanged."""
    target = CACHE / f"store-{corpus_hash()}"
    done = target.with_name(target.name + ".built")
    if target.exists() and done.exists() and not rebuild:
        return target
    CACHE.mkdir(exist_ok=True)
    # Stores of older corpus versions are never read again.
    for old in CACHE.glob("store-*"):
        if old.is_dir():
            shutil.rmtree(old)
        else:
            old.unlink()
    build(target)
    done.write_text("ok\n")
    return target


def recent_share(sessions: list[dict], days: int = 30) -> float:
    """Share of observations fresher than `days` before NOW (reported, not asserted)."""
    edge = corpus.ms(corpus.NOW - timedelta(days=days))
    total = fresh = 0
    for session in sessions:
        total += len(session["obs"])
        fresh += len(session["obs"]) if session["start"] >= edge else 0
    return fresh / total if total else 0.0
