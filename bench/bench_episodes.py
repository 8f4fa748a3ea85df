"""Stores shaped like a coding agent's sessions, for timing search and prompt recall.

bench.py's realistic store is random words with no tool subjects, error messages or diffs, so
the episode reading that search and prompt recall do (kindling.index.episodes: fixed errors,
failed attempts, supersession) has little to follow there. This builds a git repository
`app/` whose store holds N observations as the hooks record them: sessions of a prompt, file
reads, a failing test run with a traceback, edits, a run that fails again or passes, and the
agent's report; errors come back across sessions with the same signature.

    python bench/bench_episodes.py --n 10000 --out /tmp/ep                # builds /tmp/ep/10000/
    python bench/bench_episodes.py --n 10000 --out /tmp/ep --copy old new # two copies of it

A copy holds the same entity files (copied, not linked) in its own git repository, so each
code version builds its own index (`kindling reindex --full`) and its own session. QUERIES
are the search styles timed (a short question, a pasted error, an identifier); the question
and the pasted error also serve as UserPromptSubmit prompts.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kindling.store import Store  # noqa: E402

NOW = 1_750_416_064_123
DAY = 86_400_000
SOURCE = "claude-code"
WORDS = (
    "cache session token auth user config parser loader queue worker schedule retry billing "
    "invoice report export import upload storage bucket index search query filter page cursor "
    "route handler middleware request response client server socket stream buffer event "
    "webhook payment order cart checkout price tax discount account profile avatar email "
    "notify template render layout theme widget chart metric trace span log audit policy "
    "role permission tenant region shard replica migration schema model field record batch"
).split()
VERBS = "load save parse build fetch send check apply merge resolve render sync flush".split()
ERRORS = (
    ("KeyError", "'{noun}_id'"),
    ("TypeError", "{verb}_{noun}() missing 1 required positional argument: '{noun2}'"),
    ("AttributeError", "'NoneType' object has no attribute '{noun2}'"),
    ("ValueError", "invalid {noun} format: expected {noun2}"),
    ("sqlalchemy.exc.OperationalError", "(sqlite3.OperationalError) database is locked"),
    ("sqlalchemy.exc.TimeoutError", "QueuePool limit of size 5 overflow 10 reached"),
    ("ConnectionRefusedError", "[Errno 111] Connection refused to {noun} service"),
    ("AssertionError", "assert {noun}.status == 'active'"),
    ("ImportError", "cannot import name '{Noun}{Noun2}' from 'app.{noun}'"),
    ("RuntimeError", "{noun} {noun2} already closed"),
    ("PermissionError", "[Errno 13] Permission denied: 'var/{noun}.lock'"),
    ("json.decoder.JSONDecodeError", "Expecting value: line 1 column 1 (char 0)"),
)
QUESTION = "why does the session cache miss after the token refresh"
PASTED_ERROR = (
    "tests/test_billing.py::test_build_invoice FAILED\n"
    '  File "app/billing/invoice.py", line 88, in build_invoice\n'
    "    return self.invoices[invoice.id]\n"
    "E   KeyError: 'invoice_id'"
)
IDENTIFIER = "resolve_tenant"
QUERIES = {"question": QUESTION, "pasted error": PASTED_ERROR, "identifier": IDENTIFIER}


def _obs(oid: str, ts: int, session: str, kind: str, content: str, prov: dict) -> tuple:
    entity = {
        "id": oid,
        "kind": kind,
        "content": content,
        "provenance": {"source": SOURCE, **prov},
        "ts": ts,
        "scopeIds": {"sessionId": session, "repoId": "app"},
        "redacted": False,
    }
    return ("observations", entity)


def _fill(template: str, rng: random.Random) -> str:
    noun, noun2 = rng.choice(WORDS), rng.choice(WORDS)
    return template.format(
        noun=noun, noun2=noun2, verb=rng.choice(VERBS), Noun=noun.title(), Noun2=noun2.title()
    )


def sessions(n: int) -> list[tuple[str, dict]]:
    """n observations in sessions of about 25 steps, two to four episodes of work each."""
    rng = random.Random(n)
    # Known problems: each comes back in several sessions with the same signature.
    problems = [("KeyError", "'invoice_id'", "billing", "invoice")]  # PASTED_ERROR's
    for _ in range(max(20, n // 200) - 1):
        name, message = rng.choice(ERRORS)
        problems.append((name, _fill(message, rng), rng.choice(WORDS), rng.choice(WORDS)))
    out: list[tuple[str, dict]] = []
    number = 0
    while len(out) < n:
        session = f"session-{number:05d}"
        ts = NOW - rng.randrange(60 * DAY)
        steps: list[tuple[str, str, dict]] = []  # kind, content, provenance

        def add(kind: str, content: str, prov: dict, steps: list = steps) -> None:
            steps.append((kind, content, prov))

        for _ in range(rng.randint(2, 4)):
            name, message, module, noun = rng.choice(problems)
            func = f"{rng.choice(VERBS)}_{noun}"
            src = f"app/{module}/{noun}.py"
            test = f"tests/test_{module}.py"
            prompt = rng.choice(
                (
                    f"why does {func} fail with {name.rsplit('.', 1)[-1]} in {module}",
                    f"the {module} {noun} tests are failing again, can you look",
                    f"fix the {noun} {rng.choice(WORDS)} bug in {src}",
                    f"add a {rng.choice(WORDS)} option to {func}",
                )
            )
            add("message", prompt, {"hook": "UserPromptSubmit", "role": "user"})
            for path in dict.fromkeys((src, f"app/{module}/{rng.choice(WORDS)}.py")):
                add(
                    "tool_call",
                    f"Read: {path}",
                    {"hook": "PostToolUse", "tool": "Read", "subject": f"Read: {path}"},
                )
            grep = f"Grep: def {func}"
            add(
                "tool_call",
                f"{grep}\n{src}:{rng.randint(10, 300)}:def {func}(self, {noun}):",
                {"hook": "PostToolUse", "tool": "Grep", "subject": grep},
            )
            run = f"Bash: pytest -q {test}"
            trace = (
                f"{run} -> exit 1\n{test}::test_{func} FAILED\n"
                f'  File "{src}", line {rng.randint(10, 300)}, in {func}\n'
                f"    return self.{noun}s[{noun}.id]\nE   {name}: {message}\n"
                f"FAILED {test}::test_{func} - {name.rsplit('.', 1)[-1]}\n1 failed, "
                f"{rng.randint(3, 40)} passed in 0.{rng.randint(10, 99)}s"
            )
            add(
                "error",
                trace,
                {"hook": "PostToolUseFailure", "tool": "Bash", "subject": run, "exitCode": 1},
            )
            for attempt in range(rng.choice((1, 1, 2))):
                old_line, new_line = rng.randint(10, 300), rng.randint(10, 300)
                diff = (
                    f"--- a/{src}\n+++ b/{src}\n@@ -{old_line},4 +{new_line},5 @@\n"
                    f"     def {func}(self, {noun}):\n-        return self.{noun}s[{noun}.id]\n"
                    f"+        if {noun} is None:\n+            return None\n"
                    f"+        return self.{noun}s.get({noun}.{rng.choice(WORDS)}_id)\n"
                )
                add(
                    "file_diff",
                    diff,
                    {"hook": "PostToolUse", "tool": "Edit", "file": src, "subject": f"Edit: {src}"},
                )
                if attempt == 0 and rng.random() < 0.3:
                    add(
                        "error",
                        trace,
                        {
                            "hook": "PostToolUseFailure",
                            "tool": "Bash",
                            "subject": run,
                            "exitCode": 1,
                        },
                    )
            if rng.random() < 0.8:
                passed = f"{rng.randint(4, 41)} passed in 0.{rng.randint(10, 99)}s"
                add(
                    "command",
                    f"{run} -> exit 0\n{passed}",
                    {"hook": "PostToolUse", "tool": "Bash", "subject": run, "exitCode": 0},
                )
            report = (
                f"The {name.rsplit('.', 1)[-1]} came from {func} in {src}: it assumed every "
                f"{noun} had a {rng.choice(WORDS)}. It now checks for None and reads the "
                f"{noun} by id; {test} passes."
            )
            add("message", report, {"hook": "Stop", "role": "assistant"})
        for step, (kind, content, prov) in enumerate(steps):
            oid = f"obs-{session}-{step:03d}"
            out.append(_obs(oid, ts + step * 30_000, session, kind, content, prov))
        number += 1
    return out[:n]


def build(out: Path, n: int) -> Path:
    """`out/<n>/app`: a git repository holding a store of n observations (built once)."""
    repo = out / str(n) / "app"
    marker = repo.parent / "bench-complete"
    if marker.exists():
        return repo
    shutil.rmtree(repo.parent, ignore_errors=True)
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    store = Store.create(repo / ".kindling")
    for etype, entity in sessions(n):
        store.write(etype, entity, durable=False)
    store.sync_to_disk()
    marker.write_text("ok\n")
    return repo


def copy(repo: Path, dst: Path) -> Path:
    """A git repository at `dst/app` holding a copy of `repo`'s store files (no index)."""
    target = dst / "app"
    shutil.rmtree(dst, ignore_errors=True)
    target.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(target)], check=True)
    shutil.copytree(repo / ".kindling", target / ".kindling")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "episodes")
    parser.add_argument("--copy", nargs="*", default=[], help="names of copies to make")
    args = parser.parse_args()
    repo = build(args.out, args.n)
    print(repo)
    for name in args.copy:
        print(copy(repo, args.out / str(args.n) / name))


if __name__ == "__main__":
    main()
