"""Options and helpers shared by the command modules."""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterator
from typing import Any

import click

from kindling import canonical
from kindling.errors import KindlingError
from kindling.model import MAX_CONTENT_BYTES, MAX_COUNT, OBSERVATION_KINDS, SCOPE_NAMES
from kindling.progress import ProgressFactory


# Option types that keep numbers within what the store and the index can hold.
class Count(click.ParamType):
    """A bounded whole number whose help shows no `[0<=x<=2147483647]` (the bound is for the
    store's sake; an error names it when a value passes it)."""

    name = "count"

    def __init__(self, least: int, most: int) -> None:
        self.range = click.IntRange(least, most)

    def convert(self, value, param, ctx):
        return self.range.convert(value, param, ctx)


COUNT = Count(0, MAX_COUNT)
POSITIVE_COUNT = Count(1, MAX_COUNT)


class FiniteFloatRange(click.FloatRange):
    """A FloatRange that also refuses NaN (which compares false with every bound)."""

    name = "float range"

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


# option name -> scopeIds key
SCOPE_OPTIONS = {name: key for key, name in SCOPE_NAMES.items()}


def scope_options(func):
    """The five scope options, the same everywhere they appear."""
    for name in reversed(SCOPE_OPTIONS):
        func = click.option(f"--{name}", name, metavar="ID", help=f"Scope: {SCOPE_OPTIONS[name]}.")(
            func
        )
    return func


def kind_option(func):
    """--kind, repeatable: only observations of these kinds."""
    return click.option(
        "--kind",
        "kinds",
        multiple=True,
        type=click.Choice(OBSERVATION_KINDS),
        help="Only observations of this kind (repeatable).",
    )(func)


def json_option(func):
    return click.option("json_", "--json", is_flag=True, help="Print JSON instead of text.")(func)


def normalize_repo(value: str) -> str:
    """A --repo value written as a path (`.`, `./x`, `/x`, `~/x`) becomes that directory's name.

    Anything else is a stored repoId, taken verbatim (`github.com/acme/api` included).
    """
    if value in (".", "..") or value.startswith(("./", "../", "/", "~", os.sep, "." + os.sep)):
        path = os.path.abspath(os.path.expanduser(value))
        name = os.path.basename(path.rstrip(os.sep))
        return name or value
    return value


def scope_from(kwargs: dict[str, Any], memory=None) -> dict[str, str]:
    """Take the scope options out of a command's kwargs as a scopeIds dict.

    For a filter over `memory`, a path-like --repo that entities carry verbatim (the original
    Kindling records the absolute working directory) selects that id as given.
    """
    scope = {}
    for name, key in SCOPE_OPTIONS.items():
        value = kwargs.pop(name, None)
        if value is None:
            continue
        if name == "repo" and not (memory is not None and _carried(memory, value)):
            value = normalize_repo(value)
        scope[key] = value
    return scope


def _carried(memory, repo: str) -> bool:
    """True when `repo` differs from its rewrite and some entity carries it as its repoId."""
    if normalize_repo(repo) == repo:
        return False
    return memory.scope_in_use({"repoId": repo})


def store_path(ctx: click.Context) -> str | None:
    """The store this command line names: --store or KINDLING_STORE, each either the store
    or a folder inside the work tree holding it (as `git -C`); None: look from here up."""
    from kindling.settings import Settings, find_store

    given = (ctx.find_root().obj or {}).get("store")
    if given is not None:
        return find_store(given)
    return Settings.from_environ().store


def store_given(ctx: click.Context) -> str | None:
    """--store or KINDLING_STORE exactly as written (for `init`, which creates what it names)."""
    from kindling.settings import store_from

    given = (ctx.find_root().obj or {}).get("store")
    return given if given is not None else store_from(os.environ)


