"""`kindling mcp` driven line by line over its real stdio, below any MCP client library.

A client library refuses to send what an attacker can (a lone surrogate escape, nesting deeper
than its own parser takes, a line that is not JSON), so these tests write the JSON-RPC lines
themselves and read each answer with a timeout: a missing answer is a failure, not a hang.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

PROTOCOL = "2025-06-18"
ANSWER_SECONDS = 20


class Wire:
    """One running `python -m kindling mcp --store STORE`, initialised and ready for calls."""

    def __init__(self, store: Path, errlog: Path) -> None:
        self._err = open(errlog, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kindling", "mcp", "--store", str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=dict(os.environ),
            cwd=str(store.parent),
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.next_id = 1000
        first = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "kindling-tests", "version": "1"},
            },
        )
        assert "result" in first, first
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)

    def send(self, line: str | bytes) -> None:
        data = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
        self.proc.stdin.write(data.rstrip(b"\n") + b"\n")
        self.proc.stdin.flush()

    def answer(self, seconds: float = ANSWER_SECONDS) -> dict | None:
        """The next message the server writes (None when it says nothing in time)."""
        try:
            line = self._lines.get(timeout=seconds)
        except queue.Empty:
            return None
        assert line.endswith(b"\n"), line
        return json.loads(line)

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message))
        found = self.answer()
        assert found is not None, f"no answer to {method}"
        assert found.get("id") == self.next_id, found
        return found

    def call(self, tool: str, arguments: dict) -> dict:
        """A tools/call's result (content, isError, structuredContent)."""
        found = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in found, found
        return found["result"]

    def alive(self) -> bool:
        """The server still answers an ordinary call."""
        result = self.call("recent", {"limit": 1})
        return result.get("isError") is False

    def close(self) -> str:
        """Stop the server; its stderr."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._err.close()
        return Path(self._err.name).read_text(errors="replace")


def text_of(result: dict) -> str:
    return result["content"][0]["text"]


def nested(depth: int, leaf: str = "1") -> str:
    """JSON text of objects nested `depth` levels deep (too deep for json.dumps to write)."""
    return '{"a":' * depth + leaf + "}" * depth
