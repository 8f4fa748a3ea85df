"""kindling export: bundle shape, deterministic bytes, order, forgetting, scope, streaming."""

from __future__ import annotations

import io
import os

import orjson
import pytest
from click.testing import CliRunner
from entities import capsule, observation, pin, summary

from kindling.bundle.export import describe, export_bundle, export_to_path
from kindling.bundle.format import iso_utc
from kindling.cli import cli
from kindling.errors import ValidationError
from kindling.model import REDACTED_CONTENT
from kindling.store import Store

NOW = 1750416700000


def noted(oid: str, ts: int, **scope: str) -> dict:
    """An error whose content and provenance follow from its id and time (non-ASCII on purpose)."""
    content = f"observation {oid} — naïve ünïcode"
    provenance = {"file": f"{oid}.ts", "line": ts % 97}
    return observation(oid, content, kind="error", ts=ts, provenance=provenance, **scope)


def closed(cid: str, opened: int, members: list[str], **scope: str) -> dict:
    """A closed capsule with its summary `sum_<cid>`."""
    return capsule(
        cid,
        intent=f"work in {cid}",
        openedAt=opened,
        closedAt=opened + 100,
        observationIds=members,
        summaryId=f"sum_{cid}",
        **scope,
    )


SUMMARY = {"confidence": 0.85, "ts": 105}
PIN = {"reason": "keep handy"}


def populate(store: Store) -> None:
    """A small store with ties in time, two repos, a forgotten observation and a pin to it."""
    gone = {"kind": "error", "ts": 15, "redacted": True, "repoId": "web", "sessionId": "s1"}
    for entity_type, entity in [
        ("observations", noted("o-b", 20, repoId="web", sessionId="s1")),
        ("observations", noted("o-a", 20, repoId="web", sessionId="s1")),
        ("observations", noted("o-c", 10, repoId="api", sessionId="s2")),
        ("observations", observation("o-gone", REDACTED_CONTENT, **gone)),
        ("capsules", closed("cap_2", 5, ["o-c"], repoId="api")),
        ("capsules", closed("cap_1", 5, ["o-a", "o-b", "o-gone"], repoId="web")),
        (
            "summaries",
            summary(
                "sum_cap_1",
                "summary of cap_1",
                **SUMMARY,
                repoId="web",
                capsuleId="cap_1",
                evidenceRefs=["o-a", "o-gone"],
            ),
        ),
        (
            "summaries",
            summary(
                "sum_cap_2",
                "summary of cap_2",
                **SUMMARY,
                repoId="api",
                capsuleId="cap_2",
                evidenceRefs=["o-c"],
            ),
        ),
        ("pins", pin("pin_x", "o-a", createdAt=30, **PIN, sessionId="s1")),
        ("pins", pin("pin_gone", "o-gone", createdAt=31, **PIN, sessionId="s1")),
        ("pins", pin("pin_any", "sum_cap_2", createdAt=29, **PIN, targetType="summary")),
        ("pins", pin("pin_api", "o-c", createdAt=32, **PIN, repoId="api")),
    ]:
        store.write(entity_type, entity)


def export(store: Store, **options) -> bytes:
    out = io.BytesIO()
    export_bundle(store, out, exported_at=NOW, **options)
    return out.getvalue()


def ids(bundle: bytes, entity_type: str) -> list[str]:
    return [e["id"] for e in orjson.loads(bundle)["dataset"][entity_type]]


@pytest.fixture
def store(store_dir) -> Store:
    s = Store.open(store_dir)
    populate(s)
    return s


def test_bundle_has_the_formats_shape_field_for_field(store):
    bundle = orjson.loads(export(store))
    assert list(bundle) == ["bundleVersion", "exportedAt", "dataset", "metadata"]
    assert bundle["bundleVersion"] == "1.0"
    assert bundle["exportedAt"] == NOW
    dataset = bundle["dataset"]
    assert list(dataset) == [
        "version",
        "exportedAt",
        "observations",
        "capsules",
        "summaries",
        "pins",
    ]
    assert dataset["version"] == "1.0" and dataset["exportedAt"] == NOW
    assert bundle["metadata"] == {
        "description": "Kindling memory export",
        "exportedAt": "2025-06-20T10:51:40.000Z",
    }


def test_entities_are_exactly_the_stored_records(store):
    dataset = orjson.loads(export(store))["dataset"]
    for entity_type in ("observations", "capsules", "summaries", "pins"):
        for entity in dataset[entity_type]:
            assert entity == store.load(entity_type, entity["id"])


def test_entities_are_ordered_by_time_then_id(store):
    bundle = export(store)
    assert ids(bundle, "observations") == ["o-c", "o-a", "o-b"]
    assert ids(bundle, "capsules") == ["cap_1", "cap_2"]
    assert ids(bundle, "summaries") == ["sum_cap_1", "sum_cap_2"]
    assert ids(bundle, "pins") == ["pin_any", "pin_x", "pin_api"]


def test_two_exports_are_byte_identical_and_one_entity_per_line(store):
    first = export(store)
    assert first == export(store)
    lines = first.decode().splitlines()
    assert lines[:6] == [
        "{",
        '  "bundleVersion": "1.0",',
        f'  "exportedAt": {NOW},',
        '  "dataset": {',
        '    "version": "1.0",',
        f'    "exportedAt": {NOW},',
    ]
    assert lines[7].startswith('      {"content":"observation o-c')
    assert first.endswith(b"}\n")


