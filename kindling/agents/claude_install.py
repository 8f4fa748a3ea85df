"""`kindling init --claude-code`: Kindling's hooks, MCP server, skill and slash commands for a
project, or the same as a Claude Code plugin folder.

The packaged plugin (kindling/plugin/claude-code: `.claude-plugin/plugin.json`, `commands/`,
`skills/kindling-memory/SKILL.md`, `hooks/hooks.json`, `.mcp.json`) is the one source of
the skill and command texts. For a project they are written where Claude Code reads a
project's own: the skill to `.claude/skills/kindling-memory/`, the commands to
`.claude/commands/memory/memory-<name>.md` (`/memory-search`, ...: no clash with Claude
Code's own `/status` or `/memory`), the hooks merged into `.claude/settings.json` and the
`kindling` server merged into `.mcp.json`; every other key, hook and server is kept, and
running it again changes nothing. `local` writes the hooks to `.claude/settings.local.json`
and lists every per-user file it writes in `.gitignore`; a shared `.mcp.json` that exists
already is left alone then. Everything written runs `kindling` from the PATH, never a file of
the repository, and nothing is written outside the project (a symlinked `.claude` is refused).
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from kindling.agents.claude_settings import (
    read_json_object,
    settings_path,
    write_hooks,
    write_json_merged,
)
from kindling.errors import KindlingError
from kindling.fileio import read_regular, write_atomic

PLUGIN_NAME = "kindling"
SKILL_DIR = Path(".claude") / "skills" / "kindling-memory"
COMMANDS_DIR = Path(".claude") / "commands" / "memory"
COMMAND_PREFIX = "memory-"
MCP_PATH = Path(".mcp.json")
SERVER = "kindling"
GITIGNORE_NOTE = "# Kindling for Claude Code, just for me (kindling init --claude-code --local)"


class Change(NamedTuple):
    """One file init wrote or looked at: where, what happened (created, updated, unchanged,
    kept, skipped) and what it is for."""

    path: Path
    what: str
    purpose: str


def plugin_files() -> dict[str, bytes]:
    """The packaged plugin's files: path relative to the plugin folder (with `/`) -> bytes."""
    root = resources.files("kindling").joinpath("plugin", "claude-code")
    found: dict[str, bytes] = {}

    def walk(node, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name == "__pycache__":
                continue
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            else:
                found[f"{prefix}{child.name}"] = child.read_bytes()

    if not root.is_dir():
        raise KindlingError("the packaged Claude Code plugin is missing; reinstall Kindling")
    walk(root, "")
    return found


def mcp_server_entry() -> dict:
    """The `kindling` server of the plugin's .mcp.json (the project's gets the same)."""
    return json.loads(plugin_files()[".mcp.json"])["mcpServers"][SERVER]


def _inside(project: Path, path: Path) -> Path:
    """`path`, refused when its folder leads out of the project (a symlinked `.claude`)."""
    try:
        path.parent.resolve().relative_to(project.resolve())
    except (ValueError, OSError):
        raise KindlingError(f"{path} leads outside {project}; nothing was written") from None
    return path


def _write_file(path: Path, data: bytes) -> str:
    try:
        current = read_regular(path, follow_symlinks=False)
    except OSError as exc:
        raise KindlingError(f"cannot read {path}: {exc.strerror or exc}") from None
    if current == data:
        return "unchanged"
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise KindlingError(f"cannot write {path}: {exc.strerror or exc}") from None
    return "created" if current is None else "updated"


def _merge_server(config: dict) -> dict:
    servers = config.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise KindlingError('"mcpServers" in .mcp.json is not an object; fix it by hand')
    if SERVER in servers:
        return config  # the user's own entry (a full path, other arguments) is theirs
    return {**config, "mcpServers": {**servers, SERVER: mcp_server_entry()}}


def _mcp(project: Path, local: bool) -> tuple[Change, bool]:
    """Register the server in .mcp.json; (the change, whether the file is this user's own)."""
    path = _inside(project, project / MCP_PATH)
    existing = read_json_object(path)
    if local and path.exists():
        servers = (existing or {}).get("mcpServers")
        there = isinstance(servers, dict) and SERVER in servers
        what = "unchanged" if there else "skipped"
        note = (
            "MCP server kindling"
            if there
            else "shared file left alone; `claude mcp add kindling -- kindling mcp` adds the "
            "server for you only"
        )
        return Change(path, what, note), False
    what = write_json_merged(path, _merge_server)
    servers = (existing or {}).get("mcpServers")
    if isinstance(servers, dict) and servers.get(SERVER, mcp_server_entry()) != mcp_server_entry():
        what = "kept"  # an entry of the user's own, as written
    return Change(path, what, "MCP server kindling"), local


def _skill_and_commands(project: Path) -> list[Change]:
    files = plugin_files()
    changes = []
    for name, data in files.items():
        if name.startswith("skills/kindling-memory/"):
            path = project / SKILL_DIR / name.removeprefix("skills/kindling-memory/")
            purpose = "skill: when to search, pin, log and summarize"
        elif name.startswith("commands/") and name.endswith(".md"):
            command = COMMAND_PREFIX + name.removeprefix("commands/")
            path = project / COMMANDS_DIR / command
            purpose = f"slash command /{command.removesuffix('.md')}"
        else:
            continue
        changes.append(Change(path, _write_file(_inside(project, path), data), purpose))
    return changes


def ignore_lines(project: Path, paths: list[str]) -> Change:
    """List `paths` (relative, with `/`; folders ending in `/`) in the project's .gitignore,
    anchored at its top (created or appended; a line is never added twice)."""
    path = _inside(project, project / ".gitignore")
    try:
        raw = read_regular(path, follow_symlinks=False)
    except OSError as exc:
        raise KindlingError(f"cannot read {path}: {exc.strerror or exc}") from None
    text = "" if raw is None else raw.decode("utf-8", "replace")
    have = {line.strip() for line in text.splitlines()}
    wanted = []
    for rel in paths:
        if f"/{rel}" not in have and rel not in have and f"/{rel}" not in wanted:
            wanted.append(f"/{rel}")
    if not wanted:
        return Change(path, "unchanged", "per-user files kept out of git")
    lines = ([] if GITIGNORE_NOTE in have else [GITIGNORE_NOTE]) + wanted
    joined = text + ("\n" if text and not text.endswith("\n") else "")
    what = _write_file(path, (joined + "\n".join(lines) + "\n").encode("utf-8"))
    return Change(path, what, f"per-user files kept out of git: {', '.join(wanted)}")


def install(
    project_dir: str | os.PathLike, *, local: bool = False, command: str = "kindling"
) -> list[Change]:
    """Hooks, MCP server, skill and slash commands for Claude Code in a project."""
    project = Path(project_dir).absolute()
    _inside(project, project / ".claude" / "settings.json")
    _inside(project, project / SKILL_DIR / "SKILL.md")
    _inside(project, project / COMMANDS_DIR / "x.md")
    path, what = write_hooks(project, command=command, local=local)
    changes = [Change(path, what, "Claude Code hooks")]
    mcp, own = _mcp(project, local)
    changes.append(mcp)
    changes.extend(_skill_and_commands(project))
    if local:
        mine = [
            settings_path(project, local=True).relative_to(project).as_posix(),
            SKILL_DIR.as_posix() + "/",
            COMMANDS_DIR.as_posix() + "/",
        ]
        if own:
            mine.append(MCP_PATH.as_posix())
        changes.append(ignore_lines(project, mine))
    return changes


def copy_plugin(dest: str | os.PathLike) -> list[Change]:
    """Write the packaged Claude Code plugin into `dest` (its root); other files are kept."""
    root = Path(dest).absolute()
    manifest = root / ".claude-plugin" / "plugin.json"
    existing = read_json_object(manifest) if manifest.exists() else None
    if existing is not None and existing.get("name") != PLUGIN_NAME:
        raise KindlingError(
            f"{root} holds another plugin ({existing.get('name')!r}); choose an empty folder"
        )
    changes = []
    for name, data in plugin_files().items():
        path = root / name
        changes.append(Change(path, _write_file(_inside(root, path), data), "plugin file"))
    return changes
