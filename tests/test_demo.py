"""`kindling demo`: the bundled example store, copied and searched, from any directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_kindling

from kindling.demo import DEMO_QUERY, copy_example
from kindling.errors import KindlingError

EXAMPLE = REPO_ROOT / "kindling" / "example"


def _entity_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in (root / "objects").rglob("*.json"))


def test_copy_is_the_example_store(tmp_path):
    store = copy_example(tmp_path / "demo")
    assert _entity_files(store) == _entity_files(EXAMPLE)
    assert (store / "config.json").is_file() and (store / ".gitignore").is_file()
    assert not list(store.glob("index.sqlite*"))
    from kindling.memory import Memory

    with Memory(store) as memory:
        status = memory.status()
    assert status["problems"] == []
    assert status["counts"]["pins"] >= 1 and status["counts"]["summaries"] >= 1


def test_copy_refuses_a_non_empty_target(tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "keep.txt").write_text("mine")
    with pytest.raises(KindlingError, match="not empty"):
        copy_example(tmp_path / "demo")


def _check_demo_output(out: str, tmp_path: Path) -> Path:
    assert "Copied the example store" in out
    assert f'$ kindling search "{DEMO_QUERY}"' in out
    assert "Pins" in out and "JWT validation failed: token expired" in out
    assert "Next, try:" in out and "kindling browse" in out
    (export,) = [line for line in out.splitlines() if "export KINDLING_STORE=" in line]
    store = Path(export.split("=", 1)[1].split()[0])
    assert tmp_path in store.parents  # the temp dir, never the current directory
    return store


def test_demo_command_in_an_empty_directory(tmp_path):
    work = tmp_path / "anywhere"
    work.mkdir()
    result = run_kindling("demo", cwd=work, env={"TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr.decode()
    store = _check_demo_output(result.stdout.decode(), tmp_path)
    assert _entity_files(store) == _entity_files(EXAMPLE)
    assert list(work.iterdir()) == []
    # The printed next step works against the copy.
    shown = run_kindling("list", "pins", env={"KINDLING_STORE": str(store)}, cwd=work)
    assert shown.returncode == 0 and shown.stdout.strip()


@pytest.mark.slow
def test_demo_from_an_installed_copy(tmp_path):
    """Build the package as a wheel would hold it (setuptools build_py, package data included)
    from a copy of the source, then run the demo from that build in an unrelated directory."""
    source = tmp_path / "src"
    shutil.copytree(
        REPO_ROOT / "kindling",
        source / "kindling",
        ignore=shutil.ignore_patterns("__pycache__", "index.sqlite*", "locks"),
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO_ROOT / name, source / name)
    target = tmp_path / "installed"
    build = subprocess.run(
        [
            sys.executable,
            "-c",
            "import setuptools; setuptools.setup()",
            "-q",
            "build_py",
            "--build-lib",
            str(target),
        ],
        capture_output=True,
        cwd=source,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr.decode()
    for name in (
        "example/config.json",
        "example/.gitignore",
        "templates/browse.html",
        "templates/browse.js",
        "templates/browse.css",
    ):
        assert (target / "kindling" / name).is_file(), name
    assert _entity_files(target / "kindling" / "example") == _entity_files(EXAMPLE)

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target), "TMPDIR": str(tmp_path)}
    where = subprocess.run(
        [sys.executable, "-c", "import kindling; print(kindling.__file__)"],
        capture_output=True,
        cwd=work,
        env=env,
        timeout=60,
    )
    assert where.stdout.decode().startswith(str(target))
    result = subprocess.run(
        [sys.executable, "-m", "kindling", "demo"],
        capture_output=True,
        cwd=work,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    _check_demo_output(result.stdout.decode(), tmp_path)
