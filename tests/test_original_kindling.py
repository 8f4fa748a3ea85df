"""Meeting users of the original Kindling (TypeScript, later Rust): its bundles import and search,
its plugin's hook commands run, and `export --format original` writes what its importers read.

The fixtures follow the shape both originals write (their exportDatabase / ExportBundle):
summaries with createdAt and no ts/scopeIds, pins without reason/expiresAt when null, capsules
that never name their summary, and the Claude Code capture's absolute working directory as the
repoId.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import orjson
import pytest
import tomllib
from conftest import FIXTURES, REPO_ROOT, run_kindling

from kindling import canonical
from kindling.bundle.importer import import_bundle
from kindling.bundle.original import (
    CAPSULE_SUMMARY,
    PIN_EXPIRES,
    PIN_REASON,
    SUMMARY_SCOPE,
    SUMMARY_TS,
)
from kindling.model import (
    CAPSULE_STATUSES,
    CAPSULE_TYPES,
    ENTITY_TYPES,
    OBSERVATION_KINDS,
    PIN_TARGET_TYPES,
    SCOPE_KEYS,
    entity_errors,
)
from kindling.store import Store

TS = FIXTURES / "bundles" / "original-ts-demo.json"
RUST = FIXTURES / "bundles" / "original-rust-demo.json"
TS_REPO = "/home/dev/acme-api"
RUST_REPO = "/home/dev/billing-svc"


def load(path) -> dict:
    return orjson.loads(path.read_bytes())


def stored(store_dir, entity_type: str) -> list[dict]:
    store = Store.open(store_dir)
    return [
        Store.parse_entity(entity_type, f.path, open(f.path, "rb").read())
        for f in store.walk(entity_type)
    ]


def assert_every_file_canonical(store_dir):
    """Each file is valid, and byte for byte what the canonical encoder writes."""
    store = Store.open(store_dir)
    for etype in ENTITY_TYPES:
        for found in store.walk(etype):
            data = open(found.path, "rb").read()
            entity = canonical.decode(data)
            assert entity_errors(etype, entity) == [], found.path
            assert canonical.encode(entity) == data, found.path


# ---------------------------------------------------------------- importing the original's bundles


@pytest.mark.parametrize("fixture", [TS, RUST], ids=["typescript", "rust"])
def test_original_bundle_imports_whole_and_canonical(run, store_dir, fixture):
    bundle = load(fixture)["dataset"]
    result = run("import", str(fixture), "--json")
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout_bytes)
    for etype in ("observations", "capsules", "summaries"):
        assert report["counts"][etype]["added"] == len(bundle[etype])
    assert report["normalised"][SUMMARY_TS] == len(bundle["summaries"])
    assert report["normalised"][SUMMARY_SCOPE] == len(bundle["summaries"])
    assert report["normalised"][CAPSULE_SUMMARY] == 1
    assert_every_file_canonical(store_dir)


def test_summaries_pins_and_capsules_are_normalised(run, store_dir):
    assert run("import", str(TS)).exit_code == 0
    original = load(TS)["dataset"]
    (summary,) = stored(store_dir, "summaries")
    (source,) = original["summaries"]
    capsule = next(c for c in original["capsules"] if c["id"] == source["capsuleId"])
    assert summary["ts"] == source["createdAt"] and "createdAt" not in summary
    assert summary["scopeIds"] == capsule["scopeIds"]
    linked = Store.open(store_dir).load("capsules", capsule["id"])
    assert linked["summaryId"] == summary["id"]
    pins = {p["id"]: p for p in stored(store_dir, "pins")}
    bare = pins["e81b4c26-0d3a-4f97-a5c2-7b9e1d3f5a01"]
    assert bare["reason"] is None and bare["expiresAt"] is None
    open_capsule = Store.open(store_dir).load("capsules", "c2a7e3d1-5b64-4e1f-a0d9-6f8b2c4e7a02")
    assert "summaryId" not in open_capsule and "closedAt" not in open_capsule


def test_the_report_says_what_was_normalised(run):
    result = run("import", str(TS))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    start = lines.index("Read from the original Kindling's shape:")
    shown = "\n".join(lines[start:])
    for what, n in ((SUMMARY_TS, 1), (PIN_REASON, 1), (PIN_EXPIRES, 2), (CAPSULE_SUMMARY, 1)):
        assert f"{n:>5}  {what}" in shown


def test_forgotten_capsule_members_are_kept_and_counted(run, store_dir):
    result = run("import", str(TS), "--json")
    report = orjson.loads(result.stdout_bytes)
    forgotten = "3f6c1a52-8d0e-4b7a-9c11-5e2f7a9b0c03"  # listed by the capsule, not exported
    capsule = Store.open(store_dir).load("capsules", "c2a7e3d1-5b64-4e1f-a0d9-6f8b2c4e7a01")
    assert forgotten in capsule["observationIds"]
    assert [v for k, v in report["normalised"].items() if "members" in k] == [1]


def test_a_pin_whose_target_is_nowhere_is_skipped_not_written(run, store_dir):
    result = run("import", str(RUST), "--json")
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout_bytes)
    assert report["counts"]["pins"]["added"] == 1
    assert report["counts"]["pins"]["skipped"] == 1
    (skipped,) = report["skipped"]
    assert skipped["id"] == "0193f1a2-7c4e-7d10-8a2b-3c4d5e6f7d02"
    assert "0193f1a2-7c4e-7d10-8a2b-3c4d5e6f7a99" in skipped["reason"]
    assert not Store.open(store_dir).path_for("pins", skipped["id"]).exists()


def test_a_pin_whose_target_is_already_in_the_store_is_written(memory):
    bundle = load(RUST)
    target = bundle["dataset"]["observations"][1]
    import_bundle(memory, orjson.dumps({**bundle, "dataset": {**bundle["dataset"], "pins": []}}))
    only_pin = {**bundle["dataset"], "observations": [], "capsules": [], "summaries": []}
    only_pin["pins"] = [p for p in only_pin["pins"] if p["targetId"] == target["id"]]
    report = import_bundle(memory, orjson.dumps({**bundle, "dataset": only_pin}))
    assert report.counts["pins"]["added"] == 1


def test_importing_again_changes_nothing(memory):
    import_bundle(memory, TS.read_bytes())
    again = import_bundle(memory, TS.read_bytes())
    assert again.written == 0
    assert all(again.counts[t]["added"] == 0 for t in ENTITY_TYPES)


@pytest.mark.parametrize(
    ("fixture", "repo", "query"),
    [(TS, TS_REPO, "orders"), (RUST, RUST_REPO, "rounding")],
    ids=["typescript", "rust"],
)
def test_imported_memory_searches_with_the_stored_repo_id(run, fixture, repo, query):
    assert run("import", str(fixture)).exit_code == 0
    result = run("search", query, "--repo", repo, "--json")
    assert result.exit_code == 0, result.output
    found = orjson.loads(result.stdout_bytes)
    assert found["provenance"]["scopeIds"] == {"repoId": repo}
    assert found["pins"], "pins come back as pins"
    # The episode's summary comes first: as the current summary, or as a pin when pinned.
    pinned = [p["target"] for p in found["pins"] if p["pin"]["targetType"] == "summary"]
    summary = found.get("currentSummary") or pinned[0]
    assert summary["id"] in {s["id"] for s in load(fixture)["dataset"]["summaries"]}
    listed = run("list", "observations", "--repo", repo, "--json")
    assert len(orjson.loads(listed.stdout_bytes)) == len(load(fixture)["dataset"]["observations"])


def test_a_path_like_repo_still_matches_the_directory_name_it_matched_before(run, tmp_path):
    project = tmp_path / "acme-api"
    project.mkdir()
    assert run("log", "captured with --repo .", "--repo", str(project)).exit_code == 0
    result = run("list", "observations", "--repo", "/elsewhere/acme-api", "--json")
    (obs,) = orjson.loads(result.stdout_bytes)
    assert obs["scopeIds"]["repoId"] == "acme-api"
    # Once an entity carries the path itself, the path selects exactly those.
    assert run("import", str(TS)).exit_code == 0
    result = run("list", "observations", "--repo", TS_REPO, "--json")
    assert {o["scopeIds"]["repoId"] for o in orjson.loads(result.stdout_bytes)} == {TS_REPO}


# ------------------------------------------------------- what the originals' importers need
#
# TypeScript (packages/kindling-core/src/export/bundle.ts validateBundle, then
# packages/kindling-store-sqlite/src/store/export.ts importDatabase into the 001_init.sql schema,
# opened with foreign_keys = ON): bundleVersion and dataset.version "1.0", a numeric exportedAt,
# the four arrays; NOT NULL and CHECK columns per table; capsule members must be observations
# and a summary's capsule a capsule (foreign keys), or that row fails.
#
# Rust (crates/kindling-service/src/export.rs ExportBundle with the kindling-types structs, read
# by serde): every non-Option field present with its type, Option fields absent or null,
# enums in snake_case, dataset.exportedAt required.


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def ts_import_problems(bundle: dict) -> list[str]:
    problems = []
    if bundle.get("bundleVersion") != "1.0":
        problems.append("bundleVersion")
    if not _is_int(bundle.get("exportedAt")) or not bundle["exportedAt"]:
        problems.append("exportedAt")
    ds = bundle.get("dataset") or {}
    if ds.get("version") != "1.0":
        problems.append("dataset.version")
    for etype in ENTITY_TYPES:
        if not isinstance(ds.get(etype), list):
            return problems + [f"dataset.{etype}"]
    obs_ids = {o.get("id") for o in ds["observations"]}
    cap_ids = {c.get("id") for c in ds["capsules"]}
    for o in ds["observations"]:
        if o.get("kind") not in OBSERVATION_KINDS or not isinstance(o.get("content"), str):
            problems.append(f"observation {o.get('id')}: kind/content")
        if "provenance" not in o or not _is_int(o.get("ts")):
            problems.append(f"observation {o.get('id')}: provenance/ts")
    for c in ds["capsules"]:
        if c.get("type") not in CAPSULE_TYPES or c.get("status") not in CAPSULE_STATUSES:
            problems.append(f"capsule {c.get('id')}: type/status")
        if not isinstance(c.get("intent"), str) or not _is_int(c.get("openedAt")):
            problems.append(f"capsule {c.get('id')}: intent/openedAt")
        for member in c.get("observationIds", []):
            if member not in obs_ids:
                problems.append(f"capsule {c.get('id')}: member {member} (foreign key)")
    for s in ds["summaries"]:
        if s.get("capsuleId") not in cap_ids:
            problems.append(f"summary {s.get('id')}: capsule (foreign key)")
        if not _is_int(s.get("createdAt")):
            problems.append(f"summary {s.get('id')}: createdAt (NOT NULL)")
        c = s.get("confidence")
        if not isinstance(c, (int, float)) or not 0 <= c <= 1:
            problems.append(f"summary {s.get('id')}: confidence")
    for p in ds["pins"]:
        if p.get("targetType") not in PIN_TARGET_TYPES or not isinstance(p.get("targetId"), str):
            problems.append(f"pin {p.get('id')}: target")
        if not _is_int(p.get("createdAt")):
            problems.append(f"pin {p.get('id')}: createdAt (NOT NULL)")
    return problems


_RUST_FIELDS = {
    # field -> (required, check)
    "observations": {
        "id": (True, str),
        "kind": (True, OBSERVATION_KINDS),
        "content": (True, str),
        "provenance": (True, dict),
        "ts": (True, int),
        "scopeIds": (True, dict),
        "redacted": (True, bool),
    },
    "capsules": {
        "id": (True, str),
        "type": (True, CAPSULE_TYPES),
        "intent": (True, str),
        "status": (True, CAPSULE_STATUSES),
        "openedAt": (True, int),
        "closedAt": (False, int),
        "scopeIds": (True, dict),
        "observationIds": (True, list),
        "summaryId": (False, str),
    },
    "summaries": {
        "id": (True, str),
        "capsuleId": (True, str),
        "content": (True, str),
        "confidence": (True, float),
        "createdAt": (True, int),
        "evidenceRefs": (True, list),
    },
    "pins": {
        "id": (True, str),
        "targetType": (True, PIN_TARGET_TYPES),
        "targetId": (True, str),
        "reason": (False, str),
        "createdAt": (True, int),
        "expiresAt": (False, int),
        "scopeIds": (True, dict),
    },
}


def _rust_value_ok(value, check) -> bool:
    if isinstance(check, tuple):
        return value in check
    if check is int:
        return _is_int(value)
    if check is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, check)


def rust_import_problems(bundle: dict) -> list[str]:
    problems = []
    if bundle.get("bundleVersion") != "1.0" or not _is_int(bundle.get("exportedAt")):
        problems.append("bundleVersion/exportedAt")
    if "metadata" in bundle and not isinstance(bundle["metadata"], dict):
        problems.append("metadata")
    ds = bundle.get("dataset") or {}
    if ds.get("version") != "1.0" or not _is_int(ds.get("exportedAt")):
        problems.append("dataset.version/exportedAt")
    if ds.get("scope") is not None and not isinstance(ds["scope"], dict):
        problems.append("dataset.scope")
    for etype, fields in _RUST_FIELDS.items():
        for entity in ds.get(etype, []):
            for field, (required, check) in fields.items():
                value = entity.get(field)
                if value is None:
                    if required:
                        problems.append(f"{etype} {entity.get('id')}: {field} missing")
                elif not _rust_value_ok(value, check):
                    problems.append(f"{etype} {entity.get('id')}: {field} has the wrong type")
            scope = entity.get("scopeIds") or {}
            if any(
                k not in SCOPE_KEYS or not isinstance(v, (str, type(None)))
                for k, v in scope.items()
            ):
                problems.append(f"{etype} {entity.get('id')}: scopeIds")
    return problems


def _populated(memory):
    """A store as this Kindling writes it: a closed capsule with a summary, pins, a forget."""
    scope = {"sessionId": "s1", "repoId": "acme-api"}
    cap = memory.open_capsule("fix the flaky login test", scope=scope).entity
    first = memory.log(
        "login test times out on CI", kind="error", scope=scope, capsule_id=cap["id"]
    ).entity
    memory.log("raised the wait to 5s", kind="file_diff", scope=scope, capsule_id=cap["id"])
    secret = memory.log(
        "pasted the wrong thing", kind="message", scope=scope, capsule_id=cap["id"]
    ).entity
    memory.forget(secret["id"])
    closed = memory.close_capsule(
        cap["id"],
        summary="CI login flake: wait raised to 5s",
        confidence=0.7,
        evidence=[first["id"]],
    ).entity
    memory.pin("observation", first["id"])
    memory.pin("summary", closed["summaryId"], note="the fix", ttl=86_400_000)
    return first, secret, closed


def _export(memory, fmt: str) -> dict:
    import io

    out = io.BytesIO()
    memory.export(out, format=fmt)
    return orjson.loads(out.getvalue())


def test_original_export_meets_both_originals_import_requirements(memory):
    _populated(memory)
    bundle = _export(memory, "original")
    assert ts_import_problems(bundle) == []
    assert rust_import_problems(bundle) == []
    (summary,) = bundle["dataset"]["summaries"]
    assert set(summary) == {"id", "capsuleId", "content", "confidence", "createdAt", "evidenceRefs"}
    bare = next(p for p in bundle["dataset"]["pins"] if p["targetType"] == "observation")
    assert "reason" not in bare and "expiresAt" not in bare


def test_this_format_does_not_meet_them_so_the_checks_can_fail(memory):
    _populated(memory)
    bundle = _export(memory, "kindling")
    assert any("createdAt" in p for p in ts_import_problems(bundle))
    assert any("createdAt" in p for p in rust_import_problems(bundle))
    assert any("foreign key" in p for p in ts_import_problems(bundle))  # the forgotten member


def test_original_export_loses_nothing_on_the_way_back(memory, tmp_path):
    from kindling.memory import Memory

    _, secret, closed = _populated(memory)
    bundle = _export(memory, "original")
    capsule = next(c for c in bundle["dataset"]["capsules"] if c["id"] == closed["id"])
    assert secret["id"] not in capsule["observationIds"]  # forgotten: not in the bundle
    with Memory.init(tmp_path / "again") as again:
        report = import_bundle(again, orjson.dumps(bundle))
        assert report.skipped == []
        back, mine = _export(again, "kindling"), _export(memory, "kindling")
    for etype in ("observations", "summaries", "pins"):
        assert back["dataset"][etype] == mine["dataset"][etype]
    (cap_back,) = back["dataset"]["capsules"]
    (cap_mine,) = mine["dataset"]["capsules"]
    assert cap_back == {**cap_mine, "observationIds": capsule["observationIds"]}


def test_cli_export_format_original(run, memory, tmp_path):
    _populated(memory)
    path = tmp_path / "for-the-original.json"
    result = run("export", "--format", "original", str(path))
    assert result.exit_code == 0, result.output
    bundle = orjson.loads(path.read_bytes())
    assert ts_import_problems(bundle) == [] and rust_import_problems(bundle) == []


# ---------------------------------------------------------------- export FILE


def test_export_file_argument_dash_and_stdout(run, memory, tmp_path):
    _populated(memory)
    path = tmp_path / "memory.json"
    assert run("export", str(path)).exit_code == 0

    def entities(data: bytes) -> list:
        dataset = orjson.loads(data)["dataset"]
        return [dataset[etype] for etype in ENTITY_TYPES]

    written = entities(path.read_bytes())
    assert sum(map(len, written)) > 0
    for args in (["-"], []):
        result = run("export", *args)
        assert result.exit_code == 0
        assert entities(result.stdout_bytes) == written


def test_export_into_a_missing_folder_is_a_clear_error(run, tmp_path):
    target = tmp_path / "no" / "such" / "memory.json"
    for args in (["-o", str(target)], [str(target)]):
        result = run("export", *args)
        assert result.exit_code == 1
        assert result.stderr.strip().splitlines() == [
            f"Error: cannot write {target}: folder {target.parent} does not exist"
        ]
    assert not (tmp_path / "no").exists()


def test_export_file_given_twice_is_a_usage_error(run, tmp_path):
    result = run("export", str(tmp_path / "a.json"), "-o", str(tmp_path / "b.json"))
    assert result.exit_code == 2
    assert not (tmp_path / "a.json").exists() and not (tmp_path / "b.json").exists()


# ---------------------------------------------------------------- the original plugin's hooks

# The commands of the original plugin's hooks/hooks.json (plugins/kindling-claude-code).
ORIGINAL_HOOKS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "post-tool-use-failure": "PostToolUseFailure",
    "subagent-stop": "SubagentStop",
    "pre-compact": "PreCompact",
    "stop": "Stop",
}


def hook_payload(event: str, project, **fields) -> bytes:
    base = {"session_id": "s-orig", "cwd": str(project), "hook_event_name": event}
    return json.dumps({**base, **fields}).encode()


def _hook_process(args: list[str], data: bytes, project) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "CLAUDE_PROJECT_DIR": str(project)}
    return subprocess.run(
        [sys.executable, *args], input=data, capture_output=True, env=env, cwd=project, timeout=60
    )


def kindling_hook_script(name: str, data: bytes, project) -> subprocess.CompletedProcess:
    """Run the `kindling-hook` console script's entry point as its own process."""
    code = (
        "import sys; from kindling.entry import hook_main; "
        "sys.argv[0] = 'kindling-hook'; hook_main()"
    )
    return _hook_process(["-c", code, name], data, project)


