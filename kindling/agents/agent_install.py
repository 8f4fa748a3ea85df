"""`kindling init --agent NAME` and `--remove`: each agent's hooks (or plugin) and MCP server.

Only project files are written, each merged into what the user has (kindling.agents.hook_files)
and safe to commit: every command runs the installed `kindling` and does nothing where it is
missing. An agent is *found* (for `--agent all`) when its configuration folder exists in the
project or in the home folder: `.claude`, `.codex`, `.gemini`, `.cursor`, `.opencode` (or an
`opencode.json`) there, or `~/.claude`, `~/.codex`, `~/.gemini`, `~/.cursor`,
`~/.config/opencode`. `remove` takes out what `install` wrote and nothing else.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import NamedTuple

import tomllib

from kindling.agents import hook_files as hf
from kindling.agents.claude_install import Change, _inside, _write_file
from kindling.agents.claude_settings import write_json_merged
from kindling.errors import KindlingError
from kindling.fileio import read_regular, write_atomic

MCP_ENTRY = {"command": "kindling", "args": ["mcp"]}
OPENCODE_MCP = {"type": "local", "command": ["kindling", "mcp"], "enabled": True}
CODEX_BEGIN = "# kindling: begin (kindling init --agent codex; kindling init --remove takes it out)"
CODEX_END = "# kindling: end"
CODEX_BLOCK = (
    f'{CODEX_BEGIN}\n[mcp_servers.kindling]\ncommand = "kindling"\nargs = ["mcp"]\n{CODEX_END}\n'
)

# event -> (timeout in seconds, matcher): Codex's hooks (developers.openai.com/codex/hooks)
CODEX_HOOKS = {
    "SessionStart": (15, None),
    "UserPromptSubmit": (10, None),
    "PostToolUse": (30, "*"),
    "SubagentStop": (10, None),
    "Stop": (10, None),
    "PreCompact": (10, None),
    "PostCompact": (10, None),
    "SessionEnd": (3, None),  # Codex caps SessionEnd hooks at a few seconds
}
# Gemini CLI (timeouts in milliseconds)
GEMINI_HOOKS = {
    "SessionStart": (15_000, None),
    "BeforeAgent": (10_000, None),
    "AfterTool": (30_000, "*"),
    "AfterAgent": (10_000, None),
    "PreCompress": (10_000, None),
    "Notification": (10_000, None),
    "SessionEnd": (10_000, None),
}
CURSOR_HOOKS = (
    "sessionStart",
    "beforeSubmitPrompt",
    "afterShellExecution",
    "afterFileEdit",
    "afterMCPExecution",
    "postToolUseFailure",
    "afterAgentResponse",
    "preCompact",
    "sessionEnd",
)
# What each agent needs before a project's hooks run: said after init.
NEEDS = {
    "claude-code": "Claude Code asks to trust the project folder once; then the hooks run.",
    "codex": (
        "Codex loads .codex/ only in a trusted project and runs a new or changed hook only "
        "once you trust it: open /hooks in Codex and trust the kindling hooks. (Hooks are "
        "on by default; a Codex older than that needs [features] codex_hooks = true in "
        "~/.codex/config.toml.)"
    ),
    "gemini": (
        "Gemini CLI runs hooks when tools.enableHooks is true (set in .gemini/settings.json "
        "here); check with /hooks panel, and restart Gemini CLI."
    ),
    "cursor": (
        "Cursor reads .cursor/hooks.json when the workspace opens: restart Cursor, and turn "
        "the kindling server on under Settings > MCP."
    ),
    "opencode": "OpenCode loads .opencode/plugins/ at startup: restart OpenCode.",
}


class AgentSetup(NamedTuple):
    """Where an agent keeps its configuration, in a project and in the home folder."""

    name: str
    project_markers: tuple[str, ...]
    home_markers: tuple[str, ...]


AGENTS = {
    "claude-code": AgentSetup("claude-code", (".claude", ".mcp.json"), (".claude",)),
    "codex": AgentSetup("codex", (".codex",), (".codex",)),
    "gemini": AgentSetup("gemini", (".gemini",), (".gemini",)),
    "cursor": AgentSetup("cursor", (".cursor",), (".cursor",)),
    "opencode": AgentSetup("opencode", (".opencode", "opencode.json"), (".config/opencode",)),
}


def found_agents(project: Path, home: Path | None = None) -> list[str]:
    """The agents whose configuration folder is in `project` or in the home folder."""
    home = home if home is not None else Path.home()
    return [
        name
        for name, setup in AGENTS.items()
        if any((project / m).exists() for m in setup.project_markers)
        or any((home / m).exists() for m in setup.home_markers)
    ]


def _grouped(agent: str, table: dict, seconds: bool, named: bool) -> dict:
    wanted = {}
    for event, (timeout, matcher) in table.items():
        entry = {"type": "command", "command": hf.guarded(agent, event), "timeout": timeout}
        if named:
            entry = {"name": f"kindling-{event}", **entry}
        wanted[event] = (entry, matcher)
    return wanted


def _json(project: Path, rel: str, merge, purpose: str, server: tuple | None = None) -> Change:
    """Merge into the project's JSON file `rel`; `server` (key, entry): say so when the user's
    own `kindling` server there is kept as written."""
    path = _inside(project, project / rel)
    if server is not None:
        from kindling.agents.claude_settings import read_json_object

        servers = (read_json_object(path) or {}).get(server[0])
        if isinstance(servers, dict) and servers.get(hf.SERVER, server[1]) != server[1]:
            purpose += "; your own kindling MCP server kept as written"
    return Change(path, write_json_merged(path, merge), purpose)


def _codex_mcp(project: Path, remove: bool) -> Change:
    path = _inside(project, project / ".codex" / "config.toml")
    try:
        raw = read_regular(path, follow_symlinks=False)
    except OSError as exc:
        raise KindlingError(f"cannot read {path}: {exc.strerror or exc}") from None
    text = "" if raw is None else raw.decode("utf-8", "replace")
    if remove:
        if CODEX_BEGIN not in text:
            return Change(path, "absent" if raw is None else "unchanged", "MCP server kindling")
        head, _, rest = text.partition(CODEX_BEGIN)
        _, _, tail = rest.partition(CODEX_END + "\n")
        left = (head.rstrip("\n") + "\n" + tail) if head.strip() else tail
        if not left.strip():
            path.unlink()
            return Change(path, "removed", "MCP server kindling")
        write_atomic(path, left.encode("utf-8"))
        return Change(path, "updated", "MCP server kindling")
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KindlingError(f"{path} is not valid TOML ({exc}); it was left unchanged") from None
    servers = config.get("mcp_servers", {})
    if isinstance(servers, dict) and "kindling" in servers:
        return Change(path, "kept", "MCP server kindling (yours, as written)")
    new = (text.rstrip("\n") + "\n\n" if text.strip() else "") + CODEX_BLOCK
    try:
        tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        raise KindlingError(
            f"{path}: [mcp_servers.kindling] cannot be added to it as written; add it by hand"
        ) from None
    return Change(path, _write_file(path, new.encode("utf-8")), "MCP server kindling")


def _opencode_plugin() -> bytes:
    return resources.files("kindling").joinpath("plugin", "opencode", "kindling.js").read_bytes()


def install(agent: str, project_dir) -> list[Change]:
    """Write `agent`'s hooks (or plugin) and MCP server into the project; what changed."""
    project = Path(project_dir).absolute()
    if agent == "claude-code":
        from kindling.agents import claude_install

        return claude_install.install(project)
    if agent == "codex":
        wanted = _grouped(agent, CODEX_HOOKS, True, False)
        return [
            _json(
                project,
                ".codex/hooks.json",
                lambda c: hf.merge_grouped(c, wanted, project),
                "Codex hooks",
            ),
            _codex_mcp(project, remove=False),
        ]
    if agent == "gemini":
        wanted = _grouped(agent, GEMINI_HOOKS, False, True)

        def merge(config: dict) -> dict:
            config = hf.merge_grouped(config, wanted, project)
            config = hf.merge_server(config, "mcpServers", MCP_ENTRY, project)
            tools = config.get("tools", {})
            if isinstance(tools, dict) and "enableHooks" not in tools:
                config["tools"] = {**tools, "enableHooks": True}
            return config

        return [
            _json(
                project,
                ".gemini/settings.json",
                merge,
                "Gemini CLI hooks, MCP server",
                ("mcpServers", MCP_ENTRY),
            )
        ]
    if agent == "cursor":
        wanted = {e: {"command": hf.guarded(agent, e)} for e in CURSOR_HOOKS}
        return [
            _json(
                project,
                ".cursor/hooks.json",
                lambda c: {"version": 1, **hf.merge_flat(c, wanted, project)},
                "Cursor hooks",
            ),
            _json(
                project,
                ".cursor/mcp.json",
                lambda c: hf.merge_server(c, "mcpServers", MCP_ENTRY, project),
                "MCP server kindling",
                ("mcpServers", MCP_ENTRY),
            ),
        ]
    if agent == "opencode":
        plugin = _inside(project, project / ".opencode" / "plugins" / "kindling.js")
        return [
            Change(plugin, _write_file(plugin, _opencode_plugin()), "OpenCode plugin"),
            _json(
                project,
                "opencode.json",
                lambda c: hf.merge_server(c, "mcp", OPENCODE_MCP, project),
                "MCP server kindling",
                ("mcp", OPENCODE_MCP),
            ),
        ]
    raise KindlingError(f"unknown agent {agent!r}; choose one of {', '.join(AGENTS)}, all")


