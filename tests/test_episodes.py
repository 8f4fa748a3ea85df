"""Episodes in the index: traits per row, fixed errors, the fix and failed attempts."""

from __future__ import annotations

import pytest

from kindling.index.episodes import Episode, Step, follow
from kindling.index.traits import file_of, role_of, signature, subject_of, traits

REPO = {"repoId": "github.com/acme/api"}


def test_signature_is_the_line_that_names_the_error_with_what_varies_taken_out():
    first = (
        "Bash: pytest -q -> exit 1\nTraceback (most recent call last):\n"
        '  File "/home/ann/api/db.py", line 31, in connect\n    raise exc.TimeoutError(\n'
        "sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 reached"
    )
    again = first.replace("/home/ann", "/srv/ci").replace("31", "44").replace("5 over", "9 over")
    assert signature(first) == signature(again)
    assert signature(first).startswith("sqlalchemy.exc.timeouterror: queuepool limit")
    # A panic's location line is joined with the message that follows it.
    panic = "thread 'main' panicked at src/rt.rs:86:9:\nCannot start a runtime from within one"
    assert "cannot start a runtime" in signature(panic)
    # A line saying only that something failed is no signature: every test run has one.
    assert signature("FAIL src/app.test.ts\n  Test suite failed to run") is None
    assert signature("all 42 tests passed") is None


def test_roles_and_changed_files():
    def obs(content="x", **prov):
        return {"content": content, "kind": "message", "redacted": False, "provenance": prov}

    assert role_of(obs(hook="UserPromptSubmit")) == "prompt"
    assert role_of(obs(hook="SessionStart")) == "marker"
    assert role_of(obs(hook="Stop")) is None
    assert file_of(obs("--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@")) == "src/x.py"
    assert file_of(obs("no diff", file="src/y.py")) == "src/y.py"
    forgotten = {**obs(subject="Bash: npm test"), "redacted": True}
    assert traits("observations", forgotten) == (None, None, None, None)


def _step(n: int, kind: str, subject: str | None = None, sig: str | None = None) -> Step:
    return Step(n, "observations", f"o{n}", n, kind, "s", "r", subject, sig, None, None, 0)


def test_follow_finds_the_failed_attempt_the_fix_and_the_fixed_error():
    test = "Bash: pytest"
    episode = follow(
        Episode(
            "s",
            [
                _step(1, "error", test, "e: database is locked"),
                _step(2, "file_diff"),  # a retry around the write: the same error comes back
                _step(3, "error", test, "e: database is locked"),
                _step(4, "message"),
                _step(5, "file_diff"),  # busy_timeout raised
                _step(6, "command", test),  # passes
                _step(7, "error", "Bash: mypy", "e: incompatible types in assignment"),
            ],
        )
    )
    assert episode.attempts == {2}
    assert episode.fix == {5}
    assert {error: fixer.id for error, fixer in episode.fixed.items()} == {1: "o6", 3: "o6"}
    assert episode.failing == {"Bash: mypy"}
    # The first error leads to its fix first, then the finding; never to the failed attempt.
    assert [s.id for s in episode.answers(episode.steps[0], 4)] == ["o5", "o4"]


@pytest.fixture
def hooks_like(memory):
    """Log as the Claude Code hooks do: a subject on every tool record."""

    def log(content, kind="message", *, session, ts, subject=None, **prov):
        provenance = {"source": "claude-code", **prov}
        if subject:
            provenance["subject"] = subject
        scope = {"sessionId": session, **REPO}
        return memory.log(content, kind=kind, scope=scope, provenance=provenance, ts=ts)

    return log


def test_an_error_is_fixed_by_a_later_success_on_its_subject_in_any_session(memory, hooks_like):
    day = 86_400_000
    error = hooks_like(
        "Bash: make deploy -> exit 2\nError: release bucket access denied",
        "error",
        session="a",
        ts=1 * day,
        subject="Bash: make deploy",
    ).entity
    other = hooks_like(
        "Bash: make lint -> exit 1\nlint error: unused import os",
        "error",
        session="a",
        ts=1 * day + 5,
        subject="Bash: make lint",
    ).entity
    assert memory.fixed_errors([error["id"], other["id"]]) == {}
    fixer = hooks_like(
        "Bash: make deploy -> exit 0\ndeployed",
        "command",
        session="b",
        ts=3 * day,
        subject="Bash: make deploy",
    ).entity
    assert memory.fixed_errors([error["id"], other["id"]]) == {error["id"]: fixer["id"]}
    # Met again under another command and fixed there: the same signature counts too.
    hooks_like(
        "Bash: make lint-all -> exit 1\nlint error: unused import os",
        "error",
        session="c",
        ts=4 * day,
        subject="Bash: make lint-all",
    )
    fixed = hooks_like(
        "Bash: make lint-all -> exit 0",
        "command",
        session="c",
        ts=4 * day + 9,
        subject="Bash: make lint-all",
    ).entity
    assert memory.fixed_errors([other["id"]]) == {other["id"]: fixed["id"]}


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("rm babel.config.js && npx jest src/x.test.tsx", "npx jest src/x.test.tsx"),
        ("RUST_BACKTRACE=1 cargo run -p cli -- sync", "cargo run -p cli -- sync"),
        ("gh run watch 1389011207 --exit-status 2>&1 | tail -5", "gh run watch # --exit-status"),
        ("cd api; pytest tests/x.py -q > out.txt", "pytest tests/x.py -q"),
    ],
)
def test_a_shell_subject_is_the_run_that_decides_it(command, key):
    observation = {"provenance": {"subject": f"Bash: {command}"}}
    assert subject_of(observation) == f"Bash: {key}"
