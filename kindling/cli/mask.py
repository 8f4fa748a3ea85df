"""`kindling mask --check`: what a text would be stored as, without storing anything."""

from __future__ import annotations

import sys

import click

from kindling.cli.common import read_text, store_path


@click.command("mask")
@click.option("--check", "check_", is_flag=True, required=True, help="Show what would be stored.")
@click.option("--json", "json_", is_flag=True, help="Print the result as JSON.")
@click.argument("text", required=False)
@click.pass_context
def mask_cmd(ctx: click.Context, check_: bool, json_: bool, text: str | None) -> None:
    """Show what TEXT (or stdin, when TEXT is `-` or absent) would be stored as.

    Nothing is written. The store's .kindling/masking.json patterns, when there is a store,
    apply as they would to a write.

    \b
    Example:
      kindling mask --check 'export DB_PASSWORD=hunter2'
      git diff | kindling mask --check - --json
    """
    from kindling import canonical
    from kindling.errors import KindlingError
    from kindling.masking import custom
    from kindling.masking.check import check
    from kindling.store import locate

    # As `kindling log` takes it: <private> sections out, stdin bounded and UTF-8.
    text = read_text("-" if text is None else text, what="TEXT", strip_newline=False)
    try:
        patterns = custom.load(locate(store_path(ctx)))
    except KindlingError:
        patterns = custom.NONE  # no store here: Kindling's own masking only
    with custom.applied(patterns):
        result = check(text)
    if json_:
        out = {"stored": result.stored, "masked": result.masked, "kinds": result.kinds}
        sys.stdout.buffer.write(canonical.encode(out))
        return
    click.echo(result.stored, nl=not result.stored.endswith("\n"))
    kinds = ", ".join(f"{kind} {n}" for kind, n in result.kinds.items())
    click.echo(f"masked {result.masked} secret(s)" + (f": {kinds}" if kinds else ""), err=True)
