"""The store on disk: paths, atomic writes, per-entity locks, walking the tree.

Layout (the source of truth; everything else is derived):

    <store>/config.json                       format marker and committed settings
    <store>/.gitignore                        ignores temp files (and what 0.1.0 kept there)
    <store>/objects/<type>/<xx>/<id>.json     one canonical JSON file per entity

`<xx>` is the first two hex digits of sha256(id): a fixed 256-way fan-out, as git's objects.
The index, the locks and the watcher's files live outside the store (kindling.statedir).
This module never touches SQLite.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_module
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kindling import canonical, hashing, platform, statedir
from kindling.errors import CorruptFileError, KindlingError
from kindling.fileio import (
    FileStat,
    atomic_output,
    fsync_dir,
    is_entity_name,
    is_real_dir,
    is_temp_name,
    read_regular,
)
from kindling.model import ENTITY_TYPES, check_id, validate
from kindling.settings import nearest_store

STORE_DIRNAME = ".kindling"
FORMAT_VERSION = 1
CONFIG_NAME = "config.json"
INDEX_NAME = "index.sqlite"
LOCKS_DIRNAME = "locks"

MAX_CONFIG_BYTES = 64 * 1024

GITIGNORE = """\
# Kindling: only objects/ and config.json are memory. The index, locks and watcher files live
# outside the work tree (in the git directory, or the user's cache); an interrupted write may
# leave a temp file here. The last lines match what Kindling 0.1.0 kept here.
*.tmp
/index.sqlite*
/locks
/watch.*
"""

# What Kindling 0.1.0 kept in the store folder: removed when a store is opened for writing.
LEGACY_NAMES = frozenset(
    {
        "index.sqlite",
        "index.sqlite-wal",
        "index.sqlite-shm",
        "index.sqlite-guard",
        "index.sqlite-hooks.json",
        "index.sqlite-hooks.json.lock",
        "watch.lock",
        "watch.spawn",
        LOCKS_DIRNAME,
    }
)


# `abandonAfterHours`: a week by default (a session paused over a weekend or a few days off is
# still its owner's to end); never sooner than a day, never later than a year.
DEFAULT_ABANDON_HOURS = 7 * 24
MIN_ABANDON_HOURS = 24
MAX_ABANDON_HOURS = 366 * 24


class Config(NamedTuple):
    """What a store's committed config.json says, validated (it is input like any file)."""

    format_version: int = FORMAT_VERSION
    autowatch: bool = True
    # How long a teammate's session capsule stays its owner's to close (kindling.agents.abandoned)
    abandon_after_hours: int = DEFAULT_ABANDON_HOURS


class Problem(NamedTuple):
    """A file under objects/ that does not parse or is not a valid entity; left untouched."""

    path: str
    reason: str


class Found(NamedTuple):
    """An entity with the type it is and the path of the file it lives in."""

    entity_type: str
    entity: dict
    path: str


class StoredFile(NamedTuple):
    """One entity file met by a walk, with the stat data the index compares."""

    entity_type: str
    path: str
    stat: os.stat_result


class Stored(NamedTuple):
    """An entity file just written: where, its bytes, and its stat data right after the
    rename (None when the path already held another file again by then)."""

    path: str
    data: bytes
    stat: FileStat | None = None


class WrittenFile(NamedTuple):
    """An entity file Kindling just wrote, as the index records it (`Index.record_many`)."""

    entity_type: str
    path: str | os.PathLike
    data: bytes
    entity: dict | None = None  # the entity written, when at hand: spares decoding `data`
    stat: FileStat | None = None  # `Stored.stat`: while it holds, nothing is read back


def fanout(entity_id: str) -> str:
    """The two-hex-digit directory an id lives in."""
    return hashing.hexdigest(entity_id.encode("utf-8"))[:2]


