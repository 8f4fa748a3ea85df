"""Text formatting shared by the human output of several commands."""

from __future__ import annotations

import click

from kindling.model import entity_time
from kindling.terminal import one_line, safe_text


def echo(text: object = "", *, err: bool = False, nl: bool = True) -> None:
    """click.echo for human output: stored content cannot move the cursor or set a clipboard."""
    click.echo(safe_text(text), err=err, nl=nl)


def format_time(ms: int) -> str:
    """Epoch ms as local `YYYY-MM-DD HH:MM:SS +HH:MM` (UTC with `--utc`); never raises."""
    from kindling.cli.when import use_utc
    from kindling.when import format_instant

    return format_instant(ms, utc=use_utc())


def entity_line(entity_type: str, entity: dict) -> str:
    """One line describing an entity for `kindling list`."""
    when = format_time(entity_time(entity_type, entity))
    if entity_type == "observations":
        detail = f"{entity['kind']:<11} {one_line(entity['content'], 80)}"
    elif entity_type == "capsules":
        detail = f"{entity['status']:<6} {entity['type']:<15} {one_line(entity['intent'], 70)}"
    elif entity_type == "summaries":
        detail = f"{entity['confidence']:<4} {one_line(entity['content'], 80)}"
    else:
        note = f"  {one_line(entity['reason'], 60)}" if entity["reason"] else ""
        detail = f"{entity['targetType']:<11} {entity['targetId']}{note}"
    return f"{entity['id']}  {when}  {detail}"


def problems_notice(problems) -> None:
    """Tell stderr that some entity files could not be read (they are left untouched)."""
    if problems:
        n = len(problems)
        click.echo(
            f"Warning: {n} entity file{'s' if n != 1 else ''} could not be read and "
            f"{'were' if n != 1 else 'was'} skipped; run `kindling reindex` for details.",
            err=True,
        )
