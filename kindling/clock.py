"""The one clock: epoch milliseconds, fixed by KINDLING_NOW so results can be reproduced."""

from __future__ import annotations

import os
import time

from kindling.errors import KindlingError


def now_ms() -> int:
    """The current time in epoch milliseconds, or $KINDLING_NOW when it is set."""
    fixed = os.environ.get("KINDLING_NOW")
    if fixed:
        try:
            value = int(fixed)
        except ValueError:
            raise KindlingError(
                f"KINDLING_NOW must be epoch milliseconds (an integer), got {fixed!r}"
            ) from None
        if value < 0:
            raise KindlingError("KINDLING_NOW must not be negative")
        return value
    return time.time_ns() // 1_000_000
