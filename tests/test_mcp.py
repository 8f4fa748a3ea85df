"""`kindling mcp`: the real server process, driven by the MCP SDK's own stdio client."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

TOOLS = {"search", "log", "pin", "forget", "capsule_open", "capsule_close", "show"}


def session(store, home):
    """Start `python -m kindling --store STORE mcp` and connect to it over stdio."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kindling", "--store", str(store), "mcp"],
        env={"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")},
        cwd=str(home),
    )
    return Client(params, read_timeout_seconds=30)


async def ok(client, tool, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def error(client, tool, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


def test_tools_log_search_pin(store_dir, isolated_env):
    pytest.importorskip("mcp")  # only the scenarios need the SDK

    async def scenario():
        async with session(store_dir, isolated_env) as client:
            listed = await client.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            assert all(t.description for t in listed.tools)
            search = next(t for t in listed.tools if t.name == "search")
            assert search.input_schema["required"] == ["query"]

            scope = {"sessionId": "s1", "repoId": "acme"}
            first = await ok(
                client,
                "log",
                content="JWT validation failed: token expired",
                kind="error",
                scope=scope,
            )
            await ok(client, "log", content="token refresh works after the fix", scope=scope)
            found = await ok(client, "search", query="token expired")
            assert found["pins"] == []
            assert first["id"] in [c["entity"]["id"] for c in found["candidates"]]
            assert found["provenance"]["query"] == "token expired"

            pin = await ok(
                client,
                "pin",
                target_type="observation",
                target_id=first["id"][:8],
                note="root cause",
            )
            assert pin["targetId"] == first["id"]
            again = await ok(client, "search", query="refresh")
            assert [p["pin"]["id"] for p in again["pins"]] == [pin["id"]]
            assert again["pins"][0]["target"]["content"] == first["content"]

    asyncio.run(scenario())


def test_capsules_show_forget_and_errors(store_dir, isolated_env):
    pytest.importorskip("mcp")  # only the scenarios need the SDK

    async def scenario():
        async with session(store_dir, isolated_env) as client:
            cap = await ok(client, "capsule_open", intent="fix login", scope={"sessionId": "s2"})
            obs = await ok(
                client,
                "log",
                content="password=hunter2hunter2 in the logs",
                scope={"sessionId": "s2"},
            )
            assert "hunter2hunter2" not in obs["content"]  # masked like `kindling log`
            closed = await ok(
                client,
                "capsule_close",
                capsule_id=cap["id"],
                summary="rotated the password",
                confidence=0.8,
                evidence=[obs["id"]],
            )
            assert closed["capsule"]["status"] == "closed"
            assert closed["capsule"]["observationIds"] == [obs["id"]]
            assert closed["summary"]["evidenceRefs"] == [obs["id"]]

            shown = await ok(client, "show", id=closed["summary"]["id"])
            assert shown["type"] == "summary" and shown["path"].endswith(".json")
            forgotten = await ok(client, "forget", observation_id=obs["id"])
            assert forgotten["redacted"] is True and forgotten["content"] == "[redacted]"

            assert "already closed" in await error(client, "capsule_close", capsule_id=cap["id"])
            assert "no entity" in await error(client, "show", id="nothing-like-this")
            assert "kind" in await error(client, "log", content="x", kind="bogus")
            assert "scope" in await error(client, "log", content="x", scope={"bogus": "x"})
            assert "pin" in await error(client, "pin", target_type="capsule", target_id=cap["id"])

    asyncio.run(scenario())


def test_missing_sdk_says_how_to_install(run, monkeypatch):
    for name in ("mcp", "mcp.server", "mcp.server.mcpserver", "mcp.server.mcpserver.exceptions"):
        monkeypatch.setitem(sys.modules, name, None)
    result = run("mcp")
    assert result.exit_code == 1
    assert "install kindling-memory[mcp]" in result.output


def test_core_modules_do_not_import_the_sdk():
    code = (
        "import sys, kindling.cli.agents, kindling.agents.mcp_server, kindling.memory; "
        "assert not [m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_no_store_is_a_clear_error(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kindling", "--store", str(tmp_path / "missing"), "mcp"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.decode().startswith("Error: no Kindling store")
