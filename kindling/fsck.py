"""`kindling fsck`: check every file under objects/ (and the index) and repair what is safe.

Safe repairs only: re-encode a valid but non-canonical file, move a valid file to where its id
says it lives, rebuild the index (scrubbing what it held of forgotten text), remove temp files
no live writer can own. A file that does not parse is never rewritten, moved or deleted: a
person decides what it should say.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat as stat_module
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kindling import canonical
from kindling.errors import KindlingError
from kindling.fileio import is_temp_name, read_regular
from kindling.model import ENTITY_TYPES, SINGULAR, entity_errors
from kindling.platform import BACKEND
from kindling.store import Store

if TYPE_CHECKING:
    from kindling.index import Index

# A temp file this young may belong to a writer still at work, here or on another machine
# sharing the folder (whose process ids mean nothing here): never touched.
LIVE_WRITER_SECONDS = 60
# Older than this, a temp file is stale whoever its writer was: no write takes an hour, and
# a live process with its id is more likely a new one that reused the number.
STALE_TEMP_SECONDS = 3600
# fileio.atomic_output's temp names: .<name>.<pid>.<8 hex digits>.tmp
_TEMP_NAME = re.compile(r"\..+\.([0-9]{1,10})\.[0-9a-f]{8}\.tmp\Z", re.DOTALL)

# Finding kinds, in the order a report lists them.
CHECKS = (
    "conflict",
    "parse",
    "invalid",
    "noncanonical",
    "misplaced",
    "stray",
    "duplicate",
    "dangling",
    "temp",
    "index",
)
SYMLINK = (
    "a symlink: Kindling never follows one in a store (it may have come in a commit "
    "and point anywhere); remove it"
)
# The kinds `fsck --fix` repairs.
FIXABLE = ("noncanonical", "misplaced", "temp", "index")
SCRUBBED = (
    "the index held words a forget took from this file (that forget, or the pull of it, was "
    "cut short)"
)
SCRUB_FIX = "scrubbed from the index by fsck's sync"


@dataclass
class Finding:
    """One thing wrong: the store-relative path, which check found it, why, and any repair."""

    path: str
    check: str
    reason: str
    fixed: str | None = None

    def as_dict(self) -> dict:
        return {"path": self.path, "check": self.check, "reason": self.reason, "fixed": self.fixed}


@dataclass
class FsckReport:
    """Everything fsck found in one store."""

    store: Path
    checked: int = 0
    problems: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing is left wrong (every problem found was repaired)."""
        return all(p.fixed for p in self.problems)

    def as_dict(self) -> dict:
        return {
            "store": display(self.store),
            "ok": self.ok,
            "checked": self.checked,
            "problems": [p.as_dict() for p in self.problems],
        }


@dataclass
class _Entity:
    entity_type: str
    entity: dict
    rel: str


def display(path: str | os.PathLike) -> str:
    """A path made printable and JSON-safe whatever bytes its name holds."""
    raw = os.fsencode(path)
    return raw.decode("utf-8", "backslashreplace")


