"""Which repository a directory belongs to, named by its `origin` remote rather than its folder.

A clone, a worktree or a renamed checkout of github.com/acme/acme-api is the same repository,
so its memory goes by `github.com/acme/acme-api`; a directory outside git, or a repository
without an `origin`, falls back to its folder's name (what Kindling 0.1 used).

The remote is read from git's configuration as git reads it (kindling.gitconfig: system,
global, the repository's and the worktree's files, `include` and `includeIf`), with no `git`
process: `.git` is a directory, or a file naming the gitdir of a worktree or submodule, whose
`commondir` points at the shared config. The result is kept per process, checked against the
files' stat data (path, size, mtime_ns, inode) on every call.

`url.<base>.insteadOf` decides the name only for a remote written as a short alias
(`gh:acme/api`): a remote written as a full address keeps that address even when a rule
sends fetches elsewhere (a mirror, a local copy), so one teammate's rewrite never splits the
team's memory. `pushInsteadOf` rewrites pushes only and never changes the name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from kindling import gitconfig
from kindling.gitdir import find_git_dir

# ssh://, git://, http(s)://, file:// and any other scheme: scheme://[user[:pw]@]host[:port]/path
_URL = re.compile(
    r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/]*@)?(?P<host>[^/:]*)(?::\d*)?(?P<path>/.*)?$"
)
# scp-like: [user@]host:path (no scheme, no slash before the colon)
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.+)$")


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
    reader = gitconfig.Reader(gitconfig.Repo(None, None))
    reader.parse(config_text, Path("config"), depth=gitconfig.MAX_DEPTH)  # no includes
    return gitconfig.Config(reader.entries, []).get("remote", "origin", "url")


def identify(path: str | os.PathLike) -> RepoIdentity:
    """The repository `path` lies in: its normalised origin, else its top folder's name."""
    start = Path(path).absolute()
    top = work_tree_top(start)
    folder = (top or start).name or "root"
    if top is None:
        return RepoIdentity(folder, folder, start)
    url = origin_of(top)
    remote = normalise_remote(url) if url else None
    return RepoIdentity(remote or folder, folder, top)


# work tree top -> (the config files' stat data when read, the URL naming the repository)
_SEEN: dict[tuple, tuple[list[gitconfig.FileStat], str | None]] = {}
_MAX_SEEN = 64


def origin_of(top: Path) -> str | None:
    """The URL that names the repository at `top` (see the module's docstring), or None."""
    git_dir, common = find_git_dir(top)
    if common is None:
        return None
    key = (str(top), str(git_dir), tuple(str(f) for f in gitconfig.standard_files()))
    seen = _SEEN.get(key)
    if seen is not None and _unchanged(seen[0]):
        return seen[1]
    config = repo_config(git_dir, common)
    url = naming_url(config)
    if len(_SEEN) >= _MAX_SEEN:
        _SEEN.clear()
    _SEEN[key] = (config.files, url)
    return url


def repo_config(git_dir: Path | None, common: Path) -> gitconfig.Config:
    """Every config file git reads for this repository, includes followed, in git's order."""
    repo = gitconfig.Repo(git_dir, gitconfig.branch_of(git_dir))
    files = [*gitconfig.standard_files(), common / "config"]
    config = gitconfig.read_config(files, repo)
    worktree = (config.get("extensions", None, "worktreeconfig") or "").lower()
    if git_dir is not None and worktree in ("true", "yes", "on", "1"):
        config = gitconfig.read_config([*files, git_dir / "config.worktree"], repo)
    if git_dir is not None:  # the branch (onbranch:) is part of what was read
        config.files.append(gitconfig.file_stat(git_dir / "HEAD"))
    return config


def naming_url(config: gitconfig.Config) -> str | None:
    """The origin URL that names the repository: as written, or its insteadOf rewrite when
    it is written as a short alias rather than a full address."""
    written = config.get("remote", "origin", "url")
    if not written:
        return None
    rewritten = rewrite(written, config)
    if rewritten != written and not is_full_address(written):
        return rewritten
    return written


def rewrite(url: str, config: gitconfig.Config, *, push: bool = False) -> str:
    """`url` after git's `url.<base>.insteadOf` rules (pushInsteadOf with `push`): the longest
    matching prefix wins."""
    key = "pushinsteadof" if push else "insteadof"
    best_base, best_len = None, -1
    for entry in config.entries:
        if entry.section != "url" or entry.subsection is None or entry.key != key:
            continue
        prefix = entry.value or ""
        if prefix and url.startswith(prefix) and len(prefix) > best_len:
            best_base, best_len = entry.subsection, len(prefix)
    return url if best_base is None else best_base + url[best_len:]


def is_full_address(url: str) -> bool:
    """True for a URL that says where it is: a scheme, a host with a dot (or localhost or an
    IP literal), or a path; False for an alias such as `gh:acme/api`."""
    url = url.strip()
    match = _URL.match(url)
    if match:
        return match["path"] is not None and (
            url.lower().startswith("file:") or _real_host(match["host"])
        )
    scp = _SCP.match(url)
    if scp and not os.path.isabs(url) and not _is_windows_path(url):
        return _real_host(scp["host"])
    return True  # a local path written as the remote


def _real_host(host: str) -> bool:
    host = host.strip("[]").lower()
    return "." in host or ":" in host or host == "localhost"


def _unchanged(files: list[gitconfig.FileStat]) -> bool:
    return all(gitconfig.file_stat(Path(item.path)) == item for item in files)
