"""A Claude Code hook payload: parsing it, its project and scope, and text cut to size safely.

Every text that is shortened is masked first, then cut: a cut must never leave half a secret
(a PEM body without its BEGIN line, `password=` without its value) where masking cannot see it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kindling.agents.agent_ids import CLAUDE_CODE, HOOK_AGENTS
from kindling.agents.intake import TOO_DEEP, loads
from kindling.clock import format_utc
from kindling.errors import KindlingError
from kindling.masking import mask_json, mask_text, mask_then_cut
from kindling.repo_identity import RepoIdentity, identify
from kindling.terminal import one_line as fold

SOURCE = CLAUDE_CODE
# Set by the agent's adapter (kindling.agents.adapters) on the payload it hands on: which
# agent recorded it. A raw payload never carries it; the adapter overwrites whatever it held.
AGENT_KEY = "kindling_agent"

# Nested payload values kept in provenance: strings, lists and depth are bounded.
RAW_STRING_CHARS = 1_000
RAW_LIST_ITEMS = 20
RAW_DEPTH = 6


def read_payload(data: bytes) -> dict:
    """Parse the hook's stdin, odd input kept (kindling.agents.intake); a KindlingError says
    what is wrong with a payload that is no JSON object at all."""
    if not data.strip():
        raise KindlingError("no hook payload on stdin")
    try:
        payload = loads(data)
    except ValueError as exc:
        raise KindlingError(f"hook payload is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise KindlingError("hook payload is not a JSON object")
    return payload


def project_dir(payload: dict) -> Path:
    """The project: $CLAUDE_PROJECT_DIR when Claude Code sets it, else the payload's cwd (the
    one the agent's adapter chose for every other agent)."""
    claude = os.environ.get("CLAUDE_PROJECT_DIR") if agent_of(payload) == SOURCE else None
    chosen = claude or payload.get("cwd")
    if not isinstance(chosen, str) or not chosen:
        chosen = os.getcwd()
    return Path(chosen).absolute()


def repo_of(payload: dict) -> RepoIdentity:
    """The repository the session works in (origin remote, else the folder's name)."""
    return identify(project_dir(payload))


def agent_of(payload: dict) -> str:
    """The agent whose hook sent `payload` (its adapter says so); Claude Code by default."""
    agent = payload.get(AGENT_KEY)
    return agent if agent in HOOK_AGENTS else SOURCE


def scope_for(payload: dict, repo: RepoIdentity | None = None) -> dict:
    """sessionId from session_id, repoId from the repository's identity, agentId the agent's."""
    session = payload.get("session_id")
    if not isinstance(session, str) or not session.strip():
        raise KindlingError("hook payload has no session_id")
    repo = repo or repo_of(payload)
    return {"sessionId": session, "repoId": repo.id, "agentId": agent_of(payload)}


def text_of(value: Any) -> str:
    """A payload value as text (JSON for anything that is not a string)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and tail of already masked `text` within `limit` characters, with a notice."""
    if len(text) <= limit:
        return text, False
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    notice = f"\n[... kindling cut {cut:,} of {len(text):,} characters here ...]\n"
    return text[:head] + notice + text[-tail:], True


def cut(text: str, limit: int) -> tuple[str, bool]:
    """`text` masked, then cut to `limit` characters (head and tail); and whether it was cut."""
    shown, _, was_cut = mask_then_cut(text, limit)
    return shown, was_cut


def one_line(text: str, width: int) -> str:
    """`text` masked, folded onto one line and cut to `width` characters."""
    return fold(mask_text(text)[0], width)


def short_id(entity_id: str) -> str:
    """An id prefix enough to find the entity again (`kindling show`, MCP `get`)."""
    return entity_id[:12] if entity_id[3:4] == "_" else entity_id[:8]


def when(ms: int) -> str:
    """Epoch milliseconds as `YYYY-MM-DD HH:MM` (UTC); never raises."""
    return format_utc(ms, "%Y-%m-%d %H:%M")


def relative_paths(text: str, root: Path) -> str:
    """`text` with the project's absolute path written relative to it."""
    prefix = str(root).rstrip(os.sep)
    if len(prefix) < 2 or prefix not in text:
        return text
    return text.replace(prefix + os.sep, "").replace(prefix, ".")


def _bounded(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return truncate(value, RAW_STRING_CHARS)[0]
    if depth >= RAW_DEPTH:
        return TOO_DEEP if isinstance(value, (dict, list)) else value
    if isinstance(value, dict):
        return {str(k): _bounded(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        kept = [_bounded(v, depth + 1) for v in value[:RAW_LIST_ITEMS]]
        if len(value) > RAW_LIST_ITEMS:
            kept.append(f"[... {len(value) - RAW_LIST_ITEMS} more ...]")
        return kept
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return None  # JSON has no NaN or Infinity (a payload read by read_payload has none)
    return value


def raw_payload(value: Any, root: Path) -> Any:
    """A payload part for provenance: masked first, then bounded, with project paths relative."""
    masked, _ = mask_json(value)
    try:
        text = json.dumps(masked, ensure_ascii=False)
        masked = json.loads(relative_paths(text, root))
    except (TypeError, ValueError):
        pass
    return _bounded(masked, 0)
