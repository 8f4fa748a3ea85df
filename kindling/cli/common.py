"""Options and helpers shared by the command modules."""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

from kindling import canonical
from kindling.model import MAX_COUNT, MAX_TIMESTAMP_MS, OBSERVATION_KINDS, SCOPE_NAMES

# Option types that keep numbers within what the store and the index can hold.
TIMESTAMP = click.IntRange(0, MAX_TIMESTAMP_MS)
COUNT = click.IntRange(0, MAX_COUNT)
POSITIVE_COUNT = click.IntRange(1, MAX_COUNT)
DURATION_MS = click.IntRange(1, MAX_TIMESTAMP_MS)


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


def open_memory(ctx: click.Context, *, autowatch: bool = False):
    """The store of this command line; `autowatch` for the commands that read on an agent's
    behalf again and again (search), where a background watcher pays off."""
    from kindling.memory import Memory

    return Memory(ctx.find_root().obj["store"], autowatch=autowatch)


def echo_json(value: Any) -> None:
    """Print a value as indented JSON (entities exactly as stored)."""
    sys.stdout.buffer.write(canonical.encode(value))
    sys.stdout.flush()


@contextlib.contextmanager
def progress_bars() -> Iterator[Callable[[str, int], Callable[[int], object]] | None]:
    """A `progress(label, total) -> step` for long work: bars on stderr when it is a terminal.

    Yields None when stderr is not a terminal, so pipes and logs get nothing extra.
    """
    if not sys.stderr.isatty():
        yield None
        return
    bars: list = []

    def start(label: str, total: int):
        if bars:
            bars.pop().__exit__(None, None, None)
        bar = click.progressbar(length=total, label=label.ljust(12), file=sys.stderr)
        bars.append(bar)
        return bar.__enter__().update

    try:
        yield start
    finally:
        if bars:
            bars.pop().__exit__(None, None, None)


def notice(message: str) -> None:
    """A line for people on stderr, control characters escaped."""
    from kindling.terminal import safe_text

    click.echo(safe_text(message), err=True)
