"""The tools `kindling mcp` serves (needs the MCP SDK; kindling.agents.mcp_publish serves them).

Tools: context (what a Claude Code session start is told), search, recent, get, log,
summarize, capsule_open, capsule_close, pin, unpin, forget; each annotated (read-only, destructive,
idempotent) and answering with compact text within a token budget plus lean structured
content. Every tool takes an optional `store` naming which store (default: the first).

Each tool is a plain function of the served stores and its arguments; `build_server`
(kindling.agents.mcp_publish) publishes it without the first parameter. This module imports
the SDK at the top, so only kindling.agents.mcp_server.serve imports it, when `kindling mcp`
runs. Type annotations are
evaluated where the tools are defined (no postponed annotations in this module), because
the SDK reads them to publish each tool's input schema.
"""

from typing import Annotated, Any, Literal

from mcp.types import CallToolResult, TextContent
from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from kindling.agents import context as agent_context
from kindling.agents import mcp_sessions
from kindling.agents.mcp_text import DEFAULT_TOKENS, render_entities, render_search
from kindling.errors import KindlingError
from kindling.model import (
    CAPSULE_TYPES,
    ENTITY_TYPES,
    MAX_TIMESTAMP_MS,
    OBSERVATION_KINDS,
    SCOPE_KEYS,
)
from kindling.repo_identity import RepoIdentity, identify
from kindling.search.request import SearchRequest

MAX_QUERY_CHARS = 2_000
MAX_IDS = 50


class Served:
    """The stores a server answers for, by name; the first is the default."""

    def __init__(self, memories: list) -> None:
        self.memories: dict[str, Any] = {}
        self.repos: dict[str, RepoIdentity] = {}
        for memory in memories:
            repo = identify(memory.store.root.parent)
            name, n = repo.id, 2
            while name in self.memories:
                name, n = f"{repo.id}#{n}", n + 1
            self.memories[name] = memory
            self.repos[name] = repo

    @property
    def names(self) -> list[str]:
        return list(self.memories)

    def pick(self, store: str | None) -> tuple[Any, RepoIdentity]:
        """The memory a tool call names (by name or store path), else the first."""
        if store is None:
            name = self.names[0]
        elif store in self.memories:
            name = store
        else:
            name = next(
                (
                    n
                    for n, m in self.memories.items()
                    if str(m.store.root) in (store, store.rstrip("/"))
                ),
                None,
            )
            if name is None:
                raise KindlingError(f"no store {store!r} here; use one of {', '.join(self.names)}")
        return self.memories[name], self.repos[name]


# ---------------------------------------------------------------- argument types

Kind = Literal[OBSERVATION_KINDS]  # type: ignore[valid-type]
CapsuleType = Literal[CAPSULE_TYPES]  # type: ignore[valid-type]
EntityType = Literal[ENTITY_TYPES]  # type: ignore[valid-type]
ScopeIds = with_config(ConfigDict(extra="forbid"))(
    TypedDict("ScopeIds", {key: str for key in SCOPE_KEYS}, total=False)  # noqa: UP013
)
Scope = Annotated[
    ScopeIds | None,
    Field(
        description='Scope ids, e.g. {"sessionId": "s1", "repoId": "github.com/acme/app"}; '
        '{"agentId": "codex"}: what one agent recorded'
    ),
]
Ref = Annotated[str, Field(description="Full id or a unique prefix of 6+ characters")]
# Published with the names of the stores served in its description (see `register`).
StoreName = Annotated[str | None, Field(description="Which store (default: the first)")]
Since = Annotated[
    int | None,
    Field(ge=0, le=MAX_TIMESTAMP_MS, description="Only from this epoch ms on"),
]
Tokens = Annotated[
    int, Field(ge=50, le=20_000, description="Token budget of the answer (~4 chars/token)")
]


# ---------------------------------------------------------------- answers


def answer(text: str, structured: dict) -> CallToolResult:
    """A tool result: the text a model reads and the structured content a program reads."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def written(entity_type: str, entity: dict, verb: str) -> CallToolResult:
    """The answer to a write: the entity as stored, and its id."""
    text, structured = render_entities(
        [(entity_type, entity)], DEFAULT_TOKENS, heading=f"{verb} {entity['id']}", flat=False
    )
    return answer(text, {**structured, "id": entity["id"]})


def with_repo(scope: dict | None, repo: RepoIdentity) -> dict:
    """`scope` with the served repository's id unless it names one."""
    scope = dict(scope or {})
    if "repoId" not in scope:
        scope["repoId"] = repo.id  # so the repository's context finds it in any store
    return scope