class _Checker:
    def __init__(self, store: Store, *, fix: bool, now: float) -> None:
        self.store = store
        self.fix = fix
        self.now = now
        self.report = FsckReport(store.root)
        self.entities: list[_Entity] = []
        # Files this run wrote by moving a misplaced file: already counted, not read again.
        self.moved_to: set[Path] = set()

    def problem(self, rel: str, check: str, reason: str, fixed: str | None = None) -> None:
        self.report.problems.append(Finding(rel, check, reason, fixed))

    def rel(self, path: Path) -> str:
        return display(path.relative_to(self.store.root).as_posix())

    # ------------------------------------------------------------ walking

    def walk(self) -> None:
        objects = self.store.objects
        if objects.is_symlink():
            self.problem("objects", "stray", SYMLINK)
            return
        if not objects.is_dir():
            self.problem("objects", "stray", "objects/ folder is missing")
            return
        for dirpath, dirnames, filenames in os.walk(objects, followlinks=False):
            dirnames.sort()
            here = Path(dirpath)
            for name in list(dirnames):
                if (here / name).is_symlink():
                    dirnames.remove(name)
                    self.problem(
                        self.rel(here / name),
                        "stray",
                        "a symlink to a folder: nothing behind it is read or written "
                        "(entity folders are never symlinks); replace it with a real folder",
                    )
            for name in sorted(filenames):
                self.visit(here / name)

    def visit(self, path: Path) -> None:
        rel = self.rel(path)
        name = path.name
        try:
            st = path.lstat()
        except FileNotFoundError:
            return  # removed by a writer since the listing
        if is_temp_name(name):
            self.temp(path, rel, st)
            return
        if name.startswith("."):
            return  # editor and OS droppings (.DS_Store) are not memory
        if stat_module.S_ISLNK(st.st_mode) or not stat_module.S_ISREG(st.st_mode):
            self.problem(rel, "stray", "not a regular file (entity files are never symlinks)")
            return
        if not name.endswith(".json"):
            self.problem(rel, "stray", "not an entity file (entity files are <id>.json)")
            return
        if path in self.moved_to:
            return  # this run's own move of a misplaced file, already checked
        try:
            data = read_regular(path, follow_symlinks=False)
        except OSError as exc:
            self.problem(rel, "parse", f"unreadable ({exc.strerror or exc})")
            return
        if data is None:
            return
        self.report.checked += 1
        self.entity_file(path, rel, data)

    def walk_outside_objects(self) -> None:
        """Temp files elsewhere in the store (config, .gitignore and .gitattributes are
        written the same way), and any symlink; nothing else there is fsck's to judge."""
        root = self.store.root
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            here = Path(dirpath)
            if here == root and "objects" in dirnames:
                dirnames.remove("objects")  # walked file by file already
            for name in sorted(dirnames):
                if (here / name).is_symlink():
                    dirnames.remove(name)
                    self.problem(self.rel(here / name), "stray", SYMLINK)
            dirnames.sort()
            for name in sorted(filenames):
                path = here / name
                try:
                    st = path.lstat()
                except FileNotFoundError:
                    continue  # renamed into place by its writer since the listing
                if stat_module.S_ISLNK(st.st_mode):
                    self.problem(self.rel(path), "stray", SYMLINK)
                elif is_temp_name(name):
                    self.temp(path, self.rel(path), st)

    def temp(self, path: Path, rel: str, st: os.stat_result) -> None:
        why = stale_temp(path.name, self.now - st.st_mtime)
        if why is None:
            return  # a writer may still own it
        reason = f"stale temp file left by an interrupted write ({why})"
        fixed = None
        if self.fix:
            try:
                again = path.lstat()
            except FileNotFoundError:
                again = None
            if again is None:
                fixed = "removed"  # by its writer's rename or another fsck meanwhile
            elif not stat_module.S_ISREG(again.st_mode):
                reason += "; not a regular file, left alone"
            elif _identity(again) != _identity(st):
                reason += "; written to while checking, left alone"
            else:
                try:
                    path.unlink()
                    fixed = "removed"
                except FileNotFoundError:
                    fixed = "removed"
                except OSError as exc:
                    reason += f"; cannot remove: {exc.strerror or exc}"
        self.problem(rel, "temp", reason, fixed)

    # ------------------------------------------------------------ one file

    def entity_file(self, path: Path, rel: str, data: bytes) -> None:
        parts = path.relative_to(self.store.objects).parts
        folder = parts[0] if len(parts) > 1 and parts[0] in ENTITY_TYPES else None
        try:
            entity = canonical.decode(data)
        except canonical.DecodeError as exc:
            check = "conflict" if canonical.has_conflict_markers(data) else "parse"
            self.problem(rel, check, str(exc))
            return
        etype = self.entity_type(folder, entity)
        if etype is None:
            wanted = folder or _guess_type(entity)
            if wanted is None:
                self.problem(rel, "invalid", "not a Kindling entity (no known type's fields)")
            else:
                errors = entity_errors(wanted, entity)
                self.problem(rel, "invalid", f"invalid {SINGULAR[wanted]}: " + "; ".join(errors))
            return
        expected = self.store.path_for(etype, entity["id"])
        canonical_bytes = canonical.encode(entity)
        if path != expected:
            self.misplaced(path, rel, etype, entity, expected, folder, canonical_bytes)
            return
        self.entities.append(_Entity(etype, entity, rel))
        if data != canonical_bytes:
            self.noncanonical(path, rel, etype, entity, data, canonical_bytes)

    @staticmethod
    def entity_type(folder: str | None, entity: dict) -> str | None:
        """The type the file is valid as: its folder's when it can be, else the only other."""
        if folder is not None and not entity_errors(folder, entity):
            return folder
        valid = [t for t in ENTITY_TYPES if t != folder and not entity_errors(t, entity)]
        return valid[0] if len(valid) == 1 else None

    def noncanonical(
        self, path: Path, rel: str, etype: str, entity: dict, data: bytes, good: bytes
    ) -> None:
        reason = "valid, but not in canonical form (hand edit?)"
        fixed = None
        if self.fix:
            with self.store.locked(etype, entity["id"]):
                try:
                    unchanged = read_regular(path, follow_symlinks=False) == data
                except OSError:
                    unchanged = False
                if unchanged:
                    self.store.write_file(path, good)
                    fixed = "re-encoded canonically"
                else:
                    reason += "; changed while checking, left alone"
        self.problem(rel, "noncanonical", reason, fixed)

    def misplaced(
        self,
        path: Path,
        rel: str,
        etype: str,
        entity: dict,
        expected: Path,
        folder: str | None,
        good: bytes,
    ) -> None:
        where = self.rel(expected)
        if expected.exists():
            self.entities.append(_Entity(etype, entity, rel))  # reported as a duplicate
            return
        if folder is not None and folder != etype:
            reason = f"holds a {SINGULAR[etype]} but sits in objects/{folder}/; belongs at {where}"
        else:
            reason = f"id {entity['id']} belongs at {where}"
        fixed = None
        if self.fix:
            with self.store.locked(etype, entity["id"]):
                if expected.exists():
                    reason += " (a file appeared there meanwhile; left alone)"
                elif not _real_folders(self.store, expected):
                    reason += " (a folder on the way is a symlink; left alone)"
                else:
                    self.store.write_file(expected, good)
                    self.moved_to.add(expected)
                    path.unlink()
                    fixed = f"moved to {where}"
            self.entities.append(_Entity(etype, entity, where if fixed else rel))
        else:
            self.entities.append(_Entity(etype, entity, rel))
        self.problem(rel, "misplaced", reason, fixed)

    # ------------------------------------------------------------ across files

    def cross_checks(self) -> None:
        by_id: dict[str, list[_Entity]] = {}
        present: dict[str, set[str]] = {t: set() for t in ENTITY_TYPES}
        for item in self.entities:
            by_id.setdefault(item.entity["id"], []).append(item)
            present[item.entity_type].add(item.entity["id"])
        for ident, items in sorted(by_id.items()):
            if len(items) > 1:
                # The copy at the place its id names is the one kept; flag the others.
                items.sort(
                    key=lambda i: (
                        i.rel != self.rel(self.store.path_for(i.entity_type, ident)),
                        i.rel,
                    )
                )
                for item in items[1:]:
                    self.problem(
                        item.rel,
                        "duplicate",
                        f"id {ident} is also held by {items[0].rel}; compare, remove one by hand",
                    )
        for item in self.entities:
            for target_type, target in _references(item.entity_type, item.entity):
                if target not in present[target_type]:
                    self.problem(
                        item.rel,
                        "dangling",
                        f"refers to {SINGULAR[target_type]} {target}, which is not in the store",
                    )


