"""After a pull: a folder that only gained files has only those read, while a file changed
or removed beside them is never missed; and the other spellings of names indexed in bulk are
exactly those of the plain rules (reference below)."""

from __future__ import annotations

import os
import re

import pytest
from conftest import NOTHING_RACY, pin_fs_clock
from entities import observation
from hypothesis import given, settings
from hypothesis import strategies as st

from kindling.index import Index, tokens
from kindling.index import sync as sync_module
from kindling.store import Store, fanout


@pytest.fixture
def store(store_dir) -> Store:
    return Store(store_dir)


@pytest.fixture
def index(store):
    ix = Index(store)
    yield ix
    ix.close()


def same_folder_ids(n: int, start: int = 0) -> list[str]:
    """n observation numbers whose files share one fan-out folder (that of `obs-0000`)."""
    home = fanout(observation(0)["id"])
    out, i = [], start
    while len(out) < n:
        if fanout(observation(i)["id"]) == home:
            out.append(i)
        i += 1
    return out


def reads(monkeypatch) -> list[str]:
    """The files each later sync reads (relative paths), in order."""
    seen: list[str] = []
    real = sync_module.read_entity_file

    def spy(paths, rel, *args, **kwargs):
        seen.append(rel)
        return real(paths, rel, *args, **kwargs)

    monkeypatch.setattr(sync_module, "read_entity_file", spy)
    return seen


def equal_to_rebuild(index: Index, store: Store, tmp_path) -> None:
    fresh = Index(store, path=tmp_path / "fresh.sqlite")
    try:
        assert index.dump() == fresh.dump()
        assert index.counts() == fresh.counts()
    finally:
        fresh.close()


def stamp(path: os.PathLike, ns: int) -> None:
    os.utime(path, ns=(ns, ns))  # a distinct mtime, as a later edit has


def test_a_folder_that_only_gained_files_has_only_those_read(store, index, monkeypatch, tmp_path):
    pin_fs_clock(monkeypatch, NOTHING_RACY)
    old, new = same_folder_ids(6)[:3], same_folder_ids(6)[3:]
    for i in old:
        store.write("observations", observation(i, f"kept {i}"), durable=False)
    index.sync()
    for i in new:  # a pull: another process writes them
        store.write("observations", observation(i, f"pulled {i}"), durable=False)
    seen = reads(monkeypatch)
    report = index.sync()
    assert (report.added, report.updated, report.removed) == (3, 0, 0)
    ids = [observation(i)["id"] for i in new]
    assert sorted(seen) == sorted(f"observations/{fanout(oid)}/{oid}.json" for oid in ids)
    equal_to_rebuild(index, store, tmp_path)
    seen.clear()
    assert index.sync().unchanged == 6 and seen == []  # recorded whole again


@pytest.mark.parametrize("how", ["same-size edit", "touched", "removed", "replaced"])
def test_a_change_beside_new_files_in_their_folder_is_never_missed(
    store, index, monkeypatch, tmp_path, how
):
    pin_fs_clock(monkeypatch, NOTHING_RACY)
    ids = same_folder_ids(6)
    paths = [
        store.write("observations", observation(i, "alpha"), durable=False)[0] for i in ids[:3]
    ]
    index.sync()
    for i in ids[3:]:
        store.write("observations", observation(i, "pulled"), durable=False)
    victim = paths[1]
    if how == "same-size edit":  # in place: the folder's entries are unchanged by it
        with open(victim, "r+b") as fh:
            raw = fh.read().replace(b"alpha", b"gamma")
            fh.seek(0)
            fh.write(raw)
        stamp(victim, 1_000_000_000_000_000_000)
    elif how == "touched":
        stamp(victim, 1_000_000_000_000_000_000)
    elif how == "removed":
        victim.unlink()
    else:  # removed, and a new file took its place in the count
        victim.unlink()
        store.write("observations", observation(same_folder_ids(1, ids[-1] + 1)[0]), durable=False)
    index.sync()
    equal_to_rebuild(index, store, tmp_path)
    if how == "same-size edit":
        assert index.get(observation(ids[1])["id"]).entity["content"] == "gamma"


# ---------------------------------------------------------------- the other spellings

_RUN = re.compile(r"[^\W_]+(?:[_.\-]*[^\W_]+)*")
_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[^\W\d_])(?<![A-Z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def reference_extra(text: str) -> str:
    """index_extra as its rules say, with no shortcut: every run, every piece, every token."""
    if "_" not in text and "-" not in text and text == text.lower():
        return ""
    if not re.search(r"[^\W_][_\-][^\W_]|[^\W\d_][A-Z]", text):
        return ""
    extra: list[str] = []
    for run in dict.fromkeys(_RUN.findall(text)):
        if not re.search(r"[_\-.]|[^\W_][A-Z]", run):
            continue
        for piece in run.split("."):
            found = _WORD.findall(piece)
            if len(found) > 1:
                extra.append("".join(found).lower())
            for token in found:
                whole = token[:2] in ("0x", "0X")
                parts = [token] if whole else [p for p in _CAMEL.split(token) if p]
                if len(parts) > 1:
                    extra.append(" ".join(parts).lower())
    return " ".join(extra)


NAME_CHARS = "aAbBzZ09_-./ \nÉéßΣσ日"


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.text(NAME_CHARS, max_size=12)
        | st.sampled_from(
            [
                "busyTimeout",
                "busy_timeout",
                "HTTPServer",
                "0xC0000005",
                "utf8Decode",
                "a.b_c",
                "x__y",
            ]
        ),
        max_size=8,
    ).map(" ".join)
)
def test_the_other_spellings_follow_the_plain_rules(text):
    assert tokens.index_extra(text) == reference_extra(text)
