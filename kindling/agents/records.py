"""What a tool call becomes: one readable observation (`Bash: npm test -> exit 1` and output).

Bash calls are `command` (or `error` when they fail), Edit/MultiEdit/Write/NotebookEdit a
`file_diff` holding a unified diff, other tools a `tool_call` (a Read is noted, not copied:
the file itself is in the repository). Paths are relative to the project; the raw payload,
masked and bounded, stays in provenance. `provenance.subject` names what was run or touched,
so a later success on the same subject shows that an earlier error was fixed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

from kindling.agents.agent_ids import label
from kindling.agents.intake import keep_int
from kindling.agents.payload import (
    agent_of,
    one_line,
    project_dir,
    raw_payload,
    relative_paths,
    text_of,
)
from kindling.errors import KindlingError
from kindling.masking import mask_json, mask_then_cut

# Tool output, diffs and written file bodies keep this many characters (head and tail).
MAX_TOOL_OUTPUT_CHARS = 4_000
# ApplyPatch: Codex's apply_patch, its patch text as the adapter hands it on.
FILE_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit", "ApplyPatch")
OWN_MCP_TOOLS = "mcp__kindling__"
_EXIT_CODE = re.compile(r"\b(?:exit|status) code:?\s*(-?\d+)", re.IGNORECASE)


class Record(NamedTuple):
    """One observation a hook payload turns into."""

    kind: str
    content: str
    provenance: dict
    masked: int = 0  # secrets masked while the record was made (the store sees them masked)


class _Cutter:
    """Masks then cuts texts, counting what it masked (the `masked N secret(s)` notice)."""

    def __init__(self, masked: int = 0) -> None:
        self.masked = masked

    def __call__(self, text: str, limit: int) -> tuple[str, bool]:
        shown, count, was_cut = mask_then_cut(text, limit)
        self.masked += count
        return shown, was_cut


def _rel(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
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


def _edits_diff(edits: Any) -> str:
    from difflib import unified_diff  # only edits need it; every other hook skips the import

    body = []
    for edit in edits if isinstance(edits, list) else []:
        if isinstance(edit, dict):
            old = text_of(edit.get("old_string")).splitlines(keepends=True)
            new = text_of(edit.get("new_string")).splitlines(keepends=True)
            body.extend(
                line if line.endswith("\n") else line + "\n"
                for line in list(unified_diff(old, new, n=3))[2:]
            )
    return "".join(body)


def file_diff(tool: str, tool_input: dict, response: Any, root: Path) -> tuple[str, str]:
    """(unified diff, the file relative to the project) for a file-changing tool call."""
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or "?"
    shown = _rel(str(path), root)
    if tool == "NotebookEdit":
        mode = tool_input.get("edit_mode") or "replace"
        cell = tool_input.get("cell_id") or "new cell"
        return (
            f"NotebookEdit {shown} ({mode} {cell})\n{text_of(tool_input.get('new_source'))}",
            shown,
        )
    if tool == "ApplyPatch":
        return text_of(tool_input.get("patch")), shown
    resp = response if isinstance(response, dict) else {}
    header = f"--- a/{shown}\n+++ b/{shown}\n"
    patches = resp.get("structuredPatch")
    if isinstance(patches, list) and patches:
        return header + _patch_text(patches), shown
    if tool == "Write":
        lines = text_of(tool_input.get("content")).splitlines()
        created = resp.get("type") != "update"
        old = "/dev/null" if created else f"a/{shown}"
        hunk = f"@@ -0,0 +1,{len(lines)} @@\n" if created else ""
        return f"--- {old}\n+++ b/{shown}\n{hunk}" + "".join(f"+{x}\n" for x in lines), shown
    edits = tool_input.get("edits") if tool == "MultiEdit" else [tool_input]
    return header + _edits_diff(edits), shown


def subject(tool: str, tool_input: dict, root: Path) -> str:
    """What a call ran or touched, one line: `Bash: npm test`, `Read: src/app.ts`."""
    if tool == "Bash" and isinstance(tool_input.get("command"), str):
        return f"Bash: {one_line(relative_paths(tool_input['command'], root), 300)}"
    for key in ("file_path", "notebook_path", "pattern", "url", "query", "path", "description"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            shown = _rel(value, root) if key.endswith("path") else value
            return f"{tool}: {one_line(relative_paths(shown, root), 300)}"
    if tool_input:
        return f"{tool}: {one_line(relative_paths(text_of(tool_input), root), 300)}"
    return tool


def _bash_output(response: Any) -> str:
    if not isinstance(response, dict):
        return text_of(response)
    parts = [text_of(response.get("stdout")).rstrip("\n")]
    if response.get("stderr"):
        parts.append("[stderr]\n" + text_of(response["stderr"]).rstrip("\n"))
    if response.get("interrupted"):
        parts.append("[interrupted]")
    return "\n".join(p for p in parts if p)


def exit_code(error: str) -> int | str | None:
    """The exit status Claude Code reports for a failed Bash call (`Exit code 1 ...`); one
    no integer field can hold stays as its digits, as every out-of-range payload number does."""
    found = _EXIT_CODE.search(error.split("\n", 1)[0])
    return keep_int(found.group(1)) if found else None


# What is already in the repository is recorded as a note and a short head, not copied: a
# Read's file (its path, the lines read and the first lines), a search's matches, the body
# of a file written whole.
REPO_TOOLS = ("Read", "Grep", "Glob", "LS")
MAX_REPO_OUTPUT_CHARS = 1_500
MAX_WRITTEN_FILE_CHARS = 1_500
READ_HEAD_LINES = 3
READ_HEAD_CHARS = 240
_LINE_NUMBER = re.compile(r"^ *\d+\t")


def _int_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read_note(what: str, tool_input: dict, response: Any) -> tuple[str, str]:
    """(`Read: src/a.py (lines 40-120 of 300)`, the first lines read) for a file read."""
    file = response.get("file") if isinstance(response, dict) else None
    file = file if isinstance(file, dict) else {}
    start = _int_of(file.get("startLine")) or _int_of(tool_input.get("offset")) or 1
    count = _int_of(file.get("numLines"))
    if count is None:
        count = _int_of(tool_input.get("limit"))
    total = _int_of(file.get("totalLines"))
    if count:
        span = f"lines {start}-{start + count - 1}" + (f" of {total}" if total else "")
        what = f"{what} ({span})"
    text = file.get("content") if isinstance(file.get("content"), str) else ""
    head = [_LINE_NUMBER.sub("", line)[:160] for line in text.split("\n", READ_HEAD_LINES)]
    return what, "\n".join(head[:READ_HEAD_LINES])[:READ_HEAD_CHARS].rstrip()


def repo_output(response: Any) -> str:
    """A repository search's matches: the matching lines, else the files, one a line."""
    if isinstance(response, dict):
        if isinstance(response.get("content"), str) and response["content"]:
            return response["content"]
        names = response.get("filenames")
        if isinstance(names, list):
            return "\n".join(text_of(n) for n in names)
    return text_of(response)


