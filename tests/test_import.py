"""kindling import: all-or-nothing checks, merge rules, forgetting, masking, streaming."""

from __future__ import annotations

import copy
import gzip
import io
import os
import sys
import tempfile
from functools import partial
from pathlib import Path

import entities
import orjson
import pytest
from conftest import ALL_RACY, FIXTURES, NOTHING_RACY, pin_fs_clock, run_kindling
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kindling.bundle import format as bundle_format
from kindling.bundle.export import export_bundle
from kindling.bundle.format import parse_bundle
from kindling.bundle.importer import apply_plan, import_bundle, plan_import
from kindling.errors import KindlingError
from kindling.index import bulk
from kindling.index import db as index_db
from kindling.masking import mask_json, mask_text
from kindling.memory import Memory
from kindling.model import OBSERVATION_KINDS, REDACTED_CONTENT
from kindling.store import Store, WrittenFile
from kindling.writer import Writer

BUNDLES = FIXTURES / "bundles"
EXAMPLE = BUNDLES / "formats-example.json"
EXAMPLE_OBS = "9c20f3a1-2b4d-4f8e-9a1c-7e0d5b6f2a33"
NOW = 1750416700000


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and folder under root: the store's exact state."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
        for p in sorted(root.rglob("*"))
    }


def objects(store: Store) -> dict[str, bytes]:
    return {k: v for k, v in tree(store.objects).items() if v is not None}


# This file's observations and capsules: the spec's JWT story in repo my-project.
observation = partial(
    entities.observation,
    kind="error",
    provenance={"file": "auth.ts"},
    ts=1750416064123,
    repoId="my-project",
)
open_capsule = partial(
    entities.capsule, intent="fix the JWT expiry check", openedAt=1750416000000, repoId="my-project"
)


def tombstone(oid: str) -> dict:
    return observation(oid, REDACTED_CONTENT, provenance={}, redacted=True)


def make_bundle(**lists: list[dict]) -> bytes:
    return orjson.dumps(entities.bundle(NOW, **lists))


def export_of(store: Store, **options) -> bytes:
    out = io.BytesIO()
    export_bundle(store, out, exported_at=NOW, **options)
    return out.getvalue()


def populate(store: Store) -> None:
    """Every entity type, a forgotten observation, a pin to it and a summary citing it."""
    store.write("observations", observation("o-1", "token checked in seconds", ts=10))
    store.write("observations", observation("o-2", "fix: multiply by 1000", ts=20))
    store.write("observations", tombstone("o-gone"))
    capsule = open_capsule("cap_1", observationIds=["o-1", "o-2", "o-gone"])
    capsule.update(status="closed", closedAt=1750416600000, summaryId="sum_1")
    store.write("capsules", capsule)
    store.write(
        "summaries",
        {
            "id": "sum_1",
            "content": "JWT expiry compared seconds with milliseconds",
            "confidence": 0.9,
            "evidenceRefs": ["o-2", "o-gone"],
            "capsuleId": "cap_1",
            "ts": 1750416600000,
            "scopeIds": {"repoId": "my-project"},
        },
    )
    for pid, target in (("pin_1", "o-2"), ("pin_gone", "o-gone")):
        store.write(
            "pins",
            {
                "id": pid,
                "targetType": "observation",
                "targetId": target,
                "reason": None,
                "createdAt": 1750416100000,
                "expiresAt": None,
                "scopeIds": {},
            },
        )


@pytest.fixture
def other(tmp_path) -> Memory:
    """A second, empty store to import into."""
    root = tmp_path / "other"
    Store.create(root)
    with Memory(root) as mem:
        yield mem


def counts(report, entity_type: str) -> dict[str, int]:
    return {k: v for k, v in report.counts[entity_type].items() if v}


# ---------------------------------------------------------------- round trips


