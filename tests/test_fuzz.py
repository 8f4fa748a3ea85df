"""Bad input never becomes a traceback: hypothesis fills entity files and bundles with garbage
and every command answers with exit 0, 1 or 2 and a message, writing nothing outside the store."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from conftest import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from kindling import canonical
from kindling.cli import cli
from kindling.model import ENTITY_TYPES
from kindling.store import Store, fanout

FUZZ_SETTINGS = fuzz_settings(60)

BAD_IDS = [
    "../../etc/passwd",
    "..",
    "a/b",
    "/abs",
    "nul\x00byte",
    "x" * 10_000,
    "",
    " ",
    ".hidden",
    "-dash",
    "ünïcode",
    "obs\n1",
    "C:\\windows",
]

VALID = {
    "observations": {
        "id": "obs-1",
        "kind": "error",
        "content": "token expired",
        "provenance": {},
        "ts": 1750416064123,
        "scopeIds": {"sessionId": "s1"},
        "redacted": False,
    },
    "capsules": {
        "id": "cap_1",
        "type": "session",
        "intent": "fix login",
        "status": "open",
        "openedAt": 1750416000000,
        "scopeIds": {"sessionId": "s1"},
        "observationIds": ["obs-1"],
    },
    "summaries": {
        "id": "sum_1",
        "content": "fixed",
        "confidence": 0.5,
        "evidenceRefs": ["obs-1"],
        "capsuleId": "cap_1",
        "ts": 1750416600000,
        "scopeIds": {},
    },
    "pins": {
        "id": "pin_1",
        "targetType": "observation",
        "targetId": "obs-1",
        "reason": None,
        "createdAt": 1750416100000,
        "expiresAt": None,
        "scopeIds": {},
    },
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=20,
)
bad_ids = st.sampled_from(BAD_IDS) | st.text(max_size=40)


def _dump(value: object) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return b"null"


@st.composite
def mutated_entity(draw) -> bytes:
    """A valid entity with a field replaced, dropped or added: garbage that nearly parses."""
    etype = draw(st.sampled_from(ENTITY_TYPES))
    entity = dict(VALID[etype])
    key = draw(st.sampled_from(sorted(entity) + ["extra", "id", "id"]))
    action = draw(st.sampled_from(["replace", "drop", "bad_id", "huge"]))
    if action == "drop":
        entity.pop(key, None)
    elif action == "bad_id":
        entity["id"] = draw(bad_ids)
    elif action == "huge":
        entity[key] = "y" * draw(st.sampled_from([70_000, 1_000_000]))
    else:
        entity[key] = draw(json_values)
    return _dump(entity)


def deep(depth: int, kind: str) -> bytes:
    if kind == "list":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


file_bytes = st.one_of(
    st.binary(max_size=300),
    json_values.map(_dump),
    mutated_entity(),
    st.builds(deep, st.sampled_from([100, 600, 5_000, 100_000]), st.sampled_from(["list", "d"])),
    st.binary(min_size=1, max_size=20).map(lambda b: b'{"id": "obs-9", "content": "' + b"\xff" + b),
    st.just(b""),
    st.just(b"<<<<<<< ours\n{}\n=======\n{}\n>>>>>>> theirs\n"),
)

file_names = st.one_of(
    st.sampled_from(["obs-1.json", "cap_1.json", "pin_1.json", "sum_1.json", "x.json"]),
    st.from_regex(r"[A-Za-z0-9._\- ]{1,60}\.json", fullmatch=True),
    st.text(
        st.characters(blacklist_characters="/\x00", blacklist_categories=["Cs"]),
        min_size=1,
        max_size=40,
    ).map(lambda s: s + ".json"),
)


@st.composite
def placed_files(draw) -> list[tuple[str, str, str, bytes]]:
    """(type folder, bucket, file name, bytes) for a few garbage files."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(file_names)
        etype = draw(st.sampled_from(ENTITY_TYPES))
        stem = name[: -len(".json")]
        bucket = draw(st.sampled_from([fanout(stem), "zz", "00"]))
        out.append((etype, bucket, name, draw(file_bytes)))
    return out


