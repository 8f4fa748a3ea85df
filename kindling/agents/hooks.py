"""Claude Code hooks: `kindling hook EVENT` turns each documented event into memory.

SessionStart closes capsules a vanished session left open, opens (or reuses) this session's
capsule and answers with the context block. UserPromptSubmit records the prompt, names the
capsule after the first one (and after each later one that starts another task,
kindling.agents.intent), and answers with memories recalled for it. Tool events become
readable observations (kindling.agents.records); Stop, SubagentStop, PostCompact and
Notification messages; SessionEnd closes the capsule with a summary (kindling.agents.digest).
Events that record nothing (PreToolUse, SubagentStart, ...) are accepted and ignored; an
unknown event is a one-line note. A hook never gets in the agent's way: any problem is one
line on stderr, exit status 0, and is kept for `kindling status`.
"""

from __future__ import annotations

import contextlib
import json
from typing import NamedTuple

from kindling.agents import context, digest, records
from kindling.agents.activity import note_activity
from kindling.agents.intent import INTENT_WAITING, MAX_INTENT_CHARS, starts_new_task, switched
from kindling.agents.payload import one_line, project_dir, read_payload, repo_of, scope_for
from kindling.errors import KindlingError

# Every documented Claude Code hook event: what it records.
RECORDS_TOOL = "tool"
RECORDS_MESSAGE = "message"
RECORDS_NOTHING = None
EVENTS: dict[str, str | None] = {
    "SessionStart": RECORDS_NOTHING,  # handled below: capsule + context
    "UserPromptSubmit": RECORDS_MESSAGE,
    "PreToolUse": RECORDS_NOTHING,
    "PermissionRequest": RECORDS_NOTHING,
    "PostToolUse": RECORDS_TOOL,
    "PostToolUseFailure": RECORDS_TOOL,
    "Notification": RECORDS_MESSAGE,
    "SubagentStart": RECORDS_NOTHING,
    "SubagentStop": RECORDS_MESSAGE,
    "Stop": RECORDS_MESSAGE,
    "PreCompact": RECORDS_MESSAGE,
    "PostCompact": RECORDS_MESSAGE,
    "SessionEnd": RECORDS_NOTHING,  # handled below: closes the capsule
}
# The original Kindling plugin's names for the events (its hooks/hooks.json), and the rest in
# the same kebab case.
ALIASES = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-tool-use": "PreToolUse",
    "permission-request": "PermissionRequest",
    "post-tool-use": "PostToolUse",
    "post-tool-use-failure": "PostToolUseFailure",
    "notification": "Notification",
    "subagent-start": "SubagentStart",
    "subagent-stop": "SubagentStop",
    "stop": "Stop",
    "pre-compact": "PreCompact",
    "post-compact": "PostCompact",
    "session-end": "SessionEnd",
}


class HookResult(NamedTuple):
    """What `kindling hook` prints: hook JSON on stdout, a one-line note on stderr."""

    stdout: str | None = None
    message: str | None = None
    recorded: str | None = None


def record_for(event: str, payload: dict) -> records.Record | None:
    """The observation one hook payload records, or None when the event records nothing."""
    if EVENTS.get(event) == RECORDS_TOOL:
        return records.tool_record(event, payload)
    if EVENTS.get(event) == RECORDS_MESSAGE:
        return records.message_record(event, payload)
    return None


def _answer(event: str, text: str | None) -> str | None:
    if not text:
        return None
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return json.dumps(output, ensure_ascii=False)


def _session_capsule(memory, scope: dict) -> dict:
    existing = memory.open_session_capsule(scope["sessionId"])
    if existing is not None:
        return existing
    intent = f"Claude Code session in {scope['repoId']}{INTENT_WAITING}"
    try:
        return memory.open_capsule(intent, type="session", scope=scope).entity
    except KindlingError:
        # Another hook of the same session opened it between our look and our write.
        existing = memory.open_session_capsule(scope["sessionId"])
        if existing is None:
            raise
        return existing


def _injected(memory, session_id: str) -> set[str]:
    """Ids this session was already shown: kept in its SessionStart and prompt records."""
    seen: set[str] = set()
    for obs in memory.list(
        "observations", scope={"sessionId": session_id}, kinds=["message"], limit=200
    ):
        prov = obs.get("provenance") or {}
        if prov.get("hook") in ("SessionStart", "UserPromptSubmit"):
            seen.update(i for i in prov.get("shown", ()) if isinstance(i, str))
    return seen


