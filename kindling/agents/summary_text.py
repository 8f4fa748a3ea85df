"""The words a session summary quotes, picked out of recorded text without a model.

- `<private>...</private>` sections are dropped from every text before anything is quoted;
- a prompt starts a new task when it shares little with the words of the task before;
- a turn-end message states a root cause in a sentence naming one ("root cause", "because",
  "caused by", ...) and next steps in a sentence starting "Next", "TODO", "Remaining", ...;
- an error is shown by its line that states it (`WorkerLostError: ...`), not by its run line.

Every rule is a plain function of the text, so the same session always reads the same.
"""

from __future__ import annotations

import re

from kindling.agents.intent import starts_new_task, words

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
# A prompt's first line shorter than this says too little on its own.
ASK_CHARS = 40
# A sentence ends at . ! ? followed by space and what starts a sentence, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*-])|\n+")
# How strongly a sentence states a cause: the first pattern it matches, strongest first.
_CAUSES = (
    re.compile(r"\broot[ -]cause\b", re.IGNORECASE),
    re.compile(
        r"\b(?:the (?:real |actual )?(?:cause|problem|issue|bug) (?:was|is)|caused by|the cause\b)",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:because|due to|came from|comes from|stems from|results from|the reason"
        r"|which is why|that is why|which explains|hence)\b",
        re.IGNORECASE,
    ),
)
# A cause stated as a heading (`Root cause: the pool has no limit.`) goes on in the sentences
# after it, up to the fix or what is next.
_AFTER_CAUSE = re.compile(
    r"^(?:fix|fixed|next|todo|still to do|remaining|done|now|gave|added|changed|switched"
    r"|removed|reverted|replaced|updated|moved|set|made|i|i'll|i've|let's|let me)(?![\w'])",
    re.IGNORECASE,
)
CAUSE_CHARS = 600
_HEADING = re.compile(r"(?:the\s+)?root[ -]cause\b", re.IGNORECASE)
# "Next, ...", "Next I ...", "Next step: ..." (not "next build no longer fails": a command).
_NEXT = re.compile(
    r"^(?:[-*]\s*)?(?:next(?:\s+steps?)?\s*[:,]|next\s+(?:i|we|you|up|steps?)\b|todo\b"
    r"|still to do\b|remaining\b)",
    re.IGNORECASE,
)
_NAMED_ERROR = re.compile(r"\b[\w.]*(?:Error|Exception|Errno)\w*\b:|\berror(?:\[\w+\])?:")
_ERROR_WORDS = re.compile(
    r"error|exception|fail|fatal|panic|denied|refused|not found|timed out|traceback|cannot"
    r"|could not|invalid|undefined|killed",
    re.IGNORECASE,
)
_RUN_LINE = re.compile(r" -> (?:exit -?\d+|failed|interrupted)$")


def public(text: str) -> str:
    """`text` without its `<private>...</private>` sections (an unclosed one: to the end)."""
    return _PRIVATE.sub(" ", text) if "<private" in text.lower() else text


def task_starts(turns: list[tuple[bool, str]]) -> list[int]:
    """Of a session's turns in order ((is a prompt, text): prompts and what the agent said),
    the indexes of the prompts that start a task: the first, and each later one that starts
    a new task by the rule the capsule's intent follows (kindling.agents.intent), judged
    against the words of the task going on (its prompts and answers)."""
    starts: list[int] = []
    current: set[str] = set()
    for n, (prompt, text) in enumerate(turns):
        found = words(text)
        if prompt and (not starts or starts_new_task(current, text)):
            starts.append(n)
            current = set(found)
        else:
            current |= found
    return starts


def the_ask(prompt: str) -> str:
    """What a prompt asks, without what was pasted into it: its first line, or its first
    paragraph when that line alone says little (under ASK_CHARS)."""
    text = prompt.strip()
    first = text.split("\n", 1)[0]
    if len(first.strip()) >= ASK_CHARS:
        return first
    return text.split("\n\n", 1)[0]


def sentences(text: str) -> list[str]:
    """The sentences (and lines) of a text, whitespace folded."""
    return [" ".join(s.split()) for s in _SENTENCE_END.split(text) if s.strip()]


def cause_strength(sentence: str) -> int:
    """0 when the sentence states no cause; else higher for a plainer statement of one."""
    for rank, pattern in enumerate(_CAUSES):
        if pattern.search(sentence):
            return len(_CAUSES) - rank
    return 0


def cause_in(said: list[str], n: int) -> str:
    """The cause sentence `said[n]`, with the sentences after it when it opens with "root
    cause" (`Root cause: ...`), up to CAUSE_CHARS and before the fix, what was done or what
    is next."""
    quoted = said[n]
    if not _HEADING.match(quoted):
        return quoted
    for sentence in said[n + 1 :]:
        if _AFTER_CAUSE.match(sentence) or len(quoted) + len(sentence) >= CAUSE_CHARS:
            break
        quoted = f"{quoted} {sentence}"
    return quoted


def next_steps(text: str) -> list[str]:
    """The sentences of a message that state what is left to do."""
    return [s for s in sentences(text) if _NEXT.match(s)]


def error_line(content: str) -> str:
    """The line of an error record that states the error: a named one (`KeyError: 'x'`), else
    the first that reads like an error, else the first of its output, else its run line."""
    lines = [line.strip() for line in content.split("\n") if line.strip()]
    body = lines[1:] if lines and _RUN_LINE.search(lines[0]) else lines
    for test in (_NAMED_ERROR.search, _ERROR_WORDS.search):
        for line in body[:80]:
            if test(line):
                return line
    return body[0] if body else (lines[0] if lines else "")


def run_line(content: str) -> str:
    """The first line of a command record (`Bash: npm test -> exit 1`)."""
    return content.split("\n", 1)[0].strip()


def command_of(content: str) -> str:
    """What a command record ran, without its outcome: `Bash: npm test`."""
    first = run_line(content)
    return re.sub(r" -> (?:exit -?\d+|failed|interrupted)$", "", first)
