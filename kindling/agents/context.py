"""What an agent is told: the session-start context and the memories recalled for a prompt.

Both read little: a few LIMITed queries in the index's time order and one Memory.search,
never a listing of every entity. Which memory belongs to the repository: all of a store that
lives inside the repository's work tree, or outside git inside the project folder (whatever
the checkout is called, and whatever repoId older captures used); in a shared store, entities
whose repoId is the repository's id or its folder's name.
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

from kindling.agents.payload import one_line, short_id, when
from kindling.agents.recent_work import recent_activity
from kindling.agents.summary import gist
from kindling.agents.unfinished import LOOK_BACK, latest_interrupted, unfinished_lines
from kindling.clock import now_ms
from kindling.errors import KindlingError
from kindling.index.traits import role_of, subject_of
from kindling.repo_identity import RepoIdentity

# The session-start context stays under this many characters (Claude Code caps added context
# near 10,000); recalled memories for one prompt under RECALL_MAX_CHARS (~600 tokens).
MAX_CONTEXT_CHARS = 8_000
# Seconds a hook spends bringing the index up to date before it answers from what the index
# holds (a fresh clone's first hooks, a big pull): well inside the shortest hook timeout
# (10 s), with room for one more chunk of files, the search and Python's start.
INDEX_BUDGET_S = 3.0
RECALL_MAX_CHARS = 2_400
CONTEXT_SUMMARIES = 3
CONTEXT_PROBLEMS = 5
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
# A line cut to fit keeps at least this much of its text (else it is left out).
MIN_LINE_CHARS = 60


def repo_scopes(memory, repo: RepoIdentity, agent: str | None = None) -> list[dict]:
    """Scopes selecting the repository's memory: none needed when the store is the repo's own;
    with `agent`, only what that agent recorded (scopeIds.agentId)."""
    only = {"agentId": agent} if agent else {}
    try:
        memory.store.root.resolve().relative_to(repo.root.resolve())
        return [only]
    except ValueError:
        pass
    return [{"repoId": repo_id, **only} for repo_id in repo.ids]


def _listed(memory, entity_type: str, scopes: list[dict], *, time_key: str, **options) -> list:
    found: dict[str, dict] = {}
    for scope in scopes:
        for entity in memory.list(entity_type, scope=scope, **options):
            found.setdefault(entity["id"], entity)
    return sorted(found.values(), key=lambda e: (-e[time_key], e["id"]))


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

    def fitted(self, line: str, reserved: int = 0) -> str | None:
        """`line` as it fits after `reserved` characters: whole, or its text cut before the
        trailing `  [id]`; None when too little of it would be left."""
        room = self.left - reserved - 1
        if len(line) <= room:
            return line
        text, sep, tail = line.rpartition("  [")
        if not sep:
            text, tail = line, ""
        else:
            tail = sep + tail
        width = room - len(tail)
        if width < MIN_LINE_CHARS:
            return None
        return one_line(text, width) + tail

    def heading(self, title: str, items: list[tuple[str, str | None]]) -> None:
        """A blank line, `title` and the items that fit; nothing unless one item fits."""
        if not items:
            return
        first = self.fitted(items[0][0], reserved=len(title) + 2)
        if first is None:
            return
        self.add("")
        self.add(title)
        for line, entity_id in items:
            shown = self.fitted(line)
            if shown is None or not self.add(shown, entity_id):
                break


def _summary_line(memory, summary: dict) -> str:
    intent = ""
    try:
        capsule = memory.get(summary["capsuleId"]).entity
        intent = f"{one_line(capsule['intent'], 100)}: "
    except KindlingError:
        pass
    text = gist(summary["content"], 600)
    return f"- {when(summary['ts'])} {intent}{text}  [{short_id(summary['id'])}]"


def _obs_line(obs: dict, width: int = 240, label: str | None = None) -> str:
    text = one_line(obs["content"], width)
    kind = f"{obs['kind']}, {label}" if label else obs["kind"]
    return f"- {when(obs['ts'])} [{kind}] {text}  [{short_id(obs['id'])}]"


def _advice(session_id: str | None, capsule_id: str | None) -> str:
    if session_id is None:
        return (
            "Group your work with the kindling MCP tool `capsule_open`, record findings with "
            "`log` and close the capsule with a summary through `capsule_close`."
        )
    where = f"; its open capsule is {capsule_id}" if capsule_id else ""
    # Never "close the capsule": the session's hooks close it when the session ends, and a
    # capsule closed early splits the session in two.
    return (
        f"Session {session_id}{where}. Record a finding with the kindling MCP tool `log` "
        "(session_id above); before you finish, write your own summary of the session with "
        "`summarize` (it stays in the session's capsule, which closes when the session ends)."
    )


def session_context(
    memory,
    repo: RepoIdentity,
    session_id: str | None,
    capsule_id: str | None,
    *,
    max_chars: int = MAX_CONTEXT_CHARS,
    agent: str | None = None,
) -> tuple[str, list[str]]:
    """The context for a session's start, within `max_chars`; and the ids it shows.

    After its header: the latest unfinished session of the repository, then how to record,
    pins, recent session summaries, open problems and recent activity; with `agent`, only
    what that agent recorded."""
    scopes = repo_scopes(memory, repo, agent)
    now = now_ms()
    out = Section(max_chars - 160)  # room kept for the closing line
    out.add(f"# Kindling memory for {repo.id}")
    note = indexing_note(memory)
    if note is not None:
        out.add(note)
    shown: set[str] = set()
    capsules = _listed(memory, "capsules", scopes, time_key="openedAt", limit=LOOK_BACK)
    found = latest_interrupted(memory, capsules, session_id, now)
    stopped: dict | None = None
    if found is not None:
        stopped = found.capsule
        lines = unfinished_lines(found, now)
        out.heading("Unfinished work (a session that stopped before it ended):", lines)
        shown.update(i for _, i in lines if i)
        out.add("")
    out.add(_advice(session_id, capsule_id))

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
        for s in _listed(memory, "summaries", scopes, time_key="ts", limit=CONTEXT_SUMMARIES + 1)
        if s["id"] not in shown and (stopped is None or s["capsuleId"] != stopped["id"])
    ][:CONTEXT_SUMMARIES]
    shown.update(s["id"] for s in summaries)
    said = {ref for s in summaries for ref in s.get("evidenceRefs", ())}
    if found is not None and found.summary_id:
        with contextlib.suppress(KindlingError):  # what the unfinished session's summary says
            said.update(memory.get(found.summary_id).entity.get("evidenceRefs", ()))
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
    activity = recent_activity(memory, window, shown | said)
    out.heading(
        "Recent activity (findings, errors and changes first):",
        [(_obs_line(o, label=label), o["id"]) for o, label in activity],
    )
    if len(out.lines) == 2 and found is None:
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
    text = gist(entity["content"], 300) if kind == "summary" else one_line(entity["content"], 300)
    return f"- {when(ts)} [{kind}]{mark} {text}  [{short_id(entity['id'])}]"


class Recalled(NamedTuple):
    score: float
    entity: dict
    kind: str
    superseded_by: str | None
    answered: float


def indexing_note(memory) -> str | None:
    """One line saying the memory is still being indexed (so an answer may miss some of it),
    and what finishes it; None when the index holds every file."""
    state = memory.indexing()
    if state is None:
        return None
    left = f", {state['pending']:,} files to go" if state["pending"] else ""
    if state["watcher"] is not None:
        how = f"a background `kindling watch` (pid {state['watcher']}) is finishing it"
    else:
        how = "each Kindling command continues it, and `kindling reindex` finishes it"
    return (
        f"Note: memory is still being indexed ({state['indexed']:,} entries so far{left}); "
        f"what follows may miss some of it; {how}."
    )


def prompt_recall(
    memory,
    repo: RepoIdentity,
    session_id: str,
    prompt: str,
    already: set[str],
    *,
    max_chars: int = RECALL_MAX_CHARS,
    agent: str | None = None,
) -> tuple[str | None, list[str]]:
    """What `recall` finds for a prompt, after a line saying so while memory is still being
    indexed (then the agent is told even when nothing was found)."""
    text, shown = recall(
        memory, repo, session_id, prompt, already, max_chars=max_chars, agent=agent
    )
    note = indexing_note(memory)
    if note is None:
        return text, shown
    return (note if text is None else f"{note}\n{text}"), shown


def recall(
    memory,
    repo: RepoIdentity,
    session_id: str,
    prompt: str,
    already: set[str],
    *,
    max_chars: int = RECALL_MAX_CHARS,
    agent: str | None = None,
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
    for scope in repo_scopes(memory, repo, agent):
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
