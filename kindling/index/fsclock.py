"""The filesystem's own clock, for the racy rule.

Recorded stat data proves a file unchanged only if any later change must give it other stat
data. A change made within the same tick of the filesystem's clock as the recorded one may
leave mtime and ctime as they were, so stat data that recent is not trusted ("racy") and the
next sync reads the file again. Git judges this against its index file's mtime, a moment the
same filesystem has seen pass; Kindling does the same with a small file it touches before
each walk (`clock` in the store's state folder, kindling.statedir): stat times strictly older
than that file's new mtime belong to a tick that is over, so the bound is one tick
(nanoseconds to a few milliseconds) instead of a margin on the system clock. Where the file
cannot be touched, or it is not on the filesystem that holds objects/ (a store outside git
keeps its state in the user's cache), the system clock less `RACY_NS` is used, which allows
for the coarsest timestamps in use (FAT keeps 2 seconds).
"""

from __future__ import annotations

import os
import time

from kindling.index.schema import RACY_NS

CLOCK_NAME = "clock"
_CAN_NOFOLLOW = os.utime in os.supports_follow_symlinks


def racy_from(clock: str, objects: str) -> int:
    """The time at or after which a stat time is too recent to trust (epoch ns).

    Taken before the stats it judges: an older bound only makes more files racy.
    """
    try:
        try:
            os.utime(clock, follow_symlinks=not _CAN_NOFOLLOW)
        except FileNotFoundError:
            # Created in a state folder that exists; never a folder of its own (the store's
            # state may be gone with its clone).
            fd = os.open(clock, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            os.close(fd)
        st = os.lstat(clock)
        if st.st_dev == os.lstat(objects).st_dev:
            return st.st_mtime_ns
    except OSError:
        pass  # no state folder (yet): the system clock serves
    return time.time_ns() - RACY_NS
