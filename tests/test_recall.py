"""Recall hands back the conclusion: the relevant summary, the latest fix, answers over raw
lines, one threshold for prompt recall, fixed errors never open."""

from __future__ import annotations

import json

import pytest

from kindling.agents.context import open_problems, prompt_recall
from kindling.repo_identity import identify

DAY = 86_400_000
NOW = 100 * DAY
SCOPE = {"repoId": "github.com/acme/api"}
TEST = "Bash: pytest tests/test_upload.py"
LOCKED = (
    "Bash: pytest tests/test_upload.py -> exit 1\n"
    "E   sqlite3.OperationalError: database is locked\n"
    "FAILED tests/test_upload.py::test_parallel_uploads"
)


class History:
    """Sessions logged the way the Claude Code hooks log them."""

    def __init__(self, memory) -> None:
        self.memory = memory
        self.ids: dict[str, str] = {}

    def log(self, name, content, kind="message", *, session, ts, subject=None, hook=None):
        provenance = {"source": "claude-code"}
        if subject:
            provenance["subject"] = subject
        if hook:
            provenance["hook"] = hook
        scope = {**SCOPE, "sessionId": session}
        entity = self.memory.log(content, kind=kind, scope=scope, provenance=provenance, ts=ts)
        self.ids[name] = entity.entity["id"]

    def session(self, session, start, steps, summary):
        capsule = self.memory.open_capsule("work", scope={**SCOPE, "sessionId": session}).entity
        for n, (name, kind, content, subject, hook) in enumerate(steps):
            self.log(name, content, kind, session=session, ts=start + n, subject=subject, hook=hook)
        closed = self.memory.close_capsule(capsule["id"], summary=summary).entity
        self.ids[f"sum_{session}"] = closed["summaryId"]


