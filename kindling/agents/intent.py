"""A Claude Code session capsule's intent: its first prompt, then each new task started in it.

A later prompt starts a different task when it is a request of its own (at least MIN_WORDS
words that say something) sharing less than SWITCH_OVERLAP of them with the current intent;
the intent then becomes `first task; then: second task`, cut to fit MAX_INTENT_CHARS. Short
follow-ups ("yes", "commit it") and pasted errors are never a new task. Words are compared
by their first STEM_CHARS letters, so `expired` and `expiry` count as the same word.
Deterministic and cheap: it runs on every prompt.
"""

from __future__ import annotations

import re

from kindling.agents.payload import one_line
from kindling.index.traits import signature

INTENT_WAITING = " (waiting for its first prompt)"
MAX_INTENT_CHARS = 200
THEN = "; then: "
MIN_WORDS = 4
SWITCH_OVERLAP = 0.2
STEM_CHARS = 5
PROMPT_WORDS = 40  # a long prompt is judged by its opening words
KEPT_TASKS = 3  # the first task and the latest two

_WORD = re.compile(r"[a-z][a-z0-9]{2,}")
_STOP = frozenset(
    """
    the and for with from this that these those then than into onto over under about also
    just now please can could would should will shall may might must you your yours our ours
    let lets what when where which who why how are was were been being have has had does did
    done not but all any some more most other such only own same very too its it's there here
    them they their out off again once both each few nor yes okay thanks thank want need make
    sure try use using get got like look see check next first last one two new still
    run runs fix fixes test tests fail fails failing whole whatever work works code file files
    change changes thing things everything something
    """.split()
)


def words(text: str, limit: int | None = None) -> set[str]:
    """The stems of the words of `text` that say something (its first `limit` words)."""
    found = _WORD.findall(text.lower())
    if limit is not None:
        found = found[:limit]
    return {w[:STEM_CHARS] for w in found if w not in _STOP}


def starts_new_task(task: str | set[str], prompt: str) -> bool:
    """Whether `prompt` asks for something other than the task going on: its text (the
    intent) or the words (`words`) of what was said about it so far. The one rule the
    capsule's intent and the session summary's `Asked:` line follow."""
    asked = words(prompt, PROMPT_WORDS)
    if len(asked) < MIN_WORDS or signature(prompt) is not None:
        return False  # a follow-up, or an error pasted to the task at hand
    current = words(task) if isinstance(task, str) else task
    return len(asked & current) / len(asked) < SWITCH_OVERLAP


def switched(intent: str, prompt: str, limit: int = MAX_INTENT_CHARS) -> str:
    """`intent; then: prompt` within `limit` characters: the first task and the latest ones."""
    tasks = [t for t in intent.split(THEN) if t.strip()] + [prompt]
    if len(tasks) > KEPT_TASKS:
        tasks = [tasks[0], *tasks[-(KEPT_TASKS - 1) :]]
    flat = [" ".join(t.split()) for t in tasks]
    room = limit - len(THEN) * (len(flat) - 1)
    # Shorter tasks keep their words; the rest share what is left equally.
    widths = [0] * len(flat)
    left, pending = room, sorted(range(len(flat)), key=lambda i: len(flat[i]))
    while pending:
        share = left // len(pending)
        i = pending.pop(0)
        widths[i] = min(len(flat[i]), share)
        left -= widths[i]
    return THEN.join(one_line(t, max(w, 1)) for t, w in zip(flat, widths, strict=True))
