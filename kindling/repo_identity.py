"""Which repository a directory belongs to, named by its `origin` remote rather than its folder.

A clone, a worktree or a renamed checkout of github.com/acme/acme-api is the same repository,
so its memory goes by `github.com/acme/acme-api`; a directory outside git, or a repository
without an `origin`, falls back to its folder's name (what Kindling 0.1 used). The git files
are read directly (no `git` process): `.git` is a directory, or a file naming the gitdir of a
worktree or submodule, whose `commondir` points at the shared config.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from kindling.fileio import read_regular
from kindling.gitdir import find_git_dir

# ssh://, git://, http(s)://, file:// and any other scheme: scheme://[user[:pw]@]host[:port]/path
_URL = re.compile(
    r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/]*@)?(?P<host>[^/:]*)(?::\d*)?(?P<path>/.*)?$"
)
# scp-like: [user@]host:path (no scheme, no slash before the colon)
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.+)$")
_SECTION = re.compile(r'^\s*\[\s*remote\s+"(?P<name>(?:[^"\\]|\\.)*)"\s*\]\s*$')
_ANY_SECTION = re.compile(r"^\s*\[")
_URL_LINE = re.compile(r"^\s*url\s*=\s*(?P<value>.*?)\s*$", re.IGNORECASE)


class RepoIdentity(NamedTuple):
    """A repository's id, the folder name 0.1 used for it, and its top folder.

    `root` is the git work tree's top, or outside git the folder that was identified.
    """

    id: str
    folder: str
    root: Path

    @property
    def ids(self) -> tuple[str, ...]:
        """Every repoId this repository's memory may be stored under, the current one first."""
        return tuple(dict.fromkeys((self.id, self.folder)))


def normalise_remote(url: str) -> str | None:
    """`host/owner/repo` for a remote URL: user info, port, scheme and `.git` dropped."""
    url = url.strip()
    if not url:
        return None
    match = _URL.match(url)
    if match:
        host, path = match["host"], match["path"] or ""
    elif (found := _SCP.match(url)) and not os.path.isabs(url) and not _is_windows_path(url):
        host, path = found["host"], found["path"]
    else:
        host, path = "", url  # a local path used as a remote
    path = path.replace("\\", "/").strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.rstrip("/")
    parts = [p for p in path.split("/") if p not in ("", ".", "..")]
    if not parts:
        return None
    return "/".join([host.lower(), *parts] if host else parts)


def _is_windows_path(url: str) -> bool:
    return len(url) > 2 and url[1] == ":" and url[0].isalpha() and url[2] in "\\/"


def work_tree_top(start: str | os.PathLike) -> Path | None:
    """The nearest directory at or above `start` holding `.git` (a directory or a file)."""
    here = Path(start).absolute()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def origin_url(config_text: str) -> str | None:
    """The `url` of `[remote "origin"]` in a git config file's text (the last one set wins)."""
    url = None
    in_origin = False
    for line in config_text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("#", ";")):
            continue
        section = _SECTION.match(stripped)
        if section:
            in_origin = section["name"] == "origin"
            continue
        if _ANY_SECTION.match(stripped):
            in_origin = False
            continue
        if in_origin:
            found = _URL_LINE.match(stripped)
            if found:
                url = found["value"].strip('"')
    return url


def identify(path: str | os.PathLike) -> RepoIdentity:
    """The repository `path` lies in: its normalised origin, else its top folder's name."""
    start = Path(path).absolute()
    top = work_tree_top(start)
    folder = (top or start).name or "root"
    if top is None:
        return RepoIdentity(folder, folder, start)
    _, common = find_git_dir(top)
    remote = None
    if common is not None:
        try:
            raw = read_regular(common / "config") or b""
            text = raw.decode("utf-8", "replace")
        except OSError:
            text = ""
        url = origin_url(text)
        remote = normalise_remote(url) if url else None
    return RepoIdentity(remote or folder, folder, top)
