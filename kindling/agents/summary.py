"""A session's summary, built mechanically from all its observations: what was asked, tried,
found, changed, left failing and left to do, each line naming the observations it rests on.

    Asked: fix the upload timeout; then: add a --verbose flag [3f9a1c2e 0b1c2d3e]
    Tried: src/upload.py, but Bash: pytest -q still failed (TimeoutError: ...) [...]
    Root cause: The timeout was caused by the retry loop sleeping 30 s per chunk. [...]
    Changed: src/upload.py, src/cli.py; then passed: Bash: pytest tests/test_upload.py [...]
    Still failing: Bash: npm run lint -> exit 2 (lint errors) [...]
    Next: Next, add a test for resumed uploads. [...]
    Interrupted: the session never ended; its last activity was at 2026-06-20 10:37 UTC [...]
    Last message: Fixed the timeout: ... [...]

Parts with nothing to say are left out. No model and no clock: the same observations always
give the same bytes. The fixed errors, the fix and the failed attempts come from
kindling.index.episodes.follow, the rule search uses. A summary the agent wrote itself (an
observation with `provenance.summary == "agent"`) comes first instead, followed by the parts
that add facts. The trailing `[ids]` are the shortest prefixes (MIN_SOURCE_ID characters at
least) that tell the capsule's observations apart: forgetting one of them redacts exactly
its lines (kindling.forgetting.without_lines_from).
"""

from __future__ import annotations

import os
from typing import NamedTuple

from kindling.agents.payload import one_line
from kindling.agents.summary_text import (
    CAUSE_CHARS,
    cause_in,
    cause_strength,
    command_of,
    error_line,
    next_steps,
    public,
    sentences,
    task_starts,
    the_ask,
)
from kindling.clock import format_utc
from kindling.index.episodes import Episode, of_observations
from kindling.index.traits import hook_of, provenance, role_of
from kindling.summary_format import MIN_SOURCE_ID, parts_of, sourced

MAX_SUMMARY_CHARS = 6_000
MAX_EVIDENCE = 20
LISTED = 8
TASKS = 5
LAST_MESSAGE_CHARS = 2_500
AGENT_SUMMARY_CHARS = 3_000
TURN_END = ("Stop", "SubagentStop")
CONFIDENCE = {"agent": 0.9, "message": 0.8, "mechanical": 0.5}


class Closing(NamedTuple):
    """A capsule's closing summary, how sure it is, and the observations it rests on."""

    text: str
    confidence: float
    evidence: list[str]


class Part(NamedTuple):
    label: str
    text: str
    sources: list[str]


def short_ids(ids: list[str]) -> dict[str, str]:
    """Each id's shortest prefix (MIN_SOURCE_ID at least) that no other of `ids` starts with."""
    ordered = sorted(set(ids))
    out = {}
    for n, this in enumerate(ordered):
        near = ordered[max(n - 1, 0) : n] + ordered[n + 1 : n + 2]
        shared = max((len(os.path.commonprefix([this, o])) for o in near), default=0)
        out[this] = this[: max(MIN_SOURCE_ID, shared + 1)]
    return out


def _body(obs: dict) -> str:
    """A message's text without the label line hooks put first (`Subagent X reported:`)."""
    first, _, rest = obs["content"].partition("\n")
    return rest if first.endswith(":") and rest else obs["content"]


def _asked(members: list[dict]) -> Part | None:
    turns = [
        o
        for o in members
        if o["content"].strip() and (role_of(o) == "prompt" or hook_of(o) in TURN_END)
    ]
    if not any(role_of(o) == "prompt" for o in turns):
        return None
    starts = task_starts([(role_of(o) == "prompt", o["content"]) for o in turns])
    shown = [turns[i] for i in starts[:TASKS]]
    texts = [one_line(the_ask(p["content"]), 300 if n == 0 else 200) for n, p in enumerate(shown)]
    more = f"; and {len(starts) - TASKS} more" if len(starts) > TASKS else ""
    return Part("Asked", "; then: ".join(texts) + more, [p["id"] for p in shown])


def _came_back(episode: Episode, n: int) -> int | None:
    """The error after step `n` that repeats one before it (same subject or signature)."""
    steps = episode.steps
    before = [s for s in steps[:n] if s.kind == "error"]
    subjects = {s.subject for s in before if s.subject}
    signatures = {s.signature for s in before if s.signature}
    for step in steps[n + 1 :]:
        if step.kind == "error" and (step.subject in subjects or step.signature in signatures):
            return step.rowid
    return None


def _tried(members: list[dict], episode: Episode) -> Part | None:
    # Attempts before the same failure came back, grouped by that failure.
    groups: dict[int, list[int]] = {}
    for n in sorted(episode.attempts):
        again = _came_back(episode, n)
        if again is not None:
            groups.setdefault(again, []).append(n)
    items, sources = [], []
    for again, diffs in list(groups.items())[:4]:
        files = list(dict.fromkeys(episode.steps[d].file or "a file" for d in diffs))
        error = members[again]
        said = one_line(error_line(error["content"]), 160)
        command = one_line(command_of(error["content"]), 200)
        items.append(f"{', '.join(files)}, but {command} still failed ({said})")
        sources += [members[d]["id"] for d in diffs] + [error["id"]]
    return Part("Tried", "; ".join(items), sources) if items else None


def _root_cause(turn_ends: list[dict]) -> Part | None:
    best: tuple[int, int, str, str] | None = None
    for n, obs in enumerate(turn_ends):
        said = sentences(_body(obs))
        for k, sentence in enumerate(said):
            strength = cause_strength(sentence)
            if strength and (best is None or (strength, n) >= best[:2]):
                best = (strength, n, cause_in(said, k), obs["id"])
    if best is None:
        return None
    sentence = best[2]
    if sentence.lower().startswith("root cause:"):
        sentence = sentence[len("root cause:") :].strip()
    return Part("Root cause", one_line(sentence, CAUSE_CHARS), [best[3]])


