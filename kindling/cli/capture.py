"""Commands that write memory: init, log, capsule open/close, pin, unpin, forget."""

from __future__ import annotations

from pathlib import Path

import click

from kindling import canonical
from kindling.cli.common import (
    FiniteFloatRange,
    echo_json,
    json_option,
    notice,
    open_memory,
    read_option,
    read_text,
    scope_from,
    scope_options,
    store_given,
)
from kindling.cli.complete import ids
from kindling.cli.format import echo
from kindling.cli.when import DURATION, INSTANT, TIME_HELP
from kindling.errors import KindlingError
from kindling.model import CAPSULE_TYPES, OBSERVATION_KINDS, SINGULAR


def _report(written, json_: bool) -> None:
    """Print a created entity: its id alone, or the stored JSON; masking notice on stderr."""
    if written.masked:
        plural = "s" if written.masked != 1 else ""
        notice(f"Masked {written.masked} secret{plural} before writing.")
    if json_:
        echo_json(written.entity)
    else:
        echo(written.entity["id"])


@click.command("init")
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option(
    "--claude-code",
    is_flag=True,
    help="Also set up Claude Code: hooks, the MCP server, a memory skill and slash commands.",
)
@click.option(
    "--agent",
    "agents",
    multiple=True,
    metavar="NAME",
    help="Also set up this agent: claude-code, codex, gemini, cursor, opencode, or all found.",
)
@click.option(
    "--remove",
    is_flag=True,
    help="Take out what init wrote for the agents (all of them unless --agent names some).",
)
@click.option(
    "--local",
    is_flag=True,
    help="With --claude-code: just for you (.claude/settings.local.json, listed in .gitignore).",
)
@click.option(
    "--plugin",
    "plugin_dir",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="With --claude-code: write the same as a Claude Code plugin folder DIR instead.",
)
@click.pass_context
def init_cmd(
    ctx: click.Context,
    path: str | None,
    claude_code: bool,
    agents: tuple[str, ...],
    remove: bool,
    local: bool,
    plugin_dir: str | None,
) -> None:
    """Create a store: PATH/.kindling (default: the git work tree's top, else here).

    In a git work tree it also routes entity files to Kindling's merge driver
    (.kindling/.gitattributes and the repo's git config) and turns on git's autostash for
    pulls, as `kindling git-setup` does. Running it again is harmless.

    --claude-code merges Kindling's hooks into .claude/settings.json and its MCP server into
    .mcp.json, and writes a memory skill (.claude/skills/kindling-memory/) and slash commands
    (.claude/commands/memory/); every other setting is kept. --plugin DIR writes all of it
    as a Claude Code plugin instead (load it with `claude --plugin-dir DIR`).

    --agent NAME (codex, gemini, cursor, opencode, claude-code; `all`: every agent whose
    folder is here or in your home) writes that agent's hooks (OpenCode: a plugin) and MCP
    server into the project, merged with what is there, and says what the agent needs
    before they run. --remove takes out exactly what init wrote (every agent's, unless
    --agent names some) and leaves everything else.

    \b
    Example:
      kindling init
      kindling init --claude-code
      kindling init --claude-code --local
      kindling init --claude-code --plugin ~/claude-plugins/kindling
      kindling init --agent codex --agent cursor     # or: --agent all (every agent found)
      kindling init --remove --agent codex
      kindling --store /tmp/scratch-memory init
    """
    from kindling.git import setup as gitsetup
    from kindling.memory import Memory

    store = store_given(ctx)
    if store is not None and path is not None:
        raise click.UsageError("give either --store or PATH, not both")
    if store is not None:  # a work tree that already holds a store: that one, kept as it is
        from kindling.settings import find_store

        store = find_store(store, upwards=False)
    if (local or plugin_dir) and not claude_code:
        raise click.UsageError(f"{'--local' if local else '--plugin'} goes with --claude-code")
    if local and plugin_dir:
        raise click.UsageError("--plugin writes a plugin folder; --local does not apply to it")
    if remove:  # takes the agents' setup out again; the store stays as it is
        from kindling.cli.agent_setup import remove_agents

        remove_agents(agents, claude_code, path)
        return
    root = Memory.init(path, store=store).store.root
    echo(f"Kindling store ready at {root}")
    gitsetup.install_gitattributes(root)
    try:
        repo = gitsetup.find_repo(root)
    except KindlingError:  # no git on this machine: the store works without it
        repo = None
    if repo is not None and gitsetup.register_merge_driver(repo):
        echo(f"Registered the Kindling merge driver in {repo}'s git config")
    if repo is not None and gitsetup.configure_autostash(repo):
        echo(f"Set {' and '.join(gitsetup.AUTOSTASH)} in {repo}'s git config (pulls mid-session)")
    if agents:
        from kindling.cli.agent_setup import chosen_agents, set_up

        base = Path(repo or root.parent).absolute()
        set_up(chosen_agents(agents, claude_code, base), base, remove=False)
        return
    if claude_code:
        from kindling.agents import claude_install

        if plugin_dir is not None:
            changes = claude_install.copy_plugin(plugin_dir)
            base = claude_install.Path(plugin_dir).absolute()
            echo(f"Claude Code plugin in {base}:")
        else:
            base = claude_install.Path(repo or root.parent).absolute()
            changes = claude_install.install(base, local=local)
            echo(f"Claude Code set up in {base}:")
        for change in changes:
            where = change.path.relative_to(base).as_posix()
            echo(f"  {change.what:<9} {where}  ({change.purpose})")
        if plugin_dir is not None:
            echo(f"Load it with: claude --plugin-dir {base}")


