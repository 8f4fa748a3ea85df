"""A cloned repository is data, never code: what a hostile clone can and cannot make Kindling do.

Each test is named after a finding of the attack it replays. Commands run as users run them:
the installed `kindling` console script, in the clone, with the background watcher allowed
(KINDLING_AUTOWATCH=1 wins over the CI variables of the machine running the tests).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import exited, wait_for
from entities import observation

from kindling import canonical
from kindling.memory import Memory
from kindling.settings import CI_VARIABLES, Settings
from kindling.store import Store
from kindling.watch import daemon

DEADLINE_S = 60.0
WATCH_ON = {"KINDLING_AUTOWATCH": "1"}
ENTITIES = 5_001  # past the default size at which a reader starts a watcher

# Names Python would import or run from a folder on sys.path, or from the current folder.
PLANTED = (
    "kindling/__init__.py",
    "kindling/__main__.py",
    "orjson.py",
    "click.py",
    "watchfiles.py",
    "sitecustomize.py",
    "usercustomize.py",
    "zz_kindling.pth",
)


def kindling_command() -> list[str]:
    """The installed console script, as an agent's hook or a user's shell runs it."""
    script = Path(sys.executable).with_name("kindling")
    if script.is_file():
        return [str(script)]
    found = shutil.which("kindling")
    if found is None:
        pytest.skip("the kindling console script is not installed")
    return [found]


def run(repo: Path, *args: str, input: bytes | None = None, env: dict | None = None):
    return subprocess.run(
        [*kindling_command(), *args],
        cwd=repo,
        input=input,
        capture_output=True,
        env={**os.environ, **WATCH_ON, **(env or {})},
        timeout=DEADLINE_S,
    )


def routine(n: int) -> dict:
    return observation(f"obs-{n:05d}", f"routine note {n} about the release", repoId="acme")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def make_clone(root: Path, entities: int = 3) -> Path:
    """A git work tree holding a store with `entities` observations."""
    root.mkdir(parents=True)
    git(root, "init", "-q")
    store = Memory.init(root).store
    for n in range(entities):
        store.write("observations", routine(n), durable=False)
    return root


def plant(repo: Path, marks: Path) -> list[Path]:
    """Code that leaves a mark when anything runs or imports it: in the store and at the top."""
    marks.mkdir(exist_ok=True)
    placed = []
    for folder in (repo / ".kindling", repo):
        for name in PLANTED:
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            mark = marks / f"{folder.name}-{name.replace('/', '-')}"
            code = f"open({str(mark)!r}, 'w').close()\n"
            path.write_text(f"import os; {code}" if name.endswith(".pth") else code)
            placed.append(path)
    return placed


def watcher_pid(store: Path) -> int | None:
    return daemon.running_pid(Store(store).state / "watch.lock")


@pytest.fixture
def stop_watchers():
    """Stores whose watcher a test may have started; each is stopped at teardown."""
    stores: list[Path] = []
    yield stores
    for store in stores:
        lock = Store(store).state / "watch.lock"
        holder = daemon.lock_holder(lock)
        try:
            daemon.stop(lock)
        except Exception:  # noqa: BLE001 - teardown: kill what would not stop
            if holder is not None:
                with_kill(holder[0])


def with_kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# ---------------------------------------------------------------- code from the repository


def hook_payload(event: str, repo: Path, **extra) -> bytes:
    body = {
        "session_id": "s-hostile",
        "transcript_path": str(repo / "transcript.jsonl"),
        "cwd": str(repo),
        "hook_event_name": event,
        **extra,
    }
    return json.dumps(body).encode()


HOOK_EVENTS = {
    "SessionStart": {"source": "startup"},
    "UserPromptSubmit": {"prompt": "why does the release fail"},
    "PreToolUse": {"tool_name": "Bash", "tool_input": {"command": "make"}},
    "PermissionRequest": {"tool_name": "Bash", "tool_input": {"command": "make"}},
    "PostToolUse": {
        "tool_name": "Bash",
        "tool_input": {"command": "make"},
        "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
    },
    "PostToolUseFailure": {
        "tool_name": "Bash",
        "tool_input": {"command": "make"},
        "error": "exit 2",
    },
    "Notification": {"message": "waiting for input"},
    "SubagentStart": {"agent_id": "a1", "agent_type": "explore"},
    "SubagentStop": {"agent_id": "a1", "last_assistant_message": "done"},
    "PreCompact": {"trigger": "auto"},
    "PostCompact": {"trigger": "auto"},
    "Stop": {"last_assistant_message": "the release works again"},
    "SessionEnd": {"reason": "exit"},
}


def mcp_session(repo: Path) -> subprocess.CompletedProcess:
    """`kindling mcp` answering an initialize and a search, over stdio as a client would."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "release"}},
        },
    ]
    lines = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    return run(repo, "mcp", input=lines)


