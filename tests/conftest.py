"""Shared fixtures: every test runs with its own home, cache and store; nothing real is touched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kindling.cli import cli
from kindling.store import Store

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "fixtures"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Point HOME and the cache at a temp dir and clear Kindling's environment variables."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for name in list(os.environ):
        if name.startswith("KINDLING_"):
            monkeypatch.delenv(name)
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