def open_memory(ctx: click.Context, *, autowatch: bool = False):
    """The store of this command line; `autowatch` for the commands that read on an agent's
    behalf again and again (search), where a background watcher pays off."""
    from kindling.memory import Memory

    return Memory(store_path(ctx), autowatch=autowatch)


def echo_json(value: Any) -> None:
    """Print a value as indented JSON (entities exactly as stored)."""
    sys.stdout.buffer.write(canonical.encode(value))
    sys.stdout.flush()


def progress_options(func):
    """--progress/--no-progress and -q/--quiet for commands whose work can take a while."""
    func = click.option(
        "-q",
        "--quiet",
        is_flag=True,
        expose_value=False,
        callback=_remember,
        help="No progress and no notes on stderr (errors and warnings still show).",
    )(func)
    return click.option(
        "--progress/--no-progress",
        default=None,
        expose_value=False,
        callback=_remember,
        help="Show progress on stderr (default: only when stderr is a terminal; never with "
        "--json).",
    )(func)


def _remember(ctx: click.Context, param: click.Parameter, value: object) -> None:
    ctx.ensure_object(dict)[param.name] = value


def quiet(ctx: click.Context | None = None) -> bool:
    """True when this command was given -q/--quiet."""
    ctx = ctx or click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.obj and ctx.obj.get("quiet"))


@contextlib.contextmanager
def progress_bars(
    ctx: click.Context | None = None, *, json_: bool = False
) -> Iterator[ProgressFactory | None]:
    """A `progress(label, total) -> step` for long work, drawn on stderr, or None.

    Drawn when --progress says so, else only when stderr is a terminal; never with --json
    (a program is reading) or -q. None lets the library skip the calls altogether.
    """
    from kindling.progress import Bars

    ctx = ctx or click.get_current_context(silent=True)
    asked = ctx.obj.get("progress") if ctx is not None and ctx.obj else None
    terminal = sys.stderr.isatty()
    if json_ or quiet(ctx) or asked is False or (asked is None and not terminal):
        yield None
        return
    bars = Bars(sys.stderr, terminal=terminal)
    try:
        yield bars
    finally:
        bars.close()


def read_text(value: str, *, what: str = "text", strip_newline: bool = True) -> str:
    """`value`, or stdin's text when it is `-` (once per command: stdin is read only once).

    A single trailing newline is dropped (`echo word | ...` means `word`) unless
    `strip_newline` is false; stdin is bounded by the content limit and must be UTF-8.
    """
    from kindling.agents.intake import keep_text

    if value != "-":
        return keep_text(value)  # argv bytes that are not UTF-8 arrive as lone surrogates
    ctx = click.get_current_context(silent=True)
    state = ctx.ensure_object(dict) if ctx is not None else {}
    if state.get("stdin_read"):
        raise click.UsageError(
            f"stdin is already read by {state['stdin_read']}; only one value may be -"
        )
    state["stdin_read"] = what
    # Read one byte past the limit so an oversized input is refused without holding it all.
    data = sys.stdin.buffer.read(MAX_CONTENT_BYTES + 1)
    if len(data) > MAX_CONTENT_BYTES:
        raise KindlingError(
            f"stdin ({what}) is over the {MAX_CONTENT_BYTES:,}-byte (16 MiB) content limit"
        )
    try:
        text = keep_text(data.decode("utf-8"))  # <private> sections out, as for argv
    except UnicodeDecodeError:
        raise KindlingError(f"stdin ({what}) is not valid UTF-8 text") from None
    if strip_newline:
        text = text.removesuffix("\n").removesuffix("\r")
    return text


def read_option(value: str | None, what: str) -> str | None:
    """An optional text option that may be `-` for stdin (see read_text)."""
    return None if value is None else read_text(value, what=what)


def notice(message: str, *, note: bool = False) -> None:
    """A line for people on stderr, control characters escaped; a `note` is left out by -q."""
    from kindling.terminal import safe_text

    if note and quiet():
        return
    click.echo(safe_text(message), err=True)