def test_exported_at_comes_from_the_clock(store, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", "1750417500123")
    out = io.BytesIO()
    report = export_bundle(store, out)
    bundle = orjson.loads(out.getvalue())
    assert report.exported_at == bundle["exportedAt"] == bundle["dataset"]["exportedAt"]
    assert bundle["metadata"]["exportedAt"] == "2025-06-20T11:05:00.123Z"


@pytest.mark.parametrize(
    ("ms", "iso"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (1750417500000, "2025-06-20T11:05:00.000Z"),
        (1750417500007, "2025-06-20T11:05:00.007Z"),
    ],
)
def test_iso_utc(ms, iso):
    assert iso_utc(ms) == iso


def test_forgotten_observations_and_their_pins_are_left_out(store):
    bundle = export(store)
    assert "o-gone" not in ids(bundle, "observations")
    assert "pin_gone" not in ids(bundle, "pins")
    assert b"o-gone" in bundle  # capsule membership and evidence are kept
    cap = next(c for c in orjson.loads(bundle)["dataset"]["capsules"] if c["id"] == "cap_1")
    assert cap["observationIds"] == ["o-a", "o-b", "o-gone"]


def test_include_redacted_exports_tombstones(store):
    bundle = export(store, include_redacted=True)
    assert ids(bundle, "observations") == ["o-c", "o-gone", "o-a", "o-b"]
    assert "pin_gone" in ids(bundle, "pins")
    tomb = orjson.loads(bundle)["dataset"]["observations"][1]
    assert tomb["redacted"] is True and tomb["content"] == REDACTED_CONTENT


def test_scope_filter_uses_the_search_rule_per_type(store):
    bundle = export(store, scope={"repoId": "web"})
    dataset = orjson.loads(bundle)["dataset"]
    assert dataset["scope"] == {"repoId": "web"}
    assert list(dataset)[2] == "scope"
    assert ids(bundle, "observations") == ["o-a", "o-b"]
    assert ids(bundle, "capsules") == ["cap_1"]
    assert ids(bundle, "summaries") == ["sum_cap_1"]
    # Pins match a scope field they carry, or one they do not carry at all.
    assert ids(bundle, "pins") == ["pin_any", "pin_x"]


def test_scope_filter_with_two_fields_needs_both(store):
    bundle = export(store, scope={"repoId": "web", "sessionId": "s2"})
    assert ids(bundle, "observations") == []
    assert ids(bundle, "capsules") == []
    assert ids(bundle, "pins") == ["pin_any"]


def test_bad_scope_is_refused(store):
    with pytest.raises(ValidationError, match="colour"):
        export(store, scope={"colour": "red"})


def test_empty_store_exports_empty_lists(store_dir):
    dataset = orjson.loads(export(Store.open(store_dir)))["dataset"]
    assert [dataset[t] for t in ("observations", "capsules", "summaries", "pins")] == [[]] * 4


def test_unreadable_files_are_left_out_and_reported(store):
    bad = store.path_for("observations", "o-broken")
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(b"<<<<<<< ours\n{}\n")
    misplaced = store.objects / "observations" / "zz" / "o-a.json"
    misplaced.parent.mkdir()
    misplaced.write_bytes(store.path_for("observations", "o-a").read_bytes())
    out = io.BytesIO()
    report = export_bundle(store, out, exported_at=NOW)
    assert ids(out.getvalue(), "observations") == ["o-c", "o-a", "o-b"]
    reasons = {p.path: p.reason for p in report.problems}
    assert sorted(reasons) == sorted([str(bad), str(misplaced)])
    assert "conflict markers" in reasons[str(bad)]
    assert "belongs elsewhere" in reasons[str(misplaced)]


def test_export_to_path_is_atomic_and_replaces(store, tmp_path):
    target = tmp_path / "out" / "memory.json"
    target.parent.mkdir()
    target.write_text("old")
    report = export_to_path(store, target, exported_at=NOW)
    assert target.read_bytes() == export(store)
    assert os.listdir(target.parent) == ["memory.json"]
    assert describe(report) == "Exported 3 observations, 2 capsules, 2 summaries and 3 pins."


def test_export_to_path_failure_leaves_no_temp_file(store, tmp_path, monkeypatch):
    target = tmp_path / "memory.json"

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("kindling.bundle.export.os.fsync", boom)
    with pytest.raises(OSError):
        export_to_path(store, target, exported_at=NOW)
    assert list(tmp_path.iterdir()) == [store.root]


# ---------------------------------------------------------------- the command


def test_cli_export_to_stdout_matches_the_library(store, run, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", str(NOW))
    result = run("export")
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == export(store)


def test_cli_export_scope_and_output_file(store, run, tmp_path, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", str(NOW))
    target = tmp_path / "web.json"
    result = run("export", "--repo", "web", "-o", str(target))
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == b""
    assert "Exported 2 observations, 1 capsule, 1 summary and 2 pins." in result.stderr
    assert target.read_bytes() == export(store, scope={"repoId": "web"})


def test_cli_export_include_redacted(store, run, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", str(NOW))
    result = run("export", "--include-redacted", "--session", "s1")
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == export(store, include_redacted=True, scope={"sessionId": "s1"})


def test_cli_export_warns_about_unreadable_files(store, run):
    bad = store.path_for("capsules", "cap_bad")
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(b"not json")
    result = run("export")
    assert result.exit_code == 0
    assert "1 entity file could not be read" in result.stderr
    assert str(bad) in result.stderr


def test_cli_export_without_a_store_is_an_error(tmp_path):
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "nothing"), "export"])
    assert result.exit_code == 1
    assert "Error: no Kindling store" in result.output