def _unjson(project: Path, rel: str, change, purpose: str) -> Change:
    path = _inside(project, project / rel)
    return Change(path, hf.unmerge(path, change), purpose)


def _remove_file(path: Path, data: bytes, purpose: str) -> Change:
    try:
        current = read_regular(path, follow_symlinks=False)
    except OSError as exc:
        raise KindlingError(f"cannot read {path}: {exc.strerror or exc}") from None
    if current is None:
        return Change(path, "absent", purpose)
    if current != data:
        return Change(path, "kept", f"{purpose} (changed since; yours now)")
    path.unlink()
    return Change(path, "removed", purpose)


def _remove_claude(project: Path) -> list[Change]:
    from kindling.agents import claude_install as ci

    changes = [
        _unjson(project, ".claude/settings.json", hf.remove_grouped, "Claude Code hooks"),
        _unjson(project, ".claude/settings.local.json", hf.remove_grouped, "Claude Code hooks"),
        _unjson(
            project,
            ".mcp.json",
            lambda c: hf.remove_server(c, "mcpServers", ci.mcp_server_entry()),
            "MCP server kindling",
        ),
    ]
    for name, data in ci.plugin_files().items():
        if name.startswith("skills/kindling-memory/"):
            path = project / ci.SKILL_DIR / name.removeprefix("skills/kindling-memory/")
        elif name.startswith("commands/") and name.endswith(".md"):
            path = project / ci.COMMANDS_DIR / (ci.COMMAND_PREFIX + name.removeprefix("commands/"))
        else:
            continue
        changes.append(_remove_file(_inside(project, path), data, "skill or slash command"))
    return changes


