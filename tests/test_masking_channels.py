"""Every main-corpus case through every channel a text reaches the store by, with one result.

Channels: the five hook channels (Bash output, Bash command, edit diffs, prompts, failures),
MCP tool inputs (nested lists and dicts), `kindling log`, imported bundles, scope ids and
provenance. A secret case must leave none of its secrets in anything stored, and where the
channel stores the text as written, exactly the masked text; a look-alike must come out
with no mask anywhere. The corpus scores are asserted and printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kindling.agents import records
from kindling.bundle.inbound import inbound_entity
from kindling.masking import MASK, mask_json, mask_scope_ids, mask_text

sys.path.insert(0, str(Path(__file__).resolve().parent / "masking"))
import masking_corpus  # noqa: E402

MAIN = ("corpus.txt", "heldout.txt", "generated.txt")
CASES = [case for name in MAIN for case in masking_corpus.load(name)]
ROOT = "/work/project"


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _stored(record: records.Record) -> tuple[str, dict]:
    """What the store writes for a record: its content and provenance masked by capture."""
    content, _ = mask_text(record.content)
    provenance, _ = mask_json(record.provenance)
    return content, provenance


def _tool(tool: str, tool_input: dict, response=None, event="PostToolUse", **extra) -> dict:
    payload = {"session_id": "s1", "cwd": ROOT, "tool_name": tool, "tool_input": tool_input}
    if response is not None:
        payload["tool_response"] = response
    payload.update(extra)
    stored = _stored(records.tool_record(event, payload))
    return {"content": stored[0], "provenance": stored[1]}


def _channels(text: str) -> dict[str, object]:
    """What each channel stores for `text`."""
    prompt = records.message_record(
        "UserPromptSubmit", {"session_id": "s1", "cwd": ROOT, "prompt": text}
    )
    bundle_obs = {
        "id": "o1",
        "kind": "message",
        "content": text,
        "provenance": {"note": text},
        "ts": 1,
        "scopeIds": {"sessionId": "s1"},
        "redacted": False,
    }
    return {
        "bash output": _tool("Bash", {"command": "make"}, {"stdout": text, "stderr": ""}),
        "bash command": _tool("Bash", {"command": text}, {"stdout": "ok", "stderr": ""}),
        "edit diff": _tool(
            "Edit", {"file_path": f"{ROOT}/a.txt", "old_string": "x", "new_string": text}
        ),
        "prompt": {"content": _stored(prompt)[0], "provenance": _stored(prompt)[1]},
        "failure": _tool("Bash", {"command": "make"}, event="PostToolUseFailure", error=text),
        "mcp tool input": _tool(
            "mcp__db__query", {"args": [{"sql": [text]}, {"opts": {"note": text}}]}, "done"
        ),
        "kindling log": mask_text(text)[0],
        "imported bundle": inbound_entity("observations", bundle_obs)[0],
        "scope ids": mask_scope_ids({"sessionId": text})[0],
        "provenance": mask_json({"command": text, "nested": [{"text": text}]})[0],
    }


# Channels that store the case's text as written (within a larger text).
VERBATIM = ("bash output", "prompt", "failure", "kindling log", "imported bundle", "scope ids")


def _verdicts(case: masking_corpus.Case) -> dict[str, str]:
    """Per channel: '' when the channel did what the case asks, else what went wrong."""
    out = {}
    for channel, stored in _channels(case.text).items():
        strings = _strings(stored)
        joined = "\n".join(strings)
        if case.kind == "keep":
            problem = "altered" if MASK in joined and MASK not in case.text else ""
        elif any(secret in s for secret in case.secrets for s in strings):
            problem = "leaked"
        elif channel in VERBATIM and case.expected not in joined:
            problem = "inexact"
        else:
            problem = ""
        out[channel] = problem
    return out


def test_every_channel_masks_the_main_corpus_alike():
    problems: dict[str, list[str]] = {}
    secrets = sum(c.kind == "secret" for c in CASES)
    keeps = len(CASES) - secrets
    missed, altered = set(), set()
    for case in CASES:
        for channel, problem in _verdicts(case).items():
            if problem:
                problems.setdefault(channel, []).append(f"{case.name}: {problem}")
                (altered if case.kind == "keep" else missed).add(case.name)
    recall = 100 * (secrets - len(missed)) / secrets
    false_positives = 100 * len(altered) / keeps
    print(
        f"\nmain corpus through 10 channels: recall {secrets - len(missed)}/{secrets} "
        f"({recall:.1f}%), false positives {len(altered)}/{keeps} ({false_positives:.1f}%)"
    )
    assert not problems, json.dumps(problems, indent=1)[:4000]
    assert recall == 100.0 and false_positives == 0.0


def test_the_main_corpus_is_large_and_varied_enough():
    secrets = [c for c in CASES if c.kind == "secret"]
    keeps = [c for c in CASES if c.kind == "keep"]
    formats = {c.name.split(",")[0].split(" #")[0] for c in secrets}
    assert len(secrets) >= 300 and len(keeps) >= 300 and len(formats) >= 40


@pytest.mark.parametrize(
    "tool_input",
    [
        {"argv": ["mysql", "--password", "Xq7-secret-Pw"]},
        {"args": {"nested": [["docker", "login", "-p", "Xq7-secret-Pw"]]}},
        {"connection": {"password": "Xq7-secret-Pw"}},
    ],
)
def test_mcp_tool_input_is_masked_in_the_text_and_subject_too(tool_input):
    stored = _tool("mcp__db__run", tool_input, "ok")
    assert "Xq7-secret-Pw" not in json.dumps(stored)
    assert MASK in stored["content"] and MASK in stored["provenance"]["subject"]


def test_the_record_counts_what_it_masked_before_cutting():
    output = "x" * 9_000 + "\npassword=hunter2-Xq7\n" + "y" * 9_000 + " GITHUB_TOKEN=abc123Xq7"
    payload = {
        "session_id": "s1",
        "cwd": ROOT,
        "tool_name": "Bash",
        "tool_input": {"command": "make --token Xq7-secret-Tk"},
        "tool_response": {"stdout": output, "stderr": ""},
    }
    record = records.tool_record("PostToolUse", payload)
    assert record.provenance.get("truncated")
    # The command's token and the two in the output, though the cut dropped one of them.
    assert record.masked == 3
    assert mask_text(record.content)[1] == 0  # the store finds nothing left to count


def test_the_hook_notice_counts_secrets_masked_before_the_cut(tmp_path):
    from conftest import run_kindling

    from kindling.store import Store

    store = tmp_path / ".kindling"
    Store.create(store)
    output = "a" * 9_000 + "\nDB_PASSWORD=Xq7-hunter\n" + "b" * 9_000 + "\nAPI_TOKEN=Xq7-tok\n"
    body = {
        "session_id": "s1",
        "cwd": str(tmp_path),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "env"},
        "tool_response": {"stdout": output, "stderr": ""},
    }
    result = run_kindling(
        "--store", str(store), "hook", "PostToolUse", input=json.dumps(body).encode(), cwd=tmp_path
    )
    assert result.returncode == 0
    assert "masked 2 secret(s)" in result.stderr.decode()
