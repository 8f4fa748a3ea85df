"""A compact corpus event, expanded into the Claude Code hook payload it stands for.

An episode (or a routine session, which has the same shape) is a list of sessions, each a
list of compact events (`["bash", "pytest -q", "3 passed"]`, see README.md). `timeline`
turns one session into timed hook calls: SessionStart, one call per event 1 to 3 minutes
apart, then SessionEnd unless the session crashed. Payloads carry the fields Claude Code
sends (session_id, transcript_path, cwd, permission_mode, hook_event_name) and each
event's own; tool calls are shaped as its PostToolUse / PostToolUseFailure payloads.
"""

from __future__ import annotations

import difflib
import hashlib
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
NAMESPACE = uuid.UUID("5d6c1f3e-8a47-4b8e-9f0a-6b1c2d3e4f50")
# Event name: (hook event, number of fields after the name; a range when one is optional).
EVENTS = {
    "prompt": ("UserPromptSubmit", (1, 1)),
    "bash": ("PostToolUse", (2, 2)),
    "bash_fail": ("PostToolUseFailure", (2, 3)),
    "read": ("PostToolUse", (1, 1)),
    "grep": ("PostToolUse", (2, 2)),
    "edit": ("PostToolUse", (3, 3)),
    "write": ("PostToolUse", (2, 2)),
    "stop": ("Stop", (1, 1)),
}
ENDINGS = ("end", "crash")
MIN_GAP_S, MAX_GAP_S = 60, 180


class CorpusError(ValueError):
    """A corpus entry that cannot be replayed."""


class Call(NamedTuple):
    """One hook call: when, which event, its payload, and the label ref it records (if any)."""

    ts: int
    event: str
    payload: dict
    ref: str | None


def ms(moment: datetime) -> int:
    """Epoch milliseconds of an aware datetime."""
    return int(moment.timestamp() * 1000)


def parse_time(text: str) -> int:
    """Epoch milliseconds of an ISO 8601 UTC time such as 2026-03-04T10:00:00Z."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        raise CorpusError(f"start {text!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return ms(moment)


def session_id(key: str, index: int) -> str:
    """The deterministic session id of session `index` of episode (or routine) `key`."""
    return str(uuid.uuid5(NAMESPACE, f"{key}/{index}"))


def _unit(*parts: object) -> float:
    """A number in [0, 1) that depends only on `parts`."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def gap_ms(key: str, session: int, step: int) -> int:
    """The pause before call `step` of a session: 1 to 3 minutes, fixed by a hash."""
    seconds = MIN_GAP_S + int(_unit(key, session, step) * (MAX_GAP_S - MIN_GAP_S + 1))
    return seconds * 1000


def check_event(event: object, where: str) -> None:
    """Raise CorpusError when `event` is not a well-formed compact event."""
    if not isinstance(event, list) or not event or event[0] not in EVENTS:
        raise CorpusError(f"{where}: unknown event {str(event)[:60]!r}")
    low, high = EVENTS[event[0]][1]
    fields = event[1:]
    if not low <= len(fields) <= high:
        raise CorpusError(f"{where}: {event[0]} takes {low} to {high} fields, has {len(fields)}")
    if event[0] == "bash_fail" and len(fields) == 3:
        if not isinstance(fields[2], int) or isinstance(fields[2], bool):
            raise CorpusError(f"{where}: bash_fail exit code must be an integer")
        fields = fields[:2]
    if not all(isinstance(f, str) for f in fields):
        raise CorpusError(f"{where}: {event[0]} fields must be strings")


def check_episode(episode: object, repos: set[str]) -> None:
    """Raise CorpusError naming what makes an episode (or routine session) unreplayable."""
    if not isinstance(episode, dict) or not isinstance(episode.get("key"), str):
        raise CorpusError(f"episode without a key: {str(episode)[:60]!r}")
    key = episode["key"]
    if episode.get("repo") not in repos:
        raise CorpusError(f"{key}: repo {episode.get('repo')!r} is not in repos.json")
    if not isinstance(episode.get("start"), str):
        raise CorpusError(f"{key}: no start time")
    parse_time(episode["start"])
    sessions = episode.get("sessions")
    if not isinstance(sessions, list) or not sessions:
        raise CorpusError(f"{key}: no sessions")
    for s, session in enumerate(sessions):
        where = f"{key}#{s}"
        if not isinstance(session, dict) or not isinstance(session.get("events"), list):
            raise CorpusError(f"{where}: a session needs a list of events")
        hours = session.get("after_hours", 0)
        if not isinstance(hours, (int, float)) or isinstance(hours, bool) or hours < 0:
            raise CorpusError(f"{where}: after_hours must be a number of hours >= 0")
        if session.get("ends", "end") not in ENDINGS:
            raise CorpusError(f"{where}: ends must be one of {ENDINGS}")
        for e, event in enumerate(session["events"]):
            check_event(event, f"{where}.{e}")


