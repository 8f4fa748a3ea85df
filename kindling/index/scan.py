"""Reading entity files for the index: where they are, the walk's rules, stat keys, folder
fingerprints and whole-file reads. Only reads the files; never opens the database."""

from __future__ import annotations

import os
from pathlib import Path

from kindling import hashing
from kindling.errors import CorruptFileError, KindlingError
from kindling.fileio import is_entity_name, is_real_dir, read_whole
from kindling.index import fsclock, schema
from kindling.index.schema import FileRead
from kindling.model import ENTITY_TYPES
from kindling.store import Store

S_IFMT, S_IFREG = 0o170000, 0o100000  # file type bits of st_mode
FINGERPRINT_MASK = (1 << 63) - 1  # fingerprints are kept as SQLite's signed 64-bit integers


def try_parse(entity_type: str, path: str, data: bytes) -> tuple[dict | None, str | None]:
    """(entity, None) for a valid file, (None, reason) for a problem file."""
    try:
        return Store.parse_entity(entity_type, path, data), None
    except CorruptFileError as exc:
        return None, exc.reason


def trusted_stat_key(st: os.stat_result, racy_from: int) -> str:
    """The recorded form of a file's stat data; "" when too recent to trust (racy)."""
    if max(st.st_mtime_ns, st.st_ctime_ns) >= racy_from:
        return ""
    return stat_key(st)


def walkable(rel: str) -> bool:
    """True when a relative path is where a walk could find an entity file."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[0] in ENTITY_TYPES and is_entity_name(parts[2])


def scan_folder(path: str) -> tuple[list[tuple[str, os.stat_result]], int]:
    """The entity files of one fan-out folder (Store.walk's rule) and their fingerprint."""
    items: list[tuple[str, os.stat_result]] = []
    append = items.append
    total = 0
    try:
        files = os.scandir(path)
    except (FileNotFoundError, NotADirectoryError):
        return items, 0
    with files:
        for entry in files:
            name = entry.name
            if not is_entity_name(name):
                continue  # temp files of atomic writes are hidden
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if st.st_mode & S_IFMT == S_IFREG:
                append((name, st))
                # Python's hash of a tuple of ints is the same in every process.
                total += hash((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return items, total & FINGERPRINT_MASK


def stat_key(st: os.stat_result) -> str:
    """A file's stat data as the index records it."""
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def real_types(objects: str, types: tuple[str, ...] = ENTITY_TYPES) -> tuple[str, ...]:
    """The type folders under `objects` a walk may enter: real folders, never a symlink (one
    could lead a walk anywhere on the machine), under an objects/ that is not one either."""
    if not is_real_dir(objects):
        return ()
    return tuple(etype for etype in types if is_real_dir(f"{objects}/{etype}"))


def buckets(objects: str, types: tuple[str, ...] = ENTITY_TYPES) -> list[tuple[str, str]]:
    """Every fan-out folder (of `types`) under `objects` as (relative path, absolute path)."""
    out = []
    for etype in real_types(objects, types):
        try:
            entries = os.scandir(f"{objects}/{etype}")
        except (FileNotFoundError, NotADirectoryError):
            continue
        with entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    out.append((f"{etype}/{entry.name}", entry.path))
    return out


def winning_rowid(entity_type: str, entity_id: str, held: list[tuple[str, int]]) -> int:
    """Of (path, rowid) pairs holding one id, the rowid that wins: its own path, else the first."""
    home = schema.canonical_rel(entity_type, entity_id)
    return min(held, key=lambda h: (h[0] != home, h[0]))[1]


class ObjectPaths:
    """Paths under a store's objects/ folder: as the index records them, and on disk."""

    def __init__(self, objects: str | os.PathLike, clock: str | os.PathLike) -> None:
        self.objects = str(objects)
        self.root = Path(objects)
        self._cut = len(self.objects) + 1
        self.clock = os.fspath(clock)  # the file fsclock touches, in the store's state folder

    def racy_from(self) -> int:
        """Stat times at or after this are too recent to trust (kindling.index.fsclock)."""
        return fsclock.racy_from(self.clock, self.objects)

    def rel(self, path: str | os.PathLike) -> str:
        """A path under objects/ as the index records it (relative, '/'-separated)."""
        text = os.fspath(path)
        if text.startswith(self.objects) and text[len(self.objects) : self._cut] == os.sep:
            rel = text[self._cut :]
        else:
            rel = os.path.relpath(os.path.abspath(text), os.path.abspath(self.objects))
            if rel.startswith(".."):
                raise KindlingError(f"{text} is not inside {self.objects}")
        return rel.replace(os.sep, "/") if os.sep != "/" else rel

    def abspath(self, rel: str) -> str:
        """An index path (relative to objects/) as an absolute one."""
        return f"{self.objects}/{rel}" if os.sep == "/" else os.path.join(self.objects, rel)

    def rel_of_abspath(self, path: str) -> str:
        """The inverse of abspath() for a path abspath() made."""
        return path[self._cut :]


def read_entity_file(
    paths: ObjectPaths,
    rel: str,
    entity_type: str,
    st: os.stat_result,
    racy_from: int,
    recorded_hash: str | None = None,
    known: tuple[bytes, dict] | None = None,
    *,
    bulk: bool = False,
) -> FileRead | None:
    """Read, hash and (unless its hash is `recorded_hash`) parse one file whose stat is `st`.

    `known` is (bytes, entity) of a file Kindling just wrote: when the disk holds those bytes,
    the entity is not parsed again. `bulk`: one of many files the caller reads, hashed with
    `hashing.bulk_hexdigest`. None when the file is gone.
    """
    path = paths.abspath(rel)
    problem = entity = None
    try:
        data = read_whole(path, st.st_size)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        data, problem = b"", f"unreadable ({exc.strerror})"
    digest = hashing.bulk_hexdigest(data) if bulk else hashing.hexdigest(data)
    if problem is None:
        if known is not None and known[0] == data:
            entity = known[1]
        elif recorded_hash != digest:
            entity, problem = try_parse(entity_type, path, data)
    stat = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    key = trusted_stat_key(st, racy_from)
    return FileRead(rel, entity_type, stat, key, digest, data, entity, problem)


def read_file_at(
    paths: ObjectPaths, rel: str, entity_type: str, known: tuple[bytes, dict] | None = None
) -> FileRead | None:
    """Stat and read one file by its relative path; None when it is gone or not an entity file."""
    if not walkable(rel) or rel.split("/", 1)[0] != entity_type:
        return None
    racy_from = paths.racy_from()  # before the stat it judges
    try:
        st = os.lstat(paths.abspath(rel))
    except (FileNotFoundError, NotADirectoryError):
        return None
    if st.st_mode & S_IFMT != S_IFREG:
        return None
    return read_entity_file(paths, rel, entity_type, st, racy_from, known=known)