def test_formats_example_bundle_imports_cleanly(memory):
    bundle = orjson.loads(EXAMPLE.read_bytes())
    report = import_bundle(memory, EXAMPLE.read_bytes())
    for entity_type in ("observations", "capsules", "summaries"):
        assert counts(report, entity_type) == {"added": 1}
        (entity,) = bundle["dataset"][entity_type]
        assert memory.store.load(entity_type, entity["id"]) == entity
    # The example's pin names its target by an abbreviated id ("9c20f3a1-..."), which is in
    # neither the bundle nor the store: reported and skipped, never written dangling.
    assert counts(report, "pins") == {"skipped": 1}
    assert report.skipped[0]["id"] == "pin_4d5e..."
    assert "9c20f3a1-..." in report.skipped[0]["reason"]
    assert not memory.store.path_for("pins", "pin_4d5e...").exists()
    assert report.masked == 0 and report.written == 3


@pytest.mark.parametrize("include_redacted", [False, True])
def test_export_import_export_round_trip(memory, other, include_redacted):
    populate(memory.store)
    bundle = export_of(memory.store, include_redacted=include_redacted)
    report = import_bundle(other, bundle)
    assert report.conflicts == [] and report.skipped == []
    assert export_of(other.store, include_redacted=include_redacted) == bundle
    original, copied = objects(memory.store), objects(other.store)
    left_out = (
        set() if include_redacted else {k for k in original if "o-gone" in k or "pin_gone" in k}
    )
    assert set(copied) == set(original) - left_out
    assert all(copied[k] == original[k] for k in copied)  # byte-identical files


def test_importing_the_same_bundle_twice_changes_nothing(memory, other):
    populate(memory.store)
    bundle = export_of(memory.store, include_redacted=True)
    import_bundle(other, bundle)
    before = tree(other.store.root)
    report = import_bundle(other, bundle)
    assert report.written == 0
    assert {t: counts(report, t) for t in report.counts} == {
        "observations": {"unchanged": 3},
        "capsules": {"unchanged": 1},
        "summaries": {"unchanged": 1},
        "pins": {"unchanged": 2},
    }
    assert tree(other.store.root) == before


@pytest.mark.parametrize("through", ["memory", "module"])
def test_no_caller_keeps_the_bundle_bytes_alive_while_the_import_writes(other, through):
    size = len(EXAMPLE.read_bytes())
    holders = []

    def progress(label, total):
        if label == "Writing":
            frame = sys._getframe()
            while frame is not None:
                holders.extend(
                    f"{frame.f_code.co_name}: {name}"
                    for name, value in frame.f_locals.items()
                    if isinstance(value, bytes) and len(value) == size
                )
                frame = frame.f_back
        return lambda n: None

    if through == "memory":
        report = other.import_bundle(EXAMPLE.read_bytes(), progress=progress)
    else:
        report = import_bundle(other, EXAMPLE.read_bytes(), progress=progress)
    assert report.written == 3 and holders == []


def test_the_import_is_indexed_as_written_without_a_sync(other, monkeypatch):
    monkeypatch.setattr(other, "sync", lambda *a: pytest.fail("a sync reads every file back"))
    monkeypatch.setattr(Writer, "write", lambda *a: pytest.fail("indexed file by file"))
    import_bundle(other, EXAMPLE.read_bytes())
    assert [o["id"] for o in other.index.entities("observations")] == [EXAMPLE_OBS]
    monkeypatch.undo()
    assert [o["id"] for o in other.list("observations")] == [EXAMPLE_OBS]


def test_files_unchanged_since_their_rename_are_recorded_without_a_read_back(other, monkeypatch):
    monkeypatch.setattr(index_db, "read_file_at", lambda *a, **k: pytest.fail("read back"))
    pin_fs_clock(monkeypatch, ALL_RACY)
    import_bundle(other, EXAMPLE.read_bytes())
    assert [o["id"] for o in other.index.entities("observations")] == [EXAMPLE_OBS]
    # Recorded within the clock tick of their write: the next sync reads them again.
    assert {row[0] for row in other.index.conn.execute("SELECT statkey FROM files")} == {""}


