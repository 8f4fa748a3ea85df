"""`kindling gc`: apply the store's retention policy."""

from __future__ import annotations

import click

from kindling.cli.common import echo_json, json_option, open_memory
from kindling.cli.format import echo, format_time


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="Show what would be retired; change nothing.")
@click.option("--yes", is_flag=True, help="Apply a policy this clone has not applied before.")
@json_option
@click.pass_context
def gc_cmd(ctx, dry_run, yes, json_) -> None:
    """Retire old raw tool output, as .kindling/retention.json says.

    Old command, tool-call and diff observations whose capsule's summary keeps what they
    taught are deleted from the work tree (git history keeps them; `kindling show <id>`
    names the commit); pinned ones, summary evidence, errors and fixes never are. Every
    clone reaching the same files makes the same plan. A policy this clone has not applied
    before (the first gc, or a changed policy pulled) is shown and needs --yes.

    \b
    Example:
      kindling gc --dry-run
      kindling gc --dry-run --json
      kindling gc --yes
    """
    report = open_memory(ctx).gc(dry_run=dry_run, confirm=yes)
    if json_:
        echo_json(as_json(report))
    else:
        for line in plan_lines(report):
            echo(line)
    if report.needs_confirmation:
        raise click.ClickException(
            "this clone has not applied this retention policy before; the plan above is what "
            "it would retire: run `kindling gc --yes` to apply it"
        )


def plan_lines(report) -> list[str]:
    """The human report of a gc run or plan."""
    plan = report.plan
    where = ".kindling/retention.json" if report.committed else "the default (no retention.json)"
    lines = [
        f"Policy ({where}): {plan.policy.describe()}.",
        f"Newest activity: {format_time(plan.horizon)}; old means before "
        f"{format_time(max(plan.cutoff, 0))}.",
    ]
    verb = "Retired" if report.applied else "Would retire"
    count = report.removed if report.applied else len(plan.retire)
    lines.append(
        f"{verb} {count:,} of {plan.observations:,} observations ({_size(plan.bytes)})"
        + (":" if plan.retire else ".")
    )
    for kind, (files, size) in plan.by_kind().items():
        lines.append(f"  {kind:<12} {files:>9,} files  {_size(size):>10}")
    if report.unreadable:
        lines.append(
            f"{report.unreadable:,} entity file(s) do not parse: gc applies nothing until "
            "`kindling fsck` is clean."
        )
    if report.skipped:
        lines.append(f"Left {report.skipped:,} alone: changed or gone since they were read.")
    if report.policy_written:
        lines.append("Wrote the policy applied to .kindling/retention.json.")
    if report.records:
        lines.append(
            "Commit the deletions with .kindling/retired/ (the record of retired ids) to share "
            "them: git add -A .kindling && git commit -m 'kindling gc'"
        )
    return lines


def as_json(report) -> dict:
    """The --json form of a gc run or plan (ids of what is, or would be, retired)."""
    plan = report.plan
    return {
        "policy": plan.policy.as_json(),
        "committed": report.committed,
        "horizon": plan.horizon,
        "cutoff": plan.cutoff,
        "observations": plan.observations,
        "retire": {
            "files": len(plan.retire),
            "bytes": plan.bytes,
            "byKind": {k: {"files": f, "bytes": b} for k, (f, b) in plan.by_kind().items()},
            "ids": [item.id for item in plan.retire],
        },
        "applied": report.applied,
        "needsConfirmation": report.needs_confirmation,
        "removed": report.removed,
        "skipped": report.skipped,
        "records": list(report.records),
        "unreadable": report.unreadable,
    }


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"