def stale_temp(name: str, age: float) -> str | None:
    """Why a temp file `age` seconds old can no longer be a live writer's; None if it may be.

    Young files are always left alone; after that, the process id in the name decides: a
    process that is gone writes no more. Past STALE_TEMP_SECONDS nobody is still writing.
    """
    if age < LIVE_WRITER_SECONDS:
        return None
    if age > STALE_TEMP_SECONDS:
        return f"{age / 3600:.1f} h old"
    match = _TEMP_NAME.match(name)
    if match is None:
        return None  # not named by Kindling: no writer to ask about
    pid = int(match.group(1))
    if pid == os.getpid() or _pid_alive(pid):
        return None
    minutes = age / 60
    return f"its writer, process {pid}, is gone; {minutes:.0f} min old"


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_ino, st.st_mtime_ns, st.st_size


def _pid_alive(pid: int) -> bool:
    """Whether a process with this id runs here (True when that cannot be told)."""
    if BACKEND == "windows":
        return True  # os.kill there ends a process rather than asking about it
    if not 0 < pid < 2**31:
        return True  # no process id: not a name this process's fileio wrote
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive
    return True


def _real_folders(store: Store, path: Path) -> bool:
    try:
        store.check_real_folders(path)
    except KindlingError:
        return False
    return True