def test_a_file_replaced_after_its_rename_is_read_back_and_the_disk_wins(other):
    path = other.store.entity_path("observations", "o-1")
    stored = other.store.write_checked(path, observation("o-1", "first"))
    assert stored.stat is not None and stored.stat.ino == os.lstat(path).st_ino
    other.store.write("observations", observation("o-1", "replaced at once"))
    other.index.record_many([WrittenFile("observations", path, stored.data, None, stored.stat)])
    (found,) = other.index.entities("observations")
    assert found["content"] == "replaced at once"


def test_a_recorded_file_past_its_clock_tick_gets_a_trusted_stat_key(other, monkeypatch):
    path = other.store.entity_path("observations", "o-1")
    data, stat = other.store.write_checked(path, observation("o-1"))[1:]
    paths = other.index.paths
    rel = paths.rel(path)
    entity = orjson.loads(data)
    pin_fs_clock(monkeypatch, max(stat.mtime_ns, stat.ctime_ns))
    read = bulk.written_read(paths, rel, "observations", data, entity, stat)
    assert read is not None and read.statkey == "" and read.data == data
    pin_fs_clock(monkeypatch, NOTHING_RACY)  # the write's clock tick is over
    read = bulk.written_read(paths, rel, "observations", data, entity, stat)
    assert read is not None and read.statkey.endswith(f":{stat.ino}")
    with open(path, "ab") as fh:  # changed in place: the same inode, another size
        fh.write(b" ")
    assert bulk.written_read(paths, rel, "observations", data, entity, stat) is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(OBSERVATION_KINDS),
            st.text(min_size=1, max_size=40).filter(str.strip),
            st.integers(min_value=0, max_value=253_402_300_799_999),
            st.dictionaries(st.sampled_from(["sessionId", "repoId"]), st.sampled_from(["a", "b"])),
            st.dictionaries(st.text(max_size=5), st.text(max_size=10), max_size=2),
        ),
        max_size=6,
    )
)
def test_round_trip_of_any_observations(items):
    with tempfile.TemporaryDirectory() as tmp:
        source = Store.create(Path(tmp) / "a")
        for i, (kind, content, ts, scope, provenance) in enumerate(items):
            # Stored content has been through capture's masking already.
            entity = observation(
                f"o-{i}",
                mask_text(content)[0],
                kind=kind,
                ts=ts,
                scopeIds=scope,
                provenance=mask_json(provenance)[0],
            )
            source.write("observations", entity)
        bundle = export_of(source)
        with Memory(Store.create(Path(tmp) / "b").root) as target:
            report = import_bundle(target, bundle)
            assert report.masked == 0
            assert objects(target.store) == objects(source)
            assert export_of(target.store) == bundle


# ---------------------------------------------------------------- bad bundles change nothing


BAD = [
    ("bad-bundle-version.json", ["unsupported bundle version", "bundleVersion", "'2.0'"]),
    ("bad-dataset-version.json", ["unsupported bundle version", "dataset.version", "'9.9'"]),
    ("bad-id.json", ["observations[0]", "'../x'", "id must be an id"]),
    ("bad-duplicate-id.json", ["observations[1]", EXAMPLE_OBS, "duplicate of observations[0]"]),
    ("bad-missing-field.json", ["observations[0]", EXAMPLE_OBS, "ts is missing"]),
    ("bad-unknown-kind.json", ["observations[0]", "kind must be one of", "'telepathy'"]),
    ("bad-pin-target-id.json", ["pins[0] (id pin_4d5e...)", "targetId must be an id"]),
    ("bad-missing-list.json", ["dataset.pins is missing"]),
    ("bad-truncated.json", ["not valid JSON"]),
    ("bad-empty.json", ["the input is empty"]),
]


