"""Repository identity read from git's configuration as git reads it, checked against git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kindling import gitconfig
from kindling.repo_identity import identify, naming_url, normalise_remote, repo_config

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


@pytest.fixture(autouse=True)
def own_home(tmp_path, monkeypatch):
    """A home of its own: no real global config, no system config (for git and for us)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    return home


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def make_repo(path: Path, origin: str | None = None, branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", branch, str(path), cwd=path.parent)
    if origin is not None:
        git("remote", "add", "origin", origin, cwd=path)
    return path


def git_url(repo: Path) -> str:
    """The origin URL git itself fetches from (insteadOf applied)."""
    return git("ls-remote", "--get-url", "origin", cwd=repo)


def ours(repo: Path) -> gitconfig.Config:
    from kindling.gitdir import find_git_dir

    git_dir, common = find_git_dir(repo)
    return repo_config(git_dir, common)


# ---------------------------------------------------------------- ids recorded before stay


@pytest.mark.parametrize(
    "url, expected",
    [
        ("git@github.com:acme/acme-api.git", "github.com/acme/acme-api"),
        ("https://github.com/acme/acme-api.git", "github.com/acme/acme-api"),
        ("https://user:token@github.com:443/acme/acme-api/", "github.com/acme/acme-api"),
        ("ssh://git@GitHub.com:22/acme/acme-api.git", "github.com/acme/acme-api"),
        ("/srv/git/acme-api.git", "srv/git/acme-api"),
        ("file:///srv/git/acme-api.git", "srv/git/acme-api"),
        ("git@gitlab.example.org:group/sub/proj.git", "gitlab.example.org/group/sub/proj"),
    ],
)
def test_plain_remotes_keep_the_ids_recorded_before(tmp_path, url, expected):
    repo = make_repo(tmp_path / "checkout", url)
    assert identify(repo / "").id == expected
    assert identify(repo).folder == "checkout"


def test_no_origin_and_no_git_keep_the_folder_name(tmp_path):
    assert identify(make_repo(tmp_path / "lonely")).id == "lonely"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert identify(plain).id == "plain"


# ---------------------------------------------------------------- parsing as git does


def test_values_read_as_git_reads_them(tmp_path):
    repo = make_repo(tmp_path / "r")
    config = repo / ".git" / "config"
    config.write_text(
        config.read_text()
        + "[Remote \"origin\"]\n"
        + '  URL = "https://example.com/a b.git" ; a comment\n'
        + "[remote.legacy]\n\turl = https://example.com/\\\n  legacy.git\n"
        + '[x "sub \\"q\\""]\n\tflag\n\tval = one  two # note\n'
        + '[y]\n\ttabbed = one \t two  ; c\n\tmixed = "x  y" z\n'
    )
    got = ours(repo)
    assert got.get("remote", "origin", "url") == git("config", "remote.origin.url", cwd=repo)
    assert got.get("remote", "legacy", "url") == git("config", "remote.legacy.url", cwd=repo)
    assert got.get("x", 'sub "q"', "val") == git("config", 'x.sub "q".val', cwd=repo)
    assert got.get_all("x", 'sub "q"', "flag") == [None]
    for key in ("tabbed", "mixed"):
        assert got.get("y", None, key) == git("config", f"y.{key}", cwd=repo)


def test_include_and_include_if_follow_git(tmp_path, own_home):
    work = tmp_path / "work"
    repo = make_repo(work / "api")
    (own_home / "team.cfg").write_text('[remote "origin"]\n\turl = git@github.com:team/api.git\n')
    (own_home / "other.cfg").write_text('[remote "origin"]\n\turl = git@github.com:other/x.git\n')
    (own_home / "branch.cfg").write_text('[user]\n\tname = On Main\n')
    (own_home / ".gitconfig").write_text(
        f'[includeIf "gitdir:{work}/"]\n\tpath = team.cfg\n'
        '[includeIf "gitdir:/nowhere/"]\n\tpath = other.cfg\n'
        '[includeIf "onbranch:main"]\n\tpath = ~/branch.cfg\n'
    )
    assert git("config", "remote.origin.url", cwd=repo) == "git@github.com:team/api.git"
    got = ours(repo)
    assert got.get("remote", "origin", "url") == "git@github.com:team/api.git"
    assert got.get("user", None, "name") == git("config", "user.name", cwd=repo) == "On Main"
    assert identify(repo).id == "github.com/team/api"
    git("checkout", "-q", "-b", "feature", cwd=repo)
    assert ours(repo).get("user", None, "name") is None  # onbranch:main no longer holds


def test_gitdir_i_ignores_case_and_relative_patterns_match_anywhere(tmp_path, own_home):
    repo = make_repo(tmp_path / "Projects" / "Api")
    (own_home / "a.cfg").write_text("[k]\n\tv = insensitive\n")
    (own_home / "b.cfg").write_text("[k]\n\tw = relative\n")
    (own_home / ".gitconfig").write_text(
        '[includeIf "gitdir/i:**/projects/api/"]\n\tpath = a.cfg\n'
        '[includeIf "gitdir:Api/.git"]\n\tpath = b.cfg\n'
    )
    got = ours(repo)
    assert got.get("k", None, "v") == git("config", "k.v", cwd=repo) == "insensitive"
    assert got.get("k", None, "w") == git("config", "k.w", cwd=repo) == "relative"


def test_include_paths_are_relative_to_the_including_file(tmp_path):
    repo = make_repo(tmp_path / "r")
    nested = repo / ".git" / "conf.d"
    nested.mkdir()
    (nested / "one.cfg").write_text("[include]\n\tpath = two.cfg\n")
    (nested / "two.cfg").write_text('[remote "origin"]\n\turl = https://host.example/t/r\n')
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[include]\n\tpath = conf.d/one.cfg\n")
    assert git("config", "remote.origin.url", cwd=repo) == "https://host.example/t/r"
    assert identify(repo).id == "host.example/t/r"


# ---------------------------------------------------------------- insteadOf


def test_an_alias_takes_its_insteadof_rewrite(tmp_path, own_home):
    (own_home / ".gitconfig").write_text('[url "https://github.com/"]\n\tinsteadOf = gh:\n')
    repo = make_repo(tmp_path / "r", "gh:acme/acme-api")
    assert git_url(repo) == "https://github.com/acme/acme-api"
    assert identify(repo).id == "github.com/acme/acme-api"


def test_a_mirror_or_local_copy_never_renames_the_repository(tmp_path, own_home):
    teammate = make_repo(tmp_path / "teammate", "https://github.com/acme/acme-api.git")
    mirrored = make_repo(tmp_path / "mirrored", "https://github.com/acme/acme-api.git")
    (own_home / ".gitconfig").write_text(
        '[url "https://mirror.corp.example/github/"]\n\tinsteadOf = https://github.com/\n'
        '[url "/srv/cache/"]\n\tinsteadOf = https://github.com/acme/\n'
    )
    assert git_url(mirrored) == "/srv/cache/acme-api.git"  # the longest prefix wins
    assert identify(mirrored).id == identify(teammate).id == "github.com/acme/acme-api"


def test_the_longest_insteadof_prefix_wins_as_in_git(tmp_path, own_home):
    (own_home / ".gitconfig").write_text(
        '[url "https://short.example/"]\n\tinsteadOf = co:\n'
        '[url "https://long.example/x/"]\n\tinsteadOf = co:team/\n'
    )
    repo = make_repo(tmp_path / "r", "co:team/proj")
    assert git_url(repo) == "https://long.example/x/proj"
    assert naming_url(ours(repo)) == "https://long.example/x/proj"


def test_push_insteadof_never_changes_the_name(tmp_path, own_home):
    (own_home / ".gitconfig").write_text(
        '[url "git@github.com:"]\n\tpushInsteadOf = https://github.com/\n'
        '[url "git@push.example:"]\n\tpushInsteadOf = gh:\n'
    )
    repo = make_repo(tmp_path / "r", "https://github.com/acme/acme-api")
    assert identify(repo).id == "github.com/acme/acme-api"
    alias = make_repo(tmp_path / "a", "gh:acme/acme-api")
    assert identify(alias).id == normalise_remote("gh:acme/acme-api")


# ---------------------------------------------------------------- hostile configuration


def test_include_loops_stop(tmp_path):
    repo = make_repo(tmp_path / "r", "https://github.com/acme/loop")
    (repo / ".git" / "a.cfg").write_text("[include]\n\tpath = b.cfg\n")
    (repo / ".git" / "b.cfg").write_text("[include]\n\tpath = a.cfg\n")
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[include]\n\tpath = a.cfg\n")
    got = ours(repo)
    assert len(got.files) <= gitconfig.MAX_FILES + 2
    assert identify(repo).id == "github.com/acme/loop"


def test_huge_files_fifos_and_devices_are_not_read(tmp_path):
    repo = make_repo(tmp_path / "r", "https://github.com/acme/safe")
    huge = repo / ".git" / "huge.cfg"
    huge.write_text('[remote "origin"]\n\turl = https://evil.example/x\n' + "#" * (2 << 20))
    fifo = repo / ".git" / "fifo.cfg"
    os.mkfifo(fifo)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(f"[include]\n\tpath = {huge}\n\tpath = {fifo}\n\tpath = /dev/zero\n")
        fh.write("\tpath = /proc/self/environ\n")
    assert identify(repo).id == "github.com/acme/safe"  # returns: no blocking read, no bytes


def test_symlinked_includes_into_system_folders_are_refused(tmp_path):
    repo = make_repo(tmp_path / "r", "https://github.com/acme/safe")
    (repo / ".git" / "link.cfg").symlink_to("/dev/stdin")
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[include]\n\tpath = link.cfg\n")
    assert identify(repo).id == "github.com/acme/safe"


def test_unknown_conditions_and_garbage_never_match_nor_fail(tmp_path, own_home):
    repo = make_repo(tmp_path / "r", "https://github.com/acme/ok")
    (own_home / "x.cfg").write_text('[remote "origin"]\n\turl = https://evil.example/x\n')
    (own_home / ".gitconfig").write_text(  # git itself refuses this file: written last
        '[includeIf "hasconfig:remote.*.url:**"]\n\tpath = x.cfg\n'
        "[[[ broken\n= no name\n\x00\xff\n"
    )
    assert identify(repo).id == "github.com/acme/ok"


def test_nothing_is_executed(tmp_path, own_home, monkeypatch):
    marker = tmp_path / "ran"
    (own_home / ".gitconfig").write_text(
        f"[core]\n\tfsmonitor = touch {marker}\n\tsshCommand = touch {marker}\n"
        f'[credential]\n\thelper = "!touch {marker}"\n'
    )
    calls = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: calls.append(a))
    repo_dir = tmp_path / "r"
    repo_dir.mkdir()
    (repo_dir / ".git").mkdir()
    (repo_dir / ".git" / "config").write_text('[remote "origin"]\n\turl = gh:x/y\n')
    (repo_dir / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert identify(repo_dir).id == "gh/x/y"
    assert calls == [] and not marker.exists()


# ---------------------------------------------------------------- the per-process cache


def test_a_changed_config_file_is_noticed(tmp_path, own_home):
    repo = make_repo(tmp_path / "r", "https://github.com/acme/one")
    assert identify(repo).id == "github.com/acme/one"
    git("remote", "set-url", "origin", "https://github.com/acme/two", cwd=repo)
    assert identify(repo).id == "github.com/acme/two"
    (own_home / "inc.cfg").write_text('[url "https://github.com/"]\n\tinsteadOf = gh:\n')
    git("remote", "set-url", "origin", "gh:acme/three", cwd=repo)
    assert identify(repo).id == "gh/acme/three"
    (own_home / ".gitconfig").write_text("[include]\n\tpath = inc.cfg\n")
    assert identify(repo).id == "github.com/acme/three"
