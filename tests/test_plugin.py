"""The Claude Code plugin Kindling ships, and what `kindling init --claude-code` writes.

The plugin follows Claude Code's documented layout: the manifest alone in `.claude-plugin/`,
`commands/*.md` and `skills/<name>/SKILL.md` with their frontmatter, `hooks/hooks.json` and
`.mcp.json` at the plugin's root.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import kindling
from kindling.agents.claude_install import plugin_files
from kindling.agents.claude_settings import merge_hooks
from kindling.cli import cli

PLUGIN = Path(kindling.__file__).parent / "plugin" / "claude-code"
COMMANDS = {"search", "pin", "pins", "unpin", "forget", "status"}
REPO_ROOT = Path(__file__).resolve().parent.parent


def frontmatter(text: str) -> tuple[dict[str, str], str]:
    """A Markdown file's YAML frontmatter (flat `key: value` lines) and its body."""
    assert text.startswith("---\n"), "no frontmatter"
    head, _, body = text[4:].partition("\n---\n")
    fields = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        assert sep and re.fullmatch(r"[a-z][a-z-]*", key), line
        fields[key] = value.strip()
    return fields, body


# ---------------------------------------------------------------- the plugin's files


def test_the_manifest_sits_alone_in_claude_plugin():
    assert sorted(p.name for p in (PLUGIN / ".claude-plugin").iterdir()) == ["plugin.json"]
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", manifest["name"])  # kebab-case
    assert manifest["name"] == "kindling"
    assert manifest["version"] == kindling.__version__
    assert manifest["description"] and manifest["author"]["name"]
    # Components live at the root, where Claude Code looks for them by default.
    assert not {"commands", "skills", "hooks", "mcpServers"} & set(manifest)
    assert {p.name for p in PLUGIN.iterdir()} == {
        ".claude-plugin",
        "commands",
        "skills",
        "hooks",
        ".mcp.json",
    }


def test_every_command_file_has_a_description_and_calls_kindling():
    found = {p.stem: p for p in (PLUGIN / "commands").glob("*.md")}
    assert set(found) == COMMANDS
    for name, path in found.items():
        fields, body = frontmatter(path.read_text())
        assert set(fields) <= {"description", "argument-hint", "allowed-tools"}, name
        assert fields["description"], name
        assert ("$ARGUMENTS" in body) == ("argument-hint" in fields), name
        assert "`kindling " in body, name  # the CLI, or the kindling MCP tool as well
        # What a command may run without asking: the kindling CLI's read-only commands only.
        for tool in filter(None, fields.get("allowed-tools", "").split(", ")):
            assert re.fullmatch(r"Bash\(kindling (search|list pins|status):\*\)", tool), tool


def test_the_skill_has_the_documented_frontmatter():
    (skill,) = (PLUGIN / "skills").iterdir()
    fields, body = frontmatter((skill / "SKILL.md").read_text())
    assert fields["name"] == skill.name == "kindling-memory"
    assert re.fullmatch(r"[a-z0-9-]{1,64}", fields["name"])
    assert 0 < len(fields["description"]) <= 1024
    for when in ("pasted error", "pin", "`log`", "`summarize`", "before you finish"):
        assert when in body.replace("pastes an error", "pasted error"), when
    assert "Never close the session's capsule" in body


def test_hooks_and_mcp_server_match_what_init_writes():
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())
    assert hooks == merge_hooks({})
    for groups in hooks["hooks"].values():
        for group in groups:
            for entry in group["hooks"]:
                # kindling from the PATH, or nothing: never a file of the repository
                assert entry["command"].startswith("command -v kindling >/dev/null 2>&1 && ")
    servers = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]
    assert servers == {"kindling": {"type": "stdio", "command": "kindling", "args": ["mcp"]}}


