"""The MCP server `kindling mcp` runs: every tool of kindling.agents.mcp_tools, published with
its annotations, and tool errors as one line for a person (needs the MCP SDK)."""

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field, ValidationError

from kindling import __version__
from kindling.agents.mcp_arguments import argument_problem
from kindling.agents.mcp_tools import (
    Served,
    capsule_close,
    capsule_open,
    context,
    forget,
    get,
    log,
    pin,
    recent,
    search,
    summarize,
    unpin,
)
from kindling.errors import KindlingError

INSTRUCTIONS = """\
Kindling is this project's memory: observations (what happened), capsules (episodes of work)
with summaries, and pins (what must always come back). Start with `context` for pins, recent
session summaries, open problems and recent activity. Call `search` before working on
something that may have come up before; `recent` lists the latest entries, `get` fetches
entities by id. Record findings with `log`; in a Claude Code session, write your own summary
of the session with `summarize` before you finish (its capsule stays open: the session's
hooks close it). Elsewhere, group work with `capsule_open`/`capsule_close` (closing with a
summary). `pin`/`unpin` what matters, and `forget` anything that should not have been
recorded. Ids accept unique prefixes (6+ chars). Stores served: {stores}.
"""


class KindlingMCPServer(MCPServer):
    """Tool errors as one line for a person: the caller's mistake, never the SDK's text."""

    _schemas: dict[str, dict] | None = None

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # already a generic line, and the SDK logs the crash behind it
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                if self._schemas is None:
                    self._schemas = {t.name: t.input_schema for t in await self.list_tools()}
                schema = self._schemas.get(name, {})
                message = argument_problem(name, exc.__cause__.errors(), schema)
            else:
                message = str(exc).removeprefix(f"Error executing tool {name}: ")
            raise ToolError(message) from None


# ---------------------------------------------------------------- the server


def hints(*, read_only: bool, destructive: bool = False, idempotent: bool = False):
    """A tool's annotations; no tool reaches beyond the stores it serves."""
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def register(
    server: MCPServer, served: Served, tool: Callable[..., CallToolResult], annotations: Any
) -> None:
    """Publish `tool` under its name, its first parameter (`served`) bound to these stores."""
    signature = inspect.signature(tool)
    store_name = Annotated[
        str | None,
        Field(description=f"Which store: {', '.join(served.names)} (default: the first)"),
    ]
    published = [
        p.replace(annotation=store_name) if p.name == "store" else p
        for p in list(signature.parameters.values())[1:]
    ]

    async def call(**kwargs: Any) -> CallToolResult:
        # Every failure becomes a one-line tool error for the model, never a traceback.
        try:
            return tool(served, **kwargs)
        except KindlingError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001
            raise ToolError(f"{tool.__name__} failed: {type(exc).__name__}") from None

    call.__name__ = call.__qualname__ = tool.__name__
    call.__doc__ = tool.__doc__
    # The SDK reads this signature to publish the tool's input schema.
    call.__signature__ = signature.replace(parameters=published)  # type: ignore[attr-defined]
    server.add_tool(call, name=tool.__name__, annotations=annotations)


def build_server(memories: list) -> KindlingMCPServer:
    """An MCP server whose tools call the given kindling.Memory objects."""
    served = Served(memories)
    server = KindlingMCPServer(
        "kindling",
        version=__version__,
        instructions=INSTRUCTIONS.format(stores=", ".join(served.names)),
        log_level="WARNING",
    )
    reading = hints(read_only=True, idempotent=True)
    writing = hints(read_only=False)
    removing = hints(read_only=False, destructive=True, idempotent=True)
    for tool in (context, search, recent, get):
        register(server, served, tool, reading)
    for tool in (log, summarize, capsule_open, capsule_close, pin):
        register(server, served, tool, writing)
    for tool in (unpin, forget):
        register(server, served, tool, removing)
    return server
