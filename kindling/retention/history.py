"""Which git commit last held a file: how `kindling show` points at a retired observation.

git runs with everything a repository could make it execute switched off: no fsmonitor, no
hooks, no pager, no textconv or external diff, no credential or terminal prompts.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import NamedTuple

_SAFE = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
    "-c",
    "core.pager=cat",
    "--no-pager",
)
TIMEOUT_S = 20


class Held(NamedTuple):
    """The commit that last held a file (None with `why` when none can be named)."""

    commit: str | None
    path: str  # the file's path from the top of the work tree, for `git show <commit>:<path>`
    why: str = ""


class _NoGit(Exception):
    pass


def _git(cwd: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "GIT_PAGER": "cat", "PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        proc = subprocess.run(
            ["git", *_SAFE, *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            timeout=TIMEOUT_S,
        )
    except (FileNotFoundError, PermissionError):
        raise _NoGit("git is not installed or not on PATH") from None
    except subprocess.TimeoutExpired:
        raise _NoGit(f"git did not answer within {TIMEOUT_S} s") from None
    except NotADirectoryError:
        raise _NoGit(f"{cwd} is not a directory") from None
    return proc.returncode, proc.stdout.decode("utf-8", "surrogateescape").strip()


def last_holder(store_root: Path, rel: str) -> Held:
    """The commit that last held `rel` (a path relative to `store_root`)."""
    try:
        code, inside = _git(store_root, "rev-parse", "--is-inside-work-tree")
        if code != 0 or inside != "true":
            return Held(None, rel, "the store is not in a git work tree")
        _, prefix = _git(store_root, "rev-parse", "--show-prefix")
        path = f"{prefix}{rel}"
        code, last = _git(store_root, "log", "-1", "--format=%H", "--no-textconv", "--", rel)
        if code != 0 or not last:
            return Held(None, path, "no commit ever held it")
        for candidate in (last, f"{last}^"):
            if _holds(store_root, candidate, rel):
                return Held(_commit(store_root, candidate), path)
        code, added = _git(
            store_root, "log", "-1", "--format=%H", "--diff-filter=AM", "--no-textconv", "--", rel
        )
        if code == 0 and added:
            return Held(added, path)
        return Held(None, path, "no commit ever held it")
    except _NoGit as exc:
        return Held(None, rel, str(exc))


def _holds(cwd: Path, rev: str, rel: str) -> bool:
    code, _ = _git(cwd, "cat-file", "-e", f"{rev}:./{rel}")
    return code == 0


def _commit(cwd: Path, rev: str) -> str:
    code, full = _git(cwd, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}")
    return full if code == 0 and full else rev