def _changed(members: list[dict], episode: Episode) -> Part | None:
    last_diff: dict[str, str] = {}
    fix_files: list[str] = []
    for step in episode.steps:
        if step.file:
            last_diff[step.file] = step.id
            if step.rowid in episode.fix and step.file not in fix_files:
                fix_files.append(step.file)
    files = list(dict.fromkeys([*fix_files, *last_diff]))
    checks = sorted({s.rowid: s for s in episode.fixed.values() if s.kind != "file_diff"}.values())
    if not files and not checks:
        return None
    shown = files[:LISTED]
    text = ", ".join(shown) + (f" and {len(files) - LISTED} more" if len(files) > LISTED else "")
    if checks:
        ran = "; ".join(one_line(command_of(members[s.rowid]["content"]), 200) for s in checks[:2])
        text = f"{text}; then passed: {ran}" if text else f"no file edits; then passed: {ran}"
    return Part("Changed", text, [last_diff[f] for f in shown] + [s.id for s in checks[:2]])


def _still_failing(members: list[dict], episode: Episode) -> Part | None:
    latest: dict[str, int] = {}
    for step in episode.steps:
        if step.kind == "error" and step.subject in episode.failing:
            latest[step.subject] = step.rowid
    rows = sorted(latest.values())[:LISTED]
    items = []
    for n in rows:
        content = members[n]["content"]
        said = one_line(error_line(content), 160)
        head = one_line(content.split("\n", 1)[0], 200)
        items.append(head if said == head else f"{head} ({said})")
    return (
        Part("Still failing", "; ".join(items), [members[n]["id"] for n in rows]) if items else None
    )


def _interrupted(members: list[dict]) -> Part:
    last = members[-1]
    moment = format_utc(last["ts"], "%Y-%m-%d %H:%M UTC")
    return Part(
        "Interrupted", f"the session never ended; its last activity was at {moment}", [last["id"]]
    )


def build(members: list[dict], capsule_ids: list[str], *, interrupted: bool = False) -> Closing:
    """The summary of a session capsule from its (live) observations, oldest first."""
    members = [{**o, "content": public(o["content"])} for o in members]
    episode = of_observations(members)
    agent = [o for o in members if provenance(o).get("summary") == "agent"]
    turn_ends = [o for o in members if hook_of(o) in TURN_END and o["content"].strip()]
    changed = _changed(members, episode)
    failing = _still_failing(members, episode)
    stale = _interrupted(members) if interrupted else None
    if agent:
        mine = Part(
            "Summary", one_line(agent[-1]["content"], AGENT_SUMMARY_CHARS), [agent[-1]["id"]]
        )
        parts = [mine, changed, failing, stale]
        confidence = CONFIDENCE["agent"]
    else:
        next_part = None
        if turn_ends:
            said = next_steps(_body(turn_ends[-1]))
            if said:
                next_part = Part("Next", one_line(" ".join(said), 400), [turn_ends[-1]["id"]])
        root = _root_cause(turn_ends)
        parts = [
            _asked(members),
            _tried(members, episode),
            root,
            changed,
            failing,
            next_part,
            stale,
        ]
        confidence = CONFIDENCE["message" if turn_ends else "mechanical"]
    parts = [p for p in parts if p is not None and p.text]
    if not agent and turn_ends:
        used = sum(len(p.text) + 30 * len(p.sources) for p in parts)
        room = min(LAST_MESSAGE_CHARS, max(200, MAX_SUMMARY_CHARS - used))
        parts.append(
            Part("Last message", one_line(_body(turn_ends[-1]), room), [turn_ends[-1]["id"]])
        )
    if not parts:
        parts = [Part("Recorded", _activity(members), [])]
    short = short_ids(list(capsule_ids) + [o["id"] for o in members])
    lines = [sourced(f"{p.label}: {p.text}", [short[i] for i in p.sources]) for p in parts]
    return Closing("\n".join(lines), confidence, _evidence(parts))


def _evidence(parts: list[Part]) -> list[str]:
    """The changed files' last diffs and the passing check, the root cause, then the rest."""
    first = {"Changed": 0, "Root cause": 1}
    ordered = sorted(parts, key=lambda p: first.get(p.label, 2))
    ids = [i for p in ordered for i in p.sources]
    return list(dict.fromkeys(ids))[:MAX_EVIDENCE]


def _activity(members: list[dict]) -> str:
    kinds: dict[str, int] = {}
    for obs in members:
        kinds[obs["kind"]] = kinds.get(obs["kind"], 0) + 1
    counted = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return f"{counted}; no changes or failures"


# What a reader of a summary in one line needs first: the answer, then how it was reached.
GIST_ORDER = (
    "Summary",
    "Root cause",
    "Changed",
    "Still failing",
    "Last message",
    "Interrupted",
    "Next",
)


def gist(content: str, width: int) -> str:
    """A summary as one line of at most `width` characters, its answer first: the agent's
    own summary, the root cause, what changed, what still fails (sources dropped); a summary
    in another format, as it is."""
    parts = parts_of(content)
    if not parts:
        return one_line(content, width)
    chosen = [f"{label}: {parts[label]}" for label in GIST_ORDER if parts.get(label)]
    if not chosen:
        chosen = [f"{label}: {text}" for label, text in parts.items()]
    return one_line(" ".join(chosen), width)
