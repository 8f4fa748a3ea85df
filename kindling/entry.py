"""The console scripts: `kindling` and `kindling-hook`.

Claude Code waits for `kindling hook EVENT` on every tool call and prompt, and that command
takes no options of its own, so it goes straight to the hook runner without loading the
click command line (about a third of a hook's start-up). Every other form, `--help`
included, is the click command line (kindling.cli), which gives the same result for a hook.
"""

from __future__ import annotations

import os
import sys


def _env_store() -> str | None:
    from kindling.settings import store_from

    return store_from(os.environ)


def _fast_hook(args: list[str]) -> tuple[str, str | None] | None:
    """(EVENT, --store) when `args` is exactly `[--store PATH] hook EVENT`, else None."""
    store = _env_store()
    if len(args) == 4 and args[0] == "--store":
        store, args = args[1], args[2:]
    elif len(args) == 3 and args[0].startswith("--store="):
        store, args = args[0].removeprefix("--store="), args[1:]
    if len(args) != 2 or args[0] != "hook" or args[1].startswith("-"):
        return None
    return args[1], store


def main() -> None:
    """`kindling ...`."""
    hook = _fast_hook(sys.argv[1:])
    if hook is not None:
        from kindling.agents.hook_command import run_hook_command

        run_hook_command(*hook)
        return
    from kindling.cli import main as cli_main

    cli_main()


def hook_main() -> None:
    """`kindling-hook EVENT`: `kindling hook EVENT` under the original Kindling's name."""
    args = sys.argv[1:]
    if len(args) == 1 and not args[0].startswith("-"):
        from kindling.agents.hook_command import run_hook_command

        run_hook_command(args[0], _env_store())
        return
    from kindling.cli.agents import hook_cmd

    hook_cmd.main(args, prog_name="kindling-hook", obj={"store": _env_store()})
