"""Merge Kindling's hook commands into a project's `.claude/settings.json` (or settings.local.json).

The file belongs to the user: every key, hook and matcher already in it is kept, Kindling's
entries are added where missing (or brought up to date), and running it again changes
nothing. The commands are safe to commit: on a machine without Kindling they do nothing
(`command -v kindling ... || true`, which Claude Code's shell runs on every OS, Git Bash on
Windows included). Capture-only events run in the background (`"async": true`) so the agent
never waits for them; events that answer with context, or close a session, stay synchronous.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from kindling.errors import KindlingError
from kindling.fileio import read_regular, write_atomic

SETTINGS_PATH = Path(".claude") / "settings.json"
LOCAL_SETTINGS_PATH = Path(".claude") / "settings.local.json"


class HookSetting(NamedTuple):
    """How Claude Code runs one event's hook: its timeout (seconds) and whether it waits."""

    timeout: int
    background: bool = False
    tools: bool = False  # takes a matcher over tool names


# SessionEnd's hooks share a 1.5 s budget unless a hook asks for more with its own timeout.
HOOKED = {
    "SessionStart": HookSetting(15),
    "UserPromptSubmit": HookSetting(10),
    "PostToolUse": HookSetting(30, background=True, tools=True),
    "PostToolUseFailure": HookSetting(30, background=True, tools=True),
    "Notification": HookSetting(30, background=True),
    "Stop": HookSetting(10),
    "SubagentStop": HookSetting(10),
    "PreCompact": HookSetting(10),
    "PostCompact": HookSetting(10),
    "SessionEnd": HookSetting(15),
}


def hook_command(event: str, command: str = "kindling") -> str:
    """The shell command Claude Code runs for one event; a no-op where Kindling is missing."""
    if command == "kindling":
        return f"command -v kindling >/dev/null 2>&1 && kindling hook {event} || true"
    return f"{command} hook {event}"


def hook_entry(event: str, command: str = "kindling") -> dict[str, Any]:
    """One event's hook object: command, timeout and, for capture-only events, async."""
    setting = HOOKED[event]
    entry: dict[str, Any] = {
        "type": "command",
        "command": hook_command(event, command),
        "timeout": setting.timeout,
    }
    if setting.background:
        entry["async"] = True
    return entry


def _is_kindling_hook(entry: object, event: str) -> bool:
    # Ours: any command running `<...kindling...> hook EVENT`, whatever the wrapping.
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    words = entry["command"].replace("&&", " ").replace("||", " ").split()
    return any(
        "kindling" in words[i] and words[i + 1 : i + 3] == ["hook", event]
        for i in range(len(words) - 2)
    )


def merge_hooks(settings: dict[str, Any], command: str = "kindling") -> dict[str, Any]:
    """Return `settings` with Kindling's hook for every event, keeping everything else."""
    merged = dict(settings)
    hooks = merged.get("hooks", {})
    if not isinstance(hooks, dict):
        raise KindlingError('"hooks" in the Claude Code settings is not an object; fix it by hand')
    hooks = dict(hooks)
    for event in HOOKED:
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise KindlingError(f'"hooks.{event}" in the Claude Code settings is not a list')
        wanted = hook_entry(event, command)
        placed = False
        new_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                new_groups.append(group)
                continue
            entries = []
            for entry in group["hooks"]:
                if _is_kindling_hook(entry, event):
                    if placed:
                        continue  # a duplicate of ours
                    # A command of the user's own (a full path, a wrapper) is kept as written.
                    bare = entry["command"].strip() == f"kindling hook {event}"
                    keep = {} if bare else {"command": entry["command"]}
                    entry, placed = {**wanted, **keep}, True
                entries.append(entry)
            if entries:
                new_groups.append({**group, "hooks": entries})
        if not placed:
            group = {"hooks": [wanted]}
            if HOOKED[event].tools:
                group = {"matcher": "*", **group}
            new_groups.append(group)
        hooks[event] = new_groups
    merged["hooks"] = hooks
    return merged


def read_json_object(path: Path) -> dict[str, Any] | None:
    """A JSON file holding an object; None when absent (or empty). Anything else is refused
    with a KindlingError, and the file is left as it is."""
    try:
        raw = read_regular(path)
        text = None if raw is None else raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KindlingError(f"cannot read {path}: {exc}") from None
    if text is None or not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KindlingError(
            f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); it was left unchanged"
        ) from None
    if not isinstance(value, dict):
        raise KindlingError(f"{path} does not hold a JSON object; it was left unchanged")
    return value


def write_json_merged(path: Path, merge: Callable[[dict], dict]) -> str:
    """Merge into the JSON object at `path` (absent: {}); `created`, `updated` or `unchanged`."""
    current = read_json_object(path)
    existed = path.exists()
    merged = merge(dict(current or {}))
    if existed and current is not None and merged == current:
        return "unchanged"
    data = (json.dumps(merged, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise KindlingError(f"cannot write {path}: {exc.strerror or exc}") from None
    return "updated" if existed else "created"


def settings_path(project_dir: str | os.PathLike, *, local: bool = False) -> Path:
    """The project's Claude Code settings file (.claude/settings.local.json when `local`)."""
    return Path(project_dir) / (LOCAL_SETTINGS_PATH if local else SETTINGS_PATH)


def write_hooks(
    project_dir: str | os.PathLike, *, command: str = "kindling", local: bool = False
) -> tuple[Path, str]:
    """Merge Kindling's hooks into the project's settings: (the path, what happened to it)."""
    path = settings_path(project_dir, local=local)
    return path, write_json_merged(path, lambda settings: merge_hooks(settings, command))


def install_claude_code_hooks(
    project_dir: str | os.PathLike, *, command: str = "kindling", local: bool = False
) -> Path:
    """Write Kindling's hooks into the project's Claude Code settings (merged); returns the path.

    `local` writes .claude/settings.local.json (personal, not committed) instead.
    """
    return write_hooks(project_dir, command=command, local=local)[0]
