"""Hostile input at every surface: the CLI, the API, bundles, hook payloads and the files
themselves. Huge, negative and non-finite numbers, FIFOs, symlinks, control characters, deep
nesting and junk. Every case ends with exit 0, 1 or 2 (or a KindlingError from the API), no
traceback, no hang (each case runs under an alarm), and fsck finds no damage the run caused.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import signal

import orjson
import pytest
from click.testing import CliRunner
from conftest import fuzz_settings
from entities import bundle
from hypothesis import given, settings
from hypothesis import strategies as st

from kindling import canonical
from kindling.cli import cli
from kindling.errors import KindlingError
from kindling.memory import Memory
from kindling.model import OBSERVATION_KINDS
from kindling.store import fanout

CASE_SECONDS = 10

SURFACE_SETTINGS = fuzz_settings(100)

EDGE_INTS = [
    -(2**64),
    -(2**63) - 1,
    -1,
    0,
    1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    253_402_300_799_999,
    253_402_300_800_000,
    10**30,
]
numbers = st.one_of(st.sampled_from(EDGE_INTS), st.integers(min_value=-(2**70), max_value=2**70))
number_text = st.one_of(
    numbers.map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "0x10", "", " ", "9" * 5000, "1_000"]),
)
floats = st.floats(allow_nan=True, allow_infinity=True)
# Text with terminal controls, bidi marks, NUL and non-BMP characters mixed in.
hostile_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("\x00\x07\x1b\x9b\r\n\t\u202e\u2028[]];:/\\.-_")),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=40,
)
json_scalars = st.one_of(
    st.none(), st.booleans(), numbers, st.floats(allow_nan=False), hostile_text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
    ),
    max_leaves=20,
)


class Hang(Exception):
    """A case ran past its alarm: something blocked (a FIFO, a lock)."""


@contextlib.contextmanager
def alarm(seconds: int = CASE_SECONDS):
    def fire(signum, frame):
        raise Hang(f"no answer within {seconds}s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def invoke(store_dir, args, *, input=None, env=None):
    """Run one command in-process under the alarm; it must end with 0/1/2 and no exception."""
    with alarm():
        result = CliRunner().invoke(
            cli, ["--store", str(store_dir), *args], input=input, env=env or {}
        )
    assert not isinstance(result.exception, Hang), args
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        repr(result.exception),
    )
    assert result.exit_code in (0, 1, 2), (args, result.output)
    if result.exit_code == 1:
        assert result.output.strip(), args  # a failure always says why
    return result


def assert_no_damage(store_dir, allowed: set[str] = frozenset()) -> None:
    """fsck finds nothing wrong beyond the paths a test planted on purpose."""
    with alarm(30):
        result = CliRunner().invoke(cli, ["--store", str(store_dir), "fsck", "--json"])
    assert result.output.startswith("{"), result.output
    found = json.loads(result.output)["problems"]
    caused = [p for p in found if p["path"] not in allowed]
    assert caused == [], caused


@pytest.fixture
def seeded(store_dir):
    """A store with one observation, one open capsule and one summary to aim at."""
    with Memory(store_dir) as memory:
        obs = memory.log("seed observation about tokens", scope={"sessionId": "s1"})
        cap = memory.open_capsule("seed capsule", scope={"sessionId": "s2"})
        memory.close_capsule(cap.entity["id"], summary="seed summary")
        open_cap = memory.open_capsule("open capsule", scope={"sessionId": "s3"})
    return store_dir, obs.entity["id"], open_cap.entity["id"]


# ---------------------------------------------------------------- the CLI


@SURFACE_SETTINGS
@given(data=st.data())
def test_cli_options_and_arguments(seeded, data):
    store_dir, obs_id, cap_id = seeded
    n = data.draw(number_text, "number")
    text = data.draw(hostile_text.filter(lambda t: "\x00" not in t), "text")
    command = data.draw(
        st.sampled_from(
            [
                ["log", text or "x", "--ts", n],
                ["log", text or "x", "--provenance", text],
                ["search", text, "--max", n],
                ["search", text, "--since", n],
                ["search", text, "--max-tokens", n],
                ["list", "observations", "--limit", n],
                ["list", "pins", "--all", "--limit", n],
                ["pin", "observation", obs_id, "--ttl", n],
                ["pin", "observation", text or "x"],
                ["capsule", "close", cap_id, "--summary", "s", "--confidence", n],
                ["capsule", "open", "--intent", text or "x", "--session", text or "x"],
                ["show", text or "x"],
                ["forget", text or "x"],
                ["unpin", text or "x"],
                ["status"],
            ]
        ),
        "command",
    )
    env = {"KINDLING_NOW": data.draw(st.one_of(st.just(""), number_text), "now")}
    invoke(store_dir, command, env=env)
    invoke(store_dir, ["list", "observations"])
    invoke(store_dir, ["search", "seed"])
    assert_no_damage(store_dir)


# ---------------------------------------------------------------- the API


@SURFACE_SETTINGS
@given(data=st.data())
def test_api_calls(seeded, data):
    store_dir, obs_id, cap_id = seeded
    n = data.draw(st.one_of(numbers, floats, st.none(), st.booleans()), "number")
    value = data.draw(json_values, "value")
    text = data.draw(hostile_text, "text")
    calls = [
        lambda m: m.log(text or "x", ts=n),
        lambda m: m.log(text or "x", provenance={"v": value}),
        lambda m: m.log(text or "x", kind=text),
        lambda m: m.pin("observation", obs_id, ttl=n),
        lambda m: m.search(text, since=n),
        lambda m: m.search(text, max_results=n),
        lambda m: m.search(text, max_tokens=n),
        lambda m: m.list("observations", limit=n),
        lambda m: m.close_capsule(cap_id, summary="s", confidence=n),
        lambda m: m.open_capsule(text, scope={"sessionId": text}),
        lambda m: m.get(text),
    ]
    call = data.draw(st.sampled_from(calls), "call")
    with alarm(), Memory(store_dir) as memory:
        try:
            call(memory)
        except KindlingError:
            pass
    assert_no_damage(store_dir)


# ---------------------------------------------------------------- bundles


def bundle_of(observations) -> dict:
    return bundle(observations=observations)


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@SURFACE_SETTINGS
@given(data=st.data())
def test_junk_bundles(seeded, data):
    store_dir, _, _ = seeded
    observation = {
        "id": data.draw(st.one_of(hostile_text, st.just("o-fuzz")), "id"),
        "kind": data.draw(st.one_of(st.sampled_from(OBSERVATION_KINDS), hostile_text), "kind"),
        "content": data.draw(hostile_text, "content"),
        "provenance": data.draw(json_values, "provenance"),
        "ts": data.draw(st.one_of(numbers, floats), "ts"),
        "scopeIds": {"sessionId": "s1"},
        "redacted": data.draw(st.one_of(st.booleans(), json_scalars), "redacted"),
    }
    shape = data.draw(st.sampled_from(["entity", "value", "deep", "gzip", "bytes"]), "shape")
    if shape == "entity":
        try:
            raw = orjson.dumps(bundle_of([observation]))
        except (TypeError, orjson.JSONEncodeError):
            raw = json.dumps(bundle_of([observation]), allow_nan=True, default=str).encode()
    elif shape == "value":
        raw = json.dumps(data.draw(json_values, "bundle"), default=str).encode()
    elif shape == "deep":
        raw = deep(data.draw(st.integers(min_value=1, max_value=100_000), "depth"))
    elif shape == "gzip":
        raw = gzip.compress(data.draw(st.binary(max_size=200), "inner"))
        raw = raw[: data.draw(st.integers(min_value=0, max_value=len(raw)), "cut")]
    else:
        raw = data.draw(st.binary(max_size=200), "bytes")
    flags = data.draw(st.sampled_from([[], ["--dry-run"], ["--on-conflict", "theirs"]]), "flags")
    invoke(store_dir, ["import", "-", *flags], input=raw)
    assert_no_damage(store_dir)


# ---------------------------------------------------------------- hook payloads


@SURFACE_SETTINGS
@given(data=st.data())
def test_junk_hook_payloads(tmp_path_factory, data):
    from kindling.agents.hooks import EVENTS

    project = tmp_path_factory.mktemp("project")
    Memory.init(project).close()
    event = data.draw(st.one_of(st.sampled_from(sorted(EVENTS)), hostile_text), "event")
    body = data.draw(
        st.one_of(
            st.fixed_dictionaries(
                {
                    "session_id": st.one_of(hostile_text, json_values),
                    "cwd": st.one_of(st.just(str(project)), hostile_text),
                    "tool_name": st.one_of(st.sampled_from(["Bash", "Edit", "Write"]), json_values),
                    "tool_input": json_values,
                    "tool_response": json_values,
                    "prompt": json_values,
                }
            ),
            json_values,
        ),
        "body",
    )
    raw = json.dumps(body, default=str).encode()
    if data.draw(st.booleans(), "truncate"):
        raw = raw[: len(raw) // 2]
    with alarm():
        result = CliRunner().invoke(
            cli, ["--store", str(project / ".kindling"), "hook", event or "x"], input=raw
        )
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code in (0, 1, 2)
    assert_no_damage(project / ".kindling")


# Odd input (kindling.agents.intake): lone surrogates, numbers past what the store holds,
# nesting past every parser's depth. It must be kept, not dropped, and always answered.
surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
odd_text = st.text(alphabet=st.one_of(surrogates, st.characters(), st.just("\ufffd")), max_size=30)
odd_numbers = st.one_of(numbers, st.sampled_from([10**30, -(10**30), 10**400]))
odd_values = st.recursive(
    st.one_of(st.none(), st.booleans(), odd_numbers, st.floats(), odd_text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(odd_text, inner, max_size=3)
    ),
    max_leaves=12,
)
DEPTHS = [1, 31, 32, 33, 64, 200, 999, 5_000]
DEEP_SLOT = "@@deep@@"
ODD_SETTINGS = settings(SURFACE_SETTINGS, max_examples=30)


def odd_json(value, depth: int | None) -> str:
    """`value` as the JSON a sender may write: surrogates as escapes, odd numbers as digits,
    the DEEP_SLOT string as `depth` levels of nesting (past what json.dumps can write)."""
    text = json.dumps(value)  # writes lone surrogates as \udXXX escapes, NaN and Infinity too
    if depth is not None:
        text = text.replace(json.dumps(DEEP_SLOT), '{"a":' * depth + "[1]" + "}" * depth)
    return text


@ODD_SETTINGS
@given(data=st.data())
def test_odd_hook_payloads_are_always_recorded(tmp_path_factory, data):
    from kindling.agents.hooks import run_hook

    project = tmp_path_factory.mktemp("project")
    Memory.init(project).close()
    event, fields = data.draw(
        st.one_of(
            st.tuples(
                st.sampled_from(["PostToolUse", "PostToolUseFailure"]),
                st.fixed_dictionaries(
                    {
                        "tool_name": st.sampled_from(["Bash", "Edit", "Write", "Read", "Grep"]),
                        "tool_input": st.dictionaries(odd_text, odd_values, max_size=4),
                        "tool_response": odd_values,
                        "error": odd_text.map(lambda t: f"Exit code {t}"),
                    }
                ),
            ),
            st.tuples(
                st.just("UserPromptSubmit"),
                st.fixed_dictionaries({"prompt": odd_text.map(lambda t: "p" + t)}),
            ),
        ),
        "event",
    )
    body = {"session_id": data.draw(odd_text, "session") + "s", "cwd": str(project), **fields}
    if event != "UserPromptSubmit" and data.draw(st.booleans(), "deep"):
        body["tool_response"] = {"deep": DEEP_SLOT, "other": body["tool_response"]}
    depth = data.draw(st.sampled_from(DEPTHS), "depth")
    raw = odd_json(body, depth).encode()
    with alarm():
        result = run_hook(event, raw, store=str(project / ".kindling"))
    assert result.recorded is not None, result.message
    assert_no_damage(project / ".kindling")


def test_mcp_transport_answers_odd_lines(store_dir, tmp_path):
    """The real `kindling mcp` on stdio: every line, surrogates and nesting and all, is answered
    under its own id, in one line when it is an error, and the server keeps serving."""
    pytest.importorskip("mcp")
    from mcp_wire import Wire

    server = Wire(store_dir, tmp_path / "server-stderr.txt")
    tools = {
        "log": {
            "content": odd_text,
            "kind": st.sampled_from(OBSERVATION_KINDS),
            "provenance": odd_values,
        },
        "search": {"query": odd_text, "since": odd_numbers, "max_results": odd_numbers},
        "recent": {"limit": odd_numbers, "scope": odd_values, "kinds": odd_values},
        "capsule_open": {"intent": odd_text, "scope": odd_values},
        "get": {"ids": st.lists(odd_text, max_size=3)},
        "pin": {"target_type": odd_text, "target_id": odd_text, "note": odd_text},
    }

    @ODD_SETTINGS
    @given(data=st.data())
    def case(data):
        tool = data.draw(st.sampled_from(sorted(tools)), "tool")
        arguments = data.draw(
            st.fixed_dictionaries({}, optional={k: v for k, v in tools[tool].items()}),
            "arguments",
        )
        if data.draw(st.booleans(), "deep"):
            arguments[data.draw(st.sampled_from(sorted(tools[tool])), "where")] = DEEP_SLOT
        depth = data.draw(st.sampled_from(DEPTHS), "depth")
        server.next_id += 1
        message = {
            "jsonrpc": "2.0",
            "id": server.next_id,
            "method": data.draw(st.sampled_from(["tools/call", "tools/call", "tools/\ud800"])),
            "params": {"name": tool, "arguments": arguments},
        }
        line = odd_json(message, depth)
        if data.draw(st.integers(0, 9), "cut") == 0:
            line = line[: len(line) // 2]
        server.send(line)
        answer = server.answer()
        assert answer is not None, f"no answer to {line[:200]!r}"
        assert answer.get("id") in (server.next_id, None), answer
        if "error" in answer:
            message = answer["error"]["message"]
            assert "\n" not in message and len(message) < 400, message
        else:
            result = answer["result"]
            text = result["content"][0]["text"]
            if result.get("isError"):
                assert "\n" not in text and len(text) < 400, text
                assert "validation error" not in text and "pydantic" not in text, text

    try:
        case()
        assert server.alive()
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr, stderr
    assert_no_damage(store_dir)


# ---------------------------------------------------------------- the files themselves


def _entity_path(store_dir, etype: str, eid: str):
    path = store_dir / "objects" / etype / fanout(eid) / f"{eid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def plant_hazards(store_dir, tmp_path) -> set[str]:
    """FIFOs, symlinks, deep nesting, huge numbers and control characters, as git could bring."""
    planted = set()

    def rel(path) -> str:
        return path.relative_to(store_dir).as_posix()

    fifo = _entity_path(store_dir, "observations", "o-fifo")
    os.mkfifo(fifo)
    planted.add(rel(fifo))
    outside = tmp_path / "outside.json"
    outside.write_bytes(b'{"id": "o-link"}')
    link = _entity_path(store_dir, "observations", "o-link")
    link.symlink_to(outside)
    planted.add(rel(link))
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    bucket = store_dir / "objects" / "capsules" / "zz"
    bucket.symlink_to(folder, target_is_directory=True)
    planted.add(rel(bucket))
    for eid, body in (
        ("o-deep", deep(50_000)),
        ("o-huge", b'{"id": "o-huge", "ts": 1' + b"0" * 30 + b"}"),
        ("o-nan", b'{"id": "o-nan", "ts": NaN}'),
        ("o-big", canonical.encode({**SEED, "id": "o-big", "ts": 2**64 - 1})),
        ("o-ctl", canonical.encode({**SEED, "id": "o-ctl", "content": "\x1b]52;c;eA==\x07"})),
    ):
        path = _entity_path(store_dir, "observations", eid)
        path.write_bytes(body)
        if eid != "o-ctl":
            planted.add(rel(path))
    lock_fifo = store_dir / "watch.lock"
    os.mkfifo(lock_fifo)
    return planted


SEED = {
    "kind": "message",
    "content": "planted",
    "provenance": {},
    "ts": 1,
    "scopeIds": {"sessionId": "s1"},
    "redacted": False,
}


def test_hostile_files_never_hang_or_crash_a_command(seeded, tmp_path):
    store_dir, obs_id, cap_id = seeded
    planted = plant_hazards(store_dir, tmp_path)
    for args in (
        ["status"],
        ["list", "observations"],
        ["list", "capsules"],
        ["search", "planted"],
        ["search", "seed", "--json"],
        ["show", "o-fifo"],
        ["show", "o-link"],
        ["show", "o-ctl"],
        ["forget", "o-fifo"],
        ["forget", "o-ctl"],
        ["pin", "observation", "o-fifo"],
        ["pin", "observation", obs_id],
        ["log", "x", "--capsule", cap_id],
        ["log", "x", "--session", "s1"],
        ["capsule", "close", cap_id],
        ["export"],
        ["reindex"],
        ["reindex", "--full"],
        ["fsck"],
        ["fsck", "--fix"],
    ):
        result = invoke(store_dir, args)
        assert "\x1b" not in result.output or "--json" in args, args
    assert os.path.lexists(store_dir / "objects" / "capsules" / "zz")
    assert list((tmp_path / "elsewhere").iterdir()) == [], "nothing written through a symlink"
    assert_no_damage(store_dir, planted)


def test_numbers_survive_a_round_trip_or_are_refused(store_dir):
    """Every edge number either round-trips through a file and the index, or is refused."""
    with Memory(store_dir) as memory:
        for value in [*EDGE_INTS, math.nan, math.inf]:
            try:
                written = memory.log("edge", ts=value)
            except KindlingError:
                continue
            assert memory.get(written.entity["id"]).entity["ts"] == value
    invoke(store_dir, ["list", "observations"])
    assert_no_damage(store_dir)