@pytest.mark.parametrize(("name", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_bundle_exits_1_and_leaves_everything_byte_identical(
    memory, run, tmp_path, name, expected
):
    populate(memory.store)
    import_bundle(memory, EXAMPLE.read_bytes())
    before = tree(tmp_path)
    result = run("import", str(BUNDLES / name))
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ")
    for fragment in expected:
        assert fragment in result.stderr
    assert isinstance(result.exception, SystemExit), result.exception
    assert tree(tmp_path) == before


def test_all_problems_are_listed_at_once():
    bundle = orjson.loads(make_bundle(observations=[observation("a"), observation("b")]))
    bundle["dataset"]["observations"][0]["kind"] = "nope"
    del bundle["dataset"]["observations"][1]["content"]
    bundle["dataset"]["capsules"] = [{"id": "cap_x"}]
    with pytest.raises(KindlingError) as info:
        parse_bundle(orjson.dumps(bundle))
    message = str(info.value)
    assert "observations[0] (id a): kind must be one of" in message
    assert "observations[1] (id b): content is missing" in message
    assert "capsules[0] (id cap_x): intent is missing" in message


def test_unknown_fields_and_bad_header_values_are_refused():
    bundle = orjson.loads(make_bundle(observations=[observation("a", mood="sunny")]))
    bundle["exportedAt"] = "yesterday"
    bundle["dataset"]["scope"] = {"repo": "x"}
    with pytest.raises(KindlingError) as info:
        parse_bundle(orjson.dumps(bundle))
    message = str(info.value)
    assert "observations[0] (id a): mood is not a field" in message
    assert "exportedAt must be an integer" in message
    assert "dataset.scope.repo is not a scope field" in message


# ---------------------------------------------------------------- merge rules


def test_on_conflict_keep_reports_and_keeps_the_local_copy(memory):
    memory.store.write("observations", observation("o-1", "ours"))
    before = tree(memory.store.root)
    report = import_bundle(memory, make_bundle(observations=[observation("o-1", "theirs")]))
    assert counts(report, "observations") == {"conflicts": 1}
    assert report.conflicts == [
        {"type": "observation", "id": "o-1", "fields": ["content"], "kept": "local"}
    ]
    assert tree(memory.store.root) == before
    assert "  observation o-1: content (local copy kept)" in report.lines()


def test_on_conflict_theirs_takes_the_bundle_values(memory):
    memory.store.write("observations", observation("o-1", "ours"))
    report = import_bundle(
        memory, make_bundle(observations=[observation("o-1", "theirs")]), on_conflict="theirs"
    )
    assert counts(report, "observations") == {"conflicts": 1}
    assert report.conflicts[0]["kept"] == "bundle"
    assert memory.store.load("observations", "o-1")["content"] == "theirs"


def test_on_conflict_fail_writes_nothing(memory, run, tmp_path):
    memory.store.write("observations", observation("o-1", "ours"))
    bundle = make_bundle(observations=[observation("o-1", "theirs"), observation("o-new")])
    path = tmp_path / "b.json"
    path.write_bytes(bundle)
    before = tree(tmp_path)
    result = run("import", str(path), "--on-conflict", "fail")
    assert result.exit_code == 1
    assert "1 conflict with local entities" in result.stderr
    assert "observation o-1: content" in result.stderr
    assert tree(tmp_path) == before


def test_capsules_both_sides_appended_to_merge_to_the_union(memory):
    memory.store.write("capsules", open_capsule("cap_1", observationIds=["a", "b"]))
    theirs = open_capsule("cap_1", observationIds=["a", "c"])
    theirs.update(status="closed", closedAt=1750416600000)
    report = import_bundle(memory, make_bundle(capsules=[theirs]))
    assert counts(report, "capsules") == {"merged": 1}
    merged = memory.store.load("capsules", "cap_1")
    assert merged["observationIds"] == ["a", "b", "c"]
    assert merged["status"] == "closed"
    again = import_bundle(memory, make_bundle(capsules=[theirs]))
    assert counts(again, "capsules") == {"unchanged": 1}


def test_a_change_made_while_importing_is_decided_again(memory):
    bundle = parse_bundle(make_bundle(observations=[observation("o-1", "theirs")]))
    decisions = plan_import(memory.store, bundle)
    assert [d.outcome for d in decisions] == ["added"]
    memory.store.write("observations", observation("o-1", "written meanwhile"))
    final = apply_plan(memory.store, decisions)
    assert [d.outcome for d in final] == ["conflicts"]
    assert memory.store.load("observations", "o-1")["content"] == "written meanwhile"


# ---------------------------------------------------------------- forgetting


def test_a_tombstone_redacts_the_local_observation(memory):
    memory.store.write("observations", observation("o-1", "secret-ish detail"))
    report = import_bundle(memory, make_bundle(observations=[tombstone("o-1")]))
    assert counts(report, "observations") == {"redacted": 1}
    local = memory.store.load("observations", "o-1")
    assert local == tombstone("o-1")
    assert counts(
        import_bundle(memory, make_bundle(observations=[tombstone("o-1")])), "observations"
    ) == {"unchanged": 1}


@pytest.mark.parametrize("on_conflict", ["keep", "theirs", "fail"])
def test_an_import_never_unredacts(memory, on_conflict):
    memory.store.write("observations", tombstone("o-1"))
    before = tree(memory.store.root)
    report = import_bundle(
        memory,
        make_bundle(observations=[observation("o-1", "the old content")]),
        on_conflict=on_conflict,
    )
    assert counts(report, "observations") == {"skipped": 1}
    assert report.skipped == [
        {"type": "observation", "id": "o-1", "reason": "forgotten here; stays redacted"}
    ]
    assert tree(memory.store.root) == before


def test_a_tombstone_never_carries_provenance_in(memory):
    leaky = tombstone("o-1")
    leaky["provenance"] = {"stack": "the old content"}
    import_bundle(memory, make_bundle(observations=[leaky]))
    assert memory.store.load("observations", "o-1") == tombstone("o-1")


# ---------------------------------------------------------------- masking, dry run


def test_secrets_are_masked_on_the_way_in_and_counted(memory):
    leaky = observation(
        "o-1",
        "curl -H 'Authorization: Bearer abcdef123456'",
        provenance={"env": "API_KEY=sk-live-0123456789abcdef"},
    )
    report = import_bundle(memory, make_bundle(observations=[leaky]))
    assert report.masked == 2
    stored = memory.store.load("observations", "o-1")
    assert "abcdef123456" not in stored["content"] and "[REDACTED]" in stored["content"]
    assert "sk-live" not in str(stored["provenance"])
    assert "2 secrets were masked on the way in." in report.lines()
    again = import_bundle(memory, make_bundle(observations=[leaky]))
    assert again.masked == 0 and counts(again, "observations") == {"unchanged": 1}


def test_dry_run_reports_the_same_and_writes_nothing(memory, other, tmp_path):
    populate(memory.store)
    bundle = export_of(memory.store, include_redacted=True)
    other.store.write("observations", observation("o-1", "ours"))
    before = tree(tmp_path)
    dry = import_bundle(other, bundle, dry_run=True)
    assert tree(tmp_path) == before
    real = import_bundle(other, bundle)
    assert dry._replace(dry_run=False) == real
    assert dry.lines()[0] == "Dry run: nothing was written."


# ---------------------------------------------------------------- the command, streaming


def test_cli_import_from_stdin_with_json_report(run, store_dir):
    result = run("import", "-", "--json", input=EXAMPLE.read_bytes())
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout_bytes)
    assert report["counts"]["observations"]["added"] == 1
    assert report["written"] == 3 and report["dryRun"] is False  # the example's pin dangles
    assert Store.open(store_dir).load("observations", EXAMPLE_OBS) is not None


def test_cli_import_gzip_and_human_report(run, tmp_path):
    path = tmp_path / "memory.json.gz"
    path.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    result = run("import", str(path), "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:4] == [
        "Dry run: nothing was written.",
        "",
        "                  added  unchanged     merged   redacted  conflicts    skipped",
        "observations          1          0          0          0          0          0",
    ]


def test_cli_missing_file_is_an_error(run, tmp_path):
    result = run("import", str(tmp_path / "nope.json"))
    assert result.exit_code == 1
    assert "cannot read" in result.stderr


def test_export_pipes_into_import_between_processes(tmp_path):
    source, target = tmp_path / "a", tmp_path / "b"
    Store.create(target)
    populate(Store.create(source))
    env = {"KINDLING_NOW": str(NOW)}
    exported = run_kindling("--store", str(source), "export", env=env)
    assert exported.returncode == 0, exported.stderr
    imported = run_kindling(
        "--store", str(target), "import", "-", "--json", input=exported.stdout, env=env
    )
    assert imported.returncode == 0, imported.stderr
    assert orjson.loads(imported.stdout)["written"] == 5
    again = run_kindling("--store", str(target), "export", env=env)
    assert again.stdout == exported.stdout


def test_the_bundle_bytes_are_not_modified_by_import(memory):
    data = EXAMPLE.read_bytes()
    bundle = parse_bundle(data)
    snapshot = copy.deepcopy(bundle.entities)
    import_bundle(memory, bundle)
    assert bundle.entities == snapshot


def test_progress_hears_each_stage(other):
    stages = []

    def progress(label, total):
        stages.append([label, total, 0])

        def advance(n):
            stages[-1][2] += n

        return advance

    import_bundle(other, EXAMPLE.read_bytes(), progress=progress)
    assert stages == [["Checking", 4, 4], ["Writing", 3, 3]]  # the example's pin dangles
    stages.clear()
    import_bundle(other, EXAMPLE.read_bytes(), progress=progress)
    assert stages == [["Checking", 4, 4]]


def test_a_crash_half_way_leaves_whole_files_and_a_rerun_finishes(memory, other, monkeypatch):
    populate(memory.store)
    bundle = export_of(memory.store, include_redacted=True)
    real_replace = os.replace
    temps = []

    def dying_replace(src, dst, *args, **kwargs):
        if str(dst).startswith(str(other.store.objects)):
            temps.append(Path(src))
            if len(temps) == 4:
                # stopped with the fourth file's bytes in its temp file, not yet renamed
                assert temps[-1].is_file() and temps[-1].name.endswith(".tmp")
                raise KeyboardInterrupt
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt):
        import_bundle(other, bundle)
    monkeypatch.undo()
    assert len(temps) == 4
    written = objects(other.store)
    assert len(written) == 3
    assert all(written[k] == objects(memory.store)[k] for k in written)
    assert not temps[-1].exists()
    assert not [p for p in other.store.objects.rglob("*") if p.name.endswith(".tmp")]
    report = import_bundle(other, bundle)
    assert report.written == 4 and report.conflicts == []
    assert objects(other.store) == objects(memory.store)


def test_a_big_bundle_is_parsed_line_by_line_to_the_same_value(memory, monkeypatch):
    populate(memory.store)
    bundle = export_of(memory.store, include_redacted=True)
    assert bundle_format._loads_in_pieces(bundle) == orjson.loads(bundle)
    # Any other layout (or a marker-like string of its own) is parsed whole, the same value.
    for other_layout in (
        bundle.replace(b"},\n", b"},\n\n", 1),
        bundle.replace(b"}\n", b"},\n", 1),
        orjson.dumps(orjson.loads(bundle)),
        bundle.replace(b'"o-1"', b'"0000000000000000-0"'),
    ):
        pieces = bundle_format._loads_in_pieces(other_layout)
        assert pieces is None or pieces == orjson.loads(other_layout)
    monkeypatch.setattr(bundle_format, "_PIECES_FROM", 0)
    broken = bundle.replace(b'"kind":"error"', b'"kind":"error\x0b"', 1)
    with pytest.raises(KindlingError, match="invalid bundle: not valid JSON"):
        bundle_format.decode_bundle(broken)
    assert bundle_format.decode_bundle(bundle) == orjson.loads(bundle)
