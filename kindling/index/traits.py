"""What the index reads from an observation to follow an episode of work through its session.

- subject: what a tool call ran or touched (`provenance.subject`: `Bash: npm test`,
  `Edit: src/app.ts`), else a diff's file; a later success on the same subject shows that
  an earlier error on it was fixed.
- signature: an error's message with what changes from run to run taken out (paths,
  numbers, addresses), so the same problem met again, in another session, is recognised.
- role: `prompt` for what a person asked, `marker` for a session's bookkeeping (a start, a
  notification, a compaction note): neither is an answer to anything.

- file: the file a diff changed.

All four come from the entity alone, so they are computed when its row is written.
"""

from __future__ import annotations

import re

# Hooks whose messages are bookkeeping, and the roles of the people (not agents) asking.
MARKER_HOOKS = frozenset({"SessionStart", "SessionEnd", "Notification", "PreCompact"})
PROMPT_HOOKS = frozenset({"UserPromptSubmit"})
MAX_SIGNATURE = 160
# A line that states an error: an exception's name, `error:`/`error[E0382]`, a panic, ...
# Only searched for, never taken: no leading `\w*`, which made a long token quadratic.
_ERROR_LINE = re.compile(
    r"(?:Error|Exception|Errno|Fault)\b|\berror\b|\bpanicked\b|\bfatal\b|\bFAIL(?:ED)?\b"
    r"|\bcannot\b|\bcould not\b|\bunable to\b|\bnot found\b|\bdenied\b|\brefused\b"
    r"|\btimed out\b|\binvalid\b|\bundefined\b",
    re.IGNORECASE,
)
# What differs between two runs of the same failure.
_PATH = re.compile(r"(?:[A-Za-z]:)?[\w.\-~]*[/\\][^\s:'\"()\[\],]*")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_NUMBER = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
# A signature names its problem in at least this many words that say more than "it failed":
# `FAIL src/app.test.ts` is every test failure, `database is locked` is one problem.
SPECIFIC_WORDS = 2
_WORDS = re.compile(r"[a-z]{3,}")
_GENERIC = frozenset(
    "fail failed failure failing error errors exception fatal the and for with from this that "
    "test tests suite run running exit code status process command path line file".split()
)
# An error named, then its message: `sqlalchemy.exc.TimeoutError: QueuePool limit ...`.
_NAMED = re.compile(
    r"[\w.]*(?:Error|Exception|Errno)\w*(?:\[\w+\])?:\s+\S|\berror(?:\[\w+\])?:\s+\S"
)
# Lines of a traceback that quote code or name a frame, and pytest's `E   ` marker.
_CODE = re.compile(r"(?:raise|File \"|at |return |\^+$|~+$)")
_MARKER = re.compile(r"^E\s+")
# A command's record starts `Bash: pytest -> exit 1`: the line names the run, not the error.
_RUN_LINE = re.compile(r"^.{0,400} -> (?:exit -?\d+|failed|interrupted)$")


def provenance(entity: dict) -> dict:
    prov = entity.get("provenance")
    return prov if isinstance(prov, dict) else {}


def hook_of(entity: dict) -> str | None:
    """The hook event that recorded an observation, when a hook did."""
    hook = provenance(entity).get("hook")
    return hook if isinstance(hook, str) else None


def subject_of(entity: dict) -> str | None:
    """What a recorded tool call ran or touched, else the file a diff changed; or None.

    A shell command is named by the run that decides it (run_key), so `npx jest x.test.ts`
    failing and `rm babel.config.js && npx jest x.test.ts` passing are the same subject."""
    prov = provenance(entity)
    for key in ("subject", "file"):
        value = prov.get(key)
        if isinstance(value, str) and value:
            if value.startswith(SHELL):
                return SHELL + run_key(value[len(SHELL) :])[:500]
            return value[:500]
    return None


SHELL = "Bash: "
_STEPS = re.compile(r"&&|;")
_ENV = re.compile(r"^(?:\w+=\S*\s+)+")
_REDIRECT = re.compile(r"\s*\d?>>?\s*(?:&\d|\S+)")
_LONG_NUMBER = re.compile(r"\d{5,}")


def run_key(command: str) -> str:
    """The part of a shell command whose outcome is its outcome, as one normalised line: the
    last of `a && b; c`, the first command of a pipe, without leading VAR=value assignments
    or redirections, long numbers (run and process ids) as `#`."""
    last = _STEPS.split(command)[-1]
    run = _ENV.sub("", last.split("|", 1)[0].strip())
    run = _LONG_NUMBER.sub("#", _REDIRECT.sub("", run))
    return " ".join(run.split()) or " ".join(command.split())


def role_of(entity: dict) -> str | None:
    """`prompt`, `marker` or None (everything else) for an observation."""
    prov = provenance(entity)
    hook = prov.get("hook")
    if hook in PROMPT_HOOKS or prov.get("role") == "user":
        return "prompt"
    if hook in MARKER_HOOKS or prov.get("role") == "notification":
        return "marker"
    return None


def signature(content: str) -> str | None:
    """The line of an error's text that states a specific error (SPECIFIC_WORDS): the first
    that names it (`SomeError: message`, `error[E0502]: ...`), else the first at all;
    normalised; None if none does.

    A line that ends in `:` introduces its message (`thread 'main' panicked at src/x.rs:4:9:`),
    so the next line is taken with it. Paths, hex addresses and numbers become placeholders
    and case and spacing are folded, so `OperationalError: database is locked` at two
    moments, from two checkouts, is one signature.
    """
    lines = content.split("\n", 81)[:81]
    found = []
    for number, line in enumerate(lines[:80]):
        line = _MARKER.sub("", line.strip())
        if not line or (number == 0 and _RUN_LINE.match(line)) or _CODE.match(line):
            continue
        if _ERROR_LINE.search(line):
            if line.endswith(":") and lines[number + 1 :]:
                line = f"{line} {lines[number + 1].strip()}"
            text = _PATH.sub("<path>", line[:400])
            text = _NUMBER.sub("#", _ADDRESS.sub("#", text))
            text = _SPACE.sub(" ", text).strip().lower()
            if len(set(_WORDS.findall(text)) - _GENERIC) >= SPECIFIC_WORDS:
                if _NAMED.search(line):
                    return text[:MAX_SIGNATURE]  # `SomeError: message` says it best
                found.append(text[:MAX_SIGNATURE])
    return found[0] if found else None


_DIFF_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)


def file_of(entity: dict) -> str | None:
    """The file a diff changed: `provenance.file`, else its first `+++ b/<path>` line."""
    value = provenance(entity).get("file")
    if isinstance(value, str) and value:
        return value[:500]
    found = _DIFF_FILE.search(entity["content"][:4000])
    return found.group(1)[:500] if found and found.group(1) != "/dev/null" else None


Traits = tuple[str | None, str | None, str | None, str | None]


def traits(entity_type: str, entity: dict) -> Traits:
    """(subject, signature, role, file) of an entity; all None but for a live observation."""
    if entity_type != "observations" or entity["redacted"]:
        return None, None, None, None
    kind = entity["kind"]
    return (
        subject_of(entity),
        signature(entity["content"]) if kind == "error" else None,
        role_of(entity),
        file_of(entity) if kind == "file_diff" else None,
    )