def _parse_provenance(text: str | None) -> dict | None:
    if text is None:
        return None
    try:
        value = canonical.loads(text)
    except canonical.DecodeError as exc:
        raise KindlingError(f"--provenance is {exc}") from None
    if not isinstance(value, dict):
        raise KindlingError('--provenance must be a JSON object, e.g. \'{"file": "auth.ts"}\'')
    return value


@click.command("log")
@click.argument("content")
@click.option("--kind", type=click.Choice(OBSERVATION_KINDS), default="message", show_default=True)
@scope_options
@click.option(
    "--provenance", metavar="JSON", help="Source metadata as a JSON object (- reads stdin)."
)
@click.option(
    "--capsule",
    "capsule_id",
    metavar="CAP_ID",
    shell_complete=ids("capsules", open_only=True),
    help="Append to this open capsule.",
)
@click.option(
    "--ts", type=INSTANT, metavar="TIME", help=f"When it happened (default: now): {TIME_HELP}."
)
@json_option
@click.pass_context
def log_cmd(ctx, content, kind, provenance, capsule_id, ts, json_, **scope_kwargs) -> None:
    """Record an observation (CONTENT, or - to read stdin); prints its id.

    \b
    Example:
      kindling log "JWT validation failed: token expired" --kind error --session s1
      git diff | kindling log - --kind file_diff --repo .
    """
    memory = open_memory(ctx)
    written = memory.log(
        read_text(content, what="CONTENT", strip_newline=False),
        kind=kind,
        scope=scope_from(scope_kwargs),
        provenance=_parse_provenance(read_option(provenance, "--provenance")),
        capsule_id=capsule_id,
        ts=ts,
    )
    _report(written, json_)


@click.group("capsule")
def capsule_group() -> None:
    """Open and close capsules (a session, a workflow node).

    \b
    Example:
      cap=$(kindling capsule open --intent "fix JWT expiry" --session s1)
      kindling capsule close "$cap" --summary "Expiry check compared seconds to ms"
    """


@capsule_group.command("open")
@click.option(
    "--intent", required=True, help="What this episode of work is for (- reads stdin)."
)
@click.option(
    "--type", "type_", type=click.Choice(CAPSULE_TYPES), default="session", show_default=True
)
@scope_options
@json_option
@click.pass_context
def capsule_open_cmd(ctx, intent, type_, json_, **scope_kwargs) -> None:
    """Open a capsule; prints its id.

    \b
    Example:
      kindling capsule open --intent "investigating the memory leak" --session s1 --repo .
    """
    intent = read_text(intent, what="--intent")
    written = open_memory(ctx).open_capsule(intent, type=type_, scope=scope_from(scope_kwargs))
    _report(written, json_)


