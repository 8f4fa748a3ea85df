"""A team on one repository, simulated with real `git`: four clones of one bare repository
(two ran `kindling git-setup`, two never did; two reach it over ssh, two over https),
sessions through the Claude Code hook entry point, pushes and pulls interleaved (half the
clones pull with rebase, half with merge), a crashed session, sessions pushed while open and
taken up again by their owners a week later (one before pulling, with records never
pushed), a branch switch mid-session, two people pinning the same observation, and the clock
moved on past the abandonment limit. No pull may stop, and at the end every clone holds the
same memory, all of it, with one summary per closed capsule and the owner's summary last.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kindling import canonical
from kindling.agents.hooks import run_hook
from kindling.memory import Memory

HOUR = 60 * 60 * 1000
DAY = 24 * HOUR
T0 = 1_780_000_000_000
DRIVER = f"{sys.executable} -m kindling merge-driver %O %A %B"
SSH, HTTPS = "git@github.com:acme/acme-api.git", "https://github.com/acme/acme-api.git"


@pytest.fixture
def team(tmp_path, monkeypatch):
    """A bare origin and four clones: (name, path, ran git-setup, pulls with rebase)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "gitconfig").write_text("")
    for name in list(os.environ):
        if name.startswith(("KINDLING_", "GIT_")) or name == "CLAUDE_PROJECT_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("KINDLING_AUTOWATCH", "0")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Dev")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "dev@example.com")
    origin = tmp_path / "origin.git"
    git("init", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    seed = tmp_path / "seed"
    git("clone", str(origin), str(seed), cwd=tmp_path)
    (seed / "README.md").write_text("acme\n")
    Memory.init(seed).close()
    kindling("--store", str(seed / ".kindling"), "git-setup", "--driver", DRIVER, cwd=seed)
    git("add", "-A", cwd=seed)
    git("commit", "-m", "start", cwd=seed)
    git("push", "origin", "HEAD:main", cwd=seed)
    clones = []
    for name, setup, rebase in (
        ("ana", True, True),
        ("ben", True, False),
        ("cho", False, True),
        ("dev", False, False),
    ):
        path = tmp_path / name
        git("clone", str(origin), str(path), cwd=tmp_path)
        # Half the team reaches the repository over ssh, half over https (both lead here).
        remote = SSH if setup == rebase else HTTPS
        git("config", f"url.{origin}.insteadOf", remote, cwd=path)
        git("remote", "set-url", "origin", remote, cwd=path)
        if setup:
            kindling("--store", str(path / ".kindling"), "git-setup", "--driver", DRIVER, cwd=path)
        clones.append(Clone(name, path, setup, rebase, monkeypatch))
    return clones


def git(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert done.returncode == 0, f"git {' '.join(args)} in {cwd}: {done.stdout}{done.stderr}"
    return done


def kindling(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kindling", *args], cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


class Clone:
    """One developer's clone: Claude Code sessions through the hooks, and git."""

    def __init__(self, name, path: Path, setup: bool, rebase: bool, monkeypatch) -> None:
        self.name, self.path, self.setup, self.rebase = name, path, setup, rebase
        self.monkeypatch = monkeypatch
        self.clock = T0
        self.recorded: set[str] = set()  # every observation id this clone ever wrote

    def at(self, ms: int) -> None:
        self.clock = ms

    def send(self, event: str, session: str, **fields) -> None:
        self.clock += 60_000
        self.monkeypatch.setenv("KINDLING_NOW", str(self.clock))
        body = {
            "session_id": session,
            "transcript_path": f"/home/{self.name}/.claude/projects/x/{session}.jsonl",
            "cwd": str(self.path),
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
        result = run_hook(event, json.dumps(body).encode())
        assert result.message is None, result.message
        self.recorded |= self.observation_ids()

    def work(self, session: str, task: str, steps: int = 3) -> None:
        """A prompt, some commands (one failing), and the turn's end message."""
        self.send("UserPromptSubmit", session, prompt=task)
        for n in range(steps):
            response = {"stdout": f"{task} step {n} ok", "stderr": "", "interrupted": False}
            self.send(
                "PostToolUse",
                session,
                tool_name="Bash",
                tool_input={"command": f"make step{n}"},
                tool_response=response,
                tool_use_id=f"toolu_{self.name}_{self.clock}",
            )
        self.send("Stop", session, stop_hook_active=False, last_assistant_message=f"Did: {task}.")

    def session(self, session: str, task: str, *, end: bool = True) -> None:
        self.send("SessionStart", session, source="startup")
        self.work(session, task)
        if end:
            self.send("SessionEnd", session, reason="prompt_input_exit")

    def observation_ids(self) -> set[str]:
        folder = self.path / ".kindling" / "objects" / "observations"
        return {p.stem for p in folder.rglob("*.json")}

    def commit(self) -> None:
        git("add", "-A", ".", cwd=self.path)
        if git("diff", "--cached", "--quiet", cwd=self.path, check=False).returncode:
            git("commit", "-m", f"{self.name}: work and memory", cwd=self.path)

    def pull(self) -> None:
        """Pull as this developer does; it must never stop for a person."""
        if not self.setup:
            self.commit()  # no autostash here: commit first, as such a clone must
        mode = "--rebase" if self.rebase else "--no-rebase"
        done = git("pull", mode, "origin", "main", cwd=self.path, check=False)
        assert done.returncode == 0, f"{self.name}: pull stopped:\n{done.stdout}{done.stderr}"
        assert not git("ls-files", "-u", cwd=self.path).stdout, f"{self.name}: unmerged"
        assert not git("stash", "list", cwd=self.path).stdout, f"{self.name}: autostash kept"
        for path in (self.path / ".kindling").rglob("*.json"):
            assert b"<<<<<<<" not in path.read_bytes(), f"{self.name}: markers in {path}"
        self.recorded |= self.observation_ids()

    def sync(self) -> None:
        """Commit, pull, push."""
        self.commit()
        self.pull()
        self.commit()
        git("push", "origin", "HEAD:main", cwd=self.path)

    def memory(self) -> Memory:
        return Memory(self.path / ".kindling")


def objects(clone: Clone) -> dict[str, bytes]:
    root = clone.path / ".kindling" / "objects"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json"))}


def load_all(clone: Clone, entity_type: str) -> list[dict]:
    folder = clone.path / ".kindling" / "objects" / entity_type
    return [canonical.decode(p.read_bytes()) for p in sorted(folder.rglob("*.json"))]


@pytest.mark.slow
def test_a_team_never_stops_a_pull_and_ends_with_the_same_memory(team):
    ana, ben, cho, dev = team
    # Day one: finished sessions, pushed and pulled in every order.
    ana.session("ana-1", "Fix the login redirect loop")
    ana.sync()
    ben.session("ben-1", "Add retries to the webhook sender")
    ben.sync()
    cho.pull()
    dev.pull()
    # dev's session crashes (never ends); its capsule is pushed open.
    dev.session("dev-crash", "Speed up the CSV export", end=False)
    dev.sync()
    # cho's session crashes too, and cho is not coming back for a long while.
    cho.session("cho-crash", "Migrate the billing cron to the queue", end=False)
    cho.sync()
    # ana's session is pushed while open, then left overnight (and for more than a week).
    ana.at(T0 + HOUR)
    ana.send("SessionStart", "ana-long", source="startup")
    ana.work("ana-long", "Rework the permissions model for teams")
    ana.sync()
    # Two people pin the same observation: one pin.
    target = sorted(ana.observation_ids())[0]
    with ana.memory() as memory:
        memory.pin("observation", target, note="keep this")
    cho.pull()  # cho never ran git-setup: the two pins merge as text, being the same bytes
    with cho.memory() as memory:
        memory.pin("observation", target, note="keep this")
    ana.sync()
    cho.sync()
    # ben pulls mid-session with uncommitted memory (autostash), then switches branches.
    ben.at(T0 + 2 * HOUR)
    git("branch", "feature", cwd=ben.path)  # made before this session's capsule existed
    ben.send("SessionStart", "ben-branch", source="startup")
    ben.work("ben-branch", "Add an audit log for role changes", steps=2)
    dev.session("dev-2", "Document the export limits")
    dev.sync()
    ben.pull()  # merge pull, hooks' changes still in the work tree
    ben.commit()
    git("switch", "feature", cwd=ben.path)
    ben.work("ben-branch", "Write the audit log table migration", steps=2)
    ben.commit()
    git("switch", "main", cwd=ben.path)
    ben.work("ben-branch", "Wire the audit log into the role API", steps=2)
    ben.send("SessionEnd", "ben-branch", reason="prompt_input_exit")
    ben.commit()
    git("merge", "--no-edit", "feature", cwd=ben.path)
    ben.sync()
    # ana works and pulls with rebase mid-session, changes uncommitted (autostash).
    ana.at(T0 + 3 * HOUR)
    ana.session("ana-2", "Tidy the settings page", end=False)
    ana.commit()  # a local commit to rebase, and then tracked files changed by the hooks
    ana.work("ana-2", "Tidy the settings page: the form labels")
    dev.session("dev-2b", "Note the export limits in the FAQ")
    dev.sync()
    assert git("diff", "--quiet", cwd=ana.path, check=False).returncode  # dirty mid-session
    ana.pull()
    ana.send("SessionEnd", "ana-2", reason="prompt_input_exit")
    ana.sync()
    # Five hours on, dev's next session closes dev's own crashed one; nobody else may yet.
    for clone in (ana, ben, cho):
        clone.pull()
    dev.at(T0 + 6 * HOUR)
    dev.session("dev-3", "Add a progress bar to the export")
    with dev.memory() as memory:
        assert memory.open_session_capsule("dev-crash") is None  # its owner closed it
    # dev leaves a session open and pushed, and comes back to it only a week later.
    dev.send("SessionStart", "dev-long", source="startup")
    dev.work("dev-long", "Stream the export instead of building it in memory")
    dev.sync()
    dev.work("dev-long", "Stream the export: the CSV writer")  # never pushed before the break
    ben.at(T0 + 7 * HOUR)
    ben.pull()
    ben.session("ben-3", "Bump the HTTP client")
    ben.sync()
    with ben.memory() as memory:
        for session in ("ana-long", "cho-crash", "dev-long"):
            assert memory.open_session_capsule(session) is not None  # maybe alive: left alone
    for clone in team:
        clone.pull()
    # A week and more later ben's session closes the abandoned capsules (from what was
    # pushed of them). ana pulls that, then takes up her long session. dev takes up his
    # before pulling, with records he never pushed: his clone closes the capsule as ben's
    # did, from what was pushed (the same bytes), and goes on with all of it in a new one.
    ben.at(T0 + 9 * DAY)
    ben.session("ben-4", "Rotate the signing keys")
    ben.sync()
    ana.at(T0 + 9 * DAY + HOUR)
    ana.pull()
    ana.send("SessionStart", "ana-long", source="resume")
    ana.work("ana-long", "Finish the permissions model: the team admin role")
    ana.send("SessionEnd", "ana-long", reason="prompt_input_exit")
    ana.sync()
    dev.at(T0 + 9 * DAY + 2 * HOUR)
    dev.send("SessionStart", "dev-long", source="resume")
    dev.work("dev-long", "Finish streaming the export: back-pressure")
    dev.send("SessionEnd", "dev-long", reason="prompt_input_exit")
    dev.session("dev-4", "Fix the flaky export test")
    dev.sync()
    # Everyone pulls until nothing moves, then one more round.
    for _ in range(2):
        for clone in team:
            clone.sync()
    for clone in team:
        clone.pull()

    # Byte-identical memory everywhere, none of it lost.
    first = objects(ana)
    for clone in team[1:]:
        assert objects(clone) == first, f"{clone.name} differs from ana"
    everything = set().union(*(clone.recorded for clone in team))
    assert everything <= ana.observation_ids()
    for clone in team:  # no commit, merge or rebase anywhere deleted an entity file
        log = [
            "log",
            "--all",
            "-m",
            "--diff-filter=D",
            "--name-only",
            "--format=",
            "--",
            ".kindling",
        ]
        assert git(*log, cwd=clone.path).stdout.strip() == "", clone.name

    capsules = load_all(ana, "capsules")
    summaries = load_all(ana, "summaries")
    # ssh or https, one repository: every clone named it alike.
    assert {c["scopeIds"]["repoId"] for c in capsules} == {"github.com/acme/acme-api"}
    # Every capsule is closed (crashed and abandoned ones too) with exactly one summary file.
    by_capsule: dict[str, list[dict]] = {}
    for summary in summaries:
        by_capsule.setdefault(summary["capsuleId"], []).append(summary)
    for capsule in capsules:
        assert capsule["status"] == "closed", capsule
        assert [s["id"] for s in by_capsule.get(capsule["id"], [])] == [capsule["summaryId"]]
    assert set(by_capsule) <= {c["id"] for c in capsules}

    # The branch-switched session kept every record in its one capsule.
    ben_branch = [c for c in capsules if c["scopeIds"]["sessionId"] == "ben-branch"]
    assert len(ben_branch) == 1
    with ana.memory() as memory:
        made = memory.list("observations", scope={"sessionId": "ben-branch"}, limit=None)
    assert len(made) > 6 and {o["id"] for o in made} <= set(ben_branch[0]["observationIds"])

    # The long sessions (ana took hers up after pulling, dev before): the abandoned capsule
    # keeps its digest; the owner's capsule, which goes on from it, holds all of the session
    # and ends with the owner's own summary, the session's latest.
    said = {s["capsuleId"]: s for s in summaries}
    sessions = {}
    for capsule in sorted(capsules, key=lambda c: c["openedAt"]):
        sessions.setdefault(capsule["scopeIds"]["sessionId"], []).append(capsule)
    with ana.memory() as memory:
        for session, last_task in (("ana-long", "team admin role"), ("dev-long", "back-pressure")):
            digest, owners = sessions[session]
            assert "Interrupted" in said[digest["id"]]["content"]
            assert "Interrupted" not in said[owners["id"]]["content"]
            assert last_task in said[owners["id"]]["content"]
            assert said[owners["id"]]["ts"] > said[digest["id"]]["ts"]
            made = memory.list("observations", scope={"sessionId": session}, limit=None)
            assert set(digest["observationIds"]) < {o["id"] for o in made}
            assert {o["id"] for o in made} == set(owners["observationIds"])

    # Crashed sessions: dev's closed by its owner hours later, cho's as abandoned a week on.
    (dev_crash,) = sessions["dev-crash"]
    (cho_crash,) = sessions["cho-crash"]
    assert "Interrupted" in said[dev_crash["id"]]["content"]
    assert "Interrupted" in said[cho_crash["id"]]["content"]

    # Two people pinned one observation: one pin, and search shows it once.
    pins = load_all(ana, "pins")
    assert [p["targetId"] for p in pins] == [target]
    with ana.memory() as memory:
        found = memory.search("permissions", max_results=20)
    assert len(found["pins"]) == 1

    # And search answers the same in every clone (the time fixed, as each clone's index is).
    def answers(clone: Clone) -> list:
        with clone.memory() as memory:
            result = memory.search("export streaming back-pressure", max_results=10)
        current = result.get("currentSummary") or {}
        shown = [current.get("id") or current.get("entity", {}).get("id")]
        return shown + [(c["entity"]["id"], c["score"]) for c in result["candidates"]]

    assert len(answers(ana)) > 3
    assert len({json.dumps(answers(clone)) for clone in team}) == 1


def test_pinning_again_is_the_same_pin_and_old_files_stay_valid(tmp_path, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", str(T0))
    with Memory.init(tmp_path) as memory:
        obs = memory.log("root cause: exp compared in ms", scope={"sessionId": "s"}).entity
        first = memory.pin("observation", obs["id"], note="keep").entity
        monkeypatch.setenv("KINDLING_NOW", str(T0 + HOUR))
        again = memory.pin("observation", obs["id"], ttl=DAY).entity
        assert again["id"] == first["id"] and again["reason"] == "keep"
        assert again["createdAt"] == obs["ts"] and again["expiresAt"] == T0 + HOUR + DAY
        other = memory.pin("observation", obs["id"], scope={"repoId": "r"}).entity
        assert other["id"] != first["id"]
        assert len(memory.list("pins", limit=None)) == 2


def test_abandonment_limit_comes_from_the_committed_config_and_is_bounded(tmp_path):
    from kindling.agents.abandoned import DEFAULT_ABANDON_HOURS, abandon_after_hours

    with Memory.init(tmp_path) as memory:
        config = memory.store.root / "config.json"
        assert abandon_after_hours(memory.store) == DEFAULT_ABANDON_HOURS == 168
        for value, hours in ((48, 48), (1, 24), (10**9, 366 * 24), ("12", 168), (True, 168)):
            config.write_bytes(canonical.encode({"formatVersion": 1, "abandonAfterHours": value}))
            assert abandon_after_hours(memory.store) == hours
        config.write_bytes(b"{not json")
        assert abandon_after_hours(memory.store) == DEFAULT_ABANDON_HOURS


def test_a_clone_back_from_a_long_absence_closes_no_teammate_capsule_before_it_pulls(
    tmp_path, monkeypatch
):
    from kindling.agents.digest import close_stale

    git("init", "-b", "main", str(tmp_path), cwd=tmp_path)
    fetched = tmp_path / ".git" / "FETCH_HEAD"
    fetched.write_text("")
    scope = {"sessionId": "mate-1", "repoId": "acme", "agentId": "claude-code"}
    monkeypatch.setenv("KINDLING_NOW", str(T0))
    with Memory.init(tmp_path) as memory:
        capsule = memory.open_capsule("a teammate's session", scope=scope).entity
        memory.log("make test: 3 passed", scope=scope)
        monkeypatch.setenv("KINDLING_NOW", str(T0 + 30 * DAY))
        # Last heard from the remote a day after the teammate's last record: not abandoned
        # then, so maybe not now (the teammate may have pushed more since).
        os.utime(fetched, ns=((T0 + DAY) * 1_000_000,) * 2)
        assert close_stale(memory, None, "mine") == []
        # Heard from it eight days on, the capsule still idle: abandoned.
        os.utime(fetched, ns=((T0 + 8 * DAY) * 1_000_000,) * 2)
        assert close_stale(memory, None, "mine") == [capsule["id"]]
        closed = memory.get(capsule["id"]).entity
        assert closed["closedAt"] == memory.last_activity(closed) < T0 + DAY


def _hook(project: Path, event: str, session: str, **fields) -> None:
    body = {"session_id": session, "cwd": str(project), "hook_event_name": event, **fields}
    result = run_hook(event, json.dumps(body).encode())
    assert result.message is None, result.message


def _bash(project: Path, session: str, command: str) -> None:
    response = {"stdout": "ok", "stderr": "", "interrupted": False}
    _hook(
        project,
        "PostToolUse",
        session,
        tool_name="Bash",
        tool_input={"command": command},
        tool_response=response,
        tool_use_id=f"toolu_{command}",
    )


def _session_capsules(project: Path, session: str) -> list[dict]:
    folder = project / ".kindling" / "objects" / "capsules"
    found = [canonical.decode(p.read_bytes()) for p in folder.rglob("*.json")]
    mine = [c for c in found if c["scopeIds"].get("sessionId") == session]
    return sorted(mine, key=lambda c: c["openedAt"])


def test_a_git_switch_mid_session_brings_the_capsule_file_back_on_that_branch(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("KINDLING_STORE", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setenv("KINDLING_NOW", str(T0))
    env = ("-c", "user.name=dev", "-c", "user.email=dev@example.com")
    git("init", "-b", "main", str(tmp_path), cwd=tmp_path)
    Memory.init(tmp_path).close()
    git(*env, "add", "-A", cwd=tmp_path)
    git(*env, "commit", "-m", "start", cwd=tmp_path)
    git("branch", "other", cwd=tmp_path)
    _hook(tmp_path, "SessionStart", "s-1", source="startup")
    _bash(tmp_path, "s-1", "make one")
    git(*env, "add", "-A", cwd=tmp_path)
    git(*env, "commit", "-m", "work", cwd=tmp_path)
    git("switch", "other", cwd=tmp_path)
    assert _session_capsules(tmp_path, "s-1") == []  # the branch predates the capsule
    _bash(tmp_path, "s-1", "make two")
    (back,) = _session_capsules(tmp_path, "s-1")
    assert back["status"] == "open"
    # As main's commit held it (its records' files stay on main), then this branch's record.
    git(*env, "add", "-A", cwd=tmp_path)
    git(*env, "commit", "-m", "on other", cwd=tmp_path)
    git("switch", "main", cwd=tmp_path)
    (on_main,) = _session_capsules(tmp_path, "s-1")
    assert back["observationIds"][:-1] == on_main["observationIds"]
    assert len(on_main["observationIds"]) == 2  # the start and "make one"
    git("switch", "other", cwd=tmp_path)
    with Memory(tmp_path / ".kindling") as memory:
        here = memory.list("observations", scope={"sessionId": "s-1"}, limit=None)
    assert [o["id"] for o in here] == back["observationIds"][-1:]  # "make two"


def test_a_paused_session_whose_capsule_was_closed_goes_on_in_one_holding_its_records(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("KINDLING_STORE", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setenv("KINDLING_NOW", str(T0))
    Memory.init(tmp_path).close()
    _hook(tmp_path, "SessionStart", "s-1", source="startup")
    _bash(tmp_path, "s-1", "make one")
    # Five hours later another session of this clone closes it (its owner's rule) ...
    monkeypatch.setenv("KINDLING_NOW", str(T0 + 5 * HOUR))
    _hook(tmp_path, "SessionStart", "s-2", source="startup")
    (first,) = _session_capsules(tmp_path, "s-1")
    assert first["status"] == "closed"
    # ... but the session was only paused: it goes on, and ends with its own summary.
    _bash(tmp_path, "s-1", "make two")
    _hook(tmp_path, "SessionEnd", "s-1", reason="prompt_input_exit")
    first, then = _session_capsules(tmp_path, "s-1")
    assert then["status"] == "closed" and then["summaryId"] != first["summaryId"]
    assert then["observationIds"][: len(first["observationIds"])] == first["observationIds"]
    assert len(then["observationIds"]) == len(first["observationIds"]) + 1
    with Memory(tmp_path / ".kindling") as memory:
        said = memory.get(then["summaryId"]).entity["content"]
        assert "Interrupted" not in said
        assert "Interrupted" in memory.get(first["summaryId"]).entity["content"]
