"""The one clock: epoch milliseconds, fixed by KINDLING_NOW so results can be reproduced."""

from __future__ import annotations

import datetime as dt
import os
import time

from kindling.errors import KindlingError
from kindling.model import MAX_TIMESTAMP_MS


def now_ms() -> int:
    """The current time in epoch milliseconds, or $KINDLING_NOW when it is set."""
    fixed = os.environ.get("KINDLING_NOW")
    if fixed:
        try:
            value = int(fixed)
        except ValueError:  # also a string too long to be a number (int()'s digit limit)
            raise KindlingError(
                f"KINDLING_NOW must be epoch milliseconds (an integer), got {fixed[:40]!r}"
            ) from None
        if not 0 <= value <= MAX_TIMESTAMP_MS:
            raise KindlingError(
                f"KINDLING_NOW must be epoch milliseconds from 0 to {MAX_TIMESTAMP_MS} "
                f"(up to year 9999), got {fixed[:40]!r}"
            )
        return value
    return time.time_ns() // 1_000_000


def format_utc(ms: object, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    """Epoch milliseconds as UTC text in `fmt`; never raises (out-of-range shows the number)."""
    try:
        moment = dt.datetime.fromtimestamp(ms // 1000, tz=dt.timezone.utc)  # type: ignore[operator]
        return moment.strftime(fmt)
    except (OverflowError, OSError, ValueError, TypeError):
        # A value no calendar date can show (a file that slipped past validation).
        return f"{ms!r}"[:40] + " ms"