def test_the_plugin_is_package_data(tmp_path):
    """setuptools' build_py (what a wheel holds) carries every plugin file, dot files too."""
    source = tmp_path / "src"
    import shutil

    shutil.copytree(
        REPO_ROOT / "kindling",
        source / "kindling",
        ignore=shutil.ignore_patterns("__pycache__", "index.sqlite*", "locks"),
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO_ROOT / name, source / name)
    target = tmp_path / "built"
    build = subprocess.run(
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py"]
        + ["--build-lib", str(target)],
        capture_output=True,
        cwd=source,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr.decode()
    built = target / "kindling" / "plugin" / "claude-code"
    files = {p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file()}
    assert files == set(plugin_files())
    opencode = target / "kindling" / "plugin" / "opencode" / "kindling.js"
    assert opencode.read_bytes() == (PLUGIN.parent / "opencode" / "kindling.js").read_bytes()


def test_the_opencode_plugin_sends_what_its_adapter_reads():
    """Each event the OpenCode plugin sends is one its adapter knows, and each one the adapter
    records is sent; every call is the installed `kindling hook --agent opencode`."""
    from kindling.agents.adapters import opencode

    source = (PLUGIN.parent / "opencode" / "kindling.js").read_text()
    sent = set(re.findall(r'run\(\$, "([a-z.]+)"', source)) | (
        {"session.idle", "session.deleted"} if "run($, event.type" in source else set()
    )
    recorded = {e for e, target in opencode.EVENTS.items() if target is not None}
    assert sent == recorded
    assert source.count("kindling hook --agent opencode ${event}") == 1
    assert "python" not in source


# ---------------------------------------------------------------- kindling init --claude-code


def init(project: Path, *args: str) -> list[str]:
    result = CliRunner().invoke(cli, ["init", str(project), "--claude-code", *args])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_init_writes_hooks_server_skill_and_commands(tmp_path):
    out = init(tmp_path)
    assert out[1] == f"Claude Code set up in {tmp_path}:"
    assert "  created   .claude/settings.json  (Claude Code hooks)" in out
    assert "  created   .mcp.json  (MCP server kindling)" in out
    skill = tmp_path / ".claude" / "skills" / "kindling-memory" / "SKILL.md"
    assert skill.read_bytes() == (PLUGIN / "skills" / "kindling-memory" / "SKILL.md").read_bytes()
    commands = tmp_path / ".claude" / "commands" / "memory"
    assert {p.name for p in commands.iterdir()} == {f"memory-{c}.md" for c in COMMANDS}
    for name in COMMANDS:
        path = commands / f"memory-{name}.md"
        assert path.read_bytes() == (PLUGIN / "commands" / f"{name}.md").read_bytes()
        assert f"(slash command /memory-{name})" in "\n".join(out)
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert settings == merge_hooks({})
    server = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["kindling"]
    assert server == {"type": "stdio", "command": "kindling", "args": ["mcp"]}
    assert not (tmp_path / ".gitignore").exists()


def test_init_merges_and_running_it_again_changes_nothing(tmp_path):
    claude = tmp_path / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(
        json.dumps({"model": "opus", "permissions": {"allow": ["Bash(npm test:*)"]}})
    )
    mine = {"mcpServers": {"github": {"command": "gh-mcp"}}, "other": True}
    (tmp_path / ".mcp.json").write_text(json.dumps(mine))
    init(tmp_path)
    settings = json.loads((claude / "settings.json").read_text())
    assert settings["model"] == "opus" and settings["permissions"]["allow"] == ["Bash(npm test:*)"]
    assert "SessionStart" in settings["hooks"]
    config = json.loads((tmp_path / ".mcp.json").read_text())
    assert config["other"] is True and config["mcpServers"]["github"] == {"command": "gh-mcp"}
    assert config["mcpServers"]["kindling"]["command"] == "kindling"

    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    again = init(tmp_path)
    assert [line.split()[0] for line in again[2:]] == ["unchanged"] * (len(again) - 2)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_kindling_server_of_the_users_own_is_kept(tmp_path):
    own = {"mcpServers": {"kindling": {"command": "/opt/kindling/bin/kindling", "args": ["mcp"]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(own))
    out = init(tmp_path)
    assert "  kept      .mcp.json  (MCP server kindling)" in out
    assert json.loads((tmp_path / ".mcp.json").read_text()) == own


def test_local_keeps_every_per_user_file_out_of_git(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("node_modules/")  # no final newline
    init(tmp_path, "--local")
    init(tmp_path, "--local")
    lines = (tmp_path / ".gitignore").read_text().splitlines()
    assert lines[0] == "node_modules/"
    assert len(lines) == len(set(lines))  # nothing twice, however often init runs
    for wanted in (
        "/.claude/settings.local.json",
        "/.claude/skills/kindling-memory/",
        "/.claude/commands/memory/",
        "/.mcp.json",
    ):
        assert wanted in lines
    assert not (tmp_path / ".claude" / "settings.json").exists()
    assert (
        "SessionStart"
        in json.loads((tmp_path / ".claude" / "settings.local.json").read_text())["hooks"]
    )
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    staged = subprocess.run(
        ["git", "-C", str(tmp_path), "diff", "--cached", "--name-only"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert not [name for name in staged if name.startswith(".claude/") or name == ".mcp.json"]
    assert ".gitignore" in staged


def test_local_leaves_a_shared_mcp_json_alone(tmp_path):
    shared = {"mcpServers": {"github": {"command": "gh-mcp"}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(shared))
    out = init(tmp_path, "--local")
    assert any(line.startswith("  skipped   .mcp.json") for line in out)
    assert json.loads((tmp_path / ".mcp.json").read_text()) == shared
    assert "/.mcp.json" not in (tmp_path / ".gitignore").read_text().splitlines()


def test_init_never_writes_outside_the_project(tmp_path):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / ".claude").symlink_to(elsewhere)
    result = CliRunner().invoke(cli, ["init", str(project), "--claude-code"])
    assert result.exit_code == 1 and "outside" in result.output
    assert list(elsewhere.iterdir()) == []


def test_plugin_option_copies_the_plugin(tmp_path):
    dest = tmp_path / "plugins" / "kindling"
    out = init(tmp_path / "project", "--plugin", str(dest))
    assert out[1] == f"Claude Code plugin in {dest}:" and out[-1].endswith(f"--plugin-dir {dest}")
    copied = {
        p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()
    }
    assert copied == plugin_files()
    assert not (tmp_path / "project" / ".claude").exists()  # the plugin carries the hooks
    again = init(tmp_path / "project", "--plugin", str(dest))
    assert all(line.startswith("  unchanged ") for line in again[2:-1])


def test_plugin_option_refuses_a_folder_holding_another_plugin(tmp_path):
    dest = tmp_path / "other"
    (dest / ".claude-plugin").mkdir(parents=True)
    (dest / ".claude-plugin" / "plugin.json").write_text('{"name": "something-else"}')
    result = CliRunner().invoke(
        cli, ["init", str(tmp_path / "p"), "--claude-code", "--plugin", str(dest)]
    )
    assert result.exit_code == 1 and "another plugin" in result.output


@pytest.mark.parametrize("args", [["--local"], ["--plugin", "x"]])
def test_local_and_plugin_go_with_claude_code(tmp_path, args):
    result = CliRunner().invoke(cli, ["init", str(tmp_path), *args])
    assert result.exit_code == 2 and "goes with --claude-code" in result.output