@pytest.mark.slow
def test_finding_code_from_the_repository_runs(tmp_path, stop_watchers):
    """Planted modules in the store and at the top of a 5,000+ entity clone never run."""
    repo = make_clone(tmp_path / "clone", ENTITIES)
    store = repo / ".kindling"
    stop_watchers.append(store)
    marks = tmp_path / "marks"
    plant(repo, marks)
    out = tmp_path / "out"
    out.mkdir()

    # A fresh clone's first session: the hook walks the store and starts the watcher.
    assert (
        run(
            repo, "hook", "SessionStart", input=hook_payload("SessionStart", repo, source="startup")
        ).returncode
        == 0
    )
    pid = wait_for(lambda: watcher_pid(store), "the watcher the first session starts")
    for event, extra in HOOK_EVENTS.items():
        result = run(repo, "hook", event, input=hook_payload(event, repo, **extra))
        assert result.returncode == 0, (event, result.stderr)
    commands = [
        ["status"],
        ["list", "observations"],
        ["show", "obs-00001"],
        ["search", "release"],
        ["search", "release", "--json", "--explain"],
        ["log", "a note from the test"],
        ["capsule", "open", "--intent", "check the release"],
        ["pin", "observation", "obs-00002"],
        ["forget", "obs-00003"],
        ["export", str(out / "all.json")],
        ["import", str(out / "all.json")],
        ["browse", str(out / "page.html")],
        ["fsck"],
        ["reindex"],
        ["git-setup"],
        ["resolve"],
        ["init"],
        ["demo"],
        ["watch", "--stop"],
        ["watch", "--start"],
        ["--help"],
    ]
    for args in commands:
        result = run(repo, *args)
        assert b"Traceback" not in result.stderr, (args, result.stderr)
    assert mcp_session(repo).returncode == 0
    assert pid and wait_for(lambda: watcher_pid(store), "the watcher `watch --start` starts")
    assert list(marks.iterdir()) == []


def test_finding_the_watcher_runs_isolated_outside_the_work_tree(tmp_path, stop_watchers):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    stop_watchers.append(store)
    assert run(repo, "watch", "--start").returncode == 0
    pid = wait_for(lambda: watcher_pid(store), "the watcher")
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        pytest.skip("no /proc here")
    cwd = Path(os.readlink(proc / "cwd"))
    assert cwd == Store(store).state.resolve()
    assert cwd.is_relative_to(repo / ".git")  # beside git's own files, never the work tree
    argv = (proc / "cmdline").read_bytes().split(b"\0")
    assert b"-I" in argv  # isolated mode: no current folder, no PYTHONPATH on sys.path
    assert b"-m" not in argv


# ---------------------------------------------------------------- a watcher and its store


@pytest.mark.parametrize("how", ["deleted", "moved"])
def test_finding_a_watcher_outlives_its_store(tmp_path, stop_watchers, how):
    repo = make_clone(tmp_path / "scratch")
    store = repo / ".kindling"
    stop_watchers.append(store)
    state = Store(store).state
    assert run(repo, "watch", "--start").returncode == 0
    pid = wait_for(lambda: watcher_pid(store), "the watcher")
    if how == "deleted":
        shutil.rmtree(repo)
    else:
        repo.rename(tmp_path / "elsewhere")
    wait_for(lambda: exited(pid), "the watcher to exit", timeout=15)
    time.sleep(1.5)  # a tick later still: nothing was made where the store was
    assert not repo.exists()
    if how == "deleted":
        assert not state.exists()  # it lived in repo/.git: nothing came back there


def test_finding_watch_stop_does_not_stick(tmp_path, stop_watchers):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    stop_watchers.append(store)
    small = {"KINDLING_AUTOWATCH_MIN_FILES": "1"}
    assert run(repo, "watch", "--start").returncode == 0
    wait_for(lambda: watcher_pid(store), "the watcher")
    before = tree_snapshot(repo)
    stopped = run(repo, "watch", "--stop")
    assert stopped.returncode == 0 and b"until `kindling watch --start`" in stopped.stdout
    assert watcher_pid(store) is None
    for _ in range(2):
        assert run(repo, "search", "release", env=small).returncode == 0
        assert (
            run(
                repo, "hook", "SessionStart", input=hook_payload("SessionStart", repo), env=small
            ).returncode
            == 0
        )
    time.sleep(1.0)
    assert watcher_pid(store) is None
    status = run(repo, "status").stdout.decode()
    assert "none starts by itself (stopped in this clone" in status
    assert tree_snapshot(repo, skip_objects=True) == {
        k: v for k, v in before.items() if not k.startswith(".kindling/objects")
    }  # the choice lives outside the committed tree
    assert run(repo, "watch", "--start").returncode == 0
    wait_for(lambda: watcher_pid(store), "the watcher --start starts")