def remove(agent: str, project_dir) -> list[Change]:
    """Take `agent`'s hooks (or plugin) and MCP server out of the project again; folders
    left empty by it (`.codex/`, `.opencode/plugins/`, ...) go too."""
    project = Path(project_dir).absolute()
    changes = _remove(agent, project)
    for change in changes:
        if change.what == "removed":
            _prune(change.path.parent, project)
    return changes


def _prune(folder: Path, project: Path) -> None:
    while folder != project and project in folder.parents:
        try:
            folder.rmdir()  # only an empty folder: anything of the user's keeps it
        except OSError:
            return
        folder = folder.parent


def _remove(agent: str, project: Path) -> list[Change]:
    if agent == "claude-code":
        return _remove_claude(project)
    if agent == "codex":
        return [
            _unjson(project, ".codex/hooks.json", hf.remove_grouped, "Codex hooks"),
            _codex_mcp(project, remove=True),
        ]
    if agent == "gemini":

        def change(config: dict) -> dict:
            config = hf.remove_server(hf.remove_grouped(config), "mcpServers", MCP_ENTRY)
            tools = config.get("tools")
            if not config.get("hooks") and isinstance(tools, dict) and tools.get("enableHooks"):
                rest = {k: v for k, v in tools.items() if k != "enableHooks"}
                config = {k: v for k, v in config.items() if k != "tools"}
                if rest:
                    config["tools"] = rest
            return config

        return [_unjson(project, ".gemini/settings.json", change, "Gemini CLI hooks, MCP server")]
    if agent == "cursor":

        def hooks(config: dict) -> dict:
            config = hf.remove_flat(config)
            return {} if set(config) <= {"version"} else config

        return [
            _unjson(project, ".cursor/hooks.json", hooks, "Cursor hooks"),
            _unjson(
                project,
                ".cursor/mcp.json",
                lambda c: hf.remove_server(c, "mcpServers", MCP_ENTRY),
                "MCP server kindling",
            ),
        ]
    if agent == "opencode":
        plugin = _inside(project, project / ".opencode" / "plugins" / "kindling.js")
        return [
            _remove_file(plugin, _opencode_plugin(), "OpenCode plugin"),
            _unjson(
                project,
                "opencode.json",
                lambda c: hf.remove_server(c, "mcp", OPENCODE_MCP),
                "MCP server kindling",
            ),
        ]
    raise KindlingError(f"unknown agent {agent!r}; choose one of {', '.join(AGENTS)}, all")
