"""When a session capsule left open may be closed, and by whom.

Its owner (the clone that ran the session, kindling.agents.owned) closes it once it has been
idle for STALE_AFTER_MS: if the session was only paused, it goes on in a capsule of its own
that holds the first one's records (kindling.agents.session_capsule). Anyone else waits until
it is abandoned: idle for `abandonAfterHours` of the store's committed config.json (default a
week), so a teammate never closes a session that may still be alive. Both close it as every
clone would (dated at its last activity, its summary's id derived from the capsule's), so
clones that do it alike write the same bytes.
"""

from __future__ import annotations

from kindling import canonical
from kindling.errors import KindlingError
from kindling.fileio import read_regular
from kindling.store import CONFIG_NAME, MAX_CONFIG_BYTES

HOUR_MS = 60 * 60 * 1000
STALE_AFTER_MS = 4 * HOUR_MS  # the owner: four hours without a new observation
CONFIG_KEY = "abandonAfterHours"
# A week: a session paused over a weekend or a few days off is still its owner's to end, and
# the owner's own clone closes what it left at its next session anyway; a teammate's close is
# only for sessions whose clone will not be back (deleted, its owner gone).
DEFAULT_ABANDON_HOURS = 7 * 24
# Never sooner than a day (a paused session is alive overnight), never later than a year (an
# abandoned session must not stay "unfinished" in every start block forever).
MIN_ABANDON_HOURS = 24
MAX_ABANDON_HOURS = 366 * 24


def abandon_after_hours(store) -> int:
    """The store's committed `abandonAfterHours`, bounded; the default when it is not set.

    config.json is committed, so it is hostile input: a value that is not a whole number of
    hours is ignored, one out of bounds is held to the nearest bound.
    """
    try:
        raw = read_regular(store.root / CONFIG_NAME, follow_symlinks=False, limit=MAX_CONFIG_BYTES)
        data = canonical.decode(raw) if raw else {}
    except (OSError, canonical.DecodeError, KindlingError):
        return DEFAULT_ABANDON_HOURS
    value = data.get(CONFIG_KEY) if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        return DEFAULT_ABANDON_HOURS
    return min(max(value, MIN_ABANDON_HOURS), MAX_ABANDON_HOURS)


def idle_limit_ms(store, mine: bool) -> int:
    """How long a capsule must be idle before this clone closes it: its owner's or anyone's."""
    return STALE_AFTER_MS if mine else abandon_after_hours(store) * HOUR_MS
