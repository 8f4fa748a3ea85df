"""The store on disk: layout, atomic writes, locks, locating, walking."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from pathlib import Path

import pytest

from kindling import canonical
from kindling.errors import CorruptFileError, KindlingError, ValidationError
from kindling.store import GITIGNORE, Store, default_init_root, fanout, locate

OBS = {
    "id": "9c20f3a1-2b4d-4f8e-9a1c-7e0d5b6f2a33",
    "kind": "error",
    "content": "JWT validation failed: token expired",
    "provenance": {},
    "ts": 1750416064123,
    "scopeIds": {"sessionId": "session-1"},
    "redacted": False,
}


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def everything(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under `root`."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
        for p in sorted(root.rglob("*"))
    }


def test_create_lays_out_the_store_and_is_idempotent(tmp_path):
    root = tmp_path / ".kindling"
    Store.create(root)
    before = tree(root)
    assert before == {
        ".gitignore": GITIGNORE.encode(),
        "config.json": b'{\n  "formatVersion": 1\n}\n',
    }
    for etype in ("observations", "capsules", "summaries", "pins"):
        assert (root / "objects" / etype).is_dir()
    Store.create(root)
    assert tree(root) == before


def test_write_uses_fanout_and_canonical_bytes(store_dir):
    store = Store.open(store_dir)
    path, data = store.write("observations", dict(OBS))
    xx = hashlib.sha256(OBS["id"].encode()).hexdigest()[:2]
    assert path == store_dir / "objects" / "observations" / xx / f"{OBS['id']}.json"
    assert path.read_bytes() == data == canonical.encode(OBS)
    assert store.load("observations", OBS["id"]) == OBS
    assert fanout(OBS["id"]) == xx


def test_invalid_entity_writes_nothing(store_dir):
    store = Store.open(store_dir)
    before = tree(store_dir)
    with pytest.raises(ValidationError):
        store.write("observations", {**OBS, "kind": "nope"})
    assert tree(store_dir) == before


@pytest.mark.parametrize("bad", ["../../x", "a/b", ".git", "x" * 300])
def test_ids_never_become_paths(store_dir, bad, tmp_path):
    store = Store.open(store_dir)
    before = everything(tmp_path)
    with pytest.raises(ValidationError, match="invalid id"):
        store.path_for("observations", bad)
    with pytest.raises(ValidationError):
        store.write("observations", {**OBS, "id": bad})
    assert everything(tmp_path) == before  # no file and no folder, anywhere


def test_failed_write_leaves_old_file_and_no_temp(store_dir, monkeypatch):
    store = Store.open(store_dir)
    path, original = store.write("observations", dict(OBS))

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        store.write("observations", {**OBS, "content": "changed"})
    assert path.read_bytes() == original
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_checked_write_hands_back_the_stat_taken_right_after_its_rename(store_dir):
    store = Store.open(store_dir)
    path = store.entity_path("observations", OBS["id"])
    stored = store.write_checked(path, dict(OBS))
    assert (stored.path, stored.data) == (path, canonical.encode(OBS))
    st = os.lstat(path)
    assert stored.stat == (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def test_no_stat_when_another_file_holds_the_path_right_after_the_rename(store_dir, monkeypatch):
    store = Store.open(store_dir)
    path = store.entity_path("observations", OBS["id"])
    real_replace = os.replace

    def replaced_at_once(src, dst):
        real_replace(src, dst)
        theirs = Path(dst).with_name("theirs")
        theirs.write_bytes(b"another writer's bytes")
        real_replace(theirs, dst)

    monkeypatch.setattr(os, "replace", replaced_at_once)
    stored = store.write_checked(path, dict(OBS))
    assert stored.stat is None and stored.data == canonical.encode(OBS)


def test_walk_skips_temp_hidden_and_foreign_files(store_dir):
    store = Store.open(store_dir)
    path, _ = store.write("observations", dict(OBS))
    (path.parent / f".{path.name}.123.abcd.tmp").write_bytes(b'{"half')
    (path.parent / ".swp.json").write_bytes(b"x")
    (path.parent / "notes.txt").write_bytes(b"x")
    (store_dir / "objects" / "observations" / "stray.json").write_bytes(b"{}")
    assert [(f.entity_type, f.path) for f in store.walk()] == [("observations", str(path))]


def test_corrupt_file_is_reported_with_its_path_and_left_alone(store_dir):
    store = Store.open(store_dir)
    path = store.path_for("observations", OBS["id"])
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"id": "9c20f3a1')
    with pytest.raises(CorruptFileError) as err:
        store.load("observations", OBS["id"])
    assert str(path) in str(err.value) and "not valid JSON" in str(err.value)
    assert path.read_bytes() == b'{"id": "9c20f3a1'


def test_locate_prefers_explicit_then_env_then_nearest(tmp_path, monkeypatch):
    from kindling.memory import Memory

    project = tmp_path / "project"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    Store.create(project / ".kindling")
    Store.create(tmp_path / "elsewhere")
    assert locate(None, deep) == project / ".kindling"
    assert locate(tmp_path / "explicit", deep) == tmp_path / "explicit"
    assert Memory(cwd=deep).store.root == project / ".kindling"
    monkeypatch.setenv("KINDLING_STORE", str(tmp_path / "elsewhere"))
    assert Memory(cwd=deep).store.root == tmp_path / "elsewhere"
    assert Memory(project / ".kindling", cwd=deep).store.root == project / ".kindling"


def test_no_store_found_says_to_init(tmp_path):
    with pytest.raises(KindlingError, match="kindling init"):
        locate(None, tmp_path)
    with pytest.raises(KindlingError, match="kindling init"):
        Store.open(tmp_path / "missing")


def test_newer_format_is_refused(store_dir):
    (store_dir / "config.json").write_bytes(b'{"formatVersion": 99}')
    with pytest.raises(KindlingError, match="newer than this Kindling supports"):
        Store.open(store_dir)


def test_init_root_is_the_git_top(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert default_init_root(tmp_path / "a" / "b") == tmp_path
    assert default_init_root(tmp_path / "a") == tmp_path


def test_outside_git_the_index_lives_in_the_user_cache(store_dir, isolated_env):
    cached = Store.open(store_dir).index_path
    assert cached.parent.parent == isolated_env / ".cache" / "kindling"
    assert cached.name == "index.sqlite"
    assert Store.open(store_dir).index_path == cached
    assert Store.open(store_dir.parent / "." / store_dir.name).index_path == cached


def test_in_a_git_clone_the_index_lives_in_the_git_directory(tmp_path):
    (tmp_path / ".git").mkdir()
    store = Store.create(tmp_path / "sub" / ".kindling")
    assert store.index_path.parent.parent == tmp_path / ".git" / "kindling"
    other = Store.create(tmp_path / ".kindling")
    assert other.index_path.parent != store.index_path.parent  # one folder per store


def test_a_worktree_keeps_its_index_in_its_own_git_directory(tmp_path):
    gitdir = tmp_path / "main" / ".git" / "worktrees" / "topic"
    gitdir.mkdir(parents=True)
    (tmp_path / "topic").mkdir()
    (tmp_path / "topic" / ".git").write_text(f"gitdir: {gitdir}\n")
    store = Store.create(tmp_path / "topic" / ".kindling")
    assert store.index_path.parent.parent == gitdir / "kindling"


def _hold_and_append(args):
    root, n = args
    store = Store(root)
    for _ in range(n):
        with store.locked("capsules", "cap_shared"):
            counter = Path(root) / "counter"
            value = int(counter.read_text()) if counter.exists() else 0
            counter.write_text(str(value + 1))


def test_per_entity_lock_serialises_processes(store_dir):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.map(_hold_and_append, [(str(store_dir), 50)] * 4)
    assert (store_dir / "counter").read_text() == "200"