# ---------------------------------------------------------------- reading tools


def context(
    served: Served,
    session_id: Annotated[
        str | None, Field(description="Your session id, to see its open capsule")
    ] = None,
    max_tokens: Tokens = 2_000,
    store: StoreName = None,
) -> CallToolResult:
    """What a session should start with: pins, recent summaries, open problems, activity."""
    memory, repo = served.pick(store)
    with memory.batch():
        capsule = memory.open_session_capsule(session_id) if session_id else None
        text, shown = agent_context.session_context(
            memory,
            repo,
            session_id,
            capsule["id"] if capsule else None,
            max_chars=max_tokens * 4,
        )
    return answer(text, {"repoId": repo.id, "shown": shown})


def search(
    served: Served,
    query: Annotated[str, Field(description="Words to look for (full text)")],
    scope: Scope = None,
    kinds: Annotated[list[Kind] | None, Field(description="Only these kinds")] = None,
    since: Since = None,
    max_results: Annotated[int, Field(ge=1, le=200, description="Most candidates")] = 10,
    max_tokens: Tokens = DEFAULT_TOKENS,
    include_redacted: bool = False,
    store: StoreName = None,
) -> CallToolResult:
    """Pins first, then the current summary, then ranked matches, within max_tokens."""
    if len(query) > MAX_QUERY_CHARS:
        raise KindlingError(
            f"query is {len(query):,} characters; keep it under {MAX_QUERY_CHARS:,}"
        )
    memory, _ = served.pick(store)
    request = SearchRequest.checked(
        query,
        scope=dict(scope or {}),
        kinds=kinds,
        since=since,
        max_results=max_results,
        include_redacted=include_redacted,
    )
    return answer(*render_search(memory.search(request), max_tokens))


def recent(
    served: Served,
    type: EntityType = "observations",
    scope: Scope = None,
    kinds: Annotated[
        list[Kind] | None, Field(description="Observations of these kinds only")
    ] = None,
    since: Since = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
    max_tokens: Tokens = DEFAULT_TOKENS,
    store: StoreName = None,
) -> CallToolResult:
    """The latest entities of one type, newest first, optionally filtered."""
    memory, _ = served.pick(store)
    if kinds and type != "observations":
        raise KindlingError("kinds apply to observations only")
    listed = memory.list(
        type, scope=dict(scope or {}) or None, kinds=kinds, since=since, limit=limit
    )
    return answer(
        *render_entities(
            [(type, e) for e in listed],
            max_tokens,
            heading=f"{len(listed)} recent {type}",
            empty=f"no {type} found",
        )
    )


def get(
    served: Served,
    ids: Annotated[
        list[str], Field(min_length=1, max_length=MAX_IDS, description="Ids or prefixes")
    ],
    max_tokens: Tokens = 4_000,
    store: StoreName = None,
) -> CallToolResult:
    """One or several entities of any type by id or unique prefix, content in full."""
    memory, _ = served.pick(store)
    with memory.batch():
        found = [memory.get(ref) for ref in dict.fromkeys(ids)]
    return answer(
        *render_entities(
            [(f.entity_type, f.entity) for f in found],
            max_tokens,
            heading=f"{len(found)} entit{'y' if len(found) == 1 else 'ies'}",
            flat=False,
        )
    )


# ---------------------------------------------------------------- writing tools


def log(
    served: Served,
    content: Annotated[str, Field(description="What happened or was learned, as text")],
    kind: Kind = "message",
    scope: Scope = None,
    provenance: Annotated[
        dict[str, Any] | None, Field(description="Source metadata (file, command, ...)")
    ] = None,
    capsule_id: Annotated[str | None, Field(description="Append to this open capsule")] = None,
    store: StoreName = None,
) -> CallToolResult:
    """Record an observation (secrets are masked); in a capsule, with its session's scope."""
    memory, repo = served.pick(store)
    entity = memory.log(
        content,
        kind=kind,
        scope=with_repo(mcp_sessions.log_scope(memory, scope, capsule_id), repo),
        provenance=provenance,
        capsule_id=capsule_id,
    ).entity
    return written("observations", entity, "logged")


