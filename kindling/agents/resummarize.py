"""`kindling summarize --rebuild`: the hooks' closing summaries of Claude Code sessions,
derived again from their capsules' observations, in place (same summary id).

Only summaries the hooks wrote are touched, told apart by what they are: the capsule is a
Claude Code session capsule whose observations the hooks recorded, the summary cites only
its own observations, and its text has the hooks' shape, today's (every line labelled, its
sources naming the capsule's observations) or the earlier one (Claude's last Stop message
first; or the `Asked: ... Files changed: ...` digest). A summary a person or an agent wrote
(`capsule close --summary`, MCP `capsule_close`) has neither shape and is left alone, as is
a forgotten one. Rebuilding is deterministic: a second run changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from kindling.agents.agent_ids import HOOK_AGENTS
from kindling.agents.digest import STALE_AFTER_MS, members
from kindling.agents.payload import one_line
from kindling.agents.summary import build
from kindling.errors import KindlingError
from kindling.index.traits import hook_of, provenance
from kindling.masking import mask_text
from kindling.model import REDACTED_CONTENT
from kindling.summary_format import parts_of, sources_of

REWRITTEN, UNCHANGED, SKIPPED = "rewritten", "unchanged", "skipped"
_DIGEST_PARTS = ("Files changed: ", "Failed, then passed: ", "Still failing: ")


class Rebuilt(NamedTuple):
    """What rebuilding did to one capsule's summary, and why."""

    summary_id: str
    capsule_id: str
    outcome: str
    reason: str


@dataclass
class RebuildReport:
    """Every summary looked at: rewritten (or, in a dry run, to rewrite), unchanged, skipped."""

    dry_run: bool = False
    items: list[Rebuilt] = field(default_factory=list)

    def of(self, outcome: str) -> list[Rebuilt]:
        return [item for item in self.items if item.outcome == outcome]

    def as_dict(self) -> dict:
        def listed(outcome: str) -> list[dict]:
            return [
                {"summaryId": i.summary_id, "capsuleId": i.capsule_id, "reason": i.reason}
                for i in self.of(outcome)
            ]

        return {
            "dryRun": self.dry_run,
            "rewritten": listed(REWRITTEN),
            "unchanged": listed(UNCHANGED),
            "skipped": listed(SKIPPED),
        }


def is_claude_session(capsule: dict) -> bool:
    """A closed Claude Code session capsule with a summary."""
    return (
        capsule["type"] == "session"
        and capsule["scopeIds"].get("agentId") in HOOK_AGENTS
        and capsule["status"] == "closed"
        and bool(capsule.get("summaryId"))
    )


def _strip_label(content: str) -> str:
    first, _, rest = content.partition("\n")
    return rest if first.endswith(":") and rest else content


def _earlier_shape(content: str, found: list[dict]) -> bool:
    """The hooks' summary before the labelled lines: Claude's last Stop message first, else
    a one-line digest (`Asked: <first prompt> Files changed: ... Still failing: ...`)."""
    stops = [o for o in found if hook_of(o) == "Stop"]
    if stops:
        said = _strip_label(stops[-1]["content"])[:1000].strip()
        return bool(said) and content.startswith(said)
    if "\n" in content:
        return False
    if content.startswith("Session recorded ") and content.endswith("no changes or failures."):
        return True
    rest = content
    if content.startswith("Asked: "):
        prompts = [o for o in found if hook_of(o) == "UserPromptSubmit"]
        asked = f"Asked: {one_line(prompts[0]['content'], 300)}" if prompts else None
        if asked is None or not content.startswith(asked):
            return False
        rest = content[len(asked) :].lstrip(" ")
    return rest == "" or rest.startswith(_DIGEST_PARTS)


def _todays_shape(content: str, capsule: dict) -> bool | None:
    """None when not labelled lines; else whether every line's sources are the capsule's."""
    if parts_of(content) is None:
        return None
    ids = capsule["observationIds"]
    tags = [t for line in content.split("\n") for t in sources_of(line)]
    if not tags:
        return "Recorded" in parts_of(content)
    return all(any(i.startswith(t) for i in ids) for t in tags)


def why_not_ours(summary: dict, capsule: dict, found: list[dict]) -> str | None:
    """None when the hooks wrote this summary; else why it is left alone."""
    content = summary["content"]
    if content == REDACTED_CONTENT:
        return "it was forgotten"
    if not found:
        return "its capsule has no observations left"
    if not any(provenance(o).get("source") in HOOK_AGENTS for o in found):
        return "its capsule's observations were not recorded by the Claude Code hooks"
    if not set(summary["evidenceRefs"]) <= set(capsule["observationIds"]):
        return "it cites observations outside its capsule"
    todays = _todays_shape(content, capsule)
    if todays or (todays is None and _earlier_shape(content, found)):
        return None
    return "a person or an agent wrote it"


def rebuild_one(memory, capsule: dict, *, dry_run: bool = False) -> Rebuilt:
    """Derive one capsule's summary again and write it in place when it differs."""
    summary_id = capsule["summaryId"]
    try:
        summary = memory.get(summary_id).entity
    except KindlingError:
        return Rebuilt(summary_id, capsule["id"], SKIPPED, "its summary file is missing")
    found = members(memory, capsule)
    reason = why_not_ours(summary, capsule, found)
    if reason is not None:
        return Rebuilt(summary_id, capsule["id"], SKIPPED, reason)
    parts = parts_of(summary["content"])
    if parts is not None:
        interrupted = "Interrupted" in parts
    else:
        interrupted = capsule["closedAt"] - found[-1]["ts"] >= STALE_AFTER_MS
    closing = build(found, capsule["observationIds"], interrupted=interrupted)
    text = mask_text(closing.text)[0]
    same = (text, closing.confidence, closing.evidence) == (
        summary["content"],
        summary["confidence"],
        summary["evidenceRefs"],
    )
    if same:
        return Rebuilt(summary_id, capsule["id"], UNCHANGED, "already up to date")
    if not dry_run:
        memory.replace_summary(
            summary_id, content=text, confidence=closing.confidence, evidence=closing.evidence
        )
    return Rebuilt(summary_id, capsule["id"], REWRITTEN, "derived again from its observations")


def rebuild_summaries(memory, *, capsule: str | None = None, dry_run: bool = False):
    """Rebuild the hooks' summaries of every closed Claude Code session capsule (or of one,
    by id or prefix); a RebuildReport."""
    report = RebuildReport(dry_run=dry_run)
    with memory.batch():
        if capsule is not None:
            found = memory.resolve(capsule, "capsules").entity
            if not is_claude_session(found):
                raise KindlingError(
                    f"capsule {found['id']} is not a closed Claude Code session capsule "
                    "with a summary"
                )
            capsules = [found]
        else:
            listed = memory.list("capsules", limit=None)
            capsules = sorted(
                (c for c in listed if is_claude_session(c)), key=lambda c: (c["openedAt"], c["id"])
            )
        for each in capsules:
            report.items.append(rebuild_one(memory, each, dry_run=dry_run))
    return report
