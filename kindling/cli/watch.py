"""The `watch` command: keep the index current while files change, one line per batch."""

from __future__ import annotations

import datetime as dt

import click

from kindling.cli.common import json_option, open_memory
from kindling.cli.format import echo
from kindling.cli.when import Duration
from kindling.watch.watcher import DEFAULT_DEBOUNCE_MS, DEFAULT_RECONCILE_S


@click.command("watch")
@click.option(
    "--debounce",
    "debounce_ms",
    type=Duration(unit="ms", least=1, most=3_600_000),
    default=DEFAULT_DEBOUNCE_MS,
    show_default=True,
    envvar="KINDLING_WATCH_DEBOUNCE_MS",
    metavar="DURATION",
    help="Group changes for up to this long before applying them: 200ms, 2s, or milliseconds "
    "up to 1h (env KINDLING_WATCH_DEBOUNCE_MS).",
)
@click.option(
    "--reconcile-every",
    type=Duration(unit="s", least=0, most=86_400_000, seconds=True),
    default=DEFAULT_RECONCILE_S,
    show_default=True,
    metavar="DURATION",
    help="Also walk the whole store this often, healing anything missed: 10m, 1h, or seconds "
    "up to 1d (0: never).",
)
@click.option(
    "--idle-exit",
    type=Duration(unit="s", least=1, seconds=True),
    default=None,
    metavar="DURATION",
    help="Exit after this long (30m, 2h, or seconds) in which no reader relied on the watcher "
    "and no file changed.",
)
@click.option(
    "--stop",
    is_flag=True,
    help="Stop the store's running watcher; none starts by itself in this clone until --start.",
)
@click.option(
    "--start",
    is_flag=True,
    help="Let watchers start by themselves again in this clone, and start one in the background.",
)
@click.option("--background", is_flag=True, hidden=True)
@json_option
@click.pass_context
def watch_cmd(
    ctx: click.Context,
    debounce_ms: int,
    reconcile_every: float,
    idle_exit: float | None,
    stop: bool,
    start: bool,
    background: bool,
    json_: bool,
) -> None:
    """Keep the index current while files change; readers then skip their own walk.

    Prints one line per applied batch (what changed, how long it took), or with --json one
    JSON object per line; Ctrl-C or SIGTERM stops it. One watcher per store.

    Searches and agent hooks also start one by themselves, in the background, for a store
    big enough to need it; it exits after 30 idle minutes or when its store is deleted or
    moved. `kindling status` shows it; `kindling watch --stop` ends it and keeps it off in
    this clone (KINDLING_AUTOWATCH=0 for a user or machine, `"autowatch": false` in
    config.json for everyone).

    \b
    Example:
      kindling watch
      kindling watch --debounce 100 --json
      kindling watch --stop
    """
    if stop and start:
        raise click.UsageError("--stop and --start cannot be used together")
    memory = open_memory(ctx)
    if start or stop:
        pid = memory.start_watcher() if start else memory.stop_watcher()
        if json_:
            _print_json({"started" if start else "stopped": pid})
        else:
            click.echo(_changed(memory.store.root, started=start, pid=pid))
        return
    if background:
        from kindling.errors import KindlingError

        try:  # started by a reader: silent, and quietly gone when another watcher runs
            memory.watch(
                debounce_ms=debounce_ms,
                reconcile_every=reconcile_every,
                on_event=lambda event: None,
                idle_exit=idle_exit or memory.settings.idle_exit_s or None,
            )
        except KindlingError:
            pass
        return
    show = _print_json if json_ else _print_text
    memory.watch(
        debounce_ms=debounce_ms, reconcile_every=reconcile_every, on_event=show, idle_exit=idle_exit
    )


def _changed(root: object, *, started: bool, pid: int | None) -> str:
    """What `watch --start` or `watch --stop` did, for a person."""
    if started:
        if pid is None:
            return f"a watcher is already running for {root}"
        return f"started a watcher for {root} (pid {pid})"
    sticks = "none will start by itself here until `kindling watch --start`"
    if pid is None:
        return f"no watcher is running for {root}; {sticks}"
    return f"stopped the watcher of {root} (pid {pid}); {sticks}"


def _print_json(event: dict) -> None:
    import orjson

    click.echo(orjson.dumps(event).decode())


def _print_text(event: dict) -> None:
    line = describe(event)
    if line is not None:
        echo(line, err=event["event"] == "error")


def describe(event: dict) -> str | None:
    """The human line for one watcher event (with problem files on the lines after it)."""
    kind = event["event"]
    clock = dt.datetime.fromtimestamp(event["time"] / 1000).strftime("%H:%M:%S")
    if kind == "start":
        return (
            f"{clock} watching {event['store']} (pid {event['pid']}, "
            f"debounce {event['debounceMs']} ms); Ctrl-C to stop"
        )
    if kind == "gone":
        return f"{clock} {event['store']} is gone; exiting"
    if kind == "requested":
        return f"{clock} asked to stop (kindling watch --stop); exiting"
    if kind == "idle":
        return f"{clock} unused for {event['seconds']:g} s; exiting"
    if kind == "stop":
        return f"{clock} stopped; readers do their own sync again"
    if kind == "reopen":
        return f"{clock} the index file was deleted or replaced; reopened {event['path']}"
    if kind == "error":
        return f"{clock} error: {event['message']} (will retry)"
    if kind != "batch":
        return None
    counts = [f"{event[key]} {key}" for key in ("added", "updated", "removed") if event[key]]
    what = ", ".join(counts) if counts else "no change"
    if event["mode"] == "refresh":
        head = f"{event['paths']} changed path{'s' if event['paths'] != 1 else ''}"
    elif event["paths"]:
        head = f"reconciled ({event['reason']}, {event['paths']} changed paths)"
    else:
        head = f"reconciled ({event['reason']})"
    lines = [f"{clock} {head}: {what} in {_duration(event['ms'])}"]
    for problem in event["problems"]:
        lines.append(f"  problem file: {problem['path']}: {problem['reason']}")
    return "\n".join(lines)


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"
