"""Living in git with real `git`: git-setup, the merge driver, resolve, and two branches of
memory merged into one store."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT, run_kindling
from entities import observation

from kindling import canonical
from kindling.cli import cli
from kindling.git.setup import ATTRIBUTES_LINE, install_gitattributes, register_merge_driver
from kindling.store import Store

DRIVER = f"{shlex.quote(sys.executable)} -m kindling merge-driver %O %A %B"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

CAP = {
    "id": "cap_shared",
    "type": "session",
    "intent": "fix the login bug",
    "status": "open",
    "openedAt": 1750416000000,
    "scopeIds": {"repoId": "app"},
    "observationIds": ["o-base"],
}


obs = partial(observation, ts=1750416064123, repoId="app")


@pytest.fixture
def git_env(tmp_path, monkeypatch):
    """An environment in which git reads no system or user config and kindling imports."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig-global"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.com")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + (os.pathsep + path if path else ""))
    monkeypatch.delenv("KINDLING_STORE", raising=False)
    return os.environ


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def repo(tmp_path, git_env) -> Path:
    """A git repo with a store holding one open capsule and one observation, committed."""
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    git(top, "config", "user.name", "Test")
    git(top, "config", "user.email", "test@example.com")
    store = Store.create(top / ".kindling")
    store.write("observations", obs("o-base", "the login form rejects valid users"))
    store.write("capsules", CAP)
    (top / "README").write_text("app\n")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "base")
    return top


def store_of(top: Path) -> Store:
    return Store(top / ".kindling")


def read_entity(top: Path, etype: str, eid: str) -> dict:
    path = store_of(top).path_for(etype, eid)
    data = path.read_bytes()
    entity = canonical.decode(data)
    assert canonical.encode(entity) == data, "merged file is not canonical"
    return entity


def diverge(top: Path, *, close_on_a: bool = True, intent_b: str | None = None) -> None:
    """Branch a appends an observation (and closes the capsule); branch b appends and pins."""
    store = store_of(top)
    git(top, "checkout", "-q", "-b", "a")
    store.write("observations", obs("o-a", "branch a found the cookie path"))
    cap = {**CAP, "observationIds": ["o-base", "o-a"]}
    if close_on_a:
        cap.update(status="closed", closedAt=1750416600000)
    store.write("capsules", cap)
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "a")
    git(top, "checkout", "-q", "main")
    git(top, "checkout", "-q", "-b", "b")
    store.write("observations", obs("o-b", "branch b saw the session expire"))
    cap = {**CAP, "observationIds": ["o-base", "o-b"]}
    if intent_b:
        cap["intent"] = intent_b
    store.write("capsules", cap)
    pin = {
        "id": "pin_b",
        "targetType": "observation",
        "targetId": "o-b",
        "reason": "keep",
        "createdAt": 1750416100000,
        "expiresAt": None,
        "scopeIds": {},
    }
    store.write("pins", pin)
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "b")
    git(top, "checkout", "-q", "a")


# ---------------------------------------------------------------- git-setup


def test_git_setup_writes_attributes_and_registers_driver(repo):
    first = run_kindling("--store", str(repo / ".kindling"), "git-setup", text=True)
    assert first.returncode == 0, first.stderr
    assert "wrote" in first.stdout and "registered" in first.stdout
    attrs = (repo / ".kindling" / ".gitattributes").read_text()
    assert ATTRIBUTES_LINE in attrs.splitlines()
    assert git(repo, "config", "--local", "merge.kindling.driver").stdout.strip() == (
        "kindling merge-driver %O %A %B"
    )
    assert git(repo, "config", "--local", "merge.kindling.name").stdout.strip()
    for key in ("rebase.autoStash", "merge.autoStash"):  # pulls mid-session keep hook writes
        assert git(repo, "config", "--local", key).stdout.strip() == "true"
    assert "autoStash" in first.stdout
    check = git(repo, "check-attr", "merge", "eol", "--", ".kindling/objects/capsules/ab/x.json")
    assert "merge: kindling" in check.stdout and "eol: lf" in check.stdout
    outside = git(repo, "check-attr", "merge", "--", "README")
    assert "merge: unspecified" in outside.stdout

    again = run_kindling("--store", str(repo / ".kindling"), "git-setup", text=True)
    assert again.returncode == 0
    assert "already" in again.stdout and "wrote" not in again.stdout
    assert (repo / ".kindling" / ".gitattributes").read_text() == attrs
    assert not list((repo / ".kindling").glob("*.tmp"))


