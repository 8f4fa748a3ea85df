"""The `kindling` command line: a thin click layer over kindling.Memory.

Commands live in small modules and are imported only when run, so `kindling log` and
`kindling search` pay for nothing they do not use.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import sys

import click
import orjson

from kindling import DISTRIBUTION, __version__
from kindling.cli.when import utc_option
from kindling.errors import KindlingError

# command name -> "module:attribute" under kindling.cli
COMMANDS = {
    "init": "capture:init_cmd",
    "log": "capture:log_cmd",
    "capsule": "capture:capsule_group",
    "pin": "capture:pin_cmd",
    "unpin": "capture:unpin_cmd",
    "forget": "capture:forget_cmd",
    "show": "read:show_cmd",
    "list": "read:list_cmd",
    "status": "read:status_cmd",
    "search": "search:search_cmd",
    "reindex": "search:reindex_cmd",
    "export": "bundle:export_cmd",
    "import": "bundle:import_cmd",
    "fsck": "git:fsck_cmd",
    "gc": "gc:gc_cmd",
    "merge-driver": "git:merge_driver_cmd",
    "resolve": "git:resolve_cmd",
    "git-setup": "git:git_setup_cmd",
    "demo": "agents:demo_cmd",
    "browse": "agents:browse_cmd",
    "mcp": "agents:mcp_cmd",
    "hook": "agents:hook_cmd",
    "summarize": "agents:summarize_cmd",
    "watch": "watch:watch_cmd",
    "mask": "mask:mask_cmd",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        module = importlib.import_module(f"kindling.cli.{module_name}")
        return getattr(module, attr)

    def invoke(self, ctx: click.Context):
        # The one place library errors become `Error: <message>` and exit 1.
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader went away (`kindling list ... | head`): stop quietly, as cat does.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(1)
        except (KindlingError, orjson.JSONDecodeError, sqlite3.Error, OSError) as exc:
            from kindling.terminal import safe_text

            # Messages quote paths and stored text: shown inert, like all human output.
            raise click.ClickException(safe_text(_message(exc))) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            if os.environ.get("KINDLING_DEBUG"):
                raise
            from kindling.terminal import safe_text

            # A bug, or an index row no check foresaw: one line, never a traceback.
            raise click.ClickException(safe_text(_unexpected(exc))) from None


def _unexpected(exc: Exception) -> str:
    detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return (
        f"unexpected {detail} (a bug in Kindling, or a damaged index: `kindling reindex "
        "--full` rebuilds it from the files; KINDLING_DEBUG=1 shows the traceback)"
    )


def _message(exc: Exception) -> str:
    if isinstance(exc, KindlingError):
        return str(exc)
    if isinstance(exc, orjson.JSONDecodeError):
        # Only index rows reach here undecoded (input is checked where it enters).
        return (
            f"the index holds a damaged row ({exc}); `kindling reindex --full` rebuilds it "
            "from the files"
        )
    if isinstance(exc, sqlite3.Error):
        return f"the index failed ({exc}); `kindling reindex --full` rebuilds it from the files"
    where = f" ({exc.filename})" if exc.filename else ""  # an OSError
    return f"{exc.strerror or exc}{where}"


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    "store",
    metavar="PATH",
    help="The store, or any folder inside the work tree holding it, as `git -C` takes "
    "(default: the nearest .kindling/ upwards; env KINDLING_STORE, read the same way).",
)
@utc_option
@click.version_option(
    __version__,
    "-V",
    "--version",
    package_name=DISTRIBUTION,
    message="%(package)s %(version)s",
)
@click.pass_context
def cli(ctx: click.Context, store: str | None) -> None:
    """Kindling: local, git-committable memory for AI coding agents.

    \b
    Example:
      kindling init && kindling log "JWT expiry bug found" --kind error --session s1
      kindling search "JWT expiry"
    """
    ctx.ensure_object(dict)["store"] = store


def main() -> None:
    cli(prog_name="kindling")