@pytest.fixture
def history(memory, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", str(NOW))
    h = History(memory)
    h.session(
        "first",
        10 * DAY,
        [
            ("ask1", "message", "uploads fail with database is locked", None, "UserPromptSubmit"),
            ("err1", "error", LOCKED, TEST, None),
            (
                "retry",
                "file_diff",
                "--- a/api/upload.py\n+++ b/api/upload.py\n+retry(3)",
                None,
                None,
            ),
            ("err2", "error", LOCKED, TEST, None),
            ("timeout", "file_diff", "--- a/api/db.py\n+++ b/api/db.py\n+timeout=30", None, None),
            (
                "pass1",
                "command",
                "Bash: pytest tests/test_upload.py -> exit 0\n4 passed",
                TEST,
                None,
            ),
            (
                "why1",
                "message",
                "Root cause: sqlite waits 5 s for the write lock; now 30 s.",
                None,
                "Stop",
            ),
        ],
        "Raised the sqlite timeout to 30 s in api/db.py; parallel uploads pass.",
    )
    h.session(
        "second",
        40 * DAY,
        [
            ("err3", "error", LOCKED, TEST, None),
            ("wal", "file_diff", "--- a/api/db.py\n+++ b/api/db.py\n+journal_mode=WAL", None, None),
            (
                "pass2",
                "command",
                "Bash: pytest tests/test_upload.py -> exit 0\n4 passed",
                TEST,
                None,
            ),
            (
                "why2",
                "message",
                "Readers blocked the writer; WAL journal mode lets both run.",
                None,
                "Stop",
            ),
        ],
        "Switched sqlite to WAL journal mode in api/db.py: the locked errors were readers "
        "blocking the upload writer, which a longer timeout only hid.",
    )
    h.session(
        "other",
        60 * DAY,
        [
            ("bill", "message", "Renamed the billing export columns to snake case.", None, "Stop"),
            (
                "lint",
                "error",
                "Bash: make lint -> exit 1\nlint error: unused import os",
                "Bash: make lint",
                None,
            ),
        ],
        "Renamed the billing export columns.",
    )
    return h


def ids(result):
    return [c["entity"]["id"] for c in result["candidates"]]


def test_a_pasted_error_brings_the_latest_fix_first(memory, history):
    result = memory.search("sqlite3.OperationalError: database is locked", explain=True)
    assert result["currentSummary"]["id"] == history.ids["sum_second"]
    assert result["explain"]["currentSummary"]["rule"] == "best answer"
    ranked = ids(result)
    first = {history.ids[n] for n in ("timeout", "why1", "sum_first", "err1", "err2", "retry")}
    # The later episode's fix and finding come before anything of the superseded one, ...
    assert ranked.index(history.ids["wal"]) < min(ranked.index(i) for i in first if i in ranked)
    # ... and every item of the earlier one says what superseded it, in JSON and explain.
    for candidate in result["candidates"]:
        if candidate["entity"]["id"] in first:
            assert candidate["supersededBy"] == history.ids["sum_second"]
            assert candidate["explain"]["supersession"] < 0
    # The raw errors rank below the conclusions of their own episode and say what fixed them.
    assert ranked.index(history.ids["why2"]) < ranked.index(history.ids["err3"])
    fixed = next(c for c in result["candidates"] if c["entity"]["id"] == history.ids["err3"])
    assert fixed["explain"]["fixedBy"] == history.ids["pass2"]


def test_a_failed_attempt_ranks_below_the_fix_of_its_episode(memory, history):
    scope = {"sessionId": "first"}
    ranked = ids(memory.search("database is locked upload retry timeout", scope=scope))
    assert ranked.index(history.ids["timeout"]) < ranked.index(history.ids["retry"])


def test_prompts_rank_below_conclusions_and_stay_findable(memory, history):
    ranked = ids(
        memory.search("uploads fail with database is locked", scope={"sessionId": "first"})
    )
    assert ranked.index(history.ids["why1"]) < ranked.index(history.ids["ask1"])
    only = memory.search("uploads fail", kinds=["message"], scope={"sessionId": "first"})
    assert history.ids["ask1"] in ids(only)


def test_the_cli_and_mcp_text_mark_superseded_items(memory, history, run):
    text = run("search", "sqlite3.OperationalError: database is locked").stdout
    assert f"Superseded by: {history.ids['sum_second']}" in text
    from kindling.agents.mcp_text import render_search

    result = memory.search("sqlite3.OperationalError: database is locked")
    shown, structured = render_search(result, 2_000)
    assert f"(superseded by [{history.ids['sum_second'][:12]}])" in shown
    marked = [r for r in structured["results"] if r.get("supersededBy")]
    assert marked and all(r["supersededBy"] == history.ids["sum_second"] for r in marked)


def test_prompt_recall_answers_from_the_ranking_and_leaves_unrelated_prompts_alone(memory, history):
    repo = identify(memory.store.root.parent)
    text, shown = prompt_recall(
        memory, repo, "new-session", "why do parallel uploads hit database is locked?", set()
    )
    assert shown[0] == history.ids["sum_second"]  # the summary of the latest fix, first
    assert f"[{history.ids['sum_second'][:12]}]" in text
    raw = {history.ids[n] for n in ("err1", "err2", "err3", "pass1", "pass2", "ask1")}
    assert not raw & set(shown)  # no run output, no fixed error, no earlier prompt
    for line in text.splitlines():
        if history.ids["sum_first"][:12] in line:
            assert f"(superseded by [{history.ids['sum_second'][:12]}])" in line
    nothing = prompt_recall(
        memory, repo, "new-session", "set up storybook for the button components", set()
    )
    assert nothing == (None, [])
    # Its own session's records are never recalled to it.
    _, own = prompt_recall(memory, repo, "second", "database is locked again", set())
    assert not {history.ids[n] for n in ("wal", "why2")} & set(own)


def test_open_problems_leave_out_what_was_fixed(memory, history):
    listed = [e["id"] for e in open_problems(memory, [{}])]
    assert listed == [history.ids["lint"]]


def test_hook_recall_shows_ids_in_brackets(memory, history, tmp_path, monkeypatch):
    from kindling.agents.hooks import run_hook

    monkeypatch.setenv("KINDLING_AUTOWATCH", "0")
    payload = {
        "session_id": "s-new",
        "cwd": str(memory.store.root.parent),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "database is locked when uploading in parallel, what fixed it?",
    }
    result = run_hook("UserPromptSubmit", json.dumps(payload).encode(), str(memory.store.root))
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"[{history.ids['sum_second'][:12]}]" in context


def test_another_change_to_the_same_file_is_not_the_same_problem():
    from kindling.index import Episode, Step
    from kindling.search import rank

    def episode(session, start, terms_rowid):
        diff = Step(
            terms_rowid,
            "observations",
            f"d{session}",
            start,
            "file_diff",
            session,
            "r",
            None,
            None,
            None,
            "api/db.py",
            0,
        )
        return Episode(session, [diff])

    earlier, later = episode("a", 1, 1), episode("b", 2, 2)
    story = rank.Story({"a": earlier, "b": later}, {})
    scored = {
        n: rank.Scored(rank.as_hit(e.steps[0]), relevance=0.5)
        for n, e in ((1, earlier), (2, later))
    }
    best = {"a": 0.5, "b": 0.5}
    idf = {"locked": 3.0, "wal": 3.0, "pool": 1.0}

    def supersedes(later_terms):
        asked = rank.Asked(
            frozenset({"locked", "wal", "pool"}), {1: ["locked", "wal"], 2: later_terms}, idf
        )
        return rank._supersedes(later, earlier, story, best, 0.5, asked, scored)

    assert supersedes(["locked", "wal"])  # the same problem, in the same file
    assert not supersedes(["pool"])  # another change to that file
    # A file the query names says nothing: every episode that touched it answers as well.
    asked = rank.Asked(frozenset({"api", "db", "py"}), {1: ["api"], 2: ["api"]}, {"api": 1.0})
    assert not rank._supersedes(later, earlier, story, best, 0.5, asked, scored)