def test_install_gitattributes_keeps_user_lines(tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    (root / ".gitattributes").write_text("*.md text")
    assert install_gitattributes(root) is True
    text = (root / ".gitattributes").read_text()
    assert text.startswith("*.md text\n") and ATTRIBUTES_LINE in text
    assert install_gitattributes(root) is False


def test_register_merge_driver_is_idempotent(repo):
    assert register_merge_driver(repo, DRIVER) is True
    assert register_merge_driver(repo, DRIVER) is False
    assert git(repo, "config", "merge.kindling.driver").stdout.strip() == DRIVER


def test_git_setup_outside_a_repo_is_a_clear_error(tmp_path, git_env):
    Store.create(tmp_path / "plain" / ".kindling")
    result = run_kindling("--store", str(tmp_path / "plain" / ".kindling"), "git-setup", text=True)
    assert result.returncode == 1
    assert "Error:" in result.stderr and "not inside a git repository" in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------- merge-driver alone


def driver(tmp_path: Path, base: bytes, ours: bytes, theirs: bytes, *extra: str):
    paths = []
    for name, data in (("O", base), ("A", ours), ("B", theirs)):
        p = tmp_path / f".merge_file_{name}"
        p.write_bytes(data)
        paths.append(str(p))
    result = CliRunner().invoke(cli, ["merge-driver", *paths, *extra])
    return result, Path(paths[1]).read_bytes()


def test_driver_clean_merge_writes_canonical_union(tmp_path):
    ours = {
        **CAP,
        "observationIds": ["o-base", "o-a"],
        "status": "closed",
        "closedAt": 1750416600000,
    }
    theirs = {**CAP, "observationIds": ["o-base", "o-b"]}
    result, out = driver(
        tmp_path, canonical.encode(CAP), canonical.encode(ours), canonical.encode(theirs)
    )
    assert result.exit_code == 0, result.output
    assert out == canonical.encode({**ours, "observationIds": ["o-base", "o-a", "o-b"]})


def test_driver_type_from_content_without_a_base(tmp_path):
    pin = {
        "id": "pin_x",
        "targetType": "observation",
        "targetId": "o1",
        "reason": None,
        "createdAt": 1,
        "expiresAt": None,
        "scopeIds": {},
    }
    result, out = driver(
        tmp_path, b"", canonical.encode(pin), canonical.encode({**pin, "expiresAt": 5})
    )
    assert result.exit_code == 1  # no base: both sides differ on expiresAt
    assert out.startswith(b"<<<<<<< ours\n")
    result, out = driver(tmp_path, b"", canonical.encode(pin), canonical.encode(pin))
    assert result.exit_code == 0 and out == canonical.encode(pin)


def test_driver_real_conflict_leaves_markers_around_canonical_json(tmp_path):
    ours = {**CAP, "intent": "A"}
    theirs = {**CAP, "intent": "B"}
    # ours arrives non-canonical (a hand edit); the markers hold its canonical form
    result, out = driver(
        tmp_path,
        canonical.encode(CAP),
        canonical.encode_compact(ours),
        canonical.encode(theirs),
        ".kindling/objects/capsules/00/cap_shared.json",
    )
    assert result.exit_code == 1
    assert out == (
        b"<<<<<<< ours\n"
        + canonical.encode(ours)
        + b"=======\n"
        + canonical.encode(theirs)
        + b">>>>>>> theirs\n"
    )
    assert "intent" in result.output
    with pytest.raises(canonical.DecodeError, match="conflict markers"):
        canonical.decode(out)


@pytest.mark.parametrize(
    "ours,theirs",
    [
        (b"\xff\xfe garbage", canonical.encode(CAP)),
        (canonical.encode(CAP), b"{not json"),
        (b"", b""),
        (b"[1, 2, 3]", b"null"),
        (b'{"id": "../../etc/passwd"}', b'{"id": "x\\u0000y"}'),
        (b"[" * 100_000, b"{}"),
        (canonical.encode(CAP), canonical.encode({**CAP, "status": 7})),
    ],
)
def test_driver_never_tracebacks_on_garbage(tmp_path, ours, theirs):
    result, out = driver(tmp_path, canonical.encode(CAP), ours, theirs)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert out.startswith(b"<<<<<<<") and b"\n=======\n" in out


def test_driver_missing_files_is_an_error_that_writes_nothing(tmp_path):
    missing = tmp_path / "nope"
    result = CliRunner().invoke(cli, ["merge-driver", str(missing), str(missing), str(missing)])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not missing.exists()  # nothing invented where git reads the result
    assert result.stdout == ""
    assert (
        result.stderr
        == f"kindling merge-driver: cannot read {missing}: No such file or directory\n"
    )


# ---------------------------------------------------------------- with real git


def test_two_branches_merge_cleanly_with_the_driver(repo):
    install_gitattributes(repo / ".kindling")
    register_merge_driver(repo, DRIVER)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes")
    diverge(repo)
    git(repo, "merge", "-q", "--no-edit", "b")  # raises on conflict
    cap = read_entity(repo, "capsules", "cap_shared")
    assert cap["observationIds"] == ["o-base", "o-a", "o-b"]
    assert cap["status"] == "closed" and cap["closedAt"] == 1750416600000
    assert read_entity(repo, "pins", "pin_b")["targetId"] == "o-b"
    assert git(repo, "status", "--porcelain").stdout == ""


def test_driver_conflict_through_git_leaves_markers_and_resolve_lists_fields(repo):
    install_gitattributes(repo / ".kindling")
    register_merge_driver(repo, DRIVER)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes")
    store = store_of(repo)
    git(repo, "checkout", "-q", "-b", "b")
    store.write("capsules", {**CAP, "intent": "theirs"})
    git(repo, "commit", "-q", "-am", "b")
    git(repo, "checkout", "-q", "main")
    store.write("capsules", {**CAP, "intent": "ours"})
    git(repo, "commit", "-q", "-am", "main")
    merge = git(repo, "merge", "--no-edit", "b", check=False)
    assert merge.returncode != 0
    path = store.path_for("capsules", "cap_shared")
    with pytest.raises(canonical.DecodeError, match="conflict markers"):
        canonical.decode(path.read_bytes())
    result = run_kindling("--store", str(repo / ".kindling"), "resolve", text=True)
    assert result.returncode == 1
    assert "needs a human" in result.stdout and "intent" in result.stdout


def test_resolve_finishes_a_merge_made_without_the_driver(repo):
    diverge(repo)
    merge = git(repo, "merge", "--no-edit", "b", check=False)
    assert merge.returncode != 0, "git merged capsule lists on its own; the test needs a conflict"
    conflicted = git(repo, "diff", "--name-only", "--diff-filter=U").stdout.split()
    assert conflicted == [".kindling/objects/capsules/" + fanout_rel("cap_shared")]

    result = run_kindling("--store", str(repo / ".kindling"), "resolve", "cap_shared", text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "resolved .kindling/objects/capsules/" in result.stdout
    cap = read_entity(repo, "capsules", "cap_shared")
    assert cap["observationIds"] == ["o-base", "o-a", "o-b"]
    assert cap["status"] == "closed"
    assert git(repo, "diff", "--name-only", "--diff-filter=U").stdout == ""
    git(repo, "commit", "-q", "--no-edit")

    again = run_kindling("--store", str(repo / ".kindling"), "resolve", text=True)
    assert again.returncode == 0 and "no conflicted entity files" in again.stdout


def test_resolve_reports_fields_for_a_human(repo):
    diverge(repo, intent_b="a different intent")
    store = store_of(repo)
    git(repo, "checkout", "-q", "a")
    store.write("capsules", {**read_entity(repo, "capsules", "cap_shared"), "intent": "mine"})
    git(repo, "commit", "-q", "-am", "a2")
    assert git(repo, "merge", "--no-edit", "b", check=False).returncode != 0
    result = run_kindling("--store", str(repo / ".kindling"), "resolve", text=True)
    assert result.returncode == 1
    assert "needs a human" in result.stdout and ": intent" in result.stdout
    unknown = run_kindling("--store", str(repo / ".kindling"), "resolve", "pin_nothing", text=True)
    assert unknown.returncode == 1 and "no conflicted entity file" in unknown.stdout


def test_resolve_outside_git_is_a_clear_error(tmp_path, git_env):
    Store.create(tmp_path / ".kindling")
    result = run_kindling("--store", str(tmp_path / ".kindling"), "resolve", text=True)
    assert result.returncode == 1 and "not inside a git repository" in result.stderr


def fanout_rel(entity_id: str) -> str:
    from kindling.store import fanout

    return f"{fanout(entity_id)}/{entity_id}.json"


# ---------------------------------------------------------------- whole workflow


def test_two_branches_of_memory_merge_and_search_sees_both(repo):
    from kindling.memory import Memory

    store_path = repo / ".kindling"
    setup = run_kindling("--store", str(store_path), "git-setup", "--driver", DRIVER, text=True)
    assert setup.returncode == 0, setup.stderr
    with Memory(store_path) as mem:
        shared = mem.open_capsule("shared investigation", scope={"sessionId": "s-base"})
        shared_id = shared.entity["id"]
        base_obs = mem.log("base observation about quokkas", capsule_id=shared_id).entity["id"]
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base memory")

    git(repo, "checkout", "-q", "-b", "a")
    with Memory(store_path) as mem:
        for word in ("aardvark", "albatross", "axolotl"):
            mem.log(f"branch a saw an {word}", capsule_id=shared_id, kind="error")
        mem.pin("observation", base_obs, note="pinned on a")
        own = mem.open_capsule("a's own work", scope={"sessionId": "s-a"}).entity["id"]
        mem.log("alpaca trouble in a's own capsule", capsule_id=own)
        mem.close_capsule(own, summary="a fixed the alpaca")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "memory on a")

    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "b")
    with Memory(store_path) as mem:
        bison = mem.log("branch b saw a bison", capsule_id=shared_id).entity["id"]
        mem.log("branch b saw a buffalo", capsule_id=shared_id)
        mem.pin("observation", bison, note="pinned on b")
        mem.close_capsule(shared_id, summary="b closed the shared capsule", evidence=[bison])
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "memory on b")

    git(repo, "checkout", "-q", "a")
    merge = git(repo, "merge", "--no-edit", "b", check=False)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    assert "CONFLICT" not in merge.stdout

    cap = read_entity(repo, "capsules", shared_id)
    assert cap["status"] == "closed" and "summaryId" in cap
    assert len(cap["observationIds"]) == 6 and cap["observationIds"][0] == base_obs

    fsck = run_kindling("--store", str(store_path), "fsck", text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    for word in ("albatross", "buffalo", "alpaca", "quokkas"):
        found = run_kindling("--store", str(store_path), "search", word, text=True)
        assert found.returncode == 0, found.stderr
        assert word in found.stdout, (word, found.stdout)


def test_resolve_leaves_delete_modify_to_a_human(repo):
    store = store_of(repo)
    pin = {
        "id": "pin_gone",
        "targetType": "observation",
        "targetId": "o-base",
        "reason": "keep",
        "createdAt": 1750416100000,
        "expiresAt": None,
        "scopeIds": {},
    }
    store.write("pins", pin)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pin")
    git(repo, "checkout", "-q", "-b", "b")
    store.write("pins", {**pin, "reason": "edited on b"})
    git(repo, "commit", "-q", "-am", "edit pin")
    git(repo, "checkout", "-q", "main")
    store.remove("pins", "pin_gone")
    git(repo, "commit", "-q", "-am", "unpin")
    assert git(repo, "merge", "--no-edit", "b", check=False).returncode != 0
    result = run_kindling("--store", str(repo / ".kindling"), "resolve", text=True)
    assert result.returncode == 1
    assert "needs a human" in result.stdout and "deleted on ours" in result.stdout
    empty = run_kindling("--store", str(repo / ".kindling"), "resolve", "", text=True)
    assert empty.returncode == 1 and "empty id" in empty.stderr
