"""Agent hooks: `kindling hook [--agent NAME] EVENT` turns each documented event into memory.

One pipeline for every agent, in Claude Code's vocabulary: another agent's adapter
(kindling.agents.adapters) maps its events and payloads onto these and shapes the answer.

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
from typing import NamedTuple

from kindling.agents import context, digest, records, session_capsule
from kindling.agents.activity import note_activity
from kindling.agents.adapters.claude_code import (
    ALIASES,
    EVENTS,
    RECORDS_MESSAGE,
    RECORDS_NOTHING,
    RECORDS_TOOL,
)
from kindling.agents.agent_ids import CLAUDE_CODE, label
from kindling.agents.intent import INTENT_WAITING, MAX_INTENT_CHARS, starts_new_task, switched
from kindling.agents.payload import one_line, project_dir, read_payload, repo_of, scope_for
from kindling.errors import KindlingError

# Every documented Claude Code hook event and what it records: the pipeline's own vocabulary,
# which each agent's adapter (kindling.agents.adapters) maps its events onto.
__all__ = ["ALIASES", "EVENTS", "RECORDS_MESSAGE", "RECORDS_NOTHING", "RECORDS_TOOL"]


class HookResult(NamedTuple):
    """What `kindling hook` prints: hook JSON on stdout, a one-line note on stderr."""

    stdout: str | None = None
    message: str | None = None
    recorded: str | None = None
    context: str | None = None  # what the agent is told, before its adapter shapes it


class Options(NamedTuple):
    """How one hook runs: whether the agent takes recalled memory back at a prompt, and the
    agent whose memory alone the start context and recall show (None: every agent's)."""

    recall: bool = True
    from_agent: str | None = None


DEFAULT_OPTIONS = Options()


def record_for(event: str, payload: dict) -> records.Record | None:
    """The observation one hook payload records, or None when the event records nothing."""
    if EVENTS.get(event) == RECORDS_TOOL:
        return records.tool_record(event, payload)
    if EVENTS.get(event) == RECORDS_MESSAGE:
        return records.message_record(event, payload)
    return None


def _session_capsule(memory, scope: dict, *, starting: bool = False) -> dict:
    intent = f"{label(scope['agentId'])} session in {scope['repoId']}{INTENT_WAITING}"
    return session_capsule.session_capsule(memory, scope, intent, starting=starting)


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


def session_start(memory, payload: dict, options: Options | None = None) -> HookResult:
    """Close stale capsules, open this session's, record the start and answer with context."""
    options = options or DEFAULT_OPTIONS
    repo = repo_of(payload)
    scope = scope_for(payload, repo)
    scopes = context.repo_scopes(memory, repo)
    digest.close_stale(memory, None if scopes == [{}] else repo.ids, scope["sessionId"])
    capsule = _session_capsule(memory, scope, starting=True)
    text, shown = context.session_context(
        memory, repo, scope["sessionId"], capsule["id"], agent=options.from_agent
    )
    source = payload.get("source") if isinstance(payload.get("source"), str) else "startup"
    memory.log(
        f"{label(scope['agentId'])} session started ({source}) in {repo.id}.",
        scope=scope,
        provenance={"source": scope["agentId"], "hook": "SessionStart", "shown": shown},
    )
    return HookResult(context=text, recorded=capsule["id"])


def prompt_submitted(memory, payload: dict, options: Options | None = None) -> HookResult:
    """Record the prompt, title the capsule after the first one (and each new task in it),
    answer with recalled memory."""
    options = options or DEFAULT_OPTIONS
    repo = repo_of(payload)
    scope = scope_for(payload, repo)
    found = records.message_record("UserPromptSubmit", payload)
    if found is None:
        return HookResult()
    recalled, shown = None, []
    if options.recall:
        already = _injected(memory, scope["sessionId"])
        recalled, shown = context.prompt_recall(
            memory, repo, scope["sessionId"], found.content, already, agent=options.from_agent
        )
    provenance = {**found.provenance, "shown": shown}
    capsule = _session_capsule(memory, scope)  # hooks installed mid-session start one here
    written = memory.log(found.content, kind="message", scope=scope, provenance=provenance)
    if capsule["intent"].endswith(INTENT_WAITING):
        titled = memory.set_intent(capsule["id"], one_line(found.content, MAX_INTENT_CHARS))
        session_capsule.remember(memory, titled.entity)
    elif starts_new_task(capsule["intent"], found.content):
        titled = memory.set_intent(capsule["id"], switched(capsule["intent"], found.content))
        session_capsule.remember(memory, titled.entity)
    return HookResult(
        context=recalled,
        message=_masked_note(written.masked + found.masked),
        recorded=written.entity["id"],
    )


def session_end(memory, payload: dict) -> HookResult:
    """Close the session's capsule with its closing summary."""
    scope = scope_for(payload)
    session_capsule.ensure(memory, scope)
    capsule = memory.open_session_capsule(scope["sessionId"])
    if capsule is None:
        return HookResult()
    closed = digest.close_session_capsule(memory, capsule)
    session_capsule.remember(memory, closed, ended=True)
    return HookResult(recorded=closed["id"])


def _masked_note(masked: int) -> str | None:
    return f"kindling: masked {masked} secret(s) before recording" if masked else None


def handle(memory, event: str, payload: dict, options: Options | None = None) -> HookResult:
    """Apply one parsed (Claude Code shaped) hook payload to the store."""
    if event == "SessionStart":
        return session_start(memory, payload, options)
    if event == "UserPromptSubmit":
        return prompt_submitted(memory, payload, options)
    if event == "SessionEnd":
        return session_end(memory, payload)
    scope = scope_for(payload)
    found = record_for(event, payload)
    if found is None:
        return HookResult()
    session_capsule.ensure(memory, scope)  # its file may be gone with a `git switch`
    written = memory.log(found.content, kind=found.kind, scope=scope, provenance=found.provenance)
    masked = written.masked + found.masked  # the record masks before cutting, the store after
    return HookResult(message=_masked_note(masked), recorded=written.entity["id"])


def run_hook(
    event: str,
    data: bytes,
    store: str | None = None,
    *,
    agent: str = CLAUDE_CODE,
    from_agent: str | None = None,
) -> HookResult:
    """Everything `kindling hook [--agent NAME] EVENT` does; never raises, problems become the
    message. The agent's adapter maps its event and payload onto the pipeline's and shapes the
    answer in the agent's own output form."""
    from kindling.agents import adapters
    from kindling.agents.adapters.common import first_root
    from kindling.memory import Memory

    memory = None
    payload: dict = {}
    adapter = None
    try:
        adapter = adapters.get(agent)
        raw = read_payload(data)
        if event not in adapter.events:
            payload = {**raw, "cwd": first_root(raw)}  # an IDE's workspace root, else its cwd
            memory = Memory(store, cwd=project_dir(payload), autowatch=True)
            note_activity(memory.store, event, known=False)
            memory.close()
            who = "" if agent == CLAUDE_CODE else f"{label(agent)} "
            unknown = f"kindling hook: unknown {who}hook event {event!r}; nothing recorded"
            return _shaped(adapter, event, HookResult(message=unknown))
        if adapter.events[event] is None:
            return _shaped(adapter, event, HookResult())  # an event this agent records nothing for
        named = raw.get("hook_event_name")
        if isinstance(named, str) and adapter.events.get(named, named) != adapter.events[event]:
            raise KindlingError(f"payload is for {named}, not {event}")
        normalized = adapter.normalize(event, raw)
        payload = normalized.payload
        memory = Memory(
            store, cwd=project_dir(payload), autowatch=True, index_budget_s=context.INDEX_BUDGET_S
        )
        options = Options(recall=adapter.injects_prompt_context, from_agent=from_agent)
        with memory, memory.batch():
            result = handle(memory, normalized.event, payload, options)
        note_activity(memory.store, normalized.event, recorded=result.recorded)
        return _shaped(adapter, event, result)
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
        known = adapter is not None and event in adapter.events
        note_activity(memory.store, event, error=message, known=known)
    if memory is not None:
        memory.close()
    return _shaped(adapter, event, HookResult(message=message))


def _shaped(adapter, event: str, result: HookResult) -> HookResult:
    """`result` with its context written in the agent's output form (some answer every time)."""
    if adapter is None:
        return result
    return result._replace(stdout=adapter.answer(event, result.context))