def locate(explicit: str | os.PathLike | None = None, cwd: str | os.PathLike | None = None) -> Path:
    """Find the store directory: `explicit` (KINDLING_STORE when the caller read it), else
    the nearest `.kindling/` from `cwd` up."""
    if explicit is not None:
        return Path(explicit).expanduser().absolute()
    here = Path(cwd if cwd is not None else os.getcwd()).absolute()
    found = nearest_store(here)
    if found is not None:
        return found
    raise KindlingError(
        f"no Kindling store found in {here} or any parent directory; run `kindling init` "
        "or point --store / KINDLING_STORE at one"
    )


def default_init_root(cwd: str | os.PathLike | None = None) -> Path:
    """Where `kindling init` puts `.kindling/`: the git work tree's top, else the current dir."""
    here = Path(cwd if cwd is not None else os.getcwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


class Store:
    """A store directory: the `.kindling/` folder itself (or any folder laid out like one)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.objects = self.root / "objects"
        self._objects = os.fspath(self.objects)
        self.config = Config()
        self._state: Path | None = None

    # ------------------------------------------------------------ opening

    @classmethod
    def open(cls, root: str | os.PathLike) -> Store:
        """Open an existing store, refusing a folder that is not one."""
        store = cls(root)
        config = store.root / CONFIG_NAME
        if not store.objects.is_dir() and not config.is_file():
            raise KindlingError(
                f"no Kindling store at {store.root}; run `kindling init` to create one"
            )
        if config.is_file():
            store.config = read_config(config)
        return store

    @classmethod
    def create(cls, root: str | os.PathLike) -> Store:
        """Create the layout at `root` (or complete it); running it again changes nothing."""
        store = cls(root)
        if store.root.exists() and not store.root.is_dir():
            raise KindlingError(f"cannot create a store at {store.root}: it is a file")
        try:
            for etype in ENTITY_TYPES:
                (store.objects / etype).mkdir(parents=True, exist_ok=True)
            config = store.root / CONFIG_NAME
            if config.is_file():
                store.config = read_config(config)
            else:
                store.write_file(config, canonical.encode({"formatVersion": FORMAT_VERSION}))
            gitignore = store.root / ".gitignore"
            if not gitignore.exists():
                store.write_file(gitignore, GITIGNORE.encode())
        except OSError as exc:
            raise KindlingError(f"cannot create a store at {store.root}: {exc.strerror}") from None
        return store

    # ------------------------------------------------------------ paths

    def path_for(self, entity_type: str, entity_id: str) -> Path:
        """Where an entity's file lives; the id is checked first so it can never be a path."""
        check_id(entity_id)
        return self.objects / entity_type / fanout(entity_id) / f"{entity_id}.json"

    def entity_path(self, entity_type: str, entity_id: str) -> str:
        """`path_for` as a plain string: a bulk import builds one per entity."""
        check_id(entity_id)
        sep = os.sep
        return f"{self._objects}{sep}{entity_type}{sep}{fanout(entity_id)}{sep}{entity_id}.json"

    def check_real_folders(self, path: str | os.PathLike) -> None:
        """Refuse an entity path whose type or fan-out folder is a symlink.

        Walks (the index, fsck, export) never follow one, so a write through it would land
        where nothing reads it, and a read through it would reach outside the store.
        """
        parent = os.path.dirname(path)
        for folder in (os.path.dirname(parent), parent):
            try:
                st = os.lstat(folder)
            except (FileNotFoundError, NotADirectoryError):
                return  # created as a real folder on the first write
            if stat_module.S_ISLNK(st.st_mode):
                raise KindlingError(
                    f"{folder} is a symlink; Kindling never reads or writes entity files "
                    "through one (replace it with a real folder; `kindling fsck` lists them)"
                )

    @property
    def writable(self) -> bool:
        return os.access(self.root, os.W_OK)

    @property
    def state(self) -> Path:
        """The folder outside the work tree holding the index, locks and watcher files."""
        if self._state is None:
            self._state = statedir.state_dir(self.root)
        return self._state

    def ensure_state(self) -> Path:
        """`state`, created if needed (OSError when it cannot be)."""
        return statedir.ensure(self.state, self.root)

    @property
    def index_path(self) -> Path:
        """Where the store's derived index lives (see kindling.statedir)."""
        return self.state / INDEX_NAME

    def remove_legacy(self) -> list[str]:
        """Delete what Kindling 0.1.0 kept in the store folder; the names removed.

        All of it was derived or transient; a file there now is never opened (it may have
        come in a commit), only removed, and a symlink is removed itself, never followed.
        """
        removed = []
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return removed
        for entry in entries:
            if entry.name not in LEGACY_NAMES:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    import shutil  # only a store from 0.1.0 pays for it

                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue
            removed.append(entry.name)
        return removed

    # ------------------------------------------------------------ reading

    def load_path(self, entity_type: str, path: str | os.PathLike) -> tuple[dict, bytes]:
        """Read, parse and validate one entity file; CorruptFileError names what is wrong."""
        try:
            data = read_regular(path, follow_symlinks=False)
        except OSError as exc:
            raise CorruptFileError(path, f"unreadable ({exc.strerror})") from None
        if data is None:
            raise CorruptFileError(path, "unreadable (no such file)")
        return self.parse_entity(entity_type, path, data), data

    @staticmethod
    def parse_entity(entity_type: str, path: str | os.PathLike, data: bytes) -> dict:
        """Parse and validate bytes read from `path`."""
        try:
            entity = canonical.decode(data)
        except canonical.DecodeError as exc:
            raise CorruptFileError(path, str(exc)) from None
        try:
            return validate(entity_type, entity)
        except KindlingError as exc:
            raise CorruptFileError(path, str(exc)) from None

    def load(self, entity_type: str, entity_id: str) -> dict | None:
        """The stored entity with this id, or None when there is no such file."""
        path = self.path_for(entity_type, entity_id)
        self.check_real_folders(path)
        try:
            data = read_regular(path, follow_symlinks=False)
        except OSError as exc:
            raise CorruptFileError(path, f"unreadable ({exc.strerror})") from None
        if data is None:
            return None
        return self.parse_entity(entity_type, path, data)

    def walk(
        self, entity_type: str | None = None, *, temp_files: bool = False
    ) -> Iterator[StoredFile]:
        """Every entity file under objects/ (stat only, no reads), type by type.

        Hidden files and anything that is not a regular `*.json` file are skipped, and so are
        the temp files of atomic writes unless `temp_files` asks for them too.
        """
        if not is_real_dir(self.objects):
            return
        for etype in (entity_type,) if entity_type else ENTITY_TYPES:
            if not is_real_dir(self.objects / etype):
                continue  # a symlink could lead anywhere on the machine: never entered
            try:
                buckets = os.scandir(self.objects / etype)
            except FileNotFoundError:
                continue
            with buckets:
                for bucket in buckets:
                    if not bucket.is_dir(follow_symlinks=False):
                        continue
                    with os.scandir(bucket.path) as files:
                        for entry in files:
                            name = entry.name
                            if not (is_entity_name(name) or temp_files and is_temp_name(name)):
                                continue
                            st = entry.stat(follow_symlinks=False)
                            if stat_module.S_ISREG(st.st_mode):
                                yield StoredFile(etype, entry.path, st)

    # ------------------------------------------------------------ writing

    def write(self, entity_type: str, entity: dict, *, durable: bool = True) -> tuple[Path, bytes]:
        """Validate and atomically write an entity in canonical form; returns path and bytes."""
        validate(entity_type, entity)
        path = self.entity_path(entity_type, entity["id"])
        stored = self.write_checked(path, entity, durable=durable)
        return Path(path), stored.data

    def write_checked(
        self,
        path: str,
        entity: dict,
        *,
        durable: bool = False,
        real_folders: set[str] | None = None,
    ) -> Stored:
        """Write an entity validated already at its `entity_path` in canonical form (durable
        only when asked: a bulk import syncs once with `sync_to_disk`).

        A folder in `real_folders` was checked (or created) by an earlier write of the same
        import and is not checked again; each folder written to is added.
        """
        folder = os.path.dirname(path)
        if real_folders is None or folder not in real_folders:
            self.check_real_folders(path)
        data = canonical.encode(entity)
        with atomic_output(path, durable=durable) as fh:
            fh.write(data)
        if real_folders is not None:
            real_folders.add(folder)
        return Stored(path, data, fh.stat)

    def write_file(self, path: Path, data: bytes, *, durable: bool = True) -> None:
        """Temp file in the same directory, flush (+ fsync), os.replace: never a partial file."""
        with atomic_output(path, durable=durable) as fh:
            fh.write(data)

    def remove(self, entity_type: str, entity_id: str) -> bool:
        """Delete an entity's file; False when it was not there."""
        path = self.path_for(entity_type, entity_id)
        self.check_real_folders(path)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        fsync_dir(path.parent)
        return True

    def sync_to_disk(self) -> None:
        """Make every earlier non-durable write durable at once (bulk imports)."""
        platform.sync_all()

    @contextlib.contextmanager
    def locked(self, entity_type: str, entity_id: str) -> Iterator[None]:
        """Hold an exclusive per-entity lock for a read-modify-write (released on exit or death)."""
        check_id(entity_id)
        lock_dir = self.ensure_state() / LOCKS_DIRNAME / fanout(entity_id)
        lock_dir.mkdir(parents=True, exist_ok=True)
        with platform.locked_file(lock_dir / f"{entity_type}.{entity_id}.lock"):
            yield


def read_committed_json(path: Path, what: str, limit: int) -> object | None:
    """A committed JSON file of the store (None: there is none), read as hostile input: a
    regular file, never through a symlink, at most `limit` bytes; a KindlingError names the
    file and `what` it is when it can't be read."""
    try:
        raw = read_regular(path, follow_symlinks=False, limit=limit)
    except OSError as exc:
        raise KindlingError(f"{path}: unreadable {what} ({exc.strerror or exc})") from None
    if raw is None:
        return None
    if len(raw) > limit:
        raise KindlingError(f"{path}: {what} is over {limit // 1024} KiB")
    try:
        return canonical.decode(raw)
    except canonical.DecodeError as exc:
        raise KindlingError(f"{path}: unreadable {what} ({exc})") from None


def read_config(path: Path) -> Config:
    """Read and validate a store's config.json; a KindlingError names what is wrong.

    The file is committed, so it is hostile input: bounded in size, every known key checked,
    unknown keys (a newer Kindling's) ignored; `abandonAfterHours` out of bounds is held to
    the nearest bound, and one that is not a whole number of hours is ignored.
    """
    data = read_committed_json(path, "store config", MAX_CONFIG_BYTES)
    if data is None:
        return Config()
    if not isinstance(data, dict):
        raise KindlingError(f"{path}: the store config must be a JSON object")
    version = data.get("formatVersion")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise KindlingError(f"{path}: formatVersion must be a positive integer")
    if version > FORMAT_VERSION:
        raise KindlingError(
            f"{path.parent} uses store format {version}, newer than this Kindling supports "
            f"({FORMAT_VERSION}); upgrade Kindling"
        )
    autowatch = data.get("autowatch", True)
    if not isinstance(autowatch, bool):
        raise KindlingError(f"{path}: autowatch must be true or false")
    hours = data.get("abandonAfterHours")
    if isinstance(hours, bool) or not isinstance(hours, int):
        hours = DEFAULT_ABANDON_HOURS  # not a whole number of hours: ignored
    hours = min(max(hours, MIN_ABANDON_HOURS), MAX_ABANDON_HOURS)
    return Config(format_version=version, autowatch=autowatch, abandon_after_hours=hours)