def tree_snapshot(repo: Path, skip_objects: bool = False) -> dict[str, bytes]:
    out = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel.startswith(".git/") or rel == ".git":
            continue
        if skip_objects and rel.startswith(".kindling/objects"):
            continue
        if path.is_file() and not path.is_symlink():
            out[rel] = path.read_bytes()
    return out


def test_finding_read_only_commands_never_start_a_watcher(tmp_path, stop_watchers):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    stop_watchers.append(store)
    small = {"KINDLING_AUTOWATCH_MIN_FILES": "1"}
    for args in (
        ["status"],
        ["show", "obs-00001"],
        ["list", "observations"],
        ["fsck"],
        ["export", str(tmp_path / "x.json")],
    ):
        assert run(repo, *args, env=small).returncode == 0, args
    time.sleep(1.0)
    assert watcher_pid(store) is None
    assert not (Store(store).state / daemon.SPAWN_NAME).exists()  # never even tried
    # The library starts none either unless asked to.
    with Memory(store) as memory:
        memory.search("release")
    assert not (Store(store).state / daemon.SPAWN_NAME).exists()


@pytest.mark.parametrize(
    "variable",
    ["JENKINS_URL", "TF_BUILD", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "TEAMCITY_VERSION"],
)
def test_finding_ci_detection_reads_only_ci(variable):
    assert Settings.from_environ({variable: "True"}).ci
    assert not Settings.from_environ({}).ci
    assert not Settings.from_environ({"CI": "false"}).ci
    assert Settings.from_environ({"JENKINS_URL": "x", "KINDLING_AUTOWATCH": "1"}).autowatch


def test_finding_ci_detection_keeps_a_jenkins_job_free_of_watchers(tmp_path, stop_watchers):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    stop_watchers.append(store)
    env = {name: "" for name in CI_VARIABLES}
    env.update({"KINDLING_AUTOWATCH": "", "KINDLING_AUTOWATCH_MIN_FILES": "1"})
    env["JENKINS_URL"] = "https://ci.example/"
    assert run(repo, "search", "release", env=env).returncode == 0
    assert not (Store(store).state / daemon.SPAWN_NAME).exists()
    assert "a CI job" in run(repo, "status", env=env).stdout.decode()


# ---------------------------------------------------------------- committed configuration


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (b'{"formatVersion": 1, "autowatch": "yes"}', b"autowatch must be true or false"),
        (b'{"formatVersion": true}', b"formatVersion must be a positive integer"),
        (b'{"formatVersion": 10000000000000000000000}', b"formatVersion must be"),
        (b"[1, 2]", b"not a JSON object"),
        (b'{"formatVersion": 1, "x": "' + b"a" * 70_000 + b'"}', b"store config is over 64 KiB"),
        (
            b'{"formatVersion": 1, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
            b"unreadable store config",
        ),
    ],
)
def test_finding_committed_configuration_is_hostile_input(tmp_path, config, message):
    repo = make_clone(tmp_path / "clone")
    (repo / ".kindling" / "config.json").write_bytes(config)
    for args in (["status"], ["search", "release"]):
        result = run(repo, *args)
        assert result.returncode == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], lines


def test_finding_committed_autowatch_false_is_honoured(tmp_path, stop_watchers):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    stop_watchers.append(store)
    (store / "config.json").write_bytes(canonical.encode({"formatVersion": 1, "autowatch": False}))
    small = {"KINDLING_AUTOWATCH": "", "CI": "", "KINDLING_AUTOWATCH_MIN_FILES": "1"}
    assert run(repo, "search", "release", env=small).returncode == 0
    assert not (Store(store).state / daemon.SPAWN_NAME).exists()


# ---------------------------------------------------------------- symlinks and planted files


def test_finding_symlinks_under_locks_are_followed(tmp_path):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    target = tmp_path / "victim"
    target.mkdir()
    os.symlink(target, store / "locks")
    git(repo, "check-ignore", "-q", ".kindling/locks")  # ignored, whatever its type
    for args in (["log", "a note"], ["search", "note"], ["capsule", "open", "--intent", "x"]):
        assert run(repo, *args).returncode == 0, args
    assert list(target.iterdir()) == []
    assert not os.path.lexists(store / "locks")  # a leftover of old versions: removed


