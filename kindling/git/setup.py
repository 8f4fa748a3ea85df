"""Living in git: finding the repository, the store's .gitattributes and the merge driver's
registration."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kindling.errors import KindlingError
from kindling.fileio import read_regular, write_atomic

DRIVER_NAME = "kindling"
DRIVER_DESCRIPTION = "Kindling field-level merge of memory files"
DRIVER_COMMAND = "kindling merge-driver %O %A %B"
ATTRIBUTES_LINE = "objects/**/*.json text eol=lf merge=kindling"
GITATTRIBUTES = f"""\
# Kindling: entity files are canonical JSON with LF line ends, merged field by field by
# `kindling merge-driver` (each clone registers it once: `kindling git-setup`).
{ATTRIBUTES_LINE}
"""


def git(repo_dir: str | os.PathLike, *args: str, check: bool = True) -> bytes:
    """Run one git command in `repo_dir` and return its stdout; failures raise KindlingError."""
    try:
        proc = subprocess.run(
            # The repository is untrusted: no fsmonitor command, no pager.
            ["git", "-c", "core.fsmonitor=false", "--no-pager", *args],
            cwd=repo_dir,
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
    except FileNotFoundError:
        raise KindlingError("git is not installed or not on PATH") from None
    except NotADirectoryError:
        raise KindlingError(f"{repo_dir} is not a directory") from None
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = message[-1] if message else f"exit status {proc.returncode}"
        raise KindlingError(f"git {args[0]} failed in {repo_dir}: {detail}")
    return proc.stdout


def find_repo(path: str | os.PathLike) -> Path | None:
    """The top of the git work tree holding `path`, or None when it is not in one."""
    start = Path(path)
    while not start.is_dir():
        if start.parent == start:
            return None
        start = start.parent
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=start,
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
    except FileNotFoundError:
        raise KindlingError("git is not installed or not on PATH") from None
    if proc.returncode != 0:
        return None
    top = proc.stdout.decode("utf-8", "surrogateescape").strip()
    return Path(top) if top else None


def require_repo(path: str | os.PathLike) -> Path:
    """Like find_repo, but a clear KindlingError when `path` is not inside a git work tree."""
    top = find_repo(path)
    if top is None:
        raise KindlingError(
            f"{path} is not inside a git repository (run `git init` there first, "
            "or commit the store from inside one)"
        )
    return top


def install_gitattributes(store_root: str | os.PathLike) -> bool:
    """Write `<store>/.gitattributes` for entity files; False when it already said so."""
    path = Path(store_root) / ".gitattributes"
    try:
        raw = read_regular(path)
        current = None if raw is None else raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KindlingError(f"cannot read {path}: {exc}") from None
    if current is not None and ATTRIBUTES_LINE in current.splitlines():
        return False
    if current is None:
        text = GITATTRIBUTES
    else:
        # Keep whatever the user put there; append our rule (later lines win in git).
        text = current + ("" if current.endswith("\n") or not current else "\n") + GITATTRIBUTES
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise KindlingError(f"cannot write {path}: {exc.strerror or exc}") from None
    return True


def register_merge_driver(repo_dir: str | os.PathLike, command: str = DRIVER_COMMAND) -> bool:
    """Register the merge driver in the repo's local git config; False when already so."""
    top = require_repo(repo_dir)
    wanted = {
        f"merge.{DRIVER_NAME}.name": DRIVER_DESCRIPTION,
        f"merge.{DRIVER_NAME}.driver": command,
    }
    changed = False
    for key, value in wanted.items():
        current = git(top, "config", "--local", "--get", key, check=False)
        if current.decode("utf-8", "replace").rstrip("\n") != value:
            git(top, "config", "--local", key, value)
            changed = True
    return changed


# Hooks write under the store while a session runs, so a pull always meets changes in the
# work tree: git's own autostash sets them aside, pulls (rebase or merge) and puts them back,
# merging entity files with the driver.
AUTOSTASH = {"rebase.autoStash": "true", "merge.autoStash": "true"}


def configure_autostash(repo_dir: str | os.PathLike) -> bool:
    """Turn on git's autostash for rebase and merge in the repo's local config; False when
    already so."""
    top = require_repo(repo_dir)
    changed = False
    for key, value in AUTOSTASH.items():
        current = git(top, "config", "--local", "--get", key, check=False)
        if current.decode("utf-8", "replace").strip().lower() != value:
            git(top, "config", "--local", key, value)
            changed = True
    return changed


def git_setup(store_root: str | os.PathLike, command: str = DRIVER_COMMAND) -> list[str]:
    """Every step for the store's repo; returns one line per thing done or already in place."""
    root = Path(store_root)
    top = require_repo(root)
    lines = []
    attrs = root / ".gitattributes"
    if install_gitattributes(root):
        lines.append(f"wrote {attrs}")
    else:
        lines.append(f"{attrs} already routes entity files to the merge driver")
    if register_merge_driver(top, command):
        lines.append(f"registered merge driver '{DRIVER_NAME}' in {top / '.git'} config")
    else:
        lines.append(f"merge driver '{DRIVER_NAME}' already registered in {top}")
    keys = " and ".join(AUTOSTASH)
    if configure_autostash(top):
        lines.append(f"set {keys} in {top / '.git'} config (pulls mid-session keep your changes)")
    else:
        lines.append(f"{keys} already set in {top}")
    return lines


# ---------------------------------------------------------------- unmerged entries
