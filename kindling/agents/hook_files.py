"""Kindling's entries in an agent's JSON configuration: merged in, and taken out again.

Every file belongs to the user: merging adds or updates only Kindling's own entries (a hook
whose command runs `kindling ... hook ... EVENT`, the `kindling` MCP server) and keeps every
other key, hook and server; removing takes out only those entries, and a group, event or
file that holds nothing else afterwards. A file that ends up empty (`{}`) is deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kindling.agents.claude_settings import read_json_object, write_json_merged
from kindling.errors import KindlingError

SERVER = "kindling"


def guarded(agent: str, event: str) -> str:
    """The shell command an agent runs for one event; a no-op where Kindling is missing, and
    always the installed `kindling` from the PATH, never a file of the repository."""
    flag = "" if agent == "claude-code" else f" --agent {agent}"
    return f"command -v kindling >/dev/null 2>&1 && kindling hook{flag} {event} || true"


def is_ours(entry: object, event: str | None = None) -> bool:
    """A hook entry whose command runs `<...kindling...> hook ... EVENT` (any event if None)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    words = entry["command"].replace("&&", " ").replace("||", " ").split()
    for i, word in enumerate(words[:-1]):
        if "kindling" in word and words[i + 1] == "hook":
            rest = words[i + 2 :]
            if event is None or event in rest:
                return True
    return False


def _groups(hooks: dict, event: str, where: Path) -> list:
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise KindlingError(f'"hooks.{event}" in {where} is not a list; fix it by hand')
    return groups


def merge_grouped(config: dict, wanted: dict[str, tuple[dict, str | None]], where: Path) -> dict:
    """`config` with Kindling's entry for each event in `{"hooks": {event: [{matcher?,
    hooks: [...]}]}}` (Claude Code, Codex, Gemini CLI); an entry of ours is updated in place."""
    hooks = config.get("hooks", {})
    if not isinstance(hooks, dict):
        raise KindlingError(f'"hooks" in {where} is not an object; fix it by hand')
    hooks = dict(hooks)
    for event, (entry, matcher) in wanted.items():
        placed, out = False, []
        for group in _groups(hooks, event, where):
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = []
                for item in group["hooks"]:
                    if is_ours(item, event):
                        if placed:
                            continue
                        # A command of the user's own (a full path, a wrapper) is kept.
                        item, placed = {**item, **entry, "command": item["command"]}, True
                    kept.append(item)
                group = {**group, "hooks": kept}
            out.append(group)
        if not placed:
            out.append({"matcher": matcher, "hooks": [entry]} if matcher else {"hooks": [entry]})
        hooks[event] = out
    return {**config, "hooks": hooks}


def remove_grouped(config: dict) -> dict:
    """`config` without Kindling's hooks (grouped shape); emptied groups and events go too."""
    hooks = config.get("hooks")
    if not isinstance(hooks, dict):
        return config
    out: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            out[event] = groups
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [h for h in group["hooks"] if not is_ours(h)]
                if not kept and len(kept) != len(group["hooks"]):
                    continue
                group = {**group, "hooks": kept}
            kept_groups.append(group)
        if kept_groups or not groups:
            out[event] = kept_groups
    return _without_empty({**config, "hooks": out}, "hooks")


def merge_flat(config: dict, wanted: dict[str, dict], where: Path) -> dict:
    """`config` with Kindling's entry for each event in `{"hooks": {event: [{command}]}}`
    (Cursor's `.cursor/hooks.json`)."""
    hooks = config.get("hooks", {})
    if not isinstance(hooks, dict):
        raise KindlingError(f'"hooks" in {where} is not an object; fix it by hand')
    hooks = dict(hooks)
    for event, entry in wanted.items():
        entries = _groups(hooks, event, where)
        if not any(is_ours(e, event) for e in entries):
            entries = [*entries, entry]
        hooks[event] = entries
    return {**config, "hooks": hooks}


def remove_flat(config: dict) -> dict:
    """`config` without Kindling's hooks (flat shape); emptied events go too."""
    hooks = config.get("hooks")
    if not isinstance(hooks, dict):
        return config
    out = {}
    for event, entries in hooks.items():
        if isinstance(entries, list):
            kept = [e for e in entries if not is_ours(e)]
            if not kept and entries:
                continue
            entries = kept
        out[event] = entries
    return _without_empty({**config, "hooks": out}, "hooks")


def _without_empty(config: dict, key: str) -> dict:
    if config.get(key) == {}:
        return {k: v for k, v in config.items() if k != key}
    return config


def merge_server(config: dict, key: str, entry: dict, where: Path) -> dict:
    """`config` with the `kindling` MCP server under `key`; a server of that name the user
    already has is theirs and kept as written."""
    servers = config.get(key, {})
    if not isinstance(servers, dict):
        raise KindlingError(f'"{key}" in {where} is not an object; fix it by hand')
    if SERVER in servers:
        return config
    return {**config, key: {**servers, SERVER: entry}}


def remove_server(config: dict, key: str, entry: dict) -> dict:
    """`config` without the `kindling` server under `key` when it is still the one init wrote."""
    servers = config.get(key)
    if not isinstance(servers, dict) or servers.get(SERVER) != entry:
        return config
    rest = {k: v for k, v in servers.items() if k != SERVER}
    return _without_empty({**config, key: rest}, key)


def unmerge(path: Path, change: Callable[[dict], dict]) -> str:
    """Apply a removal to the JSON file at `path`: `removed`, `updated`, `unchanged` or
    `absent`; a file left holding `{}` is deleted."""
    current = read_json_object(path)
    if current is None:
        return "absent"
    changed = change(dict(current))
    if changed == current:
        return "unchanged"
    if not changed:
        try:
            path.unlink()
        except OSError as exc:
            raise KindlingError(f"cannot remove {path}: {exc.strerror or exc}") from None
        return "removed"
    return write_json_merged(path, lambda _: changed)
