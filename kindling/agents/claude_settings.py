"""Merge Kindling's hook commands into a project's `.claude/settings.json`.

The file belongs to the user: every key, hook and matcher already in it is kept, Kindling's
entries are added only where they are missing, and running it again changes nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kindling.agents.hooks import EVENTS, TOOL_EVENTS
from kindling.errors import KindlingError
from kindling.fileio import read_regular, write_atomic

SETTINGS_PATH = Path(".claude") / "settings.json"


def hook_command(event: str, command: str = "kindling") -> str:
    """The shell command Claude Code runs for one event."""
    return f"{command} hook {event}"


def _is_kindling_hook(entry: object, event: str) -> bool:
    # Any command ending in `kindling hook EVENT` counts, whatever path the executable has.
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    words = entry["command"].split()
    return len(words) >= 3 and words[-2:] == ["hook", event] and "kindling" in words[-3]


def merge_hooks(settings: dict[str, Any], command: str = "kindling") -> dict[str, Any]:
    """Return `settings` with a Kindling hook for every event, keeping everything else."""
    merged = dict(settings)
    hooks = merged.get("hooks", {})
    if not isinstance(hooks, dict):
        raise KindlingError('"hooks" in .claude/settings.json is not an object; fix it by hand')
    hooks = dict(hooks)
    for event in EVENTS:
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise KindlingError(f'"hooks.{event}" in .claude/settings.json is not a list')
        present = any(
            _is_kindling_hook(h, event)
            for g in groups
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"]
        )
        if present:
            continue
        group: dict[str, Any] = {
            "hooks": [{"type": "command", "command": hook_command(event, command)}]
        }
        if event in TOOL_EVENTS:
            group = {"matcher": "*", **group}
        hooks[event] = [*groups, group]
    merged["hooks"] = hooks
    return merged


def install_claude_code_hooks(project_dir: str | os.PathLike, *, command: str = "kindling") -> Path:
    """Write Kindling's hooks into PROJECT_DIR/.claude/settings.json (merged); returns its path."""
    path = Path(project_dir) / SETTINGS_PATH
    settings: Any = {}
    try:
        raw = read_regular(path)
        text = None if raw is None else raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KindlingError(f"cannot read {path}: {exc}") from None
    if text is not None:
        if text.strip():
            try:
                settings = json.loads(text)
            except json.JSONDecodeError as exc:
                raise KindlingError(
                    f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); "
                    "it was left unchanged"
                ) from None
        if not isinstance(settings, dict):
            raise KindlingError(f"{path} does not hold a JSON object; it was left unchanged")
    merged = merge_hooks(settings, command)
    if merged == settings and path.exists():
        return path
    data = (json.dumps(merged, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise KindlingError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
