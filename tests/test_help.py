"""Every command explains itself with an example and is documented in the README."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT, run_kindling

from kindling import __version__
from kindling.cli import COMMANDS, cli


def _commands():
    """(path, command) for every command and subcommand, e.g. ("capsule open", <Command>)."""
    ctx = click.Context(cli)
    found = []
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None, f"{name} is registered but cannot be loaded"
        found.append((name, command))
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                found.append((f"{name} {sub}", command.get_command(ctx, sub)))
    return found


ALL = _commands()


@pytest.mark.parametrize("path, command", ALL, ids=[p for p, _ in ALL])
def test_help_has_a_summary_and_an_example(path, command):
    result = CliRunner().invoke(cli, [*path.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert command.get_short_help_str().strip(), f"`kindling {path}` has no help text"
    assert "Example:" in result.output, f"`kindling {path} --help` shows no example"
    assert "kindling " in result.output.split("Example:", 1)[1]


@pytest.mark.parametrize("path", [p for p, _ in ALL])
def test_readme_mentions_every_command(path):
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(rf"kindling {re.escape(path)}\b", readme)
    assert shown, f"README.md never shows `kindling {path}`"


# Commands that git, Claude Code or another program runs, never a person: they work, but
# the command list leaves them out (as git hides its plumbing from `git help`).
INTERNAL = {"merge-driver", "hook"}


def test_top_level_help_lists_every_user_command_and_hides_the_internal_ones():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        listed = re.search(rf"^\s+{re.escape(name)}\s", result.output, re.M)
        assert bool(listed) == (name not in INTERNAL), name


@pytest.mark.parametrize("name", sorted(INTERNAL))
def test_internal_commands_still_work_and_explain_themselves(name):
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    result = run_kindling(flag)
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"kindling-memory {__version__}"


def test_shell_completion_script_and_completions():
    script = run_kindling(env={"_KINDLING_COMPLETE": "bash_source"})
    assert script.returncode == 0
    assert "_kindling_completion" in script.stdout.decode()
    words = run_kindling(
        env={"_KINDLING_COMPLETE": "bash_complete", "COMP_WORDS": "kindling br", "COMP_CWORD": "1"}
    )
    assert words.returncode == 0
    assert "browse" in words.stdout.decode()
