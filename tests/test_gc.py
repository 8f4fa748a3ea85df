"""`kindling gc` from the command line, in real git clones, and what reads a retired id."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT
from test_retention import DAY_MS, T0, Builder

from kindling.browse import collect, render_page
from kindling.cli import cli
from kindling.memory import Memory
from kindling.retention.policy import POLICY_NAME

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def kindling(store: Path, *args: str):
    return CliRunner().invoke(cli, ["--store", str(store), *args])


def team_store(root: Path) -> tuple[Builder, dict[str, list[str]]]:
    """Two old sessions (one with a fix), then enough new ones that the old are old."""
    b = Builder(root)
    sessions = {
        "fix": b.session(
            "fix",
            T0,
            [
                ("tool_call", "Read: app.py"),
                ("error", "Bash: pytest"),
                ("file_diff", "Edit: app.py"),
                ("command", "Bash: pytest"),
            ],
        ),
        "plain": b.session("plain", T0 + DAY_MS, [("command", "Bash: ls"), ("message", None)]),
        "new": b.session("new", T0 + 60 * DAY_MS, [("command", "Bash: ls")]),
    }
    (b.store.root / POLICY_NAME).write_text('{"keepSessions": 1}')
    return b, sessions


def retired_of(sessions: dict[str, list[str]]) -> list[str]:
    return sorted([sessions["fix"][0], sessions["plain"][0]])


# ---------------------------------------------------------------- the command


def test_dry_run_counts_by_kind_and_changes_nothing(tmp_path):
    b, sessions = team_store(tmp_path / ".kindling")
    before = sorted(p.name for p in b.store.objects.rglob("*.json"))
    result = kindling(b.store.root, "gc", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        "Policy (.kindling/retention.json): retire command, file_diff, tool_call older than 30 "
        "days before the newest activity, keeping each repository's newest 1 sessions."
    )
    assert lines[2].startswith("Would retire 2 of 7 observations (")
    assert lines[3].split()[:3] == ["command", "1", "files"]
    assert lines[4].split()[:3] == ["tool_call", "1", "files"]
    assert sorted(p.name for p in b.store.objects.rglob("*.json")) == before
    data = json.loads(kindling(b.store.root, "gc", "--dry-run", "--json").output)
    assert data["retire"]["ids"] == retired_of(sessions)
    assert data["retire"]["byKind"]["command"]["files"] == 1
    assert data["retire"]["bytes"] == sum(
        b.store.path_for("observations", i).stat().st_size for i in retired_of(sessions)
    )
    assert data["applied"] is False


def test_a_policy_new_to_the_clone_is_shown_then_needs_yes(tmp_path):
    b, sessions = team_store(tmp_path / ".kindling")
    result = kindling(b.store.root, "gc")
    assert result.exit_code == 1
    assert "Would retire 2 of 7 observations" in result.output
    assert result.output.splitlines()[-1].startswith(
        "Error: this clone has not applied this retention policy before"
    )
    assert all(b.store.path_for("observations", i).exists() for i in retired_of(sessions))
    result = kindling(b.store.root, "gc", "--yes")
    assert result.exit_code == 0, result.output
    assert "Retired 2 of 7 observations" in result.output
    assert not any(b.store.path_for("observations", i).exists() for i in retired_of(sessions))
    assert kindling(b.store.root, "gc").exit_code == 0  # the same policy: no question


@pytest.mark.parametrize(
    "text", ['{"keepDays": -5}', '{"kinds": ["error"]}', "{", '{"keepDays": 99999999999999999999}']
)
def test_a_bad_policy_is_a_one_line_error(tmp_path, text):
    b, _ = team_store(tmp_path / ".kindling")
    (b.store.root / POLICY_NAME).write_text(text)
    for args in (("gc", "--dry-run"), ("gc", "--yes")):
        result = kindling(b.store.root, *args)
        assert result.exit_code == 1
        assert result.output.startswith("Error: ") and result.output.count("\n") == 1
        assert "retention" in result.output


def test_after_gc_the_index_fsck_export_import_and_browse_accept_the_store(tmp_path):
    b, sessions = team_store(tmp_path / ".kindling")
    with Memory(b.store.root) as memory:
        assert memory.search("output")["candidates"]  # indexed before
        memory.gc(confirm=True)
        counts = memory.status()["counts"]
        assert counts["observations"] == 5
        assert memory.fsck().ok
        bundle = tmp_path / "bundle.json"
        memory.export(bundle)
        page = render_page(collect(memory))
    assert "retired observation" in page  # the script's text for a retired member
    data = collect(Memory(b.store.root))
    assert data["retired"] == retired_of(sessions)
    other = Memory.init(store=tmp_path / "other" / ".kindling")
    report = other.import_bundle(bundle.read_bytes())
    assert report.skipped == [] and report.stopped is None
    assert report.counts["observations"]["added"] == 5
    capsule = other.get("cap_fix").entity
    assert capsule["observationIds"] == sessions["fix"]  # names the retired member still
    assert other.fsck().ok
    result = kindling(other.store.root, "fsck")
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------- in git


@pytest.fixture
def git_env(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig-global"))
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.com")
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + (os.pathsep + path if path else ""))


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def work_tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@needs_git
def test_gc_in_two_clones_gives_identical_trees_that_merge_cleanly(tmp_path, git_env):
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    first = tmp_path / "first"
    git(tmp_path, "clone", "-q", str(origin), str(first))
    _, sessions = team_store(first / ".kindling")
    git(first, "add", "-A")
    git(first, "commit", "-q", "-m", "memory")
    git(first, "push", "-q", "origin", "HEAD:main")
    clones = [tmp_path / "alice", tmp_path / "bob"]
    for clone in clones:
        git(tmp_path, "clone", "-q", str(origin), str(clone))
        result = kindling(clone / ".kindling", "gc", "--yes")
        assert result.exit_code == 0, result.output
    assert work_tree(clones[0]) == work_tree(clones[1])
    assert git(clones[0], "status", "--porcelain") == git(clones[1], "status", "--porcelain")
    for clone in clones:
        git(clone, "add", "-A", ".kindling")
        git(clone, "commit", "-q", "-m", "kindling gc")
    git(clones[0], "push", "-q", "origin", "HEAD:main")
    git(clones[1], "pull", "-q", "--no-rebase", "origin", "main")  # both sides made one change
    assert work_tree(clones[0]) == work_tree(clones[1])

    # show names the commit that last held a retired observation, where git show finds it.
    gone = retired_of(sessions)[0]
    result = kindling(clones[1] / ".kindling", "show", gone)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"observation {gone} was retired by `kindling gc`")
    held = lines[1].removeprefix("Last held in commit ")
    assert held == git(first, "rev-parse", "HEAD")
    command = lines[2].removeprefix("See it: ").split()
    shown = subprocess.run(command, cwd=clones[1], capture_output=True)
    assert shown.returncode == 0
    original = first / ".kindling" / "objects" / "observations"
    assert shown.stdout == next(original.rglob(f"{gone}.json")).read_bytes()
    data = json.loads(kindling(clones[1] / ".kindling", "show", gone[:8], "--json").output)
    assert data["retired"] is True and data["commit"] == held


@needs_git
def test_show_of_a_retirement_not_yet_committed_names_head(tmp_path, git_env):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    _, sessions = team_store(repo / ".kindling")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "memory")
    kindling(repo / ".kindling", "gc", "--yes")
    result = kindling(repo / ".kindling", "show", retired_of(sessions)[1])
    assert f"Last held in commit {git(repo, 'rev-parse', 'HEAD')}" in result.output


def test_show_of_a_retired_id_outside_git_says_so_in_one_line(tmp_path, monkeypatch):
    b, sessions = team_store(tmp_path / ".kindling")
    kindling(b.store.root, "gc", "--yes")
    gone = retired_of(sessions)[0]
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    result = kindling(b.store.root, "show", gone)
    assert result.exit_code == 0
    assert result.output.splitlines()[1:] == [
        "No commit to show: the store is not in a git work tree"
    ]
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    result = kindling(b.store.root, "show", gone)
    assert result.output.splitlines()[1:] == [
        "No commit to show: git is not installed or not on PATH"
    ]


def test_show_of_an_id_never_stored_is_still_not_found(tmp_path):
    b, _ = team_store(tmp_path / ".kindling")
    kindling(b.store.root, "gc", "--yes")
    result = kindling(b.store.root, "show", "ffffffff-0000-4000-8000-000000000000")
    assert result.exit_code == 1
    assert result.output.startswith("Error: no entity with id")


def test_show_of_a_member_deleted_without_gc_says_gc_did_not_retire_it(tmp_path):
    b, sessions = team_store(tmp_path / ".kindling")
    gone = sessions["plain"][1]  # the message: never retired, deleted by hand here
    b.store.path_for("observations", gone).unlink()
    result = kindling(b.store.root, "show", gone)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: no observation {gone} in the store: capsule cap_plain names it, but "
        f"`kindling gc` did not retire it (it was deleted some other way; `git log -- "
        f"objects/observations/{b.store.path_for('observations', gone).parent.name}/{gone}.json` "
        f"in {b.store.root} shows when)\n"
    )
