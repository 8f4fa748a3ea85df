"""Entity files shaped like a team's memory, as the Claude Code hooks record it.

The measured mix (issue 25's team simulation): a session writes about 51 files and 82 KB, so
1.6 KB per file: one capsule, one summary and about 49 observations of tool calls (file reads
with their excerpt, greps, test runs with their output and tracebacks, edits as diffs, the
prompt and the agent's report). Text is drawn from a large vocabulary of code identifiers
(snake, camel and dotted names, paths, numbers), since the full-text index's size depends on
how many distinct tokens it holds, and a small word list would flatter it.

    from team_mix import sessions, write_store
    write_store(store, sessions(count, seed))   # `count` sessions of about 51 files
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterator

NOW = 1_780_000_000_000
DAY = 86_400_000
FILES_PER_SESSION = 51
STEPS = 49  # observations per session

_SYLLABLES = (
    "ka lo mi ter von ax pri sul de ran qui bo sta cre ma na pe ri to vu lex dor gan fi "
    "hul jen mor pax zen tri oct sep nov dec"
).split()
_WORDS = (
    "cache session token auth user config parser loader queue worker schedule retry billing "
    "invoice report export import upload storage bucket index search query filter page cursor "
    "route handler middleware request response client server socket stream buffer event "
    "webhook payment order cart checkout price tax discount account profile avatar email "
    "notify template render layout theme widget chart metric trace span log audit policy "
    "role permission tenant region shard replica migration schema model field record batch"
).split()


class Vocabulary:
    """A project's names: common words plus invented ones, used with Zipf-like frequencies."""

    def __init__(self, rng: random.Random, size: int = 12_000) -> None:
        names = set(_WORDS)
        while len(names) < size:
            names.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
        self.names = sorted(names)
        rng.shuffle(self.names)
        total = 0.0
        self.cum = []
        for rank in range(len(self.names)):
            total += 1 / (rank + 1) ** 0.9
            self.cum.append(total)
        self.rng = rng

    def words(self, k: int) -> list[str]:
        return self.rng.choices(self.names, cum_weights=self.cum, k=k)

    def ident(self) -> str:
        a, b = self.words(2)
        style = self.rng.random()
        if style < 0.5:
            return f"{a}_{b}"
        if style < 0.8:
            return f"{a}{b.title()}"
        return f"{a.title()}{b.title()}"

    def path(self) -> str:
        a, b, c = self.words(3)
        return f"src/{a}/{b}/{c}.py"

    def code_line(self) -> str:
        rng = self.rng
        pick = rng.random()
        if pick < 0.3:
            return f"    {self.ident()} = {self.ident()}({self.ident()}, {rng.randint(0, 999)})"
        if pick < 0.5:
            return f"    if {self.ident()} is None or {self.ident()}.{self.ident()}:"
        if pick < 0.65:
            return f"def {self.ident()}(self, {self.ident()}: {self.words(1)[0].title()}) -> None:"
        if pick < 0.8:
            return f"        return self.{self.ident()}[{self.ident()}.id]"
        return f"    # {' '.join(self.words(rng.randint(4, 10)))}"


def _lines(v: Vocabulary, n: int) -> str:
    return "\n".join(v.code_line() for _ in range(n))


