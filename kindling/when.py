"""Times and durations as people write them: `7d`, `36h`, `2 weeks ago`, `yesterday`, ISO 8601.

`parse_instant` reads a point in time (a bare duration means that long ago), `parse_duration`
a span; both return milliseconds and accept plain epoch milliseconds as before. A date or
date-time without an offset is local time (the TZ environment variable applies), as `date`
and git read one. `format_instant` shows epoch milliseconds as local time with its offset.
"""

from __future__ import annotations

import datetime as dt
import re

from kindling.errors import KindlingError
from kindling.model import MAX_TIMESTAMP_MS as MAX_MS

MAX_TEXT = 64  # longer text is no time anyone writes

_MS = {
    "ms": 1,
    "s": 1_000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 7 * 86_400_000,
}
# Every spelling of a unit -> its key in _MS ("m" is minutes, as in `90m`; months are not
# offered: their length varies, and a date says what is meant).
_UNITS = {
    **{name: "ms" for name in ("ms", "msec", "msecs", "millisecond", "milliseconds")},
    **{name: "s" for name in ("s", "sec", "secs", "second", "seconds")},
    **{name: "m" for name in ("m", "min", "mins", "minute", "minutes")},
    **{name: "h" for name in ("h", "hr", "hrs", "hour", "hours")},
    **{name: "d" for name in ("d", "day", "days")},
    **{name: "w" for name in ("w", "wk", "wks", "week", "weeks")},
}
_PART = re.compile(r"\s*(\d{1,12})\s*([a-z]+)\s*")
_SPAN = re.compile(r"(?:\d{1,12} ?[a-z]+ ?)+")
_DIGITS = re.compile(r"\d{1,16}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}$")
_OFFSET_Z = re.compile(r"[zZ]$")
FORMS = "7d, 36h, 90m, 2w, '2 weeks ago', yesterday, today, 2026-01-31, 2026-01-31T14:30[+01:00]"
DURATION_FORMS = "7d, 36h, 90m, 2w, '1d 12h', '2 weeks' or milliseconds"


class TimeError(KindlingError, ValueError):
    """Text that names no time (or no duration); the message says what would."""


def parse_duration(text: str) -> int:
    """Milliseconds in `7d`, `36h`, `1h30m`, `2 weeks`, or a bare number of milliseconds."""
    words = _clean(text)
    if _DIGITS.fullmatch(words):
        return _bounded(int(words), text)
    total, at = 0, 0
    while at < len(words):
        part = _PART.match(words, at)
        if part is None or part[2] not in _UNITS:
            raise TimeError(f"{_shown(text)} is not a duration (try {DURATION_FORMS})")
        total += int(part[1]) * _MS[_UNITS[part[2]]]
        at = part.end()
    if not words:
        raise TimeError(f"an empty duration (try {DURATION_FORMS})")
    return _bounded(total, text)


def parse_instant(text: str, now_ms: int) -> int:
    """Epoch milliseconds for a point in time written any of the ways FORMS lists."""
    words = _clean(text)
    if _DIGITS.fullmatch(words):
        return _bounded(int(words), text)
    if words == "now":
        return now_ms
    if words in ("today", "yesterday"):
        midnight = _local_midnight(now_ms)
        return midnight if words == "today" else _local_midnight(midnight - 1)
    span = words[:-4] if words.endswith(" ago") else words
    if _SPAN.fullmatch(span):  # `7d`, `2 weeks`, `36h ago`: that long before now
        try:
            back = parse_duration(span)
        except TimeError:
            raise TimeError(f"{_shown(text)} is not a time (try {FORMS})") from None
        if back > now_ms:
            raise TimeError(f"{_shown(text)} is before 1970")
        return now_ms - back
    return _iso(text.strip())


def _iso(text: str) -> int:
    """An ISO 8601 date (local midnight) or date-time (local unless it carries an offset)."""
    value = _OFFSET_Z.sub("+00:00", text)
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise TimeError(f"{_shown(text)} is not a time (try {FORMS})") from None
    if _DATE.match(text) or moment.tzinfo is None:
        moment = _local(moment)
    try:
        return _bounded(round(moment.timestamp() * 1000), text)
    except (OverflowError, OSError, ValueError):
        raise TimeError(f"{_shown(text)} is outside the years 1970 to 9999") from None


def _local(moment: dt.datetime) -> dt.datetime:
    """A naive date-time read as local time (DST as the local zone has it)."""
    try:
        return moment.astimezone()
    except (OverflowError, OSError, ValueError):
        raise TimeError(f"{moment.isoformat()} is outside the years 1970 to 9999") from None


def _local_midnight(ms: int) -> int:
    day = dt.datetime.fromtimestamp(max(ms, 0) / 1000).date()
    midnight = _local(dt.datetime(day.year, day.month, day.day))
    return max(0, round(midnight.timestamp() * 1000))


def format_instant(ms: object, *, utc: bool = False, seconds: bool = True) -> str:
    """Epoch ms as `2026-12-02 10:15:04 +01:00` in local time (or UTC); never raises."""
    fmt = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    try:
        moment = dt.datetime.fromtimestamp(ms // 1000, tz=dt.timezone.utc)  # type: ignore[operator]
        if not utc:
            moment = moment.astimezone()
        offset = moment.strftime("%z") or "+0000"
        return f"{moment.strftime(fmt)} {offset[:3]}:{offset[3:5]}"
    except (OverflowError, OSError, ValueError, TypeError):
        # A value no calendar date can show (a file that slipped past validation).
        return f"{ms!r}"[:40] + " ms"


def _clean(text: str) -> str:
    if len(text) > MAX_TEXT:
        raise TimeError(f"{_shown(text)} is too long to be a time")
    return " ".join(text.lower().split())


def _bounded(ms: int, text: str) -> int:
    if not 0 <= ms <= MAX_MS:
        raise TimeError(f"{_shown(text)} is outside the years 1970 to 9999")
    return ms


def _shown(text: str) -> str:
    return repr(text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…")