def _references(entity_type: str, entity: dict) -> list[tuple[str, str]]:
    """The references fsck insists on (capsule members and evidenceRefs may be missing)."""
    if entity_type == "pins":
        target_type = {"observation": "observations", "summary": "summaries"}[entity["targetType"]]
        return [(target_type, entity["targetId"])]
    if entity_type == "summaries":
        return [("capsules", entity["capsuleId"])]
    if entity_type == "capsules" and "summaryId" in entity:
        return [("summaries", entity["summaryId"])]
    return []


def _guess_type(entity: dict) -> str | None:
    from kindling.git.merge import type_from_content

    return type_from_content(entity)


def fsck(
    store: Store, *, fix: bool = False, check_index: bool = True, now: float | None = None
) -> FsckReport:
    """Check the whole store; with `fix`, make the safe repairs and record each one."""
    checker = _Checker(store, fix=fix, now=time.time() if now is None else now)
    checker.walk()
    checker.walk_outside_objects()
    checker.cross_checks()
    if check_index:
        checker.report.problems.extend(index_problems(store, fix=fix))
    order = {name: i for i, name in enumerate(CHECKS)}
    checker.report.problems.sort(key=lambda p: (order.get(p.check, 99), p.path))
    return checker.report


def index_problems(store: Store, *, fix: bool = False) -> list[Finding]:
    """Ways the derived index disagrees with the files (none when there is no index yet)."""
    if not store.index_path.exists():
        return []  # built from the files on first use; nothing to disagree yet
    import sqlite3

    from kindling.index import Index
    from kindling.index.db import remove_index_files
    from kindling.index.rebuild import FORGOTTEN

    rel = _index_rel(store)
    index = None
    try:
        index = Index(store)
        # A stale index is routine (a checkout, a merge): every read syncs it, so does fsck.
        # What a sync leaves wrong is damage. A row it had to scrub is reported as well: its
        # file was forgotten (or a forget pulled in) without the index following.
        syncer = index.syncer()
        syncer.sync()
        found = [
            Finding(_display_rel(store, syncer.paths.abspath(r)), "index", SCRUBBED, SCRUB_FIX)
            for r in syncer.scrubbed
        ]
        damage = [Finding(_display_rel(store, p.path), "index", p.reason) for p in index.verify()]
        forgotten = bool(found) or any(p.reason in FORGOTTEN for p in damage)
        if damage and fix:
            with index.scrubbing():  # what the rebuild drops is zeroed, the WAL truncated
                index.rebuild()
        if forgotten and fix:
            _compact(index)
        if damage and fix:
            left = index.verify()
            for problem in damage:
                problem.fixed = None if left else "index rebuilt from the files"
            damage.extend(
                Finding(_display_rel(store, p.path), "index", f"{p.reason} (after a rebuild)")
                for p in left
            )
        return found + damage
    except (sqlite3.Error, OSError) as exc:
        problem = Finding(rel, "index", f"index cannot be read: {exc}")
        if fix:
            try:
                if index is not None:
                    index.close()
                    index = None
                remove_index_files(store.index_path)
                Index(store).close()
                problem.fixed = "index rebuilt from the files"
            except (sqlite3.Error, OSError) as again:
                problem.reason += f"; rebuilding failed too: {again}"
        return [problem]
    finally:
        if index is not None:
            index.close()


def _compact(index: Index) -> None:
    """Rewrite the index file whole: pages freed before any scrub (by merges, or with
    secure_delete off) may still hold forgotten text, and VACUUM keeps no free page."""
    import sqlite3

    with contextlib.suppress(sqlite3.Error):
        index.conn.execute("VACUUM")
    with contextlib.suppress(sqlite3.Error):
        index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _index_rel(store: Store) -> str:
    try:
        return display(store.index_path.relative_to(store.root).as_posix())
    except ValueError:
        return display(store.index_path)


def _display_rel(store: Store, path: str) -> str:
    """A path the index reports, relative to the store when it lies inside it."""
    try:
        return display(Path(path).relative_to(store.root).as_posix())
    except ValueError:
        return display(path)
