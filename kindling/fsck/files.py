"""The file checks of fsck: every file under the store, each entity, temp files, symlinks."""

from __future__ import annotations

import os
import re
import stat as stat_module
from dataclasses import dataclass
from pathlib import Path

from kindling import canonical
from kindling.errors import KindlingError
from kindling.fileio import is_temp_name, read_regular
from kindling.fsck.report import SYMLINK, Finding, FsckReport, display
from kindling.model import ENTITY_TYPES, SINGULAR, entity_errors
from kindling.platform import pid_alive
from kindling.store import Store

# A temp file this young may belong to a writer still at work, here or on another machine
# sharing the folder (whose process ids mean nothing here): never touched.
LIVE_WRITER_SECONDS = 60
# Older than this, a temp file is stale whoever its writer was: no write takes an hour, and
# a live process with its id is more likely a new one that reused the number.
STALE_TEMP_SECONDS = 3600
# fileio.atomic_output's temp names: .<name>.<pid>.<8 hex digits>.tmp
_TEMP_NAME = re.compile(r"\..+\.([0-9]{1,10})\.[0-9a-f]{8}\.tmp\Z", re.DOTALL)


@dataclass
class _Entity:
    entity_type: str
    entity: dict
    rel: str


class FileChecker:
    def __init__(self, store: Store, *, fix: bool, now: float, progress=None) -> None:
        self.store = store
        self.progress = progress  # a kindling.progress.ProgressFactory, or None
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
        step = self.progress("Checking", _fanout_count(objects)) if self.progress else None
        for dirpath, dirnames, filenames in os.walk(objects, followlinks=False):
            dirnames.sort()
            here = Path(dirpath)
            if step is not None and len(here.relative_to(objects).parts) == 2:
                step(1)  # one fan-out folder (objects/<type>/<xx>) done, or about to be
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
    if pid == os.getpid() or pid_alive(pid):
        return None
    minutes = age / 60
    return f"its writer, process {pid}, is gone; {minutes:.0f} min old"


def _fanout_count(objects: Path) -> int:
    """How many fan-out folders objects/<type>/<xx> hold (symlinks not counted)."""
    count = 0
    try:
        types = [e for e in os.scandir(objects) if e.is_dir(follow_symlinks=False)]
        for entry in types:
            count += sum(1 for e in os.scandir(entry.path) if e.is_dir(follow_symlinks=False))
    except OSError:
        pass
    return count


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_ino, st.st_mtime_ns, st.st_size


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
