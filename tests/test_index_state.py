"""The incrementally kept index equals a full rebuild after any sequence of changes to the files:
Kindling's own writes (recorded at once), other processes' writes, deletions, hand edits
(valid, non-canonical, conflicted, truncated), duplicated files and branch switches."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import NOTHING_RACY
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from kindling import canonical
from kindling.index import Index, fsclock
from kindling.index import sync as sync_module
from kindling.index.db import remove_index_files
from kindling.search.retrieve import retrieve
from kindling.store import Store

NOW = 1_750_000_000_000
WORDS = ["token", "expired", "jwt", "cache", "auth", "flag", "retry", "parser"]
IDS = {
    "observations": [f"obs-{n}" for n in range(6)],
    "summaries": [f"sum_{n}" for n in range(3)],
    "capsules": [f"cap_{n}" for n in range(3)],
    "pins": [f"pin_{n}" for n in range(3)],
}
QUERIES = ["token", "jwt cache", '"token expired"', "auth*", "retry OR parser", ""]

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)
scope = st.fixed_dictionaries({}, optional={"sessionId": st.sampled_from(["s1", "s2"])})


@st.composite
def entities(draw):
    etype = draw(st.sampled_from(sorted(IDS)))
    eid = draw(st.sampled_from(IDS[etype]))
    ts = NOW - draw(st.integers(0, 40)) * 86_400_000
    if etype == "observations":
        redacted = draw(st.booleans())
        entity = {
            "id": eid,
            "kind": draw(st.sampled_from(["message", "error"])),
            "content": "[redacted]" if redacted else draw(text),
            "provenance": {},
            "ts": ts,
            "scopeIds": draw(scope),
            "redacted": redacted,
        }
    elif etype == "summaries":
        entity = {
            "id": eid,
            "content": draw(text),
            "confidence": 0.5,
            "evidenceRefs": [],
            "capsuleId": draw(st.sampled_from(IDS["capsules"])),
            "ts": ts,
            "scopeIds": draw(scope),
        }
    elif etype == "capsules":
        entity = {
            "id": eid,
            "type": "session",
            "intent": draw(text),
            "status": "open",
            "openedAt": ts,
            "scopeIds": draw(scope),
            "observationIds": [],
        }
        if draw(st.booleans()):
            entity.update(status="closed", closedAt=ts + 5)
            entity["summaryId"] = draw(st.sampled_from(IDS["summaries"]))
    else:
        entity = {
            "id": eid,
            "targetType": "observation",
            "targetId": draw(st.sampled_from(IDS["observations"])),
            "reason": draw(st.none() | text),
            "createdAt": ts,
            "expiresAt": draw(st.none() | st.just(NOW - 1) | st.just(NOW + 1)),
            "scopeIds": draw(scope),
        }
    return etype, entity


def check_counts(report) -> None:
    """No count of a sync report is ever negative, whatever was (or was not) walked."""
    counts = (report.added, report.updated, report.removed, report.unchanged)
    assert min(counts) >= 0, counts


class IndexMachine(RuleBasedStateMachine):
    """Random histories of a store, compared after each sync with a rebuild from nothing."""

    trust_stat = False  # True: nothing is racy, so unchanged stat data is believed

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="kindling-state-"))
        self.store = Store.create(self.tmp / ".kindling")
        self.index = Index(self.store)
        self.saved_clock = fsclock.racy_from
        if self.trust_stat:
            fsclock.racy_from = lambda clock, objects: NOTHING_RACY
        self.clock = itertools.count(1_000_000_000_000_000_000, 1_000)

    def teardown(self) -> None:
        try:
            self.index.sync()
            self.check_equal_to_rebuild()
        finally:
            fsclock.racy_from = self.saved_clock
            self.index.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    branches = Bundle("branches")

    # ------------------------------------------------------------ helpers

    def files(self) -> list[Path]:
        return sorted(p for p in self.store.objects.rglob("*.json") if p.is_file())

    def settle(self, path: Path) -> None:
        """With trusted stat data, make sure a change is visible in it (unique mtime)."""
        if self.trust_stat and path.exists():
            stamp = next(self.clock)
            os.utime(path, ns=(stamp, stamp))

    def check_equal_to_rebuild(self) -> None:
        fresh = Index(self.store, path=":memory:")
        try:
            assert self.index.dump() == fresh.dump()
            assert self.index.counts() == fresh.counts()
            assert self.index.problems() == fresh.problems()
            for query in QUERIES:
                for session in (None, "s1"):
                    scope = {"sessionId": session} if session else None
                    ours = retrieve(self.index, query, scope=scope, now=NOW)
                    theirs = retrieve(fresh, query, scope=scope, now=NOW)
                    assert ours == theirs
        finally:
            fresh.close()

    # ------------------------------------------------------------ rules

    @initialize(items=st.lists(entities(), min_size=3, max_size=10))
    def seed(self, items):
        """Start from a store that already holds memory, indexed."""
        for etype, entity in items:
            path, _ = self.store.write(etype, entity, durable=False)
            self.settle(path)
        self.index.sync()

    @rule(item=entities(), recorded=st.booleans())
    def write(self, item, recorded):
        """Kindling writes (and records) an entity, or another process writes it."""
        etype, entity = item
        path, data = self.store.write(etype, entity, durable=False)
        self.settle(path)
        if recorded:
            self.index.record(etype, path, data, entity)

    @rule(data=st.data(), dropped=st.booleans())
    def delete(self, data, dropped):
        files = self.files()
        if files:
            path = data.draw(st.sampled_from(files))
            path.unlink()
            if dropped:
                self.index.recheck(path)

    @rule(data=st.data(), how=st.sampled_from(["compact", "same-size", "conflict", "truncate"]))
    def hand_edit(self, data, how):
        """An editor changes a file in place."""
        files = self.files()
        if not files:
            return
        path = data.draw(st.sampled_from(files))
        raw = path.read_bytes()
        if how == "compact":
            try:
                new = canonical.encode_compact(canonical.decode(raw))
            except canonical.DecodeError:
                new = raw + b" "
        elif how == "same-size":
            word = data.draw(st.sampled_from(WORDS))
            new = raw
            for other in WORDS:
                if len(other) == len(word) and other != word and other.encode() in raw:
                    new = raw.replace(other.encode(), word.encode(), 1)
                    break
        elif how == "conflict":
            new = b"<<<<<<< ours\n" + raw + b"=======\n" + raw + b">>>>>>> theirs\n"
        else:
            new = raw[: len(raw) // 2]
        with open(path, "r+b") as fh:
            fh.write(new)
            fh.truncate()
        self.settle(path)

    @rule(data=st.data())
    def duplicate(self, data):
        """The same id ends up in a second file (a bad merge, a copy by hand)."""
        files = self.files()
        if files:
            source = data.draw(st.sampled_from(files))
            target = source.parent.parent / "zz" / f"copy-{source.name}"
            target.parent.mkdir(exist_ok=True)
            shutil.copyfile(source, target)
            self.settle(target)

    @rule(target=branches)
    def save_branch(self):
        return {p.relative_to(self.store.objects): p.read_bytes() for p in self.files()}

    @rule(branch=branches)
    def checkout(self, branch):
        """Switch the tree to a saved state, as `git checkout` does: unlink, then create."""
        for path in self.files():
            if path.relative_to(self.store.objects) not in branch:
                path.unlink()
        for rel, raw in branch.items():
            path = self.store.objects / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and path.read_bytes() == raw:
                continue
            if path.exists():
                path.unlink()
            path.write_bytes(raw)
            self.settle(path)

    @rule(items=st.lists(entities(), min_size=1, max_size=4), data=st.data())
    def pull(self, items, data):
        """Files arrive from elsewhere (a pull) while one already there changes in place or
        goes (hand work not yet committed); the next sync sees both."""
        files = self.files()
        for etype, entity in items:
            path, _ = self.store.write(etype, entity, durable=False)
            self.settle(path)
        how = data.draw(st.sampled_from(["nothing", "edit", "delete"]))
        if files and how != "nothing":
            path = data.draw(st.sampled_from(files))
            if how == "delete":
                path.unlink(missing_ok=True)
            elif path.exists():
                with open(path, "ab") as fh:
                    fh.write(b" ")
                self.settle(path)
        check_counts(self.index.sync())
        self.check_equal_to_rebuild()

    @rule()
    def sync(self):
        check_counts(self.index.sync())
        self.check_equal_to_rebuild()

    @rule(data=st.data())
    def refresh(self, data):
        """A watcher's hint: re-check only the folder of one file (or of a vanished one)."""
        files = self.files()
        if files:
            check_counts(self.index.refresh([data.draw(st.sampled_from(files))]))

    @rule()
    def rebuild(self):
        check_counts(self.index.rebuild())

    @rule(chunk=st.integers(1, 3), anew=st.booleans())
    def stopped_sync(self, chunk, anew):
        """A sync stopped at its deadline after one chunk (a hook's time budget), perhaps the
        first of an index built from nothing (a fresh clone, a killed build): what it
        applied stays and the next syncs go on from there."""
        if anew:
            path = self.index.path
            self.index.close()
            remove_index_files(path)
            self.index = Index(self.store, deadline=0.0)  # only created: nothing read yet
            assert self.index.building
        saved = sync_module.DEADLINE_CHUNK
        sync_module.DEADLINE_CHUNK = chunk
        self.index.deadline = 0.0  # long past: one chunk, then stop
        try:
            check_counts(self.index.sync())
        finally:
            self.index.deadline = None
            sync_module.DEADLINE_CHUNK = saved

    @invariant()
    def lookups_never_fail(self):
        self.index.counts()
        self.index.match_prefix("obs")


class TrustedStatMachine(IndexMachine):
    trust_stat = True


_settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestIncrementalEqualsRebuild = pytest.mark.slow(IndexMachine.TestCase)
TestIncrementalEqualsRebuild.settings = _settings
TestIncrementalEqualsRebuildTrustingStat = pytest.mark.slow(TrustedStatMachine.TestCase)
TestIncrementalEqualsRebuildTrustingStat.settings = _settings
