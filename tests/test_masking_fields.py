"""Every field that reaches a file is masked, through every way in: log, capsules, summaries,
pins and import. (What counts as a secret is tested in test_masking.py.)"""

from __future__ import annotations

import orjson
from entities import bundle as make_bundle
from entities import observation

from kindling.bundle.importer import import_bundle

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub classic token shape


def files_text(store_dir) -> str:
    return "\n".join(p.read_text() for p in sorted((store_dir / "objects").rglob("*.json")))


def test_scope_ids_are_masked_through_log(memory, store_dir):
    written = memory.log("deploy", scope={"sessionId": f"token={TOKEN}", "repoId": "acme"})
    assert written.masked >= 1
    assert TOKEN not in files_text(store_dir)
    assert written.entity["scopeIds"]["repoId"] == "acme"


def test_json_keys_argv_lists_and_numbers_under_credential_keys_are_masked(memory, store_dir):
    provenance = {
        "argv": ["mysql", "--password", "hunter2-Sup3r-s3cret"],
        TOKEN: "a token used as a key",
        "config": {"db_password": 918273645512},
    }
    written = memory.log("ran the migration", kind="command", provenance=provenance)
    text = files_text(store_dir)
    assert TOKEN not in text
    assert "hunter2-Sup3r-s3cret" not in text
    assert "918273645512" not in text
    assert written.entity["provenance"]["argv"][:2] == ["mysql", "--password"]


def test_intent_summary_and_pin_reason_are_masked(memory, store_dir):
    capsule = memory.open_capsule(f"rotate GITHUB_TOKEN={TOKEN}", type="pocketflow_node").entity
    obs = memory.log("rotated", capsule_id=capsule["id"]).entity
    memory.close_capsule(capsule["id"], summary=f"old value was GITHUB_TOKEN={TOKEN}")
    memory.pin("observation", obs["id"], note=f"GITHUB_TOKEN={TOKEN}")
    assert TOKEN not in files_text(store_dir)


def test_import_masks_scope_ids_too(memory, store_dir):
    leaked = observation("o-1", "imported", sessionId=f"token={TOKEN}")
    bundle = make_bundle(observations=[leaked])
    report = import_bundle(memory, orjson.dumps(bundle))
    assert report.masked >= 1
    assert TOKEN not in files_text(store_dir)


def test_a_plain_write_never_compiles_the_patterns(store_dir):
    # The gate exists so that text with no fragment of a secret costs no regex compilation.
    import subprocess
    import sys

    write = "log('ran the parser tests: all green', scope={'sessionId': 's'})"
    code = (
        "import sys\n"
        "from kindling.memory import Memory\n"
        f"Memory({str(store_dir)!r}).{write}\n"
        "print('kindling.masking.patterns' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
