"""Commands where people and agents meet the memory: demo, browse, mcp, hook, summarize."""

from __future__ import annotations

import sys

import click

from kindling.cli.common import (
    echo_json,
    json_option,
    notice,
    open_memory,
    progress_bars,
    progress_options,
    read_option,
    store_path,
)
from kindling.cli.complete import ids
from kindling.cli.format import echo


@click.command("demo")
@click.argument("query", required=False)
def demo_cmd(query: str | None) -> None:
    """Copy the bundled example store to a temp dir, search it, and show what to try next.

    \b
    Example:
      kindling demo
      kindling demo "rate limiter"
    """
    from kindling import demo
    from kindling.cli.search import render
    from kindling.memory import Memory

    query = read_option(query, "QUERY") or demo.DEMO_QUERY  # - reads it from stdin
    store = demo.copy_example()
    echo(f"Copied the example store (a JWT expiry bug, debugged in one session) to {store}")
    echo(f'\n$ kindling search "{query}"\n')
    with Memory(store) as memory:
        echo(render(memory.search(query)), nl=False)
        pins = memory.list("pins", limit=1)
    pinned = pins[0]["targetId"] if pins else None
    echo("\nNext, try:")
    for line in demo.next_steps(store, pinned):
        echo(f"  {line}")


@click.command("browse")
@click.option(
    "--output",
    "-o",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Write the page here (default: a new temporary file).",
)
@click.option(
    "--open/--no-open",
    "open_",
    default=None,
    help="Open the page in a browser (default: only in a terminal with a graphical browser).",
)
@progress_options
@click.pass_context
def browse_cmd(ctx: click.Context, output: str | None, open_: bool | None) -> None:
    """Write the store as one self-contained offline HTML page; prints its path.

    \b
    Example:
      kindling browse
      kindling browse --output memory.html --no-open
    """
    from kindling.browse import open_in_browser, write_page

    with open_memory(ctx) as memory, progress_bars(ctx) as progress:
        path = write_page(memory, output, progress)
    echo(str(path))
    wanted = open_ if open_ is not None else sys.stdout.isatty()
    if wanted and not open_in_browser(path) and open_:
        notice("No graphical browser found; open the file above yourself.", note=True)


@click.command("mcp")
@click.option(
    "--store",
    "stores",
    multiple=True,
    metavar="DIR",
    help="A store to serve; repeat for several (tools take `store` to pick one).",
)
@click.pass_context
def mcp_cmd(ctx: click.Context, stores: tuple[str, ...]) -> None:
    """Serve memory to MCP clients over stdio (needs kindling-memory[mcp]).

    Tools: context, search, recent, get, log, capsule_open, capsule_close, pin, unpin,
    forget. Several --store options serve several stores; the first is the default.

    \b
    Example:
      claude mcp add kindling -- kindling mcp
      kindling mcp --store ~/work/api/.kindling --store ~/work/web/.kindling
    """
    from kindling.agents.mcp_server import serve
    from kindling.settings import find_store

    root = store_path(ctx)
    serve([find_store(s) for s in stores] or ([root] if root else []))


@click.command("hook", hidden=True)
@click.argument("event", metavar="EVENT")
@click.option(
    "--agent",
    default="claude-code",
    show_default=True,
    metavar="NAME",
    help="The agent sending EVENT: claude-code, codex, gemini, cursor or opencode.",
)
@click.option(
    "--from-agent",
    metavar="NAME",
    help="Show only what this agent recorded in the start context and prompt recall.",
)
@click.pass_context
def hook_cmd(ctx: click.Context, event: str, agent: str, from_agent: str | None) -> None:
    """Record an agent's hook EVENT from the JSON on stdin; never fails the agent.

    EVENT is any Claude Code hook event: SessionStart (prints the context block),
    UserPromptSubmit (prints memories recalled for the prompt), PostToolUse,
    PostToolUseFailure, Notification, Stop, SubagentStop, PreCompact, PostCompact,
    SessionEnd (closes the session's capsule with a summary); others are accepted and
    ignored. The original Kindling plugin's names work too (session-start, post-tool-use,
    ...; `kindling-hook EVENT` is the same command). With --agent, the events of Codex CLI,
    Gemini CLI, Cursor and OpenCode, in their own names, are recorded the same way and
    answered in that agent's own form (docs/agents.md). Problems are one line on stderr, exit
    status 0, and shown by `kindling status`.

    \b
    Example:
      kindling init --claude-code      # writes these hooks into .claude/settings.json
      echo '{"session_id":"s1","cwd":"'"$PWD"'","prompt":"hi"}' | kindling hook UserPromptSubmit
    """
    from kindling.agents.hook_command import run_hook_command

    run_hook_command(event, store_path(ctx), agent=agent, from_agent=from_agent)


@click.command("summarize")
@click.option(
    "--rebuild",
    is_flag=True,
    help="Derive the hooks' closing summaries of Claude Code sessions again, in place.",
)
@click.option(
    "--capsule",
    "capsule",
    metavar="ID",
    shell_complete=ids("capsules"),
    help="Only this capsule (id or prefix).",
)
@click.option("--dry-run", is_flag=True, help="List what would be rewritten; change nothing.")
@json_option
@click.pass_context
def summarize_cmd(
    ctx: click.Context, rebuild: bool, capsule: str | None, dry_run: bool, json_: bool
) -> None:
    """Rewrite the summaries the Claude Code hooks wrote, from their sessions' observations.

    Each closed Claude Code session capsule whose summary the hooks wrote gets it derived
    again (same summary id): what was asked, tried, found, changed, left failing and left to
    do. Summaries a person or an agent wrote (`capsule close --summary`, MCP) are left alone.
    Running it again changes nothing.

    \b
    Example:
      kindling summarize --rebuild --dry-run
      kindling summarize --rebuild
    """
    if not rebuild:
        raise click.UsageError("nothing to do: pass --rebuild")
    from kindling.agents.resummarize import REWRITTEN, SKIPPED, UNCHANGED, rebuild_summaries

    with open_memory(ctx) as memory:
        report = rebuild_summaries(memory, capsule=capsule, dry_run=dry_run)
    if json_:
        echo_json(report.as_dict())
        return
    verb = "would rewrite" if dry_run else "rewrote"
    for item in report.of(REWRITTEN):
        echo(f"{verb} summary {item.summary_id} (capsule {item.capsule_id})")
    rewritten, unchanged = len(report.of(REWRITTEN)), len(report.of(UNCHANGED))
    skipped = len(report.of(SKIPPED))
    tail = f"; {skipped} left alone (not written by the hooks)" if skipped else ""
    if rewritten:
        echo(f"{rewritten} {verb}, {unchanged} already up to date{tail}")
    else:
        echo(f"Nothing to rewrite: {unchanged} already up to date{tail}")
