"""The filesystem clock behind the racy rule (kindling.index.fsclock)."""

from __future__ import annotations

import os
import time

import pytest

from kindling.index import fsclock
from kindling.index.schema import RACY_NS
from kindling.store import Store


@pytest.fixture
def store(tmp_path) -> Store:
    return Store.create(tmp_path / ".kindling")


def clock_of(store: Store) -> str:
    return str(store.ensure_state() / fsclock.CLOCK_NAME)


def test_the_bound_is_a_time_the_filesystem_handed_out_after_earlier_writes(store):
    path = store.root / "objects" / "earlier.json"
    path.write_bytes(b"{}")
    st = os.lstat(path)
    bound = fsclock.racy_from(clock_of(store), str(store.objects))
    assert bound == os.lstat(clock_of(store)).st_mtime_ns
    assert bound >= max(st.st_mtime_ns, st.st_ctime_ns)


def test_a_file_written_after_the_bound_is_racy(store):
    bound = fsclock.racy_from(clock_of(store), str(store.objects))
    path = store.root / "objects" / "later.json"
    path.write_bytes(b"{}")
    st = os.lstat(path)
    assert max(st.st_mtime_ns, st.st_ctime_ns) >= bound  # never trusted by that walk
    assert os.lstat(store.objects).st_mtime_ns >= bound  # nor its folder


def test_the_system_clock_margin_when_the_clock_cannot_be_touched(store, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(fsclock.os, "utime", refuse)
    monkeypatch.setattr(fsclock.os, "open", refuse)
    before = time.time_ns()
    bound = fsclock.racy_from(clock_of(store), str(store.objects))
    assert before - RACY_NS <= bound <= time.time_ns() - RACY_NS


def test_the_system_clock_margin_when_the_clock_is_on_another_filesystem(store):
    if not os.path.isdir("/proc") or os.lstat("/proc").st_dev == os.lstat(store.root).st_dev:
        pytest.skip("needs a second filesystem")
    before = time.time_ns()
    bound = fsclock.racy_from(clock_of(store), "/proc")
    assert before - RACY_NS <= bound <= time.time_ns() - RACY_NS


def test_a_symlink_planted_as_the_clock_is_never_followed(store, tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("x")
    old = 1_000_000_000_000_000_000
    os.utime(target, ns=(old, old))
    os.symlink(target, clock_of(store))
    fsclock.racy_from(clock_of(store), str(store.objects))
    assert os.stat(target).st_mtime_ns == old


def test_no_folder_is_made_for_a_clock_whose_state_folder_is_gone(store, tmp_path):
    gone = tmp_path / "deleted-clone" / ".git" / "kindling" / "key" / fsclock.CLOCK_NAME
    before = time.time_ns()
    bound = fsclock.racy_from(str(gone), str(store.objects))
    assert before - RACY_NS <= bound <= time.time_ns() - RACY_NS
    assert not (tmp_path / "deleted-clone").exists()
