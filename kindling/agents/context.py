"""What an agent is told: the session-start context and the memories recalled for a prompt.

Both read little: a few LIMITed queries in the index's time order and one Memory.search,
never a listing of every entity. Which memory belongs to the repository: all of a store that
lives inside the repository's work tree, or outside git inside the project folder (whatever
the checkout is called, and whatever repoId older captures used); in a shared store, entities
whose repoId is the repository's id or its folder's name.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kindling.agents.payload import one_line, short_id, when
from kindling.errors import KindlingError
from kindling.index.traits import hook_of, role_of, subject_of
from kindling.repo_identity import RepoIdentity

# The session-start context stays under this many characters (Claude Code caps added context
# near 10,000); recalled memories for one prompt under RECALL_MAX_CHARS (~600 tokens).
MAX_CONTEXT_CHARS = 8_000
RECALL_MAX_CHARS = 2_400
CONTEXT_SUMMARIES = 3
CONTEXT_PROBLEMS = 5
CONTEXT_ACTIVITY = 8
ACTIVITY_WINDOW = 60
PIN_LIMIT = 20
RECALL_MAX_ITEMS = 5
# A recalled memory, or the match its episode was reached from, holds at least this share of
# the prompt (search's "answered": idf-weighted, counting the words the store never saw).
# Below the current summary's 0.5: a prompt is answered by a few lines, not put first.
RECALL_MIN_ANSWERED = 0.4
# Below this (the current summary's threshold), only the single best memory is recalled.
RECALL_SURE = 0.5
RECALL_CANDIDATES = 20
# What a prompt's answer is not: the output of a run, and what a person asked before.
_NOT_RECALLED_KINDS = ("command", "tool_call")
# Recent activity, most telling first: findings, errors, changes, commands, prompts, the rest.
_FINDING_HOOKS = ("Stop", "SubagentStop", "PostCompact")


def repo_scopes(memory, repo: RepoIdentity) -> list[dict]:
    """Scopes selecting the repository's memory: none needed when the store is the repo's own."""
    try:
        memory.store.root.resolve().relative_to(repo.root.resolve())
        return [{}]
    except ValueError:
        pass
    return [{"repoId": repo_id} for repo_id in repo.ids]


def _listed(memory, entity_type: str, scopes: list[dict], *, time_key: str, **options) -> list:
    found: dict[str, dict] = {}
    for scope in scopes:
        for entity in memory.list(entity_type, scope=scope, **options):
            found.setdefault(entity["id"], entity)
    return sorted(found.values(), key=lambda e: (-e[time_key], e["id"]))


def _rank(obs: dict) -> int:
    hook, kind = hook_of(obs), obs["kind"]
    prov = obs.get("provenance") or {}
    if hook in _FINDING_HOOKS or (kind == "message" and hook is None):
        return 0
    if kind == "error":
        return 1
    if kind == "file_diff":
        return 2
    if kind == "command":
        return 3
    if hook == "UserPromptSubmit":
        return 4
    if kind == "tool_call" and prov.get("tool") != "Read":
        return 5
    return 9  # file reads, session markers, notifications: not worth the space


def open_problems(memory, scopes: list[dict], limit: int = CONTEXT_PROBLEMS) -> list[dict]:
    """Recent errors that no later success has fixed (Memory.fixed_errors), one per subject."""
    errors = _listed(memory, "observations", scopes, time_key="ts", kinds=["error"], limit=20)
    errors = [e for e in errors if not e["redacted"]]
    if not errors:
        return []
    fixed = memory.fixed_errors(e["id"] for e in errors)
    still, seen = [], set()
    for error in errors:
        subject = subject_of(error) or error["content"].split("\n", 1)[0]
        if error["id"] in fixed or subject in seen:
            continue
        seen.add(subject)
        still.append(error)
    return still[:limit]


class Section:
    """Lines added while they fit in a shared character budget."""

    def __init__(self, budget: int) -> None:
        self.lines: list[str] = []
        self.left = budget
        self.shown: list[str] = []

    def add(self, line: str, entity_id: str | None = None) -> bool:
        if len(line) + 1 > self.left:
            return False
        self.lines.append(line)
        self.left -= len(line) + 1
        if entity_id is not None:
            self.shown.append(entity_id)
        return True

    def heading(self, title: str, items: list[tuple[str, str | None]]) -> None:
        if items and self.left > len(title) + 100 and self.add("") and self.add(title):
            for line, entity_id in items:
                if not self.add(line, entity_id):
                    break


def _summary_line(memory, summary: dict) -> str:
    intent = ""
    try:
        capsule = memory.get(summary["capsuleId"]).entity
        intent = f"{one_line(capsule['intent'], 100)}: "
    except KindlingError:
        pass
    text = one_line(summary["content"], 600)
    return f"- {when(summary['ts'])} {intent}{text}  [{short_id(summary['id'])}]"


def _obs_line(obs: dict, width: int = 240) -> str:
    text = one_line(obs["content"], width)
    return f"- {when(obs['ts'])} [{obs['kind']}] {text}  [{short_id(obs['id'])}]"


def session_context(
    memory,
    repo: RepoIdentity,
    session_id: str | None,
    capsule_id: str | None,
    *,
    max_chars: int = MAX_CONTEXT_CHARS,
) -> tuple[str, list[str]]:
    """The context for a session's start, within `max_chars`; and the ids it shows."""
    scopes = repo_scopes(memory, repo)
    out = Section(max_chars - 160)  # room kept for the closing line
    out.add(f"# Kindling memory for {repo.id}")
    if session_id is None:
        out.add(
            "Group your work with the kindling MCP tool `capsule_open`, record findings with "
            "`log` and close the capsule with a summary through `capsule_close`."
        )
    else:
        where = f"; its open capsule is {capsule_id}" if capsule_id else ""
        out.add(
            f"Session {session_id}{where}. Record a finding with the kindling MCP tool `log` "
            "(capsule_id above) and close the capsule with a summary through `capsule_close`."
        )
    shown: set[str] = set()
    pins: list[tuple[str, str | None]] = []
    for pin in _listed(memory, "pins", scopes, time_key="createdAt", limit=PIN_LIMIT):
        try:
            target = memory.get(pin["targetId"]).entity
        except KindlingError:
            continue
        if target.get("redacted") or target["id"] in shown:
            continue
        shown.add(target["id"])
        note = f" (note: {one_line(pin['reason'], 120)})" if pin.get("reason") else ""
        label = target.get("kind", "summary")
        pins.append(
            (
                f"- [{label}] {one_line(target['content'], 300)}{note}  [{short_id(target['id'])}]",
                target["id"],
            )
        )
    out.heading("Pinned (always keep in mind):", pins)

    summaries = [
        s
        for s in _listed(memory, "summaries", scopes, time_key="ts", limit=CONTEXT_SUMMARIES)
        if s["id"] not in shown
    ]
    shown.update(s["id"] for s in summaries)
    out.heading(
        "Recent session summaries (newest first):",
        [(_summary_line(memory, s), s["id"]) for s in summaries],
    )

    problems = [p for p in open_problems(memory, scopes) if p["id"] not in shown]
    shown.update(p["id"] for p in problems)
    out.heading(
        "Open problems (errors not yet followed by a fix):",
        [(_obs_line(p), p["id"]) for p in problems],
    )

    window = _listed(memory, "observations", scopes, time_key="ts", limit=ACTIVITY_WINDOW)
    useful = [o for o in window if not o["redacted"] and o["id"] not in shown and _rank(o) < 9]
    chosen = sorted(useful, key=lambda o: (_rank(o), -o["ts"]))[:CONTEXT_ACTIVITY]
    chosen.sort(key=lambda o: -o["ts"])
    out.heading(
        "Recent activity (findings, errors and changes first):",
        [(_obs_line(o), o["id"]) for o in chosen],
    )
    if len(out.lines) == 2:
        out.add("Nothing stored yet for this repository.")
    lines = [
        *out.lines,
        "",
        'Search more with the kindling MCP tool `search` or `kindling search "<words>"`; '
        "`kindling show <id>` prints any entity above.",
    ]
    return "\n".join(lines), out.shown


