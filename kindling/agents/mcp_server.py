"""`kindling mcp`: a Model Context Protocol server over stdio for one or several stores.

The tools (kindling.agents.mcp_tools) and the server that publishes them
(kindling.agents.mcp_publish) need the MCP SDK (an optional extra); they are imported only
here, once the stores have opened, so nothing else ever loads the SDK.
"""

from __future__ import annotations

from kindling.errors import KindlingError

INSTALL_HINT = (
    "kindling mcp needs the MCP SDK: install kindling-memory[mcp] "
    "(pip install 'kindling-memory[mcp]')"
)


def serve(stores: list[str] | tuple[str, ...] = ()) -> None:
    """Run the server on stdin/stdout for these stores (default: the one found as usual)."""
    from kindling.agents.mcp_stdio import run_stdio
    from kindling.memory import Memory

    # Missing stores are reported before the slow SDK import.
    memories = [Memory(s, autowatch=True) for s in stores or [None]]
    try:
        run_stdio(_build_server(memories))
    finally:
        for memory in memories:
            memory.close()


def _build_server(memories: list):
    try:
        from kindling.agents.mcp_publish import build_server
    except ImportError as exc:
        if exc.name is None or exc.name.startswith("kindling"):
            raise  # a fault of Kindling's own, not a missing extra
        raise KindlingError(INSTALL_HINT) from None
    return build_server(memories)