def _diff_limit(tool: str, response: Any) -> int:
    """A file written whole is in the repository: its diff keeps a head and tail of it."""
    created = not (isinstance(response, dict) and response.get("structuredPatch"))
    return MAX_WRITTEN_FILE_CHARS if tool == "Write" and created else MAX_TOOL_OUTPUT_CHARS


def _without(response: Any, keys: tuple[str, ...]) -> Any:
    """A response with the fields the record's content already holds left out."""
    if not isinstance(response, dict):
        return None
    return {k: v for k, v in response.items() if k not in keys}


def tool_record(event: str, payload: dict) -> Record | None:
    """The observation a PostToolUse / PostToolUseFailure payload records (None for our own)."""
    tool = payload.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise KindlingError(f"{event} payload has no tool_name")
    if tool.startswith(OWN_MCP_TOOLS):
        return None  # Kindling's own MCP tools already are memory operations
    root = project_dir(payload)
    tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    # Masked as JSON first, so argument lists and credential keys inside it are masked in the
    # record's text and subject as they are in the raw payload.
    tool_input, masked_input = mask_json(tool_input)
    cut = _Cutter(masked_input)
    what = subject(tool, tool_input, root)
    prov: dict[str, Any] = {
        "source": agent_of(payload),
        "hook": event,
        "tool": tool,
        "subject": what,
    }
    if isinstance(payload.get("tool_use_id"), str):
        prov["toolUseId"] = payload["tool_use_id"]
    raw: dict[str, Any] = {"tool_input": tool_input}
    response = payload.get("tool_response")

    if event == "PostToolUseFailure":
        error = text_of(payload.get("error") or payload.get("error_message")) or "failed"
        code = exit_code(error) if tool == "Bash" else None
        outcome = f"exit {code}" if code is not None else "failed"
        if payload.get("is_interrupt"):
            prov["interrupted"] = True
            outcome = "interrupted"
        if code is not None:
            prov["exitCode"] = code
        first, _, rest = error.partition("\n")
        if code is not None and first.strip().lower() == f"exit code {code}":
            error_body = rest  # the status is already in the first line of the record
        else:
            error_body = error
        body, was_cut = cut(relative_paths(error_body, root), MAX_TOOL_OUTPUT_CHARS)
        kind, content = "error", f"{what} -> {outcome}\n{body}"  # the error text: in content
    elif tool == "Bash":
        prov["command"] = one_line(text_of(tool_input.get("command")), 2_000)
        prov["exitCode"] = 0
        output, was_cut = cut(relative_paths(_bash_output(response), root), MAX_TOOL_OUTPUT_CHARS)
        raw["tool_response"] = _without(response, ("stdout", "stderr"))  # both in content
        raw["tool_input"] = _without(tool_input, ("command",))  # in provenance.command
        kind, content = "command", f"{what} -> exit 0\n{output}"
    elif tool in FILE_TOOLS:
        diff, shown = file_diff(tool, tool_input, response, root)
        prov["file"] = shown
        content, was_cut = cut(diff, _diff_limit(tool, response))
        raw = {}  # the file is provenance.file, the change is the content
        kind = "file_diff"
    else:
        # The response is in the content (a Read's file and a search's matches are in the
        # repository, so only a note and a short head of them): never twice in provenance.
        note, body = what, text_of(response)
        if tool == "Read":
            note, body = read_note(what, tool_input, response)
            raw["tool_input"] = _without(tool_input, ("file_path",))  # in the subject
        elif tool in REPO_TOOLS:
            body = repo_output(response)
        limit = MAX_REPO_OUTPUT_CHARS if tool in REPO_TOOLS else MAX_TOOL_OUTPUT_CHARS
        output, was_cut = cut(relative_paths(body, root), limit)
        kind, content = "tool_call", f"{note}\n{output}"
    if was_cut:
        prov["truncated"] = True
    raw = {k: v for k, v in raw.items() if v not in (None, {}, "")}
    if raw:
        prov["payload"] = raw_payload(raw, root)
    return Record(kind, content.rstrip("\n"), prov, cut.masked)


