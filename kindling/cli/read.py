"""Commands that read memory: show, list, status."""

from __future__ import annotations

import click

from kindling.cli.common import (
    POSITIVE_COUNT,
    echo_json,
    json_option,
    kind_option,
    open_memory,
    scope_from,
    scope_options,
)
from kindling.cli.complete import ids
from kindling.cli.format import echo, entity_line, problems_notice
from kindling.cli.when import utc_option
from kindling.errors import NotFoundError
from kindling.model import ENTITY_TYPES, SINGULAR


@click.command("show")
@click.argument("entity_id", shell_complete=ids())
@json_option
@click.pass_context
def show_cmd(ctx, entity_id, json_) -> None:
    """Show one entity (any type) by id or unique prefix, with its file path.

    \b
    Example:
      kindling show 9c20f3a1
      kindling show cap_8a3f --json
    """
    memory = open_memory(ctx)
    try:
        found = memory.get(entity_id)
    except NotFoundError:
        retired = memory.retired(entity_id)
        if retired is None:
            raise
        from kindling.retention.show import retired_text

        if json_:
            echo_json(retired)
        else:
            echo(retired_text(retired), nl=False)
        return
    if json_:
        echo_json(found.entity)
        return
    echo(f"{SINGULAR[found.entity_type]} {found.entity['id']}")
    echo(f"Path: {found.path}")
    from kindling import canonical

    echo(canonical.encode(found.entity).decode("utf-8"), nl=False)


@click.command("list")
@click.argument("entity_type", type=click.Choice(ENTITY_TYPES))
@scope_options
@kind_option
@click.option("--limit", type=POSITIVE_COUNT, default=20, show_default=True)
@click.option("--all", "include_expired", is_flag=True, help="Include expired pins.")
@utc_option
@json_option
@click.pass_context
def list_cmd(ctx, entity_type, kinds, limit, include_expired, json_, **scope_kwargs) -> None:
    """List stored entities of one type, newest first.

    \b
    Example:
      kindling list observations --session s1 --kind error
      kindling list pins --all --json
    """
    memory = open_memory(ctx)
    if kinds and entity_type != "observations":
        raise click.UsageError("--kind applies to observations only")
    items = memory.list(
        entity_type,
        scope=scope_from(scope_kwargs, memory),
        kinds=list(kinds) or None,
        limit=limit,
        include_expired=include_expired,
    )
    problems_notice(memory.problems())
    if json_:
        echo_json(items)
        return
    if not items:
        echo(f"No {entity_type}.")
    for item in items:
        echo(entity_line(entity_type, item))


@click.command("status")
@utc_option
@json_option
@click.pass_context
def status_cmd(ctx, json_) -> None:
    """Show the store's path, counts, open capsules, problem files and agent capture.

    \b
    Example:
      kindling status
    """
    info = open_memory(ctx).status()
    if json_:
        echo_json(info)
        return
    counts = info["counts"]
    echo(f"Store: {info['store']}")
    echo(f"Index: {info['index']}")
    watcher = info["watcher"]
    if watcher is not None:
        state = "caught up" if watcher["caughtUp"] else "catching up"
        idle = f", exits after {watcher['idleExitS']:g} s unused" if watcher["idleExitS"] else ""
        echo(f"Watcher: pid {watcher['pid']} ({state}{idle}; stop: kindling watch --stop)")
    elif info["autowatchOff"]:
        echo(f"Watcher: none, and none starts by itself ({info['autowatchOff']})")
    echo(f"Observations: {counts['observations']} ({info['redacted']} redacted)")
    echo(f"Capsules: {counts['capsules']} ({len(info['openCapsules'])} open)")
    echo(f"Summaries: {counts['summaries']}")
    echo(f"Pins: {counts['pins']}")
    if info["openCapsules"]:
        echo("Open capsules:")
        for cap in info["openCapsules"]:
            echo(f"  {cap['id']}  {cap['type']}  {cap['intent']}")
    if info["problems"]:
        echo(f"Problem files ({len(info['problems'])}):")
        for p in info["problems"]:
            echo(f"  {p['path']}: {p['reason']}")
    for line in capture_lines(info["capture"]):
        echo(line)


def capture_lines(capture: dict) -> list[str]:
    """The agent-capture part of `kindling status`: last capture per event, errors, unknowns."""
    from kindling.cli.format import format_time

    if not (capture["events"] or capture["errors"] or capture["unknownEvents"]):
        return ["Agent capture: no hook has run yet."]
    lines = ["Agent capture (last run per hook event):"]
    for event, seen in sorted(capture["events"].items(), key=lambda kv: -kv[1].get("at", 0)):
        what = f" -> {seen['recorded']}" if seen.get("recorded") else ""
        lines.append(f"  {event}: {format_time(seen['at'])}, {seen['count']} run(s){what}")
    if capture["errors"]:
        lines.append(f"Hook errors (last {len(capture['errors'])}):")
        for error in capture["errors"]:
            lines.append(f"  {format_time(error['at'])} {error['message']}")
    if capture["unknownEvents"]:
        names = ", ".join(f"{n} ({v['count']})" for n, v in capture["unknownEvents"].items())
        lines.append(f"Unknown hook events seen (ignored): {names}")
    return lines
