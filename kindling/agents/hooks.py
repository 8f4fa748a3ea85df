"""Claude Code hooks: turn a hook's JSON payload into observations, and build the context block.

`kindling hook EVENT` reads the payload Claude Code writes on stdin. Prompts become `message`
observations, Bash calls `command`, Edit/Write `file_diff`, other tools `tool_call`, failed
tools `error`. SessionStart opens (or reuses) the session's capsule and answers with the context
block; SessionEnd closes the capsule. A hook must never get in the agent's way, so any problem
is reported in one line and nothing is recorded.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from kindling.clock import format_utc
from kindling.errors import KindlingError

EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "PreCompact",
    "SessionEnd",
)
TOOL_EVENTS = ("PostToolUse", "PostToolUseFailure")
SOURCE = "claude-code"

# Tool output, diffs and written file bodies keep this many characters (head and tail);
# prompts and assistant messages keep MAX_MESSAGE_CHARS. What is cut is replaced by a notice.
MAX_TOOL_OUTPUT_CHARS = 4_000
MAX_MESSAGE_CHARS = 20_000
# The context block stays under this many characters (Claude Code caps added context near 10k).
MAX_CONTEXT_CHARS = 8_000
CONTEXT_RECENT = 12

FILE_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
OWN_MCP_TOOLS = "mcp__kindling__"


class Capture(NamedTuple):
    """One observation a hook payload turns into."""

    kind: str
    content: str
    provenance: dict


class HookResult(NamedTuple):
    """What `kindling hook` prints: hook JSON on stdout, a one-line note on stderr."""

    stdout: str | None = None
    message: str | None = None
    recorded: str | None = None


# ------------------------------------------------------------------ text helpers


def truncate(text: str, limit: int = MAX_TOOL_OUTPUT_CHARS) -> tuple[str, bool]:
    """Keep the head and tail of `text` within `limit` characters, with a visible notice."""
    if len(text) <= limit:
        return text, False
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    notice = f"\n[... kindling cut {cut:,} of {len(text):,} characters here ...]\n"
    return text[:head] + notice + text[-tail:], True


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _when(ms: int) -> str:
    return format_utc(ms, "%Y-%m-%d %H:%M")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# ------------------------------------------------------------------ payload -> scope


def read_payload(data: bytes) -> dict:
    """Parse the hook's stdin; a KindlingError says what is wrong with it."""
    if not data.strip():
        raise KindlingError("no hook payload on stdin")
    try:
        payload = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KindlingError(f"hook payload is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise KindlingError("hook payload is not a JSON object")
    return payload


def project_dir(payload: dict) -> Path:
    """The project: $CLAUDE_PROJECT_DIR when Claude Code sets it, else the payload's cwd."""
    chosen = os.environ.get("CLAUDE_PROJECT_DIR") or payload.get("cwd")
    if not isinstance(chosen, str) or not chosen:
        chosen = os.getcwd()
    return Path(chosen)


def scope_for(payload: dict) -> dict:
    """sessionId from session_id, repoId from the project directory's name."""
    session = payload.get("session_id")
    if not isinstance(session, str) or not session.strip():
        raise KindlingError("hook payload has no session_id")
    repo = project_dir(payload).resolve().name or "root"
    return {"sessionId": session, "repoId": repo, "agentId": SOURCE}


# ------------------------------------------------------------------ payload -> observation


def _relative(path: str, payload: dict) -> str:
    try:
        return str(Path(path).relative_to(project_dir(payload)))
    except ValueError:
        return path


def _patch_text(patches: list) -> str:
    out = []
    for hunk in patches:
        if not isinstance(hunk, dict) or not isinstance(hunk.get("lines"), list):
            continue
        out.append(
            f"@@ -{hunk.get('oldStart', 0)},{hunk.get('oldLines', 0)} "
            f"+{hunk.get('newStart', 0)},{hunk.get('newLines', 0)} @@\n"
        )
        out.extend(f"{line}\n" for line in hunk["lines"] if isinstance(line, str))
    return "".join(out)


def _file_diff(tool: str, tool_input: dict, response: Any, payload: dict) -> tuple[str, dict]:
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or "?"
    shown = _relative(str(path), payload)
    prov = {"file": shown}
    if tool == "NotebookEdit":
        mode = tool_input.get("edit_mode") or "replace"
        cell = tool_input.get("cell_id") or "new cell"
        body = f"NotebookEdit {shown} ({mode} {cell})\n{_text(tool_input.get('new_source'))}"
        return body, prov
    resp = response if isinstance(response, dict) else {}
    header = f"--- a/{shown}\n+++ b/{shown}\n"
    patches = resp.get("structuredPatch")
    if isinstance(patches, list) and patches:
        return header + _patch_text(patches), prov
    if tool == "Write":
        lines = _text(tool_input.get("content")).splitlines()
        created = resp.get("type") != "update"
        old = "/dev/null" if created else f"a/{shown}"
        hunk = f"@@ -0,0 +1,{len(lines)} @@\n" if created else ""
        return f"--- {old}\n+++ b/{shown}\n{hunk}" + "".join(f"+{x}\n" for x in lines), prov
    edits = tool_input.get("edits") if tool == "MultiEdit" else [tool_input]
    body = []
    for edit in edits if isinstance(edits, list) else []:
        if isinstance(edit, dict):
            old = _text(edit.get("old_string")).splitlines(keepends=True)
            new = _text(edit.get("new_string")).splitlines(keepends=True)
            body.extend(
                line if line.endswith("\n") else line + "\n"
                for line in list(difflib.unified_diff(old, new, n=3))[2:]
            )
    return header + "".join(body), prov


def _tool_summary(tool: str, tool_input: dict) -> str:
    for key in ("command", "file_path", "notebook_path", "pattern", "url", "query", "description"):
        if isinstance(tool_input.get(key), str):
            return f"{tool} {tool_input[key]}"
    return f"{tool} {_one_line(_text(tool_input), 500)}" if tool_input else tool


def _bash_output(response: Any) -> str:
    if not isinstance(response, dict):
        return _text(response)
    parts = [_text(response.get("stdout")).rstrip("\n")]
    if response.get("stderr"):
        parts.append("[stderr]\n" + _text(response["stderr"]).rstrip("\n"))
    if response.get("interrupted"):
        parts.append("[interrupted]")
    return "\n".join(p for p in parts if p)


def capture(event: str, payload: dict) -> Capture | None:
    """The observation one hook payload records, or None when the event records nothing."""
    base = {"source": SOURCE, "hook": event}
    if event in ("UserPromptSubmit", "Stop"):
        key, role = (
            ("prompt", "user")
            if event == "UserPromptSubmit"
            else ("last_assistant_message", "assistant")
        )
        message = payload.get(key)
        if not isinstance(message, str) or not message.strip():
            return None
        text, cut = truncate(message, MAX_MESSAGE_CHARS)
        prov = {**base, "role": role}
        if cut:
            prov["truncated"] = True
        return Capture("message", text, prov)
    if event == "PreCompact":
        trigger = payload.get("trigger") or "unknown"
        text = f"Claude Code compacted its context (trigger: {trigger})."
        instructions = payload.get("custom_instructions")
        if isinstance(instructions, str) and instructions.strip():
            text += f" Instructions: {instructions.strip()}"
        return Capture("message", text, {**base, "trigger": trigger})
    if event not in TOOL_EVENTS:
        return None

    tool = payload.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise KindlingError(f"{event} payload has no tool_name")
    if tool.startswith(OWN_MCP_TOOLS):
        return None  # Kindling's own MCP tools already are memory operations
    tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    prov: dict[str, Any] = {**base, "tool": tool}
    if isinstance(payload.get("tool_use_id"), str):
        prov["toolUseId"] = payload["tool_use_id"]

    if event == "PostToolUseFailure":
        error = _text(payload.get("error") or payload.get("error_message")) or "failed"
        what = (
            f"$ {tool_input['command']}"
            if tool == "Bash" and tool_input.get("command")
            else (_tool_summary(tool, tool_input))
        )
        text, cut = truncate(f"{what}\n{tool} failed: {error}")
        if payload.get("is_interrupt"):
            prov["interrupted"] = True
        kind, content = "error", text
    elif tool == "Bash":
        command = _text(tool_input.get("command"))
        prov["command"] = command
        output, cut = truncate(_bash_output(payload.get("tool_response")))
        kind, content = "command", f"$ {command}\n{output}".rstrip("\n")
    elif tool in FILE_TOOLS:
        diff, extra = _file_diff(tool, tool_input, payload.get("tool_response"), payload)
        prov.update(extra)
        content, cut = truncate(diff)
        kind = "file_diff"
    else:
        response = payload.get("tool_response")
        summary = _tool_summary(tool, tool_input)
        # A file read is noted, not copied: the file itself is in the repository.
        body = "" if tool == "Read" else _text(response)
        output, cut = truncate(body)
        kind, content = "tool_call", f"{summary}\n{output}".rstrip("\n")
    if cut:
        prov["truncated"] = True
    return Capture(kind, content, prov)


# ------------------------------------------------------------------ the context block


def context_block(memory, scope: dict) -> str:
    """Pins, the current summary and recent observations of this repository, as plain text."""
    from kindling.model import pin_scope_matches

    repo = {"repoId": scope["repoId"]}
    lines = [f"# Kindling memory for {scope['repoId']}"]
    shown: set[str] = set()

    pins = [p for p in memory.list("pins", limit=None) if pin_scope_matches(p["scopeIds"], repo)]
    if pins:
        lines.append("")
        lines.append("Pinned (always keep in mind):")
    for pin in pins:
        try:
            target = memory.get(pin["targetId"]).entity
        except KindlingError:
            continue
        if target.get("redacted"):
            continue
        shown.add(target["id"])
        note = f" (note: {_one_line(pin['reason'], 120)})" if pin.get("reason") else ""
        label = target.get("kind", "summary")
        lines.append(f"- [{label}] {_one_line(target['content'], 300)}{note}  [{target['id'][:8]}]")

    summaries = memory.list("summaries", scope=repo, limit=1)
    if summaries:
        summary = summaries[0]
        shown.add(summary["id"])
        lines.append("")
        lines.append(
            f"Current summary ({_when(summary['ts'])}, confidence {summary['confidence']}):"
        )
        lines.append(_one_line(summary["content"], 1_000))

    recent = [
        o
        for o in memory.list("observations", scope=repo, limit=CONTEXT_RECENT + len(shown))
        if not o["redacted"] and o["id"] not in shown
    ][:CONTEXT_RECENT]
    if recent:
        lines.append("")
        lines.append("Recent observations (newest first):")
    for obs in recent:
        text = _one_line(obs["content"], 240)
        lines.append(f"- {_when(obs['ts'])} [{obs['kind']}] {text}  [{obs['id'][:8]}]")

    if len(lines) == 1:
        lines.append("Nothing stored yet for this repository.")
    lines.append("")
    lines.append('Search more with: kindling search "<words>" (ids above work as prefixes).')
    text = "\n".join(lines)
    if len(text) > MAX_CONTEXT_CHARS:
        text = text[: MAX_CONTEXT_CHARS - 40].rsplit("\n", 1)[0] + "\n[... context cut ...]"
    return text


# ------------------------------------------------------------------ running one hook


def _session_capsule(memory, scope: dict, source: str) -> dict:
    existing = memory.open_session_capsule(scope["sessionId"])
    if existing is not None:
        return existing
    intent = f"Claude Code session in {scope['repoId']} ({source})"
    try:
        return memory.open_capsule(intent, type="session", scope=scope).entity
    except KindlingError:
        # Another hook of the same session opened it between our look and our write.
        existing = memory.open_session_capsule(scope["sessionId"])
        if existing is None:
            raise
        return existing


def handle(memory, event: str, payload: dict) -> HookResult:
    """Apply one parsed hook payload to the store."""
    scope = scope_for(payload)
    if event == "SessionStart":
        source = payload.get("source") if isinstance(payload.get("source"), str) else "startup"
        context = context_block(memory, scope)
        capsule = _session_capsule(memory, scope, source)
        output = {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
        }
        return HookResult(stdout=json.dumps(output, ensure_ascii=False), recorded=capsule["id"])
    if event == "SessionEnd":
        capsule = memory.open_session_capsule(scope["sessionId"])
        if capsule is None:
            return HookResult()
        return HookResult(recorded=memory.close_capsule(capsule["id"]).entity["id"])
    found = capture(event, payload)
    if found is None:
        return HookResult()
    written = memory.log(found.content, kind=found.kind, scope=scope, provenance=found.provenance)
    note = None
    if written.masked:
        note = f"kindling: masked {written.masked} secret(s) before recording"
    return HookResult(message=note, recorded=written.entity["id"])


def run_hook(event: str, data: bytes, store: str | None = None) -> HookResult:
    """Everything `kindling hook EVENT` does; never raises, problems become the message."""
    try:
        if event not in EVENTS:
            raise KindlingError(f"unknown hook event {event!r} (use one of {', '.join(EVENTS)})")
        payload = read_payload(data)
        named = payload.get("hook_event_name")
        if isinstance(named, str) and named != event:
            raise KindlingError(f"payload is for {named}, not {event}")
        from kindling.memory import Memory

        with Memory(store, cwd=project_dir(payload)) as memory, memory.batch():
            return handle(memory, event, payload)
    except KindlingError as exc:
        return HookResult(message=f"kindling hook {event}: {exc}; nothing recorded")
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent
        detail = _one_line(f"{type(exc).__name__}: {exc}", 300)
        return HookResult(message=f"kindling hook {event}: unexpected {detail}; nothing recorded")
