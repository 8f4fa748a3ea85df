"""`kindling init --agent NAME` / `--remove`: the agent part of init, printed change by change."""

from __future__ import annotations

from pathlib import Path

import click

from kindling.cli.format import echo


def chosen_agents(names: tuple[str, ...], claude_code: bool, project: Path) -> list[str]:
    """The agents named (`all`: every agent found), `--claude-code` as `claude-code`."""
    from kindling.agents.agent_install import AGENTS, found_agents

    wanted: list[str] = ["claude-code"] if claude_code else []
    for name in names:
        if name == "every":  # --remove with no --agent: whatever init wrote, for any agent
            wanted.extend(AGENTS)
        elif name == "all":
            wanted.extend(found_agents(project))
        elif name in AGENTS:
            wanted.append(name)
        else:
            choices = ", ".join([*AGENTS, "all"])
            raise click.UsageError(f"unknown agent {name!r}; choose one of {choices}")
    return list(dict.fromkeys(wanted))


def remove_agents(names: tuple[str, ...], claude_code: bool, path: str | None) -> None:
    """`kindling init --remove`: each named agent's setup (every agent's when none is named)
    taken out of the project (the git work tree's top, else PATH or here)."""
    from kindling.errors import KindlingError
    from kindling.git.setup import find_repo

    start = Path(path or ".").absolute()
    try:
        repo = find_repo(start)
    except KindlingError:  # no git on this machine
        repo = None
    base = Path(repo or start).absolute()
    chosen = chosen_agents(names or (() if claude_code else ("every",)), claude_code, base)
    set_up(chosen, base, remove=True)


def set_up(agents: list[str], base: Path, *, remove: bool) -> None:
    """Install (or remove) each agent's hooks and MCP server in `base`, saying what changed."""
    from kindling.agents import agent_install

    if not agents:
        echo("No agent found (no .claude, .codex, .gemini, .cursor or .opencode here or in ~).")
        return
    for agent in agents:
        if remove:
            changes = agent_install.remove(agent, base)
        else:
            changes = agent_install.install(agent, base)
        echo(f"{agent}: {'removed from' if remove else 'set up in'} {base}:")
        for change in changes:
            where = change.path.relative_to(base).as_posix()
            echo(f"  {change.what:<9} {where}  ({change.purpose})")
        if not remove:
            echo(f"  Before it runs: {agent_install.NEEDS[agent]}")