# Prompts, assistant messages and compaction summaries keep this many characters.
MAX_MESSAGE_CHARS = 20_000
_MESSAGES = {
    # event: (payload key, role)
    "UserPromptSubmit": ("prompt", "user"),
    "Stop": ("last_assistant_message", "assistant"),
    "SubagentStop": ("last_assistant_message", "subagent"),
    "PostCompact": ("compact_summary", "compaction"),
    "Notification": ("message", "notification"),
}


def message_record(event: str, payload: dict) -> Record | None:
    """The `message` a prompt, Stop, SubagentStop, compaction or notification records."""
    prov: dict[str, Any] = {"source": agent_of(payload), "hook": event}
    cut = _Cutter()
    if event == "PreCompact":
        trigger = text_of(payload.get("trigger")) or "unknown"
        text = f"{label(prov['source'])} compacted its context (trigger: {trigger})."
        instructions = payload.get("custom_instructions")
        if isinstance(instructions, str) and instructions.strip():
            text += f" Instructions: {cut(instructions.strip(), 2_000)[0]}"
        return Record("message", text, {**prov, "trigger": trigger}, cut.masked)
    if event not in _MESSAGES:
        return None
    key, role = _MESSAGES[event]
    message = payload.get(key)
    if not isinstance(message, str) or not message.strip():
        return None
    text, was_cut = cut(relative_paths(message, project_dir(payload)), MAX_MESSAGE_CHARS)
    prov["role"] = role
    if event == "SubagentStop":
        prov["agentType"] = text_of(payload.get("agent_type")) or "subagent"
        text = f"Subagent {prov['agentType']} reported:\n{text}"
    elif event == "PostCompact":
        prov["trigger"] = text_of(payload.get("trigger")) or "unknown"
        text = f"Compaction summary:\n{text}"
    elif event == "Notification":
        prov["notificationType"] = text_of(payload.get("notification_type")) or "notification"
    if was_cut:
        prov["truncated"] = True
    return Record("message", text, prov, cut.masked)
