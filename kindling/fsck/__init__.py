"""`kindling fsck`: check every file under objects/ (and the index) and repair what is safe.

Safe repairs only: re-encode a valid but non-canonical file, move a valid file to where its id
says it lives, rebuild the index (scrubbing what it held of forgotten text), remove temp files
no live writer can own. A file that does not parse is never rewritten, moved or deleted: a
person decides what it should say.
"""

from __future__ import annotations

import time

from kindling.fileio import is_temp_name
from kindling.fsck.files import STALE_TEMP_SECONDS, FileChecker
from kindling.fsck.index_check import index_problems
from kindling.fsck.report import CHECKS, FIXABLE, Finding, FsckReport
from kindling.fsck.retention_check import retention_problems
from kindling.progress import ProgressFactory
from kindling.store import Store

__all__ = [
    "CHECKS",
    "FIXABLE",
    "STALE_TEMP_SECONDS",
    "Finding",
    "FsckReport",
    "fsck",
    "index_problems",
    "is_temp_name",
]


def fsck(
    store: Store,
    *,
    fix: bool = False,
    check_index: bool = True,
    now: float | None = None,
    progress: ProgressFactory | None = None,
) -> FsckReport:
    """Check the whole store; with `fix`, make the safe repairs and record each one.

    `progress(label, total)`, when given, hears the files walk (per fan-out folder) and the
    index check.
    """
    started = time.time() if now is None else now
    checker = FileChecker(store, fix=fix, now=started, progress=progress)
    checker.walk()
    checker.walk_outside_objects()
    checker.cross_checks()
    checker.report.problems.extend(retention_problems(store))
    if check_index:
        step = progress("Checking index", 1) if progress else None
        checker.report.problems.extend(index_problems(store, fix=fix))
        if step is not None:
            step(1)
    order = {name: i for i, name in enumerate(CHECKS)}
    checker.report.problems.sort(key=lambda p: (order.get(p.check, 99), p.path))
    return checker.report
