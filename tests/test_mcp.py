"""`kindling mcp`: the real server process, driven by the MCP SDK's own stdio client."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = {
    "context",
    "search",
    "recent",
    "get",
    "log",
    "summarize",
    "capsule_open",
    "capsule_close",
    "pin",
    "unpin",
    "forget",
}
READ_ONLY = {"context", "search", "recent", "get"}
DESTRUCTIVE = {"unpin", "forget"}
IDEMPOTENT = READ_ONLY | DESTRUCTIVE


def make_store(folder: Path) -> Path:
    from kindling.store import Store

    root = folder / ".kindling"
    Store.create(root)
    return root


@contextlib.asynccontextmanager
async def connect(stores: list[Path], home: Path, errlog):
    """Start `python -m kindling mcp --store ...` and connect to it over stdio."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    args = ["-m", "kindling", "mcp"]
    for store in stores:
        args += ["--store", str(store)]
    params = StdioServerParameters(
        command=sys.executable,
        args=args,
        # The SDK passes on only a few variables; PYTHONPATH picks this checkout's kindling.
        env={
            "HOME": str(home),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
        cwd=str(home),
    )
    async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
        yield client


async def ok(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.content[0].text, result.structured_content


async def error(client, tool, **arguments) -> str:
    """A tool error, whether Kindling's own or the input schema's: one short line."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments)
    message = result.content[0].text
    assert "\n" not in message.strip() and len(message) < 400, message
    assert "Traceback" not in message and "pydantic" not in message, message
    return message


def scenario(stores, home, tmp_path, body):
    """Run `body(client)` against a server; its stderr must never hold a traceback."""
    pytest.importorskip("mcp")
    log_path = tmp_path / "server-stderr.txt"
    with open(log_path, "w") as errlog:

        async def run():
            async with connect(stores, home, errlog) as client:
                await body(client)

        asyncio.run(run())
    assert "Traceback" not in log_path.read_text()


def test_tools_carry_annotations_and_schemas(store_dir, isolated_env, tmp_path):
    async def body(client):
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == TOOLS
        for name, t in listed.items():
            assert t.description
            hints = t.annotations
            assert hints.read_only_hint is (name in READ_ONLY), name
            assert hints.destructive_hint is (name in DESTRUCTIVE), name
            assert hints.idempotent_hint is (name in IDEMPOTENT), name
            assert "store" in t.input_schema["properties"], name
        assert listed["search"].input_schema["required"] == ["query"]
        assert listed["get"].input_schema["required"] == ["ids"]

    scenario([store_dir], isolated_env, tmp_path, body)


def test_every_tool_with_valid_arguments(store_dir, isolated_env, tmp_path):
    async def body(client):
        scope = {"sessionId": "s1", "repoId": "acme"}
        text, cap = await ok(client, "capsule_open", intent="fix login", scope=scope)
        cap_id = cap["id"]
        assert text.startswith(f"opened {cap_id}")
        _, first = await ok(
            client, "log", content="JWT validation failed: token expired", kind="error", scope=scope
        )
        _, second = await ok(
            client, "log", content="password=hunter2hunter2 in the logs", scope=scope
        )
        assert "hunter2hunter2" not in second["items"][0]["content"]  # masked like `kindling log`

        text, found = await ok(client, "search", query="token expired")
        assert first["id"] in [r["id"] for r in found["results"]]
        assert "token expired" in text and first["id"][:8] in text

        text, listed = await ok(client, "recent", type="observations", kinds=["error"])
        assert [i["id"] for i in listed["items"]] == [first["id"]]
        text, got = await ok(client, "get", ids=[first["id"][:8], cap_id])
        assert [i["type"] for i in got["items"]] == ["observation", "capsule"]

        text, context = await ok(client, "context", session_id="s1")
        assert cap_id in text and "JWT validation failed" in text

        _, pinned = await ok(client, "pin", target_type="observation", target_id=first["id"])
        pin_id = pinned["id"]
        _, again = await ok(client, "search", query="anything at all")
        assert [p["pinId"] for p in again["pins"]] == [pin_id]
        text, _ = await ok(client, "unpin", pin_id=pin_id)
        assert text == f"unpinned {pin_id}"

        text, closed = await ok(
            client,
            "capsule_close",
            capsule_id=cap_id,
            summary="exp is in seconds",
            evidence=[first["id"]],
        )
        assert closed["capsule"]["status"] == "closed"
        assert closed["summary"]["evidenceRefs"] == [first["id"]]
        _, summaries = await ok(client, "recent", type="summaries")
        assert summaries["items"][0]["content"] == "exp is in seconds"

        text, forgotten = await ok(client, "forget", id=second["id"])
        assert forgotten == {"id": second["id"], "redacted": True}

    scenario([store_dir], isolated_env, tmp_path, body)


def test_invalid_arguments_are_short_errors(store_dir, isolated_env, tmp_path):
    async def body(client):
        _, cap = await ok(client, "capsule_open", intent="x", scope={"sessionId": "s9"})
        await ok(client, "capsule_close", capsule_id=cap["id"])
        assert "already closed" in await error(client, "capsule_close", capsule_id=cap["id"])
        assert "no entity" in await error(client, "get", ids=["nothing-like-this"])
        await error(client, "get", ids=[])
        await error(client, "log", content="x", kind="bogus")
        assert "bogus" in await error(client, "log", content="x", scope={"bogus": "x"})
        await error(client, "log", content="   ")
        await error(client, "pin", target_type="capsule", target_id=cap["id"])
        assert "intent" in await error(client, "capsule_open", intent="  ")
        await error(client, "capsule_open", intent="x", type="meeting")
        await ok(client, "capsule_open", intent="once", scope={"sessionId": "s10"})
        assert "already has an open session capsule" in await error(
            client, "capsule_open", intent="twice", scope={"sessionId": "s10"}
        )
        assert "no pin" in await error(client, "unpin", pin_id="pin_0000000000")
        await error(client, "forget", id="00000000-0000")
        assert "observations only" in await error(
            client, "recent", type="capsules", kinds=["error"]
        )
        await error(client, "recent", type="bogus")
        await error(client, "context", max_tokens=10)
        assert "no store" in await error(client, "search", query="x", store="elsewhere")
        # Pathological queries: a short error or an ordinary answer, never a crash.
        assert "characters" in await error(client, "search", query="a" * 50_000)
        for query in ['"unbalanced', "NEAR(", "*", "\x00", "((((((((((", "a" * 1_999, "^-:"]:
            result = await client.call_tool("search", {"query": query})
            if result.is_error:
                assert len(result.content[0].text) < 400

    scenario([store_dir], isolated_env, tmp_path, body)


def test_text_results_keep_to_the_token_budget(store_dir, isolated_env, tmp_path):
    from kindling.memory import Memory

    with Memory(store_dir) as memory:
        for i in range(150):
            memory.log(
                f"token refresh attempt {i}: " + "the session token expired before refresh " * 6,
                kind="error",
                scope={"repoId": "acme"},
            )

    async def body(client):
        for tool, arguments in [
            ("search", {"query": "token refresh", "max_results": 100}),
            ("recent", {"limit": 150}),
            ("context", {}),
        ]:
            for budget in (200, 1_000):
                text, _ = await ok(client, tool, max_tokens=budget, **arguments)
                used = len(text) / 4  # the ~4 characters/token rule retrieval uses
                assert budget * 0.75 <= used <= budget * 1.1, (tool, budget, used)
        text, structured = await ok(
            client, "search", query="token refresh", max_results=100, max_tokens=1_000
        )
        assert structured["truncated"] is True and structured["total"] == 150
        assert len(structured["results"]) == text.count("\n- ") + text.startswith("- ")

    scenario([store_dir], isolated_env, tmp_path, body)


def test_several_stores(isolated_env, tmp_path):
    api, web = make_store(tmp_path / "api"), make_store(tmp_path / "web")

    async def body(client):
        await ok(client, "log", content="api: rate limiter buckets of 50")
        await ok(client, "log", content="web: rate limiter shows a banner", store="web")
        await ok(client, "log", content="web again: banner text", store=str(web))
        _, default = await ok(client, "search", query="rate limiter")
        assert [r["content"] for r in default["results"]] == ["api: rate limiter buckets of 50"]
        _, other = await ok(client, "recent", store="web")
        assert len(other["items"]) == 2

    scenario([api, web], isolated_env, tmp_path, body)


def test_missing_sdk_says_how_to_install(run, monkeypatch):
    for name in ("mcp", "mcp.server", "mcp.server.mcpserver", "mcp.server.mcpserver.exceptions"):
        monkeypatch.setitem(sys.modules, name, None)
    # Imported already (by another test in this process), the tools would not need the SDK.
    monkeypatch.delitem(sys.modules, "kindling.agents.mcp_tools", raising=False)
    monkeypatch.delitem(sys.modules, "kindling.agents.mcp_publish", raising=False)
    result = run("mcp")
    assert result.exit_code == 1
    assert "pip install 'kindling-memory[mcp]'" in result.output


def test_core_modules_do_not_import_the_sdk():
    code = (
        "import sys, kindling.cli.agents, kindling.agents.mcp_server, kindling.memory; "
        "assert not [m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_no_store_is_a_clear_error(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kindling", "mcp", "--store", str(tmp_path / "missing")],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.decode().startswith("Error: no Kindling store")
