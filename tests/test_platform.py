"""The platform layer: which implementation is chosen, locks that exclude, and a package that
imports on a system without POSIX-only modules."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
import textwrap
import threading

import pytest
from conftest import REPO_ROOT

import kindling
from kindling import platform


@pytest.mark.parametrize(
    ("name", "expected"),
    [("win32", "windows"), ("linux", "posix"), ("darwin", "posix"), ("cygwin", "posix")],
)
def test_backend_chosen_by_platform(name, expected):
    assert platform.backend(name) == expected


def test_this_platform_uses_its_backend():
    assert platform.BACKEND == platform.backend(sys.platform)


def test_stop_signals_include_interrupt_and_terminate():
    import signal

    assert signal.SIGINT in platform.stop_signals()
    assert signal.SIGTERM in platform.stop_signals()


def test_exclusive_lock_excludes_a_second_descriptor(tmp_path):
    path = tmp_path / "x.lock"
    with platform.locked_file(path):
        fd = os.open(path, os.O_RDWR)
        try:
            with pytest.raises(platform.LockBusy):
                platform.lock(fd, blocking=False)
        finally:
            os.close(fd)
        assert platform.held_by_other(path)
    assert not platform.held_by_other(path)


def test_unlock_releases(tmp_path):
    path = tmp_path / "x.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    other = os.open(path, os.O_RDWR)
    try:
        platform.lock(fd)
        platform.unlock(fd)
        platform.lock(other, blocking=False)  # would raise LockBusy if still held
    finally:
        os.close(fd)
        os.close(other)


def test_blocking_lock_waits_for_release(tmp_path):
    path = tmp_path / "x.lock"
    order = []
    with platform.locked_file(path):
        worker = threading.Thread(
            target=lambda: (platform.locked_file(path).__enter__(), order.append("second"))
        )
        worker.start()
        worker.join(0.2)
        order.append("first released")
    worker.join(10)
    assert order == ["first released", "second"]


def test_held_by_other_on_missing_file(tmp_path):
    assert not platform.held_by_other(tmp_path / "absent.lock")


def _all_modules() -> list[str]:
    names = ["kindling"]
    for info in pkgutil.walk_packages(kindling.__path__, "kindling."):
        names.append(info.name)
    return sorted(names)


def test_every_module_is_listed():
    names = _all_modules()
    assert "kindling.platform" in names and "kindling.store" in names
    assert "kindling.cli" in names and "kindling.watch.watcher" in names


def test_every_module_imports_without_posix_only_modules():
    """No module needs fcntl (or another POSIX-only module) just to be imported."""
    script = textwrap.dedent(
        """
        import importlib, sys
        for name in ("fcntl", "termios", "pwd", "grp", "resource", "posix_ipc"):
            sys.modules[name] = None  # any `import fcntl` now raises ImportError
        failed = []
        for name in sys.argv[1:]:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                if "mcp" in str(exc):  # the optional extra, when it is not installed
                    continue
                failed.append(f"{name}: {exc}")
        print("\\n".join(failed))
        sys.exit(1 if failed else 0)
        """
    )
    # mcp_tools and mcp_publish import the MCP SDK at their top: the SDK's own platform code
    # is not ours to judge.
    skipped = ("kindling.__main__", "kindling.agents.mcp_tools", "kindling.agents.mcp_publish")
    modules = [m for m in _all_modules() if m not in skipped]
    proc = subprocess.run(
        [sys.executable, "-c", script, *modules],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_module_imports_fcntl_outside_the_platform_layer():
    package = REPO_ROOT / "kindling"
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "platform.py":
            continue
        for line in path.read_text().splitlines():
            if line.strip() in ("import fcntl", "import msvcrt") or "from fcntl" in line:
                offenders.append(f"{path.relative_to(REPO_ROOT)}: {line.strip()}")
    assert offenders == []