def test_kindling_hook_is_a_console_script():
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kindling-hook"] == "kindling.entry:hook_main"
    assert scripts["kindling"] == "kindling.entry:main"


def test_kindling_hook_help_shows_its_own_usage(project):
    result = kindling_hook_script("--help", b"", project)
    assert result.returncode == 0
    assert "Usage: kindling-hook [OPTIONS] EVENT" in result.stdout.decode()


def test_every_original_hook_command_runs_and_records(project):
    from kindling.memory import Memory

    steps = [
        ("session-start", {"source": "startup"}),
        ("user-prompt-submit", {"prompt": "why does checkout 500?"}),
        (
            "post-tool-use",
            {
                "tool_name": "Bash",
                "tool_input": {"command": "npm test"},
                "tool_response": {"stdout": "1 failing", "stderr": ""},
            },
        ),
        (
            "post-tool-use-failure",
            {"tool_name": "Bash", "tool_input": {"command": "make"}, "error": "exit 2"},
        ),
        ("subagent-stop", {"agent_type": "explorer"}),
        ("pre-compact", {"trigger": "auto"}),
        ("stop", {"last_assistant_message": "Fixed the checkout query."}),
    ]
    assert [name for name, _ in steps] == list(ORIGINAL_HOOKS)
    for i, (name, fields) in enumerate(steps):
        data = hook_payload(ORIGINAL_HOOKS[name], project, **fields)
        # Half through `kindling hook NAME`, half through `kindling-hook NAME`.
        if i % 2:
            proc = kindling_hook_script(name, data, project)
        else:
            proc = _hook_process(["-m", "kindling", "hook", name], data, project)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == b"", (name, proc.stderr)
        if name == "session-start":
            context = json.loads(proc.stdout)["hookSpecificOutput"]
            assert context["hookEventName"] == "SessionStart"
    with Memory(project / ".kindling") as memory:
        contents = [o["content"] for o in memory.list("observations")]
        (capsule,) = memory.list("capsules")
    # subagent-stop without a message records nothing; session-start records the start
    assert len(contents) == 6
    assert "why does checkout 500?" in contents
    assert capsule["status"] == "open" and len(capsule["observationIds"]) == 6


def test_kebab_and_pascal_names_are_the_same_event(project):
    data = hook_payload("UserPromptSubmit", project, prompt="same either way")
    for args in (
        ["-m", "kindling", "hook", "UserPromptSubmit"],
        ["-m", "kindling", "hook", "user-prompt-submit"],
    ):
        assert _hook_process(args, data, project).returncode == 0
    result = run_kindling("--store", str(project / ".kindling"), "list", "observations", "--json")
    assert [o["content"] for o in orjson.loads(result.stdout)] == ["same either way"] * 2


def test_an_unknown_kebab_name_records_nothing_and_never_fails(project):
    proc = kindling_hook_script("post-tool-usage", hook_payload("PostToolUse", project), project)
    assert proc.returncode == 0
    assert b"unknown hook event 'post-tool-usage'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
