"""`kindling init --agent NAME` and `kindling init --remove`: merged in, taken out exactly.

File shapes as each agent documents them: Codex `.codex/hooks.json` and `[mcp_servers.*]` in
`.codex/config.toml` (developers.openai.com/codex/hooks.md, codex/mcp); Gemini CLI
`.gemini/settings.json` `hooks` and `mcpServers` (gemini-cli docs/hooks/index.md); Cursor
`.cursor/hooks.json` version 1 and `.cursor/mcp.json` (cursor.com/docs/agent/hooks);
OpenCode `.opencode/plugins/*.js` and `mcp` in `opencode.json` (opencode.ai/docs/plugins).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import tomllib
from click.testing import CliRunner

from kindling.agents import agent_install
from kindling.cli import cli

AGENTS = ["claude-code", "codex", "gemini", "cursor", "opencode"]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "app"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    monkeypatch.chdir(root)
    return root


def init(*args: str):
    result = CliRunner().invoke(cli, ["init", *args])
    return result


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git/" not in p.as_posix() and ".kindling" not in p.parts
    }


def commands(root: Path) -> list[str]:
    found = []
    for path, data in tree(root).items():
        if path.endswith(".json"):
            found += [line for line in data.decode().splitlines() if "kindling hook" in line]
    return found


@pytest.mark.parametrize("agent", AGENTS)
def test_init_then_remove_leaves_nothing(project, agent):
    result = init("--agent", agent)
    assert result.exit_code == 0, result.output
    assert f"{agent}: set up in" in result.stdout and "Before it runs:" in result.stdout
    assert tree(project)
    again = init("--agent", agent)
    assert "created" not in again.stdout and "updated" not in again.stdout
    removed = init("--remove", "--agent", agent)
    assert removed.exit_code == 0, removed.output
    assert tree(project) == {}
    assert {p.name for p in project.iterdir()} == {".git", ".kindling"}


def test_commands_are_safe_to_commit(project):
    assert init("--agent", "codex", "--agent", "gemini", "--agent", "cursor").exit_code == 0
    for line in commands(project):
        assert "command -v kindling >/dev/null 2>&1 && kindling hook --agent" in line
        assert line.rstrip('",').endswith("|| true")
        assert "python" not in line
    plugin = (Path(__file__).parent.parent / "kindling/plugin/opencode/kindling.js").read_text()
    assert "kindling hook --agent opencode" in plugin and "python" not in plugin


def user_config(project: Path) -> None:
    """Each agent's files as a user already has them: other hooks, servers and settings."""
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text(
        '# mine\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    )
    (project / ".codex" / "hooks.json").write_text(
        json.dumps(
            {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./notify.sh"}]}]}}
        )
    )
    (project / ".gemini").mkdir()
    (project / ".gemini" / "settings.json").write_text(
        json.dumps(
            {
                "theme": "dark",
                "tools": {"enableHooks": True, "sandbox": False},
                "hooks": {
                    "AfterTool": [
                        {
                            "matcher": "write_file",
                            "hooks": [{"type": "command", "command": "./lint.sh"}],
                        }
                    ]
                },
                "mcpServers": {
                    "kindling": {"command": "/opt/kindling/bin/kindling", "args": ["mcp"]}
                },
            }
        )
    )
    (project / ".cursor").mkdir()
    (project / ".cursor" / "hooks.json").write_text(
        json.dumps({"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}})
    )
    (project / "opencode.json").write_text(
        json.dumps({"$schema": "https://opencode.ai/config.json", "theme": "tokyonight"})
    )


def test_round_trip_keeps_the_users_own_entries_and_edits(project):
    user_config(project)
    before = tree(project)
    result = init(
        "--agent", "codex", "--agent", "gemini", "--agent", "cursor", "--agent", "opencode"
    )
    assert result.exit_code == 0, result.output
    assert "your own kindling MCP server kept as written" in result.stdout
    gemini = json.loads((project / ".gemini/settings.json").read_text())
    assert gemini["mcpServers"]["kindling"]["command"] == "/opt/kindling/bin/kindling"  # theirs
    assert gemini["hooks"]["AfterTool"][0]["hooks"][0]["command"] == "./lint.sh"
    codex_toml = tomllib.loads((project / ".codex/config.toml").read_text())
    assert codex_toml["mcp_servers"]["kindling"] == {"command": "kindling", "args": ["mcp"]}
    assert codex_toml["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    # The user edits after init: a new hook of theirs, a new server, a changed setting.
    cursor = json.loads((project / ".cursor/hooks.json").read_text())
    cursor["hooks"]["sessionEnd"].append({"command": "./bell.sh"})
    (project / ".cursor/hooks.json").write_text(json.dumps(cursor))
    opencode = json.loads((project / "opencode.json").read_text())
    opencode["mcp"]["search"] = {"type": "remote", "url": "https://example.com/mcp"}
    (project / "opencode.json").write_text(json.dumps(opencode))
    removed = init("--remove")
    assert removed.exit_code == 0, removed.output
    after = tree(project)
    # Kindling's entries are gone; the user's are all there, edits included.
    assert "kindling hook" not in "".join(d.decode() for d in after.values())
    assert json.loads(after[".cursor/hooks.json"])["hooks"] == {
        "afterFileEdit": [{"command": "./format.sh"}],
        "sessionEnd": [{"command": "./bell.sh"}],
    }
    assert json.loads(after["opencode.json"])["mcp"] == {
        "search": {"type": "remote", "url": "https://example.com/mcp"}
    }
    assert json.loads(after[".gemini/settings.json"]) == json.loads(before[".gemini/settings.json"])
    assert json.loads(after[".codex/hooks.json"]) == json.loads(before[".codex/hooks.json"])
    assert after[".codex/config.toml"] == before[".codex/config.toml"]
    assert ".opencode/plugins/kindling.js" not in after


def test_a_changed_plugin_file_is_kept_on_remove(project):
    assert init("--agent", "opencode").exit_code == 0
    plugin = project / ".opencode/plugins/kindling.js"
    plugin.write_text(plugin.read_text() + "\n// my tweak\n")
    result = init("--remove", "--agent", "opencode")
    assert "kept" in result.stdout and plugin.exists()


def test_all_means_every_agent_found(project, monkeypatch, tmp_path):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (project / ".cursor").mkdir()
    assert agent_install.found_agents(project, home) == ["codex", "cursor"]
    monkeypatch.setenv("HOME", str(home))
    result = init("--agent", "all")
    assert result.exit_code == 0, result.output
    assert (project / ".codex/hooks.json").exists() and (project / ".cursor/hooks.json").exists()
    assert not (project / ".gemini").exists() and not (project / ".claude").exists()


def test_gemini_hooks_are_switched_on_and_named(project):
    assert init("--agent", "gemini").exit_code == 0
    settings = json.loads((project / ".gemini/settings.json").read_text())
    assert settings["tools"]["enableHooks"] is True
    (group,) = settings["hooks"]["AfterTool"]
    assert group["matcher"] == "*" and group["hooks"][0]["name"] == "kindling-AfterTool"
    assert group["hooks"][0]["timeout"] == 30_000  # milliseconds, as Gemini CLI reads it


def test_claude_code_alias_and_bad_input(project):
    assert init("--claude-code").exit_code == 0
    assert (project / ".claude/settings.json").exists()
    bad = init("--agent", "emacs")
    assert bad.exit_code == 2 and "unknown agent 'emacs'" in bad.output
    (project / ".cursor").mkdir()
    (project / ".cursor/hooks.json").write_text("{not json")
    broken = init("--agent", "cursor")
    assert broken.exit_code == 1 and "Error:" in broken.output and "not valid JSON" in broken.output
    assert (project / ".cursor/hooks.json").read_text() == "{not json"
