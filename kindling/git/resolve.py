"""Settling a conflicted merge of entity files: git's unmerged stages -> merged, staged files."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kindling import canonical
from kindling.errors import KindlingError
from kindling.fileio import read_regular
from kindling.git.setup import git, require_repo

if TYPE_CHECKING:
    from kindling.store import Store


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
        data, conflicts = _with_working_tree(top / path, stages, result.data)
        if conflicts:
            unresolved.append(path)
            lines.append(
                f"needs a human: {path}: {', '.join(conflicts)} changed in the working tree "
                "while the merge was pending"
            )
            continue
        merged = canonical.decode(data)
        if _is_open_session(merged):
            data = _one_open_session(writer, merged, data, lines)
        writer.write_file(top / path, data)
        stage_file(top, path)
        resolved.append(path)
        lines.append(f"resolved {path}")
    return ResolveReport(resolved, unresolved, lines)


def _with_working_tree(path: Path, stages: Unmerged, merged: bytes) -> tuple[bytes, list[str]]:
    """The merge of git's stages, plus what was written to the file since the merge began.

    Kindling keeps writing while a merge is pending once the file parses again (someone took
    one side, say): observation ids appended then must survive the resolve. The working tree
    is merged in three ways, with our stage as the base it grew from.
    """
    from kindling.git.merge import merge_entity, type_from_content, type_from_path

    try:
        current = read_regular(path, follow_symlinks=False)
        here = canonical.decode(current) if current else None
    except (OSError, canonical.DecodeError):
        return merged, []  # conflict markers, or gone: nothing was added there
    ours = canonical.decode(stages.ours)  # type: ignore[arg-type]  # parsed by merge_files
    result = canonical.decode(merged)
    if here in (ours, result):
        return merged, []
    etype = type_from_path(str(path)) or type_from_content(result)
    if etype is None:
        return merged, []
    combined = merge_entity(etype, ours, here, result)
    if combined.merged is None:
        return merged, combined.conflicts
    return canonical.encode(combined.merged), []


def _is_open_session(entity: dict) -> bool:
    return (
        entity.get("type") == "session"
        and entity.get("status") == "open"
        and "observationIds" in entity
        and isinstance(entity.get("scopeIds"), dict)
        and "sessionId" in entity["scopeIds"]
    )


def _one_open_session(store: Store, capsule: dict, data: bytes, lines: list[str]) -> bytes:
    """Keep a session to one open session capsule after a resolve.

    While the capsule's file held conflict markers nobody could see it open, so the session
    may have opened another; the older of the two is closed when the newer opened.
    """
    session = capsule["scopeIds"]["sessionId"]
    for item in store.walk("capsules"):
        try:
            other = store.load_path("capsules", item.path)[0]
        except KindlingError:
            continue
        if other["id"] == capsule["id"] or not _is_open_session(other):
            continue
        if other["scopeIds"]["sessionId"] != session:
            continue
        older, newer = sorted((capsule, other), key=lambda c: (c["openedAt"], c["id"]))
        with store.locked("capsules", older["id"]):
            if older is other:
                current = store.load("capsules", other["id"])
                if current is None or current != other:
                    continue  # changed meanwhile: leave it to the next resolve or a person
            older.update(status="closed", closedAt=max(newer["openedAt"], older["openedAt"]))
            if older is other:
                store.write("capsules", other)
        lines.append(
            f"closed {older['id']}: session {session!r} went on in {newer['id']}, "
            "opened while the merge was pending"
        )
        if older is capsule:
            return canonical.encode(capsule)
    return data


def _entity_stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[: -len(".json")] if name.endswith(".json") else name
