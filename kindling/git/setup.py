"""Living in git: the store's .gitattributes, the merge driver's registration, and the git
plumbing `kindling resolve` needs (unmerged entity files and their index stages)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from kindling.errors import KindlingError

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
            ["git", *args],
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
        current = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError) as exc:
        raise KindlingError(f"cannot read {path}: {exc}") from None
    if current is not None and ATTRIBUTES_LINE in current.splitlines():
        return False
    if current is None:
        text = GITATTRIBUTES
    else:
        # Keep whatever the user put there; append our rule (later lines win in git).
        text = current + ("" if current.endswith("\n") or not current else "\n") + GITATTRIBUTES
    tmp = path.with_name(f".gitattributes.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8", newline="\n")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
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


def git_setup(store_root: str | os.PathLike, command: str = DRIVER_COMMAND) -> list[str]:
    """Both steps for the store's repo; returns one line per thing done or already in place."""
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
    return lines


# ---------------------------------------------------------------- unmerged entries


class Unmerged(NamedTuple):
    """One path git left unmerged, with the blob of each stage (None when the stage is absent)."""

    path: str  # relative to the repo top, as git names it
    base: bytes | None
    ours: bytes | None
    theirs: bytes | None


def unmerged_paths(top: Path, pathspec: str) -> dict[str, dict[int, str]]:
    """path -> {stage: blob sha} for every unmerged path under `pathspec` (repo-relative)."""
    out = git(top, "ls-files", "-u", "-z", "--full-name", "--", f":(literal){pathspec}")
    entries: dict[str, dict[int, str]] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        parts = meta.split()
        if len(parts) != 3:
            continue
        _mode, sha, stage = parts
        path = name.decode("utf-8", "surrogateescape")
        entries.setdefault(path, {})[int(stage)] = sha.decode()
    return entries


def read_stages(top: Path, path: str, shas: dict[int, str]) -> Unmerged:
    """The three versions of an unmerged path from git's index stages 1, 2 and 3."""

    def blob(stage: int) -> bytes | None:
        sha = shas.get(stage)
        return git(top, "cat-file", "blob", sha) if sha else None

    return Unmerged(path, blob(1), blob(2), blob(3))


def stage_file(top: Path, path: str) -> None:
    """`git add` one repo-relative path, marking its conflict resolved."""
    git(top, "add", "--", f":(literal){path}")


class ResolveReport(NamedTuple):
    """What `kindling resolve` did: one line per file, and whether nothing is left."""

    resolved: list[str]
    unresolved: list[str]
    lines: list[str]

    @property
    def ok(self) -> bool:
        return not self.unresolved


def resolve_conflicts(store_root: str | os.PathLike, ids: Iterable[str] = ()) -> ResolveReport:
    """Merge each conflicted entity file from git's index stages, write and `git add` it."""
    from kindling.git.merge import merge_files
    from kindling.store import Store

    root = Path(store_root)
    wanted = list(ids)
    for ref in wanted:
        if not ref.strip():
            raise KindlingError("an empty id matches nothing; give ids or prefixes, or none at all")
    top = require_repo(root)
    try:
        pathspec = os.path.relpath(root.resolve() / "objects", top.resolve())
    except ValueError:
        raise KindlingError(f"{root} is not inside the git work tree {top}") from None
    if pathspec.startswith(".."):
        raise KindlingError(f"{root} is not inside the git work tree {top}")
    entries = unmerged_paths(top, pathspec.replace(os.sep, "/"))
    chosen = {
        path: shas
        for path, shas in entries.items()
        if not wanted or any(_entity_stem(path).startswith(ref) for ref in wanted)
    }
    resolved: list[str] = []
    unresolved: list[str] = []
    lines: list[str] = []
    for ref in wanted:
        if not any(_entity_stem(path).startswith(ref) for path in entries):
            unresolved.append(ref)
            lines.append(f"{ref}: no conflicted entity file has this id")
    if not chosen and not wanted:
        lines.append("no conflicted entity files")
    writer = Store(root)
    for path in sorted(chosen):
        stages = read_stages(top, path, chosen[path])
        if stages.ours is None or stages.theirs is None:
            gone = "ours" if stages.ours is None else "theirs"
            unresolved.append(path)
            lines.append(
                f"needs a human: {path}: deleted on {gone}, changed on the other side "
                "(`git add` it to keep it, `git rm` it to drop it)"
            )
            continue
        result = merge_files(stages.base, stages.ours, stages.theirs, path=path)
        if not result.clean:
            unresolved.append(path)
            lines.append(f"needs a human: {path}: {', '.join(result.conflicts)}")
            continue
        writer.write_file(top / path, result.data)
        stage_file(top, path)
        resolved.append(path)
        lines.append(f"resolved {path}")
    return ResolveReport(resolved, unresolved, lines)


def _entity_stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[: -len(".json")] if name.endswith(".json") else name