def summarize(
    served: Served,
    text: Annotated[str, Field(description="What the session did, found and left open")],
    session_id: Annotated[
        str | None, Field(description="Your session id (the context block names it)")
    ] = None,
    capsule_id: Annotated[str | None, Field(description="Or the session's capsule id")] = None,
    evidence: Annotated[
        list[str] | None, Field(description="Observation ids backing the summary")
    ] = None,
    store: StoreName = None,
) -> CallToolResult:
    """Write your own summary of the session into its open capsule, which stays open; the
    latest one becomes the session's summary when the session ends."""
    memory, repo = served.pick(store)
    entity = mcp_sessions.summarize(
        memory, repo, text, session_id=session_id, capsule_id=capsule_id, evidence=evidence or ()
    ).entity
    return written("observations", entity, "summary kept in the session's capsule as")


def capsule_open(
    served: Served,
    intent: Annotated[str, Field(description="What this episode of work is for")],
    type: CapsuleType = "session",
    scope: Scope = None,
    store: StoreName = None,
) -> CallToolResult:
    """Open a capsule (one open session capsule per session)."""
    memory, repo = served.pick(store)
    entity = memory.open_capsule(intent, type=type, scope=with_repo(scope, repo)).entity
    return written("capsules", entity, "opened")


def capsule_close(
    served: Served,
    capsule_id: Ref,
    summary: Annotated[str | None, Field(description="What was learned or done")] = None,
    confidence: Annotated[float, Field(ge=0, le=1)] = 1.0,
    evidence: Annotated[
        list[str] | None, Field(description="Observation ids backing the summary")
    ] = None,
    store: StoreName = None,
) -> CallToolResult:
    """Close a capsule, optionally writing its summary. A live Claude Code session's capsule
    stays open (its hooks close it when the session ends): the summary is kept as the
    session's own, as `summarize` keeps it."""
    memory, repo = served.pick(store)
    capsule = memory.resolve(capsule_id, "capsules").entity
    if mcp_sessions.is_live_session(memory, capsule):
        return _kept_open(memory, repo, capsule, summary, evidence or ())
    capsule = memory.close_capsule(
        capsule_id, summary=summary, confidence=confidence, evidence=evidence or ()
    ).entity
    text = f"closed {capsule['id']}"
    structured: dict[str, Any] = {"capsule": capsule, "summary": None}
    if capsule.get("summaryId"):
        structured["summary"] = memory.get(capsule["summaryId"]).entity
        text += f" with summary {capsule['summaryId']}"
    return answer(text, structured)


def _kept_open(memory, repo, capsule: dict, summary: str | None, evidence) -> CallToolResult:
    text = (
        f"kept {capsule['id']} open: it is the capsule of a live Claude Code session, "
        "which closes it when the session ends"
    )
    structured: dict[str, Any] = {"capsule": capsule, "summary": None, "keptOpen": True}
    if summary is not None:
        logged = mcp_sessions.summarize(
            memory, repo, summary, capsule_id=capsule["id"], evidence=evidence
        ).entity
        structured["summaryObservation"] = logged["id"]
        text += f"; your summary is kept as {logged['id']} and becomes the session's summary"
    return answer(text, structured)


def pin(
    served: Served,
    target_type: Literal["observation", "summary"],
    target_id: Ref,
    note: Annotated[str | None, Field(description="Why it matters")] = None,
    ttl_ms: Annotated[
        int | None, Field(ge=1, le=MAX_TIMESTAMP_MS, description="Expire after this many ms")
    ] = None,
    store: StoreName = None,
) -> CallToolResult:
    """Pin an observation or summary so every search and context returns it first."""
    memory, _ = served.pick(store)
    entity = memory.pin(target_type, target_id, note=note, ttl=ttl_ms).entity
    return written("pins", entity, "pinned")


def unpin(served: Served, pin_id: Ref, store: StoreName = None) -> CallToolResult:
    """Remove a pin (the pinned entity stays)."""
    memory, _ = served.pick(store)
    removed = memory.unpin(pin_id)
    return answer(f"unpinned {removed['id']}", {"pin": removed})


def forget(served: Served, id: Ref, store: StoreName = None) -> CallToolResult:
    """Forget an observation, capsule, summary or pin (id or unique prefix): the record
    stays, its text goes, and so do the copies of an observation's text in its session's
    intent and summaries."""
    memory, _ = served.pick(store)
    entity = memory.forget(id).entity
    return answer(f"forgot {entity['id']}", {"id": entity["id"], "redacted": True})