def session_starts(episode: dict) -> list[int]:
    """The start (epoch ms) of each session of an episode."""
    at = parse_time(episode["start"])
    out = []
    for index, session in enumerate(episode["sessions"]):
        if index:
            at += int(float(session.get("after_hours", 0)) * 3_600_000)
        out.append(at)
    return out


def transcript_path(cwd: Path, sid: str) -> str:
    """Where Claude Code keeps the session's transcript (never read by the hooks)."""
    slug = str(cwd).replace("/", "-").replace(".", "-")
    return f"/home/dev/.claude/projects/{slug}/{sid}.jsonl"


def _base(event: str, cwd: Path, sid: str) -> dict:
    return {
        "session_id": sid,
        "transcript_path": transcript_path(cwd, sid),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
    }


def _structured_patch(old: str, new: str, first_line: int) -> list[dict]:
    """The structuredPatch Claude Code returns for an Edit of `old` into `new`."""
    a, b = old.splitlines(), new.splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += [" " + x for x in a[a1:a2]]
                continue
            lines += ["-" + x for x in a[a1:a2]]
            lines += ["+" + x for x in b[b1:b2]]
        hunks.append(
            {
                "oldStart": first_line + i1,
                "oldLines": i2 - i1,
                "newStart": first_line + j1,
                "newLines": j2 - j1,
                "lines": lines,
            }
        )
    return hunks


def payload(event: list, cwd: Path, sid: str, tool_use_id: str) -> tuple[str, dict]:
    """(hook event, payload) for one compact event of a session working in `cwd`."""
    name = event[0]
    hook = EVENTS[name][0]
    body = _base(hook, cwd, sid)
    if name == "prompt":
        body["prompt"] = event[1]
        return hook, body
    if name == "stop":
        body.update(stop_hook_active=False, last_assistant_message=event[1])
        return hook, body
    body["tool_use_id"] = tool_use_id
    if name in ("bash", "bash_fail"):
        command = event[1]
        body["tool_name"] = "Bash"
        body["tool_input"] = {"command": command, "description": f"Run {command.split()[0]}"}
        if name == "bash":
            body["tool_response"] = {
                "stdout": event[2],
                "stderr": "",
                "interrupted": False,
                "isImage": False,
            }
        else:
            code = event[3] if len(event) > 3 else 1
            body.update(error=f"Exit code {code}\n{event[2]}", is_interrupt=False)
        return hook, body
    path = str(cwd / event[1]) if name != "grep" else None
    if name == "read":
        body.update(
            tool_name="Read",
            tool_input={"file_path": path},
            tool_response={
                "type": "text",
                "file": {"filePath": path, "content": "", "numLines": 0, "startLine": 1},
            },
        )
    elif name == "grep":
        lines = event[2].splitlines()
        files = list(dict.fromkeys(x.split(":", 1)[0] for x in lines if ":" in x))
        body.update(
            tool_name="Grep",
            tool_input={"pattern": event[1], "output_mode": "content", "-n": True},
            tool_response={
                "mode": "content",
                "numFiles": len(files),
                "filenames": files,
                "content": event[2],
                "numLines": len(lines),
            },
        )
    elif name == "edit":
        old, new = event[2], event[3]
        first = 1 + int(_unit(sid, path, old) * 200)
        body.update(
            tool_name="Edit",
            tool_input={
                "file_path": path,
                "old_string": old,
                "new_string": new,
                "replace_all": False,
            },
            tool_response={
                "filePath": path,
                "oldString": old,
                "newString": new,
                "originalFile": "",
                "structuredPatch": _structured_patch(old, new, first),
                "userModified": False,
                "replaceAll": False,
            },
        )
    else:  # write
        body.update(
            tool_name="Write",
            tool_input={"file_path": path, "content": event[2]},
            tool_response={
                "type": "create",
                "filePath": path,
                "content": event[2],
                "structuredPatch": [],
            },
        )
    return hook, body


def timeline(episode: dict, cwd: Path) -> list[Call]:
    """Every hook call of an episode's sessions, with the time each is made; the calls of a
    routine session carry no ref (nothing labels them)."""
    key = episode["key"]
    labelled = not episode.get("routine")
    calls = []
    for s, (start, session) in enumerate(
        zip(session_starts(episode), episode["sessions"], strict=True)
    ):
        sid = session_id(key, s)
        body = {**_base("SessionStart", cwd, sid), "source": "startup"}
        calls.append(Call(start, "SessionStart", body, None))
        at = start
        for e, event in enumerate(session["events"]):
            at += gap_ms(key, s, e)
            tool_use_id = "toolu_" + hashlib.sha256(f"{sid}/{e}".encode()).hexdigest()[:24]
            hook, body = payload(event, cwd, sid, tool_use_id)
            calls.append(Call(at, hook, body, f"{key}#{s}.{e}" if labelled else None))
        if session.get("ends", "end") == "end":
            at += gap_ms(key, s, "end")
            calls.append(
                Call(at, "SessionEnd", {**_base("SessionEnd", cwd, sid), "reason": "other"}, None)
            )
    return calls