def _step(v: Vocabulary, i: int) -> tuple[str, str, dict]:
    """One tool observation: (kind, content, provenance)."""
    rng = v.rng
    pick = rng.random()
    if pick < 0.40:
        path = v.path()
        body = _lines(v, rng.randint(3, 11))
        return "tool_call", f"Read: {path}\n{body}", {"tool": "Read", "subject": f"Read: {path}"}
    if pick < 0.55:
        term = v.ident()
        hits = "\n".join(f"{v.path()}:{rng.randint(1, 900)}:{v.code_line()}" for _ in range(4))
        return "tool_call", f"Grep: {term}\n{hits}", {"tool": "Grep", "subject": f"Grep: {term}"}
    if pick < 0.70:
        path = v.path()
        old, new = _lines(v, rng.randint(2, 5)), _lines(v, rng.randint(2, 6))
        minus = "\n".join("-" + line for line in old.splitlines())
        plus = "\n".join("+" + line for line in new.splitlines())
        diff = f"--- a/{path}\n+++ b/{path}\n@@ -{i},7 +{i},9 @@\n{minus}\n{plus}"
        return "file_diff", diff, {"tool": "Edit", "file": path, "subject": f"Edit: {path}"}
    run = f"Bash: pytest -q tests/test_{v.words(1)[0]}.py"
    if pick < 0.80:
        name = rng.choice(("KeyError", "TypeError", "AttributeError", "ValueError"))
        trace = "\n".join(
            f'  File "{v.path()}", line {rng.randint(1, 900)}, in {v.ident()}\n{v.code_line()}'
            for _ in range(rng.randint(2, 5))
        )
        head = f"{run} -> exit 1\nTraceback (most recent call last):"
        text = f"{head}\n{trace}\nE   {name}: '{v.ident()}'"
        return "error", text, {"tool": "Bash", "subject": run, "exitCode": 1}
    if pick < 0.93:
        dots = "".join(rng.choice("..........F") for _ in range(rng.randint(40, 300)))
        passed = f"{rng.randint(4, 400)} passed in {rng.randint(0, 30)}.{rng.randint(10, 99)}s"
        tail = "\n".join(f"{v.path()} {dots[:60]}" for _ in range(rng.randint(3, 8)))
        return (
            "command",
            f"{run} -> exit 0\n{tail}\n{passed}",
            {
                "tool": "Bash",
                "subject": run,
                "exitCode": 0,
            },
        )
    if pick < 0.965:
        text = " ".join(v.words(rng.randint(8, 30)))
        return (
            "message",
            f"why does {v.ident()} {text}",
            {"hook": "UserPromptSubmit", "role": "user"},
        )
    text = " ".join(v.words(rng.randint(30, 90)))
    return (
        "message",
        f"The {v.ident()} in {v.path()}: {text}",
        {"hook": "Stop", "role": "assistant"},
    )


def sessions(count: int, seed: int = 25, *, start: int = 0) -> Iterator[tuple[str, dict]]:
    """(type, entity) for sessions start..start+count of one team, about 51 files each."""
    rng = random.Random(seed)
    v = Vocabulary(rng)
    for number in range(start, start + count):
        srng = random.Random(seed * 1_000_003 + number)
        v.rng = srng
        session = f"team-{seed}-{number:06d}"
        user = f"dev-{number % 10}"
        ts = NOW - (number * DAY) // 60  # a team's 10 x 200 sessions a month
        scope = {"sessionId": session, "repoId": "github.com/acme/app", "userId": user}
        ids = []
        for step in range(STEPS):
            kind, content, prov = _step(v, step)
            oid = str(uuid.UUID(int=srng.getrandbits(128), version=4))
            # The hooks keep the tool's input and response too (provenance.payload).
            head, _, output = content.partition("\n")
            prov = (
                prov
                if kind == "message"
                else {
                    **prov,
                    "payload": {
                        "tool_input": {"command": head.partition(": ")[2]},
                        "tool_response": {"stdout": output, "stderr": ""},
                    },
                    "toolUseId": f"toolu_{srng.getrandbits(96):024x}",
                }
            )
            ids.append(oid)
            hook = "PostToolUseFailure" if kind == "error" else prov.get("hook", "PostToolUse")
            yield (
                "observations",
                {
                    "id": oid,
                    "kind": kind,
                    "content": content,
                    "provenance": {"source": "claude-code", "hook": hook, **prov},
                    "ts": ts + step * 20_000,
                    "scopeIds": scope,
                    "redacted": False,
                },
            )
        closed = ts + STEPS * 20_000
        report = " ".join(v.words(srng.randint(40, 90)))
        yield (
            "summaries",
            {
                "id": f"sum-{session}",
                "content": f"Asked: fix {v.ident()}\nDone: {report}",
                "confidence": 0.8,
                "evidenceRefs": ids[-3:],
                "capsuleId": f"cap-{session}",
                "ts": closed,
                "scopeIds": scope,
            },
        )
        yield (
            "capsules",
            {
                "id": f"cap-{session}",
                "type": "session",
                "intent": f"fix {v.ident()}",
                "status": "closed",
                "openedAt": ts,
                "closedAt": closed,
                "scopeIds": scope,
                "observationIds": ids,
                "summaryId": f"sum-{session}",
            },
        )


def write_store(store, entities) -> int:
    """Write valid entities' canonical files straight into a Store (no fsync, no temp
    files: a bench store is rebuilt, never repaired); how many were written."""
    from kindling import canonical
    from kindling.model import validate

    made: set[str] = set()
    n = 0
    for etype, entity in entities:
        validate(etype, entity)
        path = store.entity_path(etype, entity["id"])
        folder = os.path.dirname(path)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        with open(path, "wb") as fh:
            fh.write(canonical.encode(entity))
        n += 1
    return n
