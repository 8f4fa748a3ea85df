"""What `kindling import` reports: counts per type and outcome, conflicts, skipped entities,
and (when a write error stopped it) exactly which entities were written."""

from __future__ import annotations

from typing import Any, NamedTuple

from kindling.bundle.plan import Decision, ImportInterrupted
from kindling.model import ENTITY_TYPES, SINGULAR

OUTCOMES = ("added", "unchanged", "merged", "redacted", "conflicts", "skipped")


class ImportReport(NamedTuple):
    """Counts per type and outcome, the conflicting and skipped ids, and secrets masked."""

    counts: dict[str, dict[str, int]]
    conflicts: list[dict[str, Any]]
    skipped: list[dict[str, str]]
    masked: int
    written: int
    dry_run: bool
    on_conflict: str
    # Changes made to read the original Kindling's shape: what, and for how many entities.
    normalised: dict[str, int] = {}
    # Set when a write error stopped the import: then only what was written is counted.
    stopped: str | None = None
    written_ids: tuple[dict[str, str], ...] = ()

    @classmethod
    def interrupted(cls, exc: ImportInterrupted, *, on_conflict: str) -> ImportReport:
        """What an import wrote before a write error stopped it."""
        report = cls.from_decisions(exc.written, dry_run=False, on_conflict=on_conflict)
        ids = tuple(
            {"type": SINGULAR[d.entity_type], "id": d.entity_id, "outcome": d.outcome}
            for d in exc.written
        )
        return report._replace(stopped=str(exc), written_ids=ids)

    @classmethod
    def from_decisions(
        cls,
        decisions: list[Decision],
        *,
        dry_run: bool,
        on_conflict: str,
        normalised: dict[str, int] | None = None,
    ) -> ImportReport:
        counts = {etype: dict.fromkeys(OUTCOMES, 0) for etype in ENTITY_TYPES}
        conflicts, skipped = [], []
        masked = written = 0
        for d in decisions:
            counts[d.entity_type][d.outcome] += 1
            if d.write is not None:
                written += 1
                masked += d.masked
            if d.outcome == "conflicts":
                conflicts.append(
                    {
                        "type": SINGULAR[d.entity_type],
                        "id": d.entity_id,
                        "fields": list(d.fields),
                        "kept": d.reason,
                    }
                )
            elif d.outcome == "skipped":
                skipped.append(
                    {"type": SINGULAR[d.entity_type], "id": d.entity_id, "reason": d.reason}
                )
        return cls(
            counts, conflicts, skipped, masked, written, dry_run, on_conflict, normalised or {}
        )

    def as_json(self) -> dict[str, Any]:
        """The report as `kindling import --json` prints it."""
        out = {
            "dryRun": self.dry_run,
            "onConflict": self.on_conflict,
            "counts": self.counts,
            "written": self.written,
            "masked": self.masked,
            "conflicts": self.conflicts,
            "skipped": self.skipped,
            "normalised": self.normalised,
        }
        if self.stopped is not None:
            out["stopped"] = self.stopped
            out["writtenIds"] = list(self.written_ids)
        return out

    def lines(self) -> list[str]:
        """The report for people: a table of counts, then conflicts and skipped entities."""
        head = "Dry run: nothing was written." if self.dry_run else "Import finished."
        if self.stopped is not None:
            head = "Import stopped by a write error; only these were written:"
        out = [head, ""]
        width = max(len(t) for t in ENTITY_TYPES)
        out.append(" " * width + "".join(f"  {o:>9}" for o in OUTCOMES))
        for etype in ENTITY_TYPES:
            row = self.counts[etype]
            out.append(etype.ljust(width) + "".join(f"  {row[o]:>9}" for o in OUTCOMES))
        if self.conflicts:
            kept = {"local": "local copy kept", "bundle": "bundle's values taken"}
            out += ["", "Conflicts:"]
            for c in self.conflicts:
                fields = ", ".join(c["fields"]) or "differs"
                out.append(f"  {c['type']} {c['id']}: {fields} ({kept[c['kept']]})")
        if self.skipped:
            out += ["", "Skipped:"]
            out += [f"  {s['type']} {s['id']}: {s['reason']}" for s in self.skipped]
        if self.normalised:
            out += ["", "Read from the original Kindling's shape:"]
            out += [f"  {n:>5}  {what}" for what, n in self.normalised.items()]
        if self.masked:
            n = self.masked
            verb = "would be" if self.dry_run else ("was" if n == 1 else "were")
            out += ["", f"{n} secret{'s' if n != 1 else ''} {verb} masked on the way in."]
        if self.written_ids:
            out += ["", "Written:"]
            out += [f"  {w['type']} {w['id']} ({w['outcome']})" for w in self.written_ids]
        return out
