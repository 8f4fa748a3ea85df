"""`kindling mcp`: a Model Context Protocol server over stdio, one tool per Memory call.

The MCP SDK is an optional extra (`kindling-memory[mcp]`), imported only when the server is built.
Tool annotations are evaluated where the tools are defined (no postponed annotations in this
module), because the SDK reads them to publish each tool's input schema.
"""

import functools
from typing import Annotated, Any, Literal

from kindling import __version__
from kindling.errors import KindlingError
from kindling.model import CAPSULE_TYPES, OBSERVATION_KINDS, SCOPE_KEYS, SINGULAR

INSTALL_HINT = (
    "kindling mcp needs the MCP SDK: install kindling-memory[mcp] "
    "(pip install 'kindling-memory[mcp]')"
)

INSTRUCTIONS = """\
Kindling is this project's memory: observations (what happened), capsules (episodes of work)
with summaries, and pins (what must always come back). Call `search` before starting work on
something that may have come up before; results come in three tiers: pins, the current
summary, then ranked full-text candidates with provenance. Record findings with `log`, group
work with `capsule_open`/`capsule_close` (closing with a summary), `pin` what matters, and
`forget` anything that should not have been recorded. Ids accept unique prefixes (6+ chars).
"""

Kind = Literal[OBSERVATION_KINDS]  # type: ignore[valid-type]
CapsuleType = Literal[CAPSULE_TYPES]  # type: ignore[valid-type]


def _sdk():
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from pydantic import ConfigDict, Field, with_config
        from typing_extensions import TypedDict
    except ImportError:
        raise KindlingError(INSTALL_HINT) from None
    return MCPServer, ToolError, Field, TypedDict, ConfigDict, with_config


def build_server(memory):
    """An MCPServer whose tools call `memory` (a kindling.Memory)."""
    MCPServer, ToolError, Field, TypedDict, ConfigDict, with_config = _sdk()

    # Scope of an entity: any of the five ids.
    ScopeIds = with_config(ConfigDict(extra="forbid"))(
        TypedDict("ScopeIds", {key: str for key in SCOPE_KEYS}, total=False)  # noqa: UP013
    )

    Scope = Annotated[
        ScopeIds | None, Field(description='Scope ids, e.g. {"sessionId": "s1", "repoId": "app"}')
    ]
    Ref = Annotated[str, Field(description="Full id or a unique prefix of 6+ characters")]

    server = MCPServer(
        "kindling", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    def tool(fn):
        # Library errors become MCP tool errors carrying their message for the model to read.
        @functools.wraps(fn)
        async def call(**kwargs):
            try:
                return fn(**kwargs)
            except KindlingError as exc:
                raise ToolError(str(exc)) from None

        server.tool(name=fn.__name__)(call)
        return fn

    @tool
    def search(
        query: Annotated[str, Field(description="Words to look for (SQLite FTS5 full-text)")],
        scope: Scope = None,
        kinds: Annotated[list[Kind] | None, Field(description="Only these kinds")] = None,
        since: Annotated[int | None, Field(description="Only from this epoch ms on")] = None,
        max_results: Annotated[int, Field(ge=1, le=200, description="Most candidates")] = 10,
        max_tokens: Annotated[int | None, Field(ge=1, description="Token budget")] = None,
        include_redacted: bool = False,
    ) -> dict[str, Any]:
        """Retrieve memory: pins first, then the current summary, then ranked candidates."""
        return memory.search(
            query,
            scope=dict(scope or {}) or None,
            kinds=kinds,
            since=since,
            max_results=max_results,
            max_tokens=max_tokens,
            include_redacted=include_redacted,
        )

    @tool
    def log(
        content: Annotated[str, Field(description="What happened, as text")],
        kind: Kind = "message",
        scope: Scope = None,
        provenance: Annotated[
            dict[str, Any] | None, Field(description="Source metadata (file, command, ...)")
        ] = None,
        capsule_id: Annotated[str | None, Field(description="Append to this open capsule")] = None,
    ) -> dict[str, Any]:
        """Record an observation (secrets are masked); returns it as stored."""
        scope = dict(scope or {})
        written = memory.log(
            content, kind=kind, scope=scope, provenance=provenance, capsule_id=capsule_id
        )
        return written.entity

    @tool
    def pin(
        target_type: Literal["observation", "summary"],
        target_id: Ref,
        note: Annotated[str | None, Field(description="Why it matters")] = None,
        ttl_ms: Annotated[int | None, Field(ge=1, description="Expire after this many ms")] = None,
    ) -> dict[str, Any]:
        """Pin an observation or summary so every search returns it first; returns the pin."""
        return memory.pin(target_type, target_id, note=note, ttl=ttl_ms).entity

    @tool
    def forget(observation_id: Ref) -> dict[str, Any]:
        """Redact an observation: the record stays, its content and provenance are removed."""
        return memory.forget(observation_id).entity

    @tool
    def capsule_open(
        intent: Annotated[str, Field(description="What this episode of work is for")],
        type: CapsuleType = "session",
        scope: Scope = None,
    ) -> dict[str, Any]:
        """Open a capsule (one open session capsule per session); returns it."""
        return memory.open_capsule(intent, type=type, scope=dict(scope or {})).entity

    @tool
    def capsule_close(
        capsule_id: Ref,
        summary: Annotated[str | None, Field(description="What was learned or done")] = None,
        confidence: Annotated[float, Field(ge=0, le=1)] = 1.0,
        evidence: Annotated[
            list[str] | None, Field(description="Observation ids backing the summary")
        ] = None,
    ) -> dict[str, Any]:
        """Close a capsule, optionally writing its summary; returns the capsule and summary."""
        capsule = memory.close_capsule(
            capsule_id, summary=summary, confidence=confidence, evidence=evidence or ()
        ).entity
        written = None
        if capsule.get("summaryId"):
            written = memory.get(capsule["summaryId"]).entity
        return {"capsule": capsule, "summary": written}

    @tool
    def show(id: Ref) -> dict[str, Any]:
        """One entity of any type by id or prefix, with its type and file path."""
        found = memory.get(id)
        return {"type": SINGULAR[found.entity_type], "entity": found.entity, "path": found.path}

    return server


def serve(store: str | None = None) -> None:
    """Run the server on stdin/stdout until the client disconnects."""
    from kindling.memory import Memory

    with Memory(store) as memory:  # a missing store is reported before the slow SDK import
        build_server(memory).run("stdio")