@st.composite
def bundles(draw) -> bytes:
    choice = draw(st.sampled_from(["bytes", "json", "shaped", "deep"]))
    if choice == "bytes":
        return draw(st.binary(max_size=300))
    if choice == "json":
        return _dump(draw(json_values))
    if choice == "deep":
        return deep(draw(st.sampled_from([600, 100_000])), "list")
    dataset = {}
    for etype in ENTITY_TYPES:
        items = draw(st.lists(mutated_entity().map(orjson.loads), max_size=2))
        if draw(st.booleans()):
            items.append(VALID[etype])
        dataset[etype] = items
    if draw(st.booleans()):
        dataset[draw(st.sampled_from(ENTITY_TYPES))] = draw(json_values)
    bundle = {
        "bundleVersion": draw(st.sampled_from(["1.0", "9.9", 1])),
        "exportedAt": 1,
        "dataset": {"version": "1.0", "exportedAt": 1, **dataset},
    }
    return _dump(bundle)


def tree_digest(top: Path, skip: Path) -> dict[str, str]:
    """Every file under `top` except those under `skip`, by content hash."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        if Path(dirpath) == skip:
            dirnames[:] = []
            continue
        for name in filenames:
            path = Path(dirpath) / name
            out[str(path.relative_to(top))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def commands(ident: str, text: str) -> list[list[str]]:
    return [
        ["fsck"],
        ["fsck", "--json"],
        ["status"],
        ["list", "observations"],
        ["list", "capsules"],
        ["list", "pins", "--all"],
        ["show", ident],
        ["forget", ident],
        ["pin", "observation", ident],
        ["unpin", ident],
        ["log", text, "--capsule", ident],
        ["capsule", "close", ident],
        ["search", text],
        ["reindex"],
        ["export"],
        ["export", "-o", "out.json"],
        ["import", "bundle.json"],
        ["import", "bundle.json", "--dry-run"],
        ["resolve", ident],
        ["fsck", "--fix"],
        ["status"],
    ]


def check_result(args: list[str], result) -> None:
    shown = f"kindling {' '.join(a[:40] for a in args)[:300]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        tb = "".join(traceback.format_exception(result.exception))
        pytest.fail(f"{shown} raised:\n{tb[-3000:]}")
    assert result.exit_code in (0, 1, 2), f"{shown} exited {result.exit_code}: {result.output}"
    if result.exit_code == 1 and not result.stdout:
        # a refusal opens with a line for a person (the merge driver names a conflict)
        first = result.stderr.partition("\n")[0]
        assert first.startswith(("Error: ", "kindling: ")), f"{shown}: {result.stderr[-2000:]}"
    if result.exit_code == 2:
        assert "Error" in result.output or "Usage" in result.output, shown
    if result.exit_code == 1:
        assert result.output.strip(), f"{shown} failed without saying why"


@contextlib.contextmanager
def workdir():
    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="kindling-fuzz-", dir=base) as tmp:
        old = os.getcwd()
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(old)


def run_all(work: Path, ident: str, text: str) -> None:
    store = work / ".kindling"
    before = tree_digest(work, store)
    runner = CliRunner()
    for args in commands(ident, text):
        result = runner.invoke(cli, ["--store", str(store), *args], catch_exceptions=True)
        check_result(args, result)
        if args[:2] == ["export", "-o"]:
            # the one file a command is asked to write outside the store
            (work / "out.json").unlink(missing_ok=True)
    assert tree_digest(work, store) == before, "a command wrote outside the store"


@pytest.mark.slow
@FUZZ_SETTINGS
@given(files=placed_files(), ident=bad_ids, text=st.text(min_size=1, max_size=50))
def test_garbage_entity_files(files, ident, text):
    with workdir() as work:
        store = Store.create(work / ".kindling")
        for etype, entity in VALID.items():
            store.write(etype, entity)
        for etype, bucket, name, data in files:
            folder = store.objects / etype / bucket
            folder.mkdir(parents=True, exist_ok=True)
            try:
                (folder / name).write_bytes(data)
            except OSError:
                continue  # a name this file system refuses (too long in bytes)
        (work / "bundle.json").write_bytes(canonical.encode({"bundleVersion": "1.0"}))
        run_all(work, ident, text)


@FUZZ_SETTINGS
@given(bundle=bundles(), ident=bad_ids)
def test_garbage_bundles(bundle, ident):
    with workdir() as work:
        store = Store.create(work / ".kindling")
        for etype, entity in VALID.items():
            store.write(etype, entity)
        (work / "bundle.json").write_bytes(bundle)
        runner = CliRunner()
        before = tree_digest(work, work / ".kindling")
        for args in (
            ["import", "bundle.json", "--dry-run"],
            ["import", "bundle.json"],
            ["fsck"],
            ["show", ident],
            ["list", "observations"],
        ):
            result = runner.invoke(cli, ["--store", str(work / ".kindling"), *args])
            check_result(args, result)
        assert tree_digest(work, work / ".kindling") == before
        # Whatever an import accepted is a valid, canonical store.
        report = CliRunner().invoke(cli, ["--store", str(work / ".kindling"), "fsck", "--json"])
        assert report.output.startswith("{"), report.output[-2000:]
        problems = orjson.loads(report.output)["problems"]
        assert [p for p in problems if p["check"] not in ("dangling", "index")] == []


def test_merge_driver_on_random_bytes(tmp_path):
    """The merge driver with random sides: exit 0 or 1, never a traceback."""

    @FUZZ_SETTINGS
    @given(sides=st.lists(file_bytes, min_size=3, max_size=3))
    def inner(sides):
        paths = []
        for name, data in zip("OAB", sides, strict=True):
            p = tmp_path / f".merge_file_{name}"
            p.write_bytes(data)
            paths.append(str(p))
        result = CliRunner().invoke(cli, ["merge-driver", *paths])
        check_result(["merge-driver"], result)
        assert result.exit_code in (0, 1)
        out = Path(paths[1]).read_bytes()
        if result.exit_code == 0:
            canonical.decode(out)
        else:
            assert out.startswith(b"<<<<<<<")

    inner()


# ---------------------------------------------------------------- size limit

TEN_MB = 10 * 1024 * 1024


def test_ten_megabyte_observation_is_stored_and_searchable(store_dir):
    """A 10 MB observation goes in through stdin, round-trips, and search finds it."""
    block = "".join(f"filler{i} " for i in range(977))
    words = block * (TEN_MB // len(block) + 1)
    content = ("zebrastart " + words)[: TEN_MB - len(" zebraend")] + " zebraend"
    assert len(content.encode()) == TEN_MB
    runner = CliRunner()
    logged = runner.invoke(cli, ["--store", str(store_dir), "log", "-", "--json"], input=content)
    assert logged.exit_code == 0, logged.output[-2000:]
    oid = orjson.loads(logged.stdout)["id"]
    stored = Store.open(store_dir).load("observations", oid)
    assert stored["content"] == content
    for word in ("zebrastart", "zebraend"):
        found = runner.invoke(cli, ["--store", str(store_dir), "search", word, "--json"])
        assert found.exit_code == 0, found.output[-2000:]
        assert oid in found.stdout
    assert runner.invoke(cli, ["--store", str(store_dir), "fsck"]).exit_code == 0


def test_content_over_the_limit_is_refused_clearly(store_dir):
    """Past the documented limit, a clear refusal and nothing written."""
    from kindling.model import MAX_CONTENT_BYTES as limit

    runner = CliRunner()
    result = runner.invoke(cli, ["--store", str(store_dir), "log", "-"], input="z" * (limit + 1))
    assert result.exit_code == 1
    assert "Error:" in result.output and "limit" in result.output
    assert list(Store.open(store_dir).walk()) == []