def _recall_line(entity: dict, kind: str, superseded_by: str | None) -> str:
    ts = entity.get("ts", 0)
    mark = f" (superseded by [{short_id(superseded_by)}])" if superseded_by else ""
    text = one_line(entity["content"], 300)
    return f"- {when(ts)} [{kind}]{mark} {text}  [{short_id(entity['id'])}]"


class Recalled(NamedTuple):
    score: float
    entity: dict
    kind: str
    superseded_by: str | None
    answered: float


def prompt_recall(
    memory,
    repo: RepoIdentity,
    session_id: str,
    prompt: str,
    already: set[str],
    *,
    max_chars: int = RECALL_MAX_CHARS,
) -> tuple[str | None, list[str]]:
    """Memories answering `prompt` not yet shown in this session: (context text, their ids).

    The search's own ranking decides: its current summary (the summary of the episode that
    best answers the prompt), then the best candidates that answer it as well (they or the
    match they were reached from hold RECALL_MIN_ANSWERED of it) and are an answer (no run
    output, prompt or marker, no error a later run fixed); superseded ones last. Only the
    best one when none answers RECALL_SURE of the prompt.
    """
    # Imported here: every hook loads this module, and only prompt recall searches.
    from kindling.search.request import SearchRequest

    query = one_line(prompt, 500)
    found: dict[str, Recalled] = {}
    for scope in repo_scopes(memory, repo):
        try:
            request = SearchRequest.checked(
                query, scope=scope, max_results=RECALL_CANDIDATES, explain=True
            )
            result = memory.search(request)
        except KindlingError:
            continue
        items: list[Recalled] = []
        if result.get("currentSummary"):
            items.append(Recalled(1.0, result["currentSummary"], "summary", None, 1.0))
        for candidate in result["candidates"]:
            entity, parts = candidate["entity"], candidate["explain"]
            if parts["answered"] < RECALL_MIN_ANSWERED or parts["fixedBy"]:
                continue
            kind = entity.get("kind", "summary")
            items.append(
                Recalled(candidate["score"], entity, kind, parts["supersededBy"], parts["answered"])
            )
        for item in items:
            if not _recallable(item.entity, session_id, already):
                continue
            held = found.get(item.entity["id"])
            if held is None or held.score < item.score:
                found[item.entity["id"]] = item
    if not found:
        return None, []
    ranked = sorted(
        found.values(), key=lambda r: (r.superseded_by is not None, -r.score, -r.entity["ts"])
    )
    # Only a prompt answered as fully as a current summary must be gets several lines.
    sure = max(item.answered for item in ranked) >= RECALL_SURE
    out = Section(max_chars)
    out.add("Kindling recalls from this repository's memory (ids work with `kindling show`):")
    for item in ranked[: RECALL_MAX_ITEMS if sure else 1]:
        out.add(_recall_line(item.entity, item.kind, item.superseded_by), item.entity["id"])
    if not out.shown:
        return None, []
    return "\n".join(out.lines), out.shown


def _recallable(entity: dict, session_id: str, already: set[str]) -> bool:
    if entity["id"] in already or entity.get("redacted"):
        return False
    scope: dict[str, Any] = entity.get("scopeIds") or {}
    if scope.get("sessionId") == session_id:
        return False  # this session's own records are already in the agent's context
    if "kind" not in entity:
        return True  # a summary
    return entity["kind"] not in _NOT_RECALLED_KINDS and role_of(entity) is None
