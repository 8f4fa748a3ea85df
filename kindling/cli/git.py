"""Commands for living in git: fsck, merge-driver, resolve, git-setup."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kindling.cli.common import echo_json, open_memory, progress_bars, progress_options
from kindling.cli.complete import ids as complete_ids
from kindling.cli.format import echo
from kindling.fileio import read_regular, write_atomic


@click.command("merge-driver", hidden=True)
@click.argument("base", type=click.Path(dir_okay=False))
@click.argument("ours", type=click.Path(dir_okay=False))
@click.argument("theirs", type=click.Path(dir_okay=False))
@click.argument("path", required=False)
@click.option("--marker-size", type=int, default=7, help="Conflict marker length (git's %L).")
def merge_driver_cmd(base: str, ours: str, theirs: str, path: str | None, marker_size: int) -> None:
    """Git merge driver: merge entity files field by field, result written to OURS.

    Exit 0 on a clean merge; exit 1 leaving conflict markers in OURS otherwise.

    Git runs it for entity files once `kindling git-setup` has registered it.

    \b
    Example:
      kindling merge-driver .merge_file_O .merge_file_A .merge_file_B
    """
    from kindling.git.merge import conflict_bytes, merge_files

    label = path or ours
    sides: list[bytes | None] = []
    for name in (base, ours, theirs):
        try:
            data = read_regular(name)
        except OSError as exc:
            data, reason = None, exc.strerror or exc
        else:
            reason = "No such file or directory"
        if data is None:
            # git always hands over three files: a missing one is a misuse, not a merge.
            echo(f"kindling merge-driver: cannot read {name}: {reason}", err=True)
            sys.exit(1)
        sides.append(data)
    try:
        result = merge_files(*sides, path=path, marker_size=marker_size)
        data, clean, conflicts = result.data, result.clean, result.conflicts
    except Exception as exc:  # garbage in must never become a traceback in git's output
        data = conflict_bytes(sides[1], sides[2], marker_size=marker_size)
        clean, conflicts = False, [f"<{type(exc).__name__}>"]
    try:
        write_atomic(Path(ours), data)
    except OSError as exc:
        echo(f"kindling merge-driver: cannot write {ours}: {exc.strerror or exc}", err=True)
        sys.exit(1)
    if not clean:
        echo(
            f"kindling: conflict in {label}: {', '.join(conflicts)} changed differently on both "
            "sides; edit the file (or run `kindling resolve`), then `git add` it",
            err=True,
        )
        sys.exit(1)


@click.command("resolve")
@click.argument("ids", nargs=-1, metavar="[ID...]", shell_complete=complete_ids())
@click.pass_context
def resolve_cmd(ctx: click.Context, ids: tuple[str, ...]) -> None:
    """Finish a git merge of entity files left conflicted, using the field-level merge.

    With no ids, every conflicted entity file under the store. Fields both sides changed
    differently are listed for a person to settle. Exit 1 while any remain.

    \b
    Example:
      git merge other-branch   # conflicts in .kindling/objects/...
      kindling resolve
    """
    report = open_memory(ctx).resolve_conflicts(ids)
    for line in report.lines:
        echo(line)
    if not report.ok:
        ctx.exit(1)


@click.command("git-setup")
@click.option(
    "--driver",
    "command",
    metavar="COMMAND",
    default=None,
    help="Command git runs to merge (default: kindling merge-driver %O %A %B).",
)
@click.pass_context
def git_setup_cmd(ctx: click.Context, command: str | None) -> None:
    """Route entity files to the Kindling merge driver (once per clone; safe to repeat).

    Writes <store>/.gitattributes, registers merge.kindling.* in the repo's .git/config and
    sets rebase.autoStash and merge.autoStash there, so `git pull` (rebase or merge) works
    while hooks keep writing under the store.

    \b
    Example:
      kindling git-setup
    """
    for line in open_memory(ctx).git_setup(command):
        echo(line)


@click.command("fsck")
@click.option("--fix", is_flag=True, help="Make the safe repairs and say what was done.")
@click.option("json_", "--json", is_flag=True, help="Print a JSON report instead of text.")
@progress_options
@click.pass_context
def fsck_cmd(ctx: click.Context, fix: bool, json_: bool) -> None:
    """Check every entity file and the index; exit 0 when clean, 1 otherwise.

    --fix re-encodes valid non-canonical files, moves misplaced ones, rebuilds the index
    (scrubbing any text of forgotten observations left in it) and removes temp files whose
    writer is gone. Files that do not parse are never touched.

    \b
    Example:
      kindling fsck
      kindling fsck --fix --json
    """
    from kindling.fsck import FIXABLE

    memory = open_memory(ctx)
    with progress_bars(ctx, json_=json_) as progress:
        report = memory.fsck(fix=fix, progress=progress)
    if json_:
        echo_json(report.as_dict())
    else:
        for problem in report.problems:
            line = f"{problem.path}: {problem.check}: {problem.reason}"
            if problem.fixed:
                line += f" [fixed: {problem.fixed}]"
            echo(line)
        left = sum(1 for p in report.problems if not p.fixed)
        fixed = len(report.problems) - left
        summary = f"{report.checked} entity files checked"
        if not report.problems:
            summary += ", no problems"
        else:
            summary += f", {len(report.problems)} problem(s)"
            if fix or fixed:  # a check may repair as it goes (the index's sync scrubs)
                summary += f", {fixed} fixed, {left} left"
            if not fix and any(p.check in FIXABLE and not p.fixed for p in report.problems):
                summary += "; `kindling fsck --fix` repairs the safe ones"
        echo(summary)
    if not report.ok:
        ctx.exit(1)
