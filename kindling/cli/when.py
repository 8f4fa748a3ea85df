"""Click types for times and durations as people write them, and the `--utc` choice."""

from __future__ import annotations

import math
import re

import click

from kindling.errors import KindlingError
from kindling.model import MAX_TIMESTAMP_MS as MAX_MS
from kindling.when import parse_duration, parse_instant


class Instant(click.ParamType):
    """A point in time: `7d` (7 days ago), `yesterday`, `2026-01-31`, ISO 8601, epoch ms."""

    name = "time"

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        from kindling.clock import now_ms

        try:
            return parse_instant(value, now_ms())
        except KindlingError as exc:  # also an unreadable KINDLING_NOW
            self.fail(str(exc), param, ctx)


class Duration(click.ParamType):
    """A span of time: `7d`, `36h`, `90m`, `2w`, `1d 12h`, or a bare number in `unit`.

    Converts to milliseconds, or to seconds (a float) with `seconds=True`; bounded to
    [least, most] milliseconds.
    """

    name = "duration"

    def __init__(
        self, *, unit: str = "ms", least: int = 1, most: int = MAX_MS, seconds: bool = False
    ) -> None:
        self.unit, self.least, self.most, self.seconds = unit, least, most, seconds

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        ms = self._ms(value, param, ctx)
        if not self.least <= ms <= self.most:
            low, high = format_duration(self.least), format_duration(self.most)
            self.fail(f"{value!r} is not between {low} and {high}", param, ctx)
        return ms / 1000 if self.seconds else ms

    def _ms(self, value: str, param, ctx) -> int:
        text = value.strip()
        if _NUMBER.fullmatch(text):  # a bare number counts in this option's own unit
            ms = float(text) * (1 if self.unit == "ms" else 1000)
            return round(ms) if math.isfinite(ms) else MAX_MS + 1
        try:
            return parse_duration(text)
        except KindlingError as exc:
            self.fail(str(exc), param, ctx)


def format_duration(ms: int) -> str:
    """The largest whole unit that says `ms`: `7d`, `90m`, `1500ms`."""
    for unit, size in (("w", 604_800_000), ("d", 86_400_000), ("h", 3_600_000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    for unit, size in (("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


INSTANT = Instant()
DURATION = Duration()
_NUMBER = re.compile(r"\d{1,18}(?:\.\d{1,9})?")
TIME_HELP = "7d, 36h, '2 weeks ago', yesterday, 2026-01-31, 2026-01-31T14:30+01:00 or epoch ms"


def use_utc(ctx: click.Context | None = None) -> bool:
    """True when this command line asked for times in UTC (`--utc`)."""
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None:
        return False
    obj = ctx.find_root().obj
    return bool(obj and obj.get("utc"))


def _set_utc(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        root = ctx.find_root()
        if root.obj is None:
            root.obj = {}
        root.obj["utc"] = True


def utc_option(func):
    """--utc: print times in UTC rather than local time (JSON always holds epoch ms)."""
    return click.option(
        "--utc",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_set_utc,
        help="Print times in UTC instead of local time (JSON keeps epoch ms).",
    )(func)