def session_start(memory, payload: dict) -> HookResult:
    """Close stale capsules, open this session's, record the start and answer with context."""
    repo = repo_of(payload)
    scope = scope_for(payload, repo)
    scopes = context.repo_scopes(memory, repo)
    digest.close_stale(memory, None if scopes == [{}] else repo.ids, scope["sessionId"])
    capsule = _session_capsule(memory, scope)
    text, shown = context.session_context(memory, repo, scope["sessionId"], capsule["id"])
    source = payload.get("source") if isinstance(payload.get("source"), str) else "startup"
    memory.log(
        f"Claude Code session started ({source}) in {repo.id}.",
        scope=scope,
        provenance={"source": "claude-code", "hook": "SessionStart", "shown": shown},
    )
    return HookResult(stdout=_answer("SessionStart", text), recorded=capsule["id"])


def prompt_submitted(memory, payload: dict) -> HookResult:
    """Record the prompt, title the capsule after the first one (and each new task in it),
    answer with recalled memory."""
    repo = repo_of(payload)
    scope = scope_for(payload, repo)
    found = records.message_record("UserPromptSubmit", payload)
    if found is None:
        return HookResult()
    already = _injected(memory, scope["sessionId"])
    recalled, shown = context.prompt_recall(
        memory, repo, scope["sessionId"], found.content, already
    )
    provenance = {**found.provenance, "shown": shown}
    capsule = _session_capsule(memory, scope)  # hooks installed mid-session start one here
    written = memory.log(found.content, kind="message", scope=scope, provenance=provenance)
    if capsule["intent"].endswith(INTENT_WAITING):
        memory.set_intent(capsule["id"], one_line(found.content, MAX_INTENT_CHARS))
    elif starts_new_task(capsule["intent"], found.content):
        memory.set_intent(capsule["id"], switched(capsule["intent"], found.content))
    return HookResult(
        stdout=_answer("UserPromptSubmit", recalled),
        message=_masked_note(written.masked),
        recorded=written.entity["id"],
    )


def session_end(memory, payload: dict) -> HookResult:
    """Close the session's capsule with its closing summary."""
    scope = scope_for(payload)
    capsule = memory.open_session_capsule(scope["sessionId"])
    if capsule is None:
        return HookResult()
    return HookResult(recorded=digest.close_session_capsule(memory, capsule)["id"])


def _masked_note(masked: int) -> str | None:
    return f"kindling: masked {masked} secret(s) before recording" if masked else None


def handle(memory, event: str, payload: dict) -> HookResult:
    """Apply one parsed hook payload to the store."""
    if event == "SessionStart":
        return session_start(memory, payload)
    if event == "UserPromptSubmit":
        return prompt_submitted(memory, payload)
    if event == "SessionEnd":
        return session_end(memory, payload)
    scope = scope_for(payload)
    found = record_for(event, payload)
    if found is None:
        return HookResult()
    written = memory.log(found.content, kind=found.kind, scope=scope, provenance=found.provenance)
    return HookResult(message=_masked_note(written.masked), recorded=written.entity["id"])


def run_hook(event: str, data: bytes, store: str | None = None) -> HookResult:
    """Everything `kindling hook EVENT` does; never raises, problems become the message."""
    from kindling.memory import Memory

    event = ALIASES.get(event, event)
    memory = None
    payload: dict = {}
    try:
        payload = read_payload(data)
        memory = Memory(store, cwd=project_dir(payload), autowatch=True)
        if event not in EVENTS:
            note_activity(memory.store, event, known=False)
            memory.close()
            unknown = f"kindling hook: unknown hook event {event!r}; nothing recorded"
            return HookResult(message=unknown)
        named = payload.get("hook_event_name")
        if isinstance(named, str) and ALIASES.get(named, named) != event:
            raise KindlingError(f"payload is for {named}, not {event}")
        with memory, memory.batch():
            result = handle(memory, event, payload)
        note_activity(memory.store, event, recorded=result.recorded)
        return result
    except KindlingError as exc:
        message = f"kindling hook {event}: {exc}; nothing recorded"
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent
        detail = one_line(f"{type(exc).__name__}: {exc}", 300)
        message = f"kindling hook {event}: unexpected {detail}; nothing recorded"
    # Claude Code never shows a hook's stderr: keep the problem for `kindling status`, even
    # when the payload was too broken to say which project it came from (then: the cwd's).
    with contextlib.suppress(Exception):
        if memory is None:
            memory = Memory(store, cwd=project_dir(payload))
        note_activity(memory.store, event, error=message, known=event in EVENTS)
    if memory is not None:
        memory.close()
    return HookResult(message=message)
