"""`kindling mcp`'s stdio transport: every line a client writes gets an answer.

The SDK's own stdio transport hands each line to its JSON-RPC parser and, when that refuses
it, answers nothing: a lone surrogate escape or nesting deeper than that parser takes left the
client waiting forever, and the server's next answer could no longer be matched to anything.
Here each line is read as hook payloads are (kindling.agents.intake: surrogates replaced,
nesting cut, out-of-range numbers kept as text) before the SDK sees it, and a line that still
is no JSON-RPC message is answered with a one-line JSON-RPC error. The SDK still frames,
dispatches and writes every message; only what reaches its parser has been made readable.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any, BinaryIO

from kindling.agents.intake import loads
from kindling.agents.payload import one_line

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603


@contextlib.contextmanager
def claimed_wire() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The client's stdin and stdout as binary files, kept for the protocol alone.

    While serving, fd 0 reads nothing and fd 1 writes to stderr (as the SDK's own transport
    arranges), so a stray print or a child process can neither eat a request nor corrupt the
    stream of answers; both are put back afterwards.
    """
    if sys.platform == "win32":  # the SDK rebinds Windows std handles; not worth copying here
        yield sys.stdin.buffer, sys.stdout.buffer
        return
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    try:
        with contextlib.suppress(OSError):  # without a diversion the wire still works
            nothing = os.open(os.devnull, os.O_RDONLY)
            os.dup2(nothing, 0)
            os.close(nothing)
            os.dup2(2, 1)
        with (
            open(wire_in, "rb", closefd=False) as reader,
            open(wire_out, "wb", closefd=False) as writer,
        ):
            yield reader, writer
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


class Answers:
    """The stream of answers: whole lines, one writer at a time (the SDK and error replies)."""

    def __init__(self, writer: BinaryIO) -> None:
        import anyio

        self._file = anyio.wrap_file(writer)
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        # The SDK writes one message and its newline per call: holding the lock for the call
        # keeps an error reply from landing inside it. Nothing unencodable may stop the stream.
        async with self._lock:
            await self._file.write(text.encode("utf-8", "replace"))
            await self._file.flush()

    async def flush(self) -> None:
        """Every write is flushed already (the SDK calls this after each message)."""

    async def error(self, request_id: Any, code: int, message: str) -> None:
        """A JSON-RPC error answer on one line."""
        error = {"code": code, "message": one_line(message, 300)}
        await self.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\n")


class Requests:
    """The client's lines as the SDK's transport reads them: each one made readable first."""

    def __init__(self, reader: BinaryIO, answers: Answers) -> None:
        import anyio

        self._file = anyio.wrap_file(reader)
        self._answers = answers

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for raw in self._file:
            try:
                line = await self._readable(raw)
            except Exception as exc:  # noqa: BLE001 - one bad line must not end the session
                detail = f"{type(exc).__name__}: {exc}"
                await self._answers.error(None, INTERNAL_ERROR, f"Internal error: {detail}")
                continue
            if line is not None:
                yield line

    async def _readable(self, raw: bytes) -> str | None:
        """`raw` as JSON-RPC text the SDK accepts, or None once it has been answered here."""
        import mcp.types as types

        if not raw.strip():
            return None  # a blank line is no message: nothing to answer
        try:
            message = loads(raw)
        except ValueError as exc:
            await self._answers.error(None, PARSE_ERROR, f"Parse error: not JSON ({exc})")
            return None
        text = json.dumps(message, ensure_ascii=False)
        try:
            # Checked here as well as by the SDK, because when the SDK refuses a line it
            # answers nothing: what it would refuse is answered here instead.
            types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except Exception:  # noqa: BLE001 - any refusal is the client's mistake to hear about
            await self._answers.error(
                _request_id(message),
                INVALID_REQUEST,
                "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
            )
            return None
        return text


def _request_id(message: Any) -> Any:
    """The id to answer under: the message's own when it has a usable one, else null."""
    if isinstance(message, dict):
        found = message.get("id")
        if isinstance(found, (str, int)) and not isinstance(found, bool):
            return found
    return None


def run_stdio(server: Any) -> None:
    """Serve an MCPServer on this process's stdin and stdout until the client closes stdin."""
    import anyio

    anyio.run(serve_stdio, server)


async def serve_stdio(server: Any) -> None:
    """`run_stdio` inside a running event loop."""
    from mcp.server.stdio import stdio_server

    # The low-level server is what MCPServer.run_stdio_async runs too; only the streams differ.
    lowlevel = server._lowlevel_server
    with claimed_wire() as (reader, writer):
        answers = Answers(writer)
        requests = Requests(reader, answers)
        async with stdio_server(stdin=requests, stdout=answers) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