def test_finding_a_symlinked_type_folder_is_never_entered(tmp_path):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    outside = tmp_path / "outside"
    Store.create(outside).write(
        "pins",
        {
            "id": "pin-outside",
            "targetType": "observation",
            "targetId": "obs-00001",
            "reason": "read from outside the store",
            "createdAt": 1_700_000_000_000,
            "expiresAt": None,
            "scopeIds": {},
        },
    )
    shutil.rmtree(store / "objects" / "pins")
    os.symlink(outside / "objects" / "pins", store / "objects" / "pins")
    listed = run(repo, "list", "pins", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    assert found(repo, "outside") == []
    report = run(repo, "fsck")
    assert report.returncode == 1 and b"objects/pins: stray: a symlink" in report.stdout


def test_finding_fsck_reports_any_symlink_in_a_store(tmp_path):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    os.symlink("/etc/hostname", store / "notes.txt")
    os.symlink(tmp_path, store / "folder-link")
    report = run(repo, "fsck")
    assert report.returncode == 1
    assert b"notes.txt: stray: a symlink" in report.stdout
    assert b"folder-link: stray: a symlink" in report.stdout


def doctored_index(source: Path, path: Path, secret: str) -> None:
    """An index (with its WAL) whose rows say what no entity file of the clone says."""
    with Memory.init(store=source) as mem:
        mem.log(f"deploy with the password {secret}")
        built = mem.index.path
        conn = sqlite3.connect(built)  # a second connection keeps the WAL from being folded in
        conn.execute("SELECT count(*) FROM entities").fetchone()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(f"{built}{suffix}"):
                shutil.copy(f"{built}{suffix}", f"{path}{suffix}")
        conn.close()


def test_finding_a_planted_wal_and_index_are_never_opened(tmp_path, stop_watchers):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    stop_watchers.append(store)
    assert run(repo, "watch", "--start").returncode == 0
    wait_for(lambda: watcher_pid(store), "the watcher")
    doctored_index(tmp_path / "source", store / "index.sqlite", "hunter2planted")
    assert found(repo, "hunter2planted") == []
    listed = run(repo, "list", "observations", "--json")
    assert listed.returncode == 0 and b"hunter2planted" not in listed.stdout
    assert not list(store.glob("index.sqlite*"))  # removed on sight, never opened
    assert run(repo, "watch", "--stop").returncode == 0
    assert found(repo, "hunter2planted") == []
    assert run(repo, "fsck").returncode == 0


def found(repo: Path, query: str) -> list[dict]:
    result = run(repo, "search", query, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["candidates"]


def test_finding_a_store_indexed_by_the_previous_version_moves_silently(tmp_path):
    repo = make_clone(tmp_path / "clone")
    store = repo / ".kindling"
    for name in (
        "index.sqlite",
        "index.sqlite-wal",
        "index.sqlite-shm",
        "index.sqlite-guard",
        "index.sqlite-hooks.json",
        "watch.lock",
        "watch.spawn",
    ):
        (store / name).write_bytes(b"left by 0.2")
    (store / "locks" / "ab").mkdir(parents=True)
    (store / "locks" / "clock").write_bytes(b"")
    (store / "locks" / "ab" / "observations.obs-1.lock").write_bytes(b"")
    result = run(repo, "search", "routine", "--json")
    assert result.returncode == 0 and result.stderr == b""
    assert len(json.loads(result.stdout)["candidates"]) == 3
    assert sorted(p.name for p in store.iterdir()) == [".gitignore", "config.json", "objects"]
    assert Store(store).index_path.is_file()


def test_finding_a_symlinked_store_folder_is_never_followed_from_the_work_tree(tmp_path):
    """A clone whose `.kindling` is a symlink (to a store elsewhere, or anywhere) is refused
    when the store is found from the current folder, in one line, as when it is named."""
    elsewhere = tmp_path / "elsewhere" / ".kindling"
    Memory.init(elsewhere).close()
    repo = tmp_path / "clone"
    (repo / "src").mkdir(parents=True)
    (repo / ".kindling").symlink_to(elsewhere, target_is_directory=True)
    found = run(repo / "src", "search", "anything")
    assert found.returncode == 1
    assert b"is a symlink" in found.stderr and b"Traceback" not in found.stderr
    assert found.stderr.count(b"\n") == 1
