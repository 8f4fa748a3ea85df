"""The coding agents Kindling captures through their hooks: their ids and names.

The id is what every capture says: `scopeIds.agentId` of observations and capsules and
`provenance.source`. Claude Code's session ids are stored as the agent sends them (older
stores hold them so); every other agent's are namespaced `<agent>:<id>`, so two agents' ids
never collide in one store.
"""

from __future__ import annotations

CLAUDE_CODE = "claude-code"
CODEX = "codex"
GEMINI = "gemini"
CURSOR = "cursor"
OPENCODE = "opencode"

# id -> the name people know it by
AGENTS = {
    CLAUDE_CODE: "Claude Code",
    CODEX: "Codex CLI",
    GEMINI: "Gemini CLI",
    CURSOR: "Cursor",
    OPENCODE: "OpenCode",
}
HOOK_AGENTS = frozenset(AGENTS)


def label(agent_id: str) -> str:
    """The agent's name for people (`Codex CLI`); the id itself for one not known."""
    return AGENTS.get(agent_id, agent_id)


def session_id(agent_id: str, native: str) -> str:
    """The session id Kindling stores for an agent's own session id."""
    if agent_id == CLAUDE_CODE:
        return native
    prefix = f"{agent_id}:"
    return native if native.startswith(prefix) else prefix + native


def is_hook_session(capsule: dict) -> bool:
    """A session capsule the hooks of one of the captured agents opened."""
    scope = capsule.get("scopeIds") or {}
    return capsule.get("type") == "session" and scope.get("agentId") in HOOK_AGENTS
