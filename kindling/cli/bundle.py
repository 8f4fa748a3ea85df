"""Commands that move memory between stores as bundles: export, import."""

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
    scope_from,
    scope_options,
)
from kindling.cli.format import echo
from kindling.errors import ValidationError
from kindling.terminal import safe_text


@click.command("export")
@click.argument(
    "file", metavar="[FILE]", required=False, type=click.Path(dir_okay=False, allow_dash=True)
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write the bundle to FILE (atomically); the same as giving FILE.",
)
@click.option(
    "--format",
    "format_",
    type=click.Choice(["kindling", "original"]),
    default="kindling",
    show_default=True,
    help="kindling: this format (docs/formats.md; JSON Schemas in kindling/schemas/); "
    "original: what the original Kindling (TypeScript or Rust) imports.",
)
@scope_options
@click.option(
    "--include-redacted",
    is_flag=True,
    help="Also export forgotten observations as tombstones, so the forget travels too.",
)
@progress_options
@click.pass_context
def export_cmd(ctx, file, output, format_, include_redacted, **scope_kwargs) -> None:
    """Write the store (or one scope of it) as a bundle to FILE, or stdout (absent or -).

    The FILE's folder must exist; the file itself is replaced atomically.

    \b
    Example:
      kindling export memory.json
      kindling export --repo my-project | gzip > memory.json.gz
      kindling export --format original -o for-the-original.json
    """
    from kindling.bundle.export import describe

    if file is not None and output is not None and file != output:
        raise click.UsageError("give the output file once: as FILE or with -o, not both")
    output = output if output is not None else file
    memory = open_memory(ctx)
    options = {
        "scope": scope_from(scope_kwargs, memory),
        "include_redacted": include_redacted,
        "format": format_,
    }
    with progress_bars(ctx) as progress:
        if output and output != "-":
            report = memory.export(output, progress=progress, **options)
            notice(f"{describe(report)} Bundle written to {output}.", note=True)
        else:
            report = memory.export(sys.stdout.buffer, progress=progress, **options)
    if report.problems:
        n = len(report.problems)
        notice(
            f"Warning: {n} entity file{'s' if n != 1 else ''} could not be read and "
            f"{'were' if n != 1 else 'was'} left out of the bundle:"
        )
        for problem in report.problems:
            notice(f"  {problem.path}: {problem.reason}")


@click.command("import")
@click.argument("source", metavar="FILE|-", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--on-conflict",
    type=click.Choice(["keep", "theirs", "fail"]),
    default="keep",
    show_default=True,
    help="When an entity differs from the local copy and cannot merge: keep the local copy, "
    "take the bundle's values, or stop before writing anything.",
)
@click.option("--dry-run", is_flag=True, help="Print the report, write nothing.")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="List every problem of an invalid bundle (by default: the first, and how many).",
)
@progress_options
@json_option
@click.pass_context
def import_cmd(ctx, source, on_conflict, dry_run, verbose, json_) -> None:
    """Import a bundle from FILE or stdin (-): all checked first, forgotten stays forgotten.

    FILE may be gzip-compressed. Nothing is written unless the whole bundle is valid.

    \b
    Example:
      kindling import teammate.json --dry-run
      gunzip -c memory.json.gz | kindling import - --json
    """
    from kindling.bundle.format import read_source
    from kindling.bundle.importer import ImportInterrupted, ImportReport

    stopped = None
    with open_memory(ctx) as memory, progress_bars(ctx, json_=json_) as progress:
        try:
            report = memory.import_bundle(
                read_source(source), on_conflict=on_conflict, dry_run=dry_run, progress=progress
            )
        except ImportInterrupted as exc:
            stopped = exc
            report = ImportReport.interrupted(exc, on_conflict=on_conflict)
        except ValidationError as exc:
            _invalid(ctx, exc, json_=json_, verbose=verbose)
    if json_:
        echo_json(report.as_json())
    else:
        echo("\n".join(report.lines()))
    if stopped is not None:
        raise stopped


def _invalid(ctx: click.Context, exc: ValidationError, *, json_: bool, verbose: bool) -> None:
    """An invalid bundle: one line, or every problem with -v (as JSON with --json); exit 1."""
    head, problems = split_problems(str(exc))
    if json_:
        echo_json({"imported": False, "error": head, "problems": problems})
        ctx.exit(1)
    if verbose or len(problems) <= 1:
        raise click.ClickException(safe_text(str(exc) if verbose else _joined(head, problems)))
    first = problems[0]
    more = len(problems) - 1
    raise click.ClickException(
        safe_text(f"{head}: {first}; and {more} more (every one: -v or --json)")
    )


def _joined(head: str, problems: list[str]) -> str:
    return f"{head}: {problems[0]}" if problems else head


def split_problems(message: str) -> tuple[str, list[str]]:
    """A validation message's first line and the problems listed on the lines after it."""
    head, *rest = message.split("\n")
    return head.rstrip().rstrip(":"), [line.strip() for line in rest if line.strip()]
