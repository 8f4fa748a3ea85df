"""Shared fixtures: every test runs with its own home, cache and store; nothing real is touched."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kindling.cli import cli
from kindling.index import fsclock
from kindling.store import Store

# Off for the whole session, module-scoped fixtures and every subprocess included; the tests
# that want the background watcher turn it on for one command and stop what they started.
os.environ["KINDLING_AUTOWATCH"] = "0"

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "fixtures"
NOTHING_RACY = 2**63 - 1  # a filesystem clock past every stat time: all stat data trusted
ALL_RACY = 0  # a clock still in every file's tick: no stat data trusted


def fuzz_settings(max_examples: int):
    """Hypothesis settings for the fuzz suites: reproducible, no example database, fixtures
    made per test rather than per example, no deadline on a shared machine."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        derandomize=True,
        database=None,
    )


def exited(pid: int) -> bool:
    """True once process `pid` has ended: gone, or a zombie nobody has reaped yet (a detached
    watcher whose starter is this test process)."""
    from kindling.platform import pid_alive

    if not pid_alive(pid):
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def wait_for(check, what: str = "a condition", timeout: float = 60.0):
    """Poll `check` with short sleeps until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


def pin_fs_clock(monkeypatch, racy_from: int) -> None:
    """Make the racy rule read a fixed filesystem clock (kindling.index.fsclock)."""
    monkeypatch.setattr(fsclock, "racy_from", lambda clock, objects: racy_from)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Point HOME and the cache (state folders outside git) at a temp dir; clear KINDLING_*."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for name in list(os.environ):
        if name.startswith("KINDLING_"):
            monkeypatch.delenv(name)
    # No test leaves a background watcher behind; those that start one say so and stop it.
    monkeypatch.setenv("KINDLING_AUTOWATCH", "0")
    return home


@pytest.fixture
def store_dir(tmp_path) -> Path:
    """A fresh, empty store directory (the `.kindling` folder itself)."""
    root = tmp_path / ".kindling"
    Store.create(root)
    return root


@pytest.fixture
def memory(store_dir):
    from kindling.memory import Memory

    with Memory(store_dir) as mem:
        yield mem


@pytest.fixture
def project(tmp_path):
    """A project directory named `acme-api` holding a fresh store."""
    from kindling.memory import Memory

    root = tmp_path / "acme-api"
    root.mkdir()
    Memory.init(root).close()
    return root


@pytest.fixture
def run(store_dir):
    """Invoke the CLI in-process against `store_dir`; returns click's Result."""
    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None, store: Path | None = None):
        return runner.invoke(cli, ["--store", str(store or store_dir), *args], input=input)

    return invoke


def run_kindling(
    *args: str,
    env: dict | None = None,
    input: bytes | str | None = None,
    cwd=None,
    timeout: float = 60,
    text: bool = False,
) -> subprocess.CompletedProcess:
    """Run `python -m kindling ARGS` as a real process (output as str with text=True)."""
    return subprocess.run(
        [sys.executable, "-m", "kindling", *args],
        input=input,
        capture_output=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
        text=text,
    )
