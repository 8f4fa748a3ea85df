"""`kindling forget` reaches every copy: capsule intents and summaries quoting a forgotten
observation, capsules and summaries by id, and `--matching TEXT` over the files themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kindling import canonical
from kindling.agents.hooks import run_hook
from kindling.index.db import Index
from kindling.index.schema import SyncReport
from kindling.memory import Memory
from kindling.model import REDACTED_CONTENT
from kindling.store import fanout

SECRET = "quokka7zephyr5521"  # no name, no known format: masking cannot tell it from an id
SESSION = "5e55a0c1-0000-4000-8000-00000000f0a1"


def ok(result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def fails(result, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


def hook(store: Path, project: Path, event: str, **fields) -> None:
    body = {
        "session_id": SESSION,
        "transcript_path": f"/home/dev/.claude/projects/x/{SESSION}.jsonl",
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    result = run_hook(event, json.dumps(body).encode(), str(store))
    assert result.message is None, result.message


def holders(store: Path, secret: str = SECRET) -> list[str]:
    """Every file that still holds the secret's bytes: the store, the index and its WAL
    (wherever the index lives), and the folder beside the index."""
    needle = secret.encode()
    with Memory(store) as memory:
        index = Path(memory.index.path)
    places = [p for p in store.rglob("*") if p.is_file()]
    if index.parent.is_dir():
        places += [p for p in index.parent.rglob("*") if p.is_file()]
    return sorted({str(p) for p in places if needle in p.read_bytes()})


def assert_no_copy_anywhere(run, store: Path, tmp_path: Path, secret: str = SECRET) -> None:
    assert holders(store, secret) == []
    for args in (["export"], ["export", "--include-redacted"]):
        assert secret not in ok(run(*args, store=store))
    page = tmp_path / "page.html"
    ok(run("browse", "--output", str(page), "--no-open", store=store))
    assert secret.encode() not in page.read_bytes()
    shown = json.loads(ok(run("search", secret, "--json", store=store)))
    assert shown["provenance"].pop("query") == secret  # the question, not an answer
    assert secret not in json.dumps(shown) and shown["candidates"] == []
    with Memory(store) as memory:
        found = memory.search(secret, include_redacted=True)
    found["provenance"].pop("query")
    assert secret not in json.dumps(found) and found["candidates"] == []
    ok(run("fsck", store=store))


def first_prompt_session(project: Path, prompt: str, **stop) -> Path:
    """A Claude Code session through the real hook path: a prompt, a command, the end."""
    store = project / ".kindling"
    hook(store, project, "SessionStart", source="startup", model="m")
    hook(store, project, "UserPromptSubmit", prompt=prompt)
    hook(
        store,
        project,
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "npm test", "description": "Run tests"},
        tool_response={"stdout": "42 passed\n", "stderr": "", "interrupted": False},
        tool_use_id="toolu_01",
    )
    if stop:
        hook(store, project, "Stop", stop_hook_active=False, **stop)
    hook(store, project, "SessionEnd", reason="prompt_input_exit")
    return store


def recorded(store: Path, hook_name: str) -> dict:
    with Memory(store) as memory:
        found = [
            o
            for o in memory.list("observations", limit=None)
            if o["provenance"].get("hook") == hook_name
        ]
    assert len(found) == 1
    return found[0]


def only(store: Path, entity_type: str) -> dict:
    with Memory(store) as memory:
        entities = memory.list(entity_type, limit=None)
    assert len(entities) == 1
    return entities[0]


# ---------------------------------------------------------------- forget ID reaches the copies


def test_finding_forget_a_secret_in_the_first_prompt_leaves_no_copy_in_intent_or_summary(
    run, project, tmp_path
):
    # Long and over several lines, so the capsule's title and the summary's "Asked:" are the
    # prompt folded onto one line and cut short: neither holds the prompt as it was typed.
    prompt = (
        f"Deploy to staging.\n  The vault passphrase is {SECRET}\n\n"
        + "Then run the smoke tests against every endpoint and report what fails. " * 6
    )
    store = first_prompt_session(project, prompt)
    capsule, summary = only(store, "capsules"), only(store, "summaries")
    assert SECRET in capsule["intent"] and capsule["intent"].endswith("…")
    assert SECRET in summary["content"] and capsule["status"] == "closed"
    asked = recorded(store, "UserPromptSubmit")

    result = run("forget", asked["id"][:8], store=store)
    assert ok(result).strip() == asked["id"]
    assert f"Also forgot capsule {capsule['id']}" in result.stderr
    assert f"Also forgot summary {summary['id']}" in result.stderr

    assert only(store, "capsules")["intent"] == REDACTED_CONTENT
    after = only(store, "summaries")
    assert SECRET not in after["content"] and REDACTED_CONTENT in after["content"]
    assert after["evidenceRefs"] == summary["evidenceRefs"]  # what it rests on stays
    assert_no_copy_anywhere(run, store, tmp_path)


def test_finding_forget_the_last_message_takes_the_lines_its_summary_quotes(run, project, tmp_path):
    # The summary's line built from Claude's last message goes; the others stay.
    message = f"Summary:\nDeployed with passphrase {SECRET} as asked.\nAll 42 tests pass."
    store = first_prompt_session(project, "deploy to staging", last_assistant_message=message)
    summary = only(store, "summaries")
    assert SECRET in summary["content"]
    stop = recorded(store, "Stop")

    ok(run("forget", stop["id"], store=store))
    content = only(store, "summaries")["content"]
    asked, said = content.split("\n")
    assert asked.startswith("Asked: deploy to staging [")  # built from the prompt: kept
    assert said == f"Last message: {REDACTED_CONTENT} [{stop['id'][:8]}]"
    assert only(store, "capsules")["intent"] == "deploy to staging"  # not a copy: kept
    assert_no_copy_anywhere(run, store, tmp_path)


def test_finding_a_title_people_chose_is_not_taken_for_a_copy(memory):
    cap = memory.open_capsule("fix login", scope={"sessionId": "s1"}).entity
    obs = memory.log(f"please fix login, the password is {SECRET}", scope={"sessionId": "s1"})
    short = memory.log("fix login", scope={"sessionId": "s1"}).entity
    copied = f"note: please fix login, the password is {SECRET}"
    other = memory.open_capsule(copied, scope={"sessionId": "s2"}).entity
    memory.forget(obs.entity["id"])
    assert memory.get(cap["id"]).entity["intent"] == "fix login"  # part of the text: kept
    assert memory.get(other["id"]).entity["intent"] == copied  # not its capsule: --matching
    memory.forget(short["id"])
    assert memory.get(cap["id"]).entity["intent"] == REDACTED_CONTENT  # the whole text


# ---------------------------------------------------------------- forget a capsule or summary


def test_finding_forget_a_capsule_by_id_redacts_its_intent_everywhere(run, store_dir, tmp_path):
    cap = ok(run("capsule", "open", "--intent", f"rotate {SECRET}", "--session", "s1")).strip()
    obs = ok(run("log", "rotated the key", "--session", "s1")).strip()
    ok(run("capsule", "close", cap, "--summary", "rotated", "--evidence", obs))

    forgotten = json.loads(ok(run("forget", cap[:10], "--json")))
    assert forgotten["intent"] == REDACTED_CONTENT
    assert forgotten["observationIds"] == [obs] and forgotten["status"] == "closed"
    assert forgotten["summaryId"].startswith("sum_")
    before = Path(run("show", cap).stdout.split("Path: ")[1].split("\n")[0]).read_bytes()
    assert ok(run("forget", cap)).strip() == cap  # again: nothing left to change
    assert Path(run("show", cap).stdout.split("Path: ")[1].split("\n")[0]).read_bytes() == before
    assert_no_copy_anywhere(run, store_dir, tmp_path)


def test_finding_forget_a_summary_by_id_redacts_its_content_and_evidence(run, store_dir, tmp_path):
    cap = ok(run("capsule", "open", "--intent", "deploy", "--session", "s1")).strip()
    obs = ok(run("log", "deployed", "--session", "s1")).strip()
    closed = ok(run("capsule", "close", cap, "--summary", f"used {SECRET}", "--evidence", obs))
    assert closed.strip() == cap
    summary = json.loads(ok(run("show", cap, "--json")))["summaryId"]
    assert SECRET in ok(run("search", SECRET))

    forgotten = json.loads(ok(run("forget", summary, "--json")))
    assert forgotten["content"] == REDACTED_CONTENT and forgotten["evidenceRefs"] == []
    assert forgotten["capsuleId"] == cap
    assert json.loads(ok(run("show", obs, "--json")))["content"] == "deployed"
    assert_no_copy_anywhere(run, store_dir, tmp_path)


def test_finding_forget_dry_run_lists_the_copies_and_changes_nothing(run, store_dir):
    cap = ok(run("capsule", "open", "--intent", SECRET, "--session", "s1")).strip()
    obs = ok(run("log", SECRET, "--session", "s1")).strip()
    before = {p: p.read_bytes() for p in store_dir.rglob("*.json")}
    out = ok(run("forget", obs, "--dry-run"))
    assert out.splitlines() == [f"capsule {cap}", f"observation {obs}"]
    report = json.loads(ok(run("forget", obs, "--dry-run", "--json")))
    assert report["dryRun"] is True and report["problems"] == []
    assert [(f["type"], f["id"], f["reason"]) for f in report["forgotten"]] == [
        ("capsule", cap, f"its intent quotes observation {obs}"),
        ("observation", obs, "asked"),
    ]
    assert {p: p.read_bytes() for p in store_dir.rglob("*.json")} == before


# ---------------------------------------------------------------- --matching


def plant_everywhere(store_dir: Path) -> dict[str, str]:
    """The secret in every text field, and once in a file the index has not seen."""
    with Memory(store_dir) as memory:
        cap = memory.open_capsule(f"try {SECRET}", scope={"sessionId": "s1"}).entity["id"]
        prov = memory.log("ran deploy", scope={"sessionId": "s1"}, provenance={"arg": SECRET})
        content = memory.log(f"output: {SECRET}!", scope={"sessionId": "s2"}).entity["id"]
        clean = memory.log("nothing to see", scope={"sessionId": "s1"}).entity["id"]
        memory.close_capsule(cap, summary=f"it was {SECRET}", evidence=[clean])
        summary = memory.get(cap).entity["summaryId"]
        pin = memory.pin("observation", clean, note=f"see {SECRET}").entity["id"]
        # Another pin of it (pinning again with the same scope is the same pin).
        keep = memory.pin("observation", clean, note="keep this", scope={"repoId": "r"})
        keep = keep.entity["id"]
    # A copy that came in behind the index's back (a pull, an editor), in the wrong folder.
    pulled = {
        "id": "o-pulled",
        "kind": "message",
        "content": f"pulled {SECRET}",
        "provenance": {},
        "ts": 1,
        "scopeIds": {},
        "redacted": False,
    }
    wrong = "00" if fanout("o-pulled") != "00" else "01"
    path = store_dir / "objects" / "observations" / wrong / "o-pulled.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(canonical.encode(pulled))
    return {
        "capsule": cap,
        "provenance": prov.entity["id"],
        "content": content,
        "clean": clean,
        "summary": summary,
        "pin": pin,
        "keep": keep,
        "pulled": "o-pulled",
    }


def test_finding_forget_matching_finds_every_copy_in_the_files_not_the_index(
    run, store_dir, tmp_path, monkeypatch
):
    ids = plant_everywhere(store_dir)
    # The index never learns of the pulled file: only reading the files finds it.
    monkeypatch.setattr(Index, "sync", lambda self, **kw: SyncReport())
    dry = ok(run("forget", "--matching", SECRET, "--dry-run"))
    wanted = {
        f"capsule {ids['capsule']}",
        f"observation {ids['provenance']}",
        f"observation {ids['content']}",
        f"summary {ids['summary']}",
        f"pin {ids['pin']}",
        "observation o-pulled",
    }
    assert set(dry.splitlines()) == wanted and len(dry.splitlines()) == len(wanted)
    assert holders(store_dir)  # a dry run changes nothing

    done = run("forget", "--matching", SECRET)
    assert set(ok(done).splitlines()) == wanted
    monkeypatch.undo()
    with Memory(store_dir) as memory:
        assert memory.get(ids["pin"]).entity["reason"] == REDACTED_CONTENT
        assert memory.get(ids["keep"]).entity["reason"] == "keep this"
        assert memory.get(ids["clean"]).entity["content"] == "nothing to see"
        assert memory.get("o-pulled").entity["redacted"] is True
        assert memory.get(ids["summary"]).entity["content"] == REDACTED_CONTENT
    assert_no_copy_anywhere(run, store_dir, tmp_path)
    assert ok(run("forget", "--matching", SECRET)) == ""  # nothing left


def test_finding_forget_matching_json_and_files_it_cannot_forget(run, store_dir):
    with Memory(store_dir) as memory:
        obs = memory.log(f"say {SECRET}").entity["id"]
    broken = store_dir / "objects" / "summaries" / "ab" / "sum_broken.json"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b'{"content": "' + SECRET.encode() + b'"')  # cut short: not JSON
    before = broken.read_bytes()
    # An interrupted write's temp file holding the text: named, never parsed or rewritten.
    temp = broken.with_name(".sum_other.json.4242.0123abcd.tmp")
    temp.write_bytes(b'{"content": "' + SECRET.encode() + b'"}')

    result = run("forget", "--matching", SECRET, "--json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    report = json.loads(result.stdout)
    assert report["dryRun"] is False
    assert [(f["type"], f["id"]) for f in report["forgotten"]] == [("observation", obs)]
    assert sorted(p["path"] for p in report["problems"]) == sorted([str(broken), str(temp)])
    assert all("left untouched" in p["reason"] for p in report["problems"])
    assert result.stderr.strip().splitlines()[-1].startswith("Error: 2 files holding the text")
    assert broken.read_bytes() == before  # never rewritten
    assert SECRET.encode() in temp.read_bytes()


def test_finding_forget_matching_is_exact_and_case_sensitive(run, store_dir):
    with Memory(store_dir) as memory:
        upper = memory.log(f"say {SECRET.upper()}").entity["id"]
        memory.log("say quokka7 zephyr5521")
    assert ok(run("forget", "--matching", SECRET)) == ""
    assert ok(run("forget", "--matching", SECRET.upper())).splitlines() == [f"observation {upper}"]


@pytest.mark.parametrize(
    "args, code, says",
    [
        ((), 2, "give either ID or --matching TEXT"),
        (("some-id", "--matching", "x"), 2, "give either ID or --matching TEXT"),
        (("--matching", ""), 2, "must not be empty"),
        (("--matching", "   "), 1, "more than white space"),
        (("--matching", "redact"), 1, "part of the marker"),
        (("abcdef99",), 1, "no entity with id or prefix"),
    ],
)
def test_finding_forget_bad_input_is_one_line(run, store_dir, args, code, says):
    output = fails(run("forget", *args), code)
    assert says in output
    assert output.strip().splitlines()[-1].startswith("Error: ")


def test_a_forgotten_summary_is_never_the_current_summary_nor_found(memory):
    older = memory.open_capsule("first", scope={"sessionId": "s1", "repoId": "acme"}).entity
    memory.close_capsule(older["id"], summary="the parser fix shipped")
    newer = memory.open_capsule("second", scope={"sessionId": "s2", "repoId": "acme"}).entity
    summary_id = memory.close_capsule(newer["id"], summary="rotated the staging key").entity[
        "summaryId"
    ]
    assert memory.search("rotated staging key")["currentSummary"]["id"] == summary_id
    assert memory.search("", scope={"sessionId": "s2"})["currentSummary"]["id"] == summary_id
    memory.forget(summary_id)
    for query in ("rotated staging key", "redacted"):
        result = memory.search(query)
        assert "currentSummary" not in result
        assert all(c["entity"]["id"] != summary_id for c in result["candidates"])
    assert "currentSummary" not in memory.search("", scope={"sessionId": "s2"})
    assert memory.search("parser fix")["currentSummary"]["content"] == "the parser fix shipped"


def test_an_imported_forget_leaves_no_copy_in_the_index_or_its_wal(tmp_path):
    secret = "quagmire-swordfish-9181"
    first = Memory(Memory.init(tmp_path / "a").store.root)
    oid = first.log(f"the vault answers to {secret}").entity["id"]
    with Memory(Memory.init(tmp_path / "b").store.root) as second:
        second.import_bundle(_bundle(first))
        assert second.search(secret)["candidates"]
        first.forget(oid)
        second.import_bundle(_bundle(first, include_redacted=True))
        index = second.index.path
        # Read while the connection is still open: its WAL is on disk now, if anything is.
        for path in index.parent.glob(index.name + "*"):
            assert secret.encode() not in path.read_bytes(), path.name
    first.close()


def _bundle(memory: Memory, include_redacted: bool = False) -> bytes:
    import io

    out = io.BytesIO()
    memory.export(out, include_redacted=include_redacted)
    return out.getvalue()
