"""What forgetting does: each entity's forgotten form, which copies of a text count as quotes
of it, and the plan of files to rewrite, made by reading the files.

Forgetting keeps every record (id, scope, times, references) and drops its words: an
observation's content and provenance, a capsule's intent, a summary's content and the
evidence it claimed, a pin's reason. Plans read the files, never the index: the files are
the truth, and a stale index must not hide a copy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kindling import canonical
from kindling.errors import KindlingError, ValidationError
from kindling.fileio import is_temp_name, read_regular
from kindling.model import ENTITY_TYPES, REDACTED_CONTENT, SINGULAR
from kindling.store import Problem, Store
from kindling.summary_format import LABEL, MIN_SOURCE_ID, SOURCES, fold, sources_of

# A quote cut short with "…" (how a hook titles a capsule after its first prompt, or a digest
# cites it) counts from this many characters on: a shorter head is too common to be a copy.
MIN_CUT_QUOTE = 32
# Lines of a forgotten text shorter than this ("}", "done.") are not looked for on their own.
MIN_QUOTED_LINE = 8
ELLIPSIS = "…"
# A summary line names the observations it was built from at its end, by id prefixes:
# `Tried: src/app.ts, but Bash: npm test failed again [3f9a1c2e 7b2c41d0]`.

Edit = Callable[[dict], "dict | None"]  # the entity changed (a new dict), None: nothing to do


class Step(NamedTuple):
    """One entity file to rewrite: its type, id, the file it was found in, why, and how."""

    entity_type: str
    entity_id: str
    path: str
    reason: str
    edit: Edit


@dataclass
class ForgetReport:
    """What a forget changed (or, in a dry run, would change) and the files it had to leave."""

    dry_run: bool = False
    forgotten: list[Step] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    touched: list[Path] = field(default_factory=list)  # misplaced copies rewritten or removed

    def as_dict(self) -> dict:
        return {
            "dryRun": self.dry_run,
            "forgotten": [
                {
                    "type": SINGULAR[s.entity_type],
                    "id": s.entity_id,
                    "path": s.path,
                    "reason": s.reason,
                }
                for s in self.forgotten
            ],
            "problems": [{"path": p.path, "reason": p.reason} for p in self.problems],
        }


# ---------------------------------------------------------------- the forgotten forms


def forgotten(entity_type: str, entity: dict) -> dict | None:
    """The entity with its words forgotten; None when it is forgotten already."""
    if entity_type == "observations":
        if entity["redacted"]:
            return None
        return {**entity, "content": REDACTED_CONTENT, "provenance": {}, "redacted": True}
    if entity_type == "capsules":
        if entity["intent"] == REDACTED_CONTENT:
            return None
        return {**entity, "intent": REDACTED_CONTENT}
    if entity_type == "summaries":
        # Evidence a forgotten summary no longer states is no longer evidence of anything.
        if entity["content"] == REDACTED_CONTENT and not entity["evidenceRefs"]:
            return None
        return {**entity, "content": REDACTED_CONTENT, "evidenceRefs": []}
    if entity["reason"] in (None, REDACTED_CONTENT):
        return None
    return {**entity, "reason": REDACTED_CONTENT}


def forget_edit(entity_type: str) -> Edit:
    return lambda entity: forgotten(entity_type, entity)


def texts(entity_type: str, entity: dict) -> Iterator[str]:
    """Every text forgetting removes: content and provenance (keys too), intent, reason."""
    if entity_type == "observations":
        yield entity["content"]
        yield from _strings(entity["provenance"])
    elif entity_type == "capsules":
        yield entity["intent"]
    elif entity_type == "summaries":
        yield entity["content"]
    elif entity["reason"] is not None:
        yield entity["reason"]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def holds(entity_type: str, entity: dict, needle: str) -> bool:
    """True when a text forgetting removes contains `needle` (exact, case-sensitive)."""
    return any(needle in text for text in texts(entity_type, entity))


def kept_fields_hold(entity: dict, needle: str) -> bool:
    """True when `needle` is in what forgetting keeps: the id, scope ids or references."""
    kept = [entity["id"], *entity["scopeIds"].values()]
    for key in ("capsuleId", "targetId", "summaryId"):
        if isinstance(entity.get(key), str):
            kept.append(entity[key])
    kept += entity.get("observationIds", []) + entity.get("evidenceRefs", [])
    return any(needle in value for value in kept)


# ---------------------------------------------------------------- quotes of a forgotten text


def intent_quotes(intent: str, text: str) -> bool:
    """True when a capsule's intent is a copy of `text`: it holds all of it (whitespace folded),
    or it is the text cut short with "…", as a hook titles a session after its first prompt.

    A mere part of the text ("fix login" inside a long prompt) does not count: a title people
    chose is not a copy, and forgetting must not take it.
    """
    flat, title = fold(text), fold(intent)
    if not flat or title == REDACTED_CONTENT:
        return False
    if flat in title:
        return True
    head = title[: -len(ELLIPSIS)]
    return title.endswith(ELLIPSIS) and len(head) >= MIN_CUT_QUOTE and flat.startswith(head)


def without_quotes(content: str, text: str) -> str:
    """`content` with every copy of `text` in it replaced by the redaction marker: the text
    as it is, with whitespace folded, cut short with "…", and each of its lines."""
    flat = fold(text)
    for whole in sorted({text, flat}, key=len, reverse=True):
        if whole.strip():
            content = content.replace(whole, REDACTED_CONTENT)
    content = _without_cut_quotes(content, flat)
    lines = {line.strip() for line in text.splitlines()}
    for line in sorted(lines, key=len, reverse=True):
        if len(line) >= MIN_QUOTED_LINE:
            content = content.replace(line, REDACTED_CONTENT)
    return content


def _without_cut_quotes(content: str, flat: str) -> str:
    if len(flat) <= MIN_CUT_QUOTE:
        return content  # a cut of it would be shorter than a quote counts
    head = flat[:MIN_CUT_QUOTE]
    start = 0
    while (at := content.find(head, start)) >= 0:
        same = len(os.path.commonprefix([content[at : at + len(flat)], flat]))
        end = at + same
        if content.startswith(ELLIPSIS, end):
            content = content[:at] + REDACTED_CONTENT + content[end + len(ELLIPSIS) :]
            start = at + len(REDACTED_CONTENT)
        else:
            start = at + 1
    return content


# ---------------------------------------------------------------- lines that name their sources


def without_lines_from(content: str, observation_id: str) -> str:
    """`content` with each line built from the observation (its tag names a prefix of the id)
    reduced to its label, the redaction marker and its tag: the other lines stay as they are."""
    out = []
    for line in content.split("\n"):
        tags = sources_of(line)
        if any(observation_id.startswith(t) for t in tags if len(t) >= MIN_SOURCE_ID):
            label = LABEL.match(line)
            tag = SOURCES.search(line).group(0)
            line = f"{label.group(0) if label else ''}{REDACTED_CONTENT}{tag}"
        out.append(line)
    return "\n".join(out)


def _unquote_summary(observation_id: str, text: str) -> Edit:
    def edit(summary: dict) -> dict | None:
        content = without_lines_from(summary["content"], observation_id)
        content = without_quotes(content, text)
        return None if content == summary["content"] else {**summary, "content": content}

    return edit


def _forget_quoting_intent(text: str) -> Edit:
    def edit(capsule: dict) -> dict | None:
        return forgotten("capsules", capsule) if intent_quotes(capsule["intent"], text) else None

    return edit


# ---------------------------------------------------------------- reading the files


class Scanned(NamedTuple):
    """One file under objects/: its entity when it parses and is valid, else why not."""

    entity_type: str
    path: str
    data: bytes
    entity: dict | None
    problem: str | None


def scan(store: Store, types: Iterable[str], *, temp_files: bool = False) -> Iterator[Scanned]:
    """Every entity file of `types` (misplaced ones included), read and parsed; with
    `temp_files`, also the temp files interrupted writes left (never parsed)."""
    for etype in types:
        # In path order, so that a report reads the same on every machine.
        found = sorted(store.walk(etype, temp_files=temp_files), key=lambda f: f.path)
        for path in (f.path for f in found):
            try:
                # Never through a symlink swapped in since the walk; FIFOs are refused.
                data = read_regular(path, follow_symlinks=False)
            except OSError:
                continue
            if data is None:
                continue  # gone since the listing
            if is_temp_name(os.path.basename(path)):
                yield Scanned(etype, path, data, None, "is an interrupted write's temp file")
                continue
            try:
                entity = Store.parse_entity(etype, path, data)
            except KindlingError as exc:
                yield Scanned(etype, path, data, None, f"cannot be read ({exc})")
                continue
            yield Scanned(etype, path, data, entity, None)


def _ok(items: Iterable[Scanned]) -> list[Scanned]:
    return [item for item in items if item.entity is not None]


# ---------------------------------------------------------------- plans


class Plan:
    """Steps by file, in the order found; two reasons to rewrite one file become one step."""

    def __init__(self) -> None:
        self.steps: dict[str, Step] = {}
        self.problems: list[Problem] = []

    def add(self, item: Scanned, reason: str, edit: Edit) -> None:
        if item.entity is None or edit(item.entity) is None:
            return
        earlier = self.steps.get(item.path)
        if earlier is not None:
            reason, edit = f"{earlier.reason}; {reason}", _chain(earlier.edit, edit)
        self.steps[item.path] = Step(item.entity_type, item.entity["id"], item.path, reason, edit)

    def quotes_of(self, observation: dict, capsules: list[Scanned], summaries: list[Scanned]):
        """Add the capsule intents and summaries that quote an observation being forgotten.

        Only its own capsules (those listing it) and the summaries of those or citing it as
        evidence: the copies the capture path makes. Anything further: `forget --matching`.
        """
        if observation["redacted"]:
            return
        oid, text = observation["id"], observation["content"]
        mine = [c for c in capsules if oid in c.entity["observationIds"]]
        for capsule in mine:
            self.add(capsule, f"its intent quotes observation {oid}", _forget_quoting_intent(text))
        capsule_ids = {c.entity["id"] for c in mine}
        for summary in summaries:
            entity = summary.entity
            if oid in entity["evidenceRefs"] or entity["capsuleId"] in capsule_ids:
                self.add(summary, f"it quotes observation {oid}", _unquote_summary(oid, text))

    def ordered(self) -> list[Step]:
        # Observations last: if a write fails part way, forgetting again still finds the
        # observation's text, and so the quotes left to redact.
        steps = list(self.steps.values())
        return sorted(steps, key=lambda s: s.entity_type == "observations")


def _chain(first: Edit, second: Edit) -> Edit:
    def edit(entity: dict) -> dict | None:
        done = first(entity)
        again = second(done if done is not None else entity)
        return again if again is not None else done

    return edit


def plan_forget(store: Store, entity_type: str, entity: dict, path: str) -> Plan:
    """Forgetting one entity; for an observation, also the intents and summaries quoting it."""
    plan = Plan()
    plan.add(Scanned(entity_type, path, b"", entity, None), "asked", forget_edit(entity_type))
    if entity_type == "observations":
        capsules = _ok(scan(store, ["capsules"]))
        summaries = _ok(scan(store, ["summaries"]))
        plan.quotes_of(entity, capsules, summaries)
    return plan


def plan_matching(store: Store, needle: str) -> Plan:
    """Forgetting every entity whose words hold `needle`, found by reading every file."""
    if not isinstance(needle, str) or not needle.strip():
        raise ValidationError("the text to match must hold more than white space")
    if needle in REDACTED_CONTENT:
        raise ValidationError(
            f"{needle!r} is part of the marker {REDACTED_CONTENT!r} every forgotten text "
            "becomes; match a longer text"
        )
    raw = needle.encode("utf-8", "surrogatepass")
    escaped = canonical.encode_compact(needle)[1:-1]  # as it stands inside a JSON string
    plan = Plan()
    scanned = {t: [] for t in ("capsules", "summaries")}
    observations_found: list[dict] = []

    def consider(item: Scanned) -> None:
        if item.entity is None:
            if raw in item.data or escaped in item.data:
                reason = f"holds the text but {item.problem}; left untouched"
                plan.problems.append(Problem(item.path, reason))
            return
        entity = item.entity
        if holds(item.entity_type, entity, needle):
            plan.add(item, "holds the text", forget_edit(item.entity_type))
            if item.entity_type == "observations":
                observations_found.append(entity)
        if kept_fields_hold(entity, needle):
            reason = "holds the text in its id, scope or references, which forgetting keeps"
            plan.problems.append(Problem(item.path, reason))

    # Capsules and summaries (few) are kept for the quotes; observations stream past.
    for etype in ("capsules", "summaries"):
        for item in scan(store, [etype], temp_files=True):
            consider(item)
            if item.entity is not None:
                scanned[etype].append(item)
    for item in scan(store, [t for t in ENTITY_TYPES if t not in scanned], temp_files=True):
        consider(item)
    for observation in observations_found:
        plan.quotes_of(observation, scanned["capsules"], scanned["summaries"])
    return plan