@capsule_group.command("close")
@click.argument("capsule_id", shell_complete=ids("capsules", open_only=True))
@click.option("--summary", help="Write a summary of the capsule (- reads it from stdin).")
@click.option(
    "--confidence",
    type=FiniteFloatRange(0, 1),
    default=1.0,
    show_default=True,
    help="Confidence in the summary.",
)
@click.option(
    "--evidence",
    multiple=True,
    metavar="OBS_ID",
    shell_complete=ids("observations"),
    help="Observation backing the summary.",
)
@json_option
@click.pass_context
def capsule_close_cmd(ctx, capsule_id, summary, confidence, evidence, json_) -> None:
    """Close a capsule, optionally with a summary; prints the capsule id.

    \b
    Example:
      kindling capsule close cap_8a3f --summary "Fixed JWT expiry check" --evidence 9c20f3
      kindling capsule close cap_8a3f --summary - < summary.md
    """
    summary = read_option(summary, "--summary")
    written = open_memory(ctx).close_capsule(
        capsule_id, summary=summary, confidence=confidence, evidence=evidence
    )
    _report(written, json_)


@click.command("pin")
@click.argument("target_type", type=click.Choice(["observation", "summary"]))
@click.argument("target_id", shell_complete=ids())
@click.option("--note", help="Why it matters, stored as reason (- reads stdin).")
@click.option(
    "--ttl",
    type=DURATION,
    metavar="DURATION",
    help="Expire after this long: 7d, 36h, 90m, 2w, '1d 12h', or milliseconds.",
)
@scope_options
@json_option
@click.pass_context
def pin_cmd(ctx, target_type, target_id, note, ttl, json_, **scope_kwargs) -> None:
    """Pin an observation or summary so every search returns it first; prints the pin id.

    \b
    Example:
      kindling pin observation 9c20f3a1 --note "root cause — keep handy"
    """
    note = read_option(note, "--note")
    written = open_memory(ctx).pin(
        target_type, target_id, note=note, ttl=ttl, scope=scope_from(scope_kwargs) or None
    )
    _report(written, json_)


@click.command("unpin")
@click.argument("pin_id", shell_complete=ids("pins"))
@json_option
@click.pass_context
def unpin_cmd(ctx, pin_id, json_) -> None:
    """Remove a pin; prints the removed pin's id.

    \b
    Example:
      kindling unpin pin_4d5e
    """
    pin = open_memory(ctx).unpin(pin_id)
    if json_:
        echo_json(pin)
    else:
        echo(pin["id"])


@click.command("forget")
@click.argument("ref", metavar="[ID]", required=False, shell_complete=ids())
@click.option(
    "--matching",
    metavar="TEXT",
    help="Forget every entity whose text holds TEXT (- reads it from stdin).",
)
@click.option("--dry-run", is_flag=True, help="List what would be forgotten; change nothing.")
@json_option
@click.pass_context
def forget_cmd(ctx, ref, matching, dry_run, json_) -> None:
    """Forget an observation, capsule, summary or pin: the record stays, its text goes.

    An observation takes its copies with it: the intent of its capsule when taken from it,
    and what its capsule's summary (or one citing it) quotes of it. --matching TEXT forgets
    every entity whose text holds TEXT (exact, case-sensitive), read from the files. Git
    history still holds the old text; see the README on purging it.

    \b
    Example:
      kindling forget 9c20f3a1
      kindling forget --matching 'hunter2' --dry-run
    """
    if (ref is None) == (matching is None):
        raise click.UsageError("give either ID or --matching TEXT")
    matching = read_option(matching, "--matching")
    if matching is not None and not matching:
        raise click.BadParameter("must not be empty", param_hint="'--matching'")
    memory = open_memory(ctx)
    if matching is not None:
        report = memory.forget_matching(matching, dry_run=dry_run)
    else:
        written, report = memory.forget_report(ref, dry_run=dry_run)
    if json_ and ref is not None and not dry_run:
        echo_json(written.entity)  # as before: the entity exactly as stored
    elif json_:
        echo_json(report.as_dict())
    elif ref is not None and not dry_run:
        echo(written.entity["id"])
        also = [s for s in report.forgotten if s.entity_id != written.entity["id"]]
        for step in also:
            notice(f"Also forgot {SINGULAR[step.entity_type]} {step.entity_id}: {step.reason}.")
    else:
        for step in report.forgotten:
            echo(f"{SINGULAR[step.entity_type]} {step.entity_id}")
        if not report.forgotten:
            notice("Nothing to forget.")
    if report.problems:
        if not json_:
            for problem in report.problems:
                notice(f"{problem.path}: {problem.reason}")
        n = len(report.problems)
        raise KindlingError(
            f"{n} file{'s' if n != 1 else ''} holding the text could not be forgotten"
            + ("" if json_ else " (listed above)")
        )
