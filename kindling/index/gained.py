"""A fan-out folder that only gained files since its last walk, as after a pull or a checkout:
found without comparing every file's stat data with the index's."""

from __future__ import annotations

import os
import sqlite3

from kindling.index.scan import FINGERPRINT_MASK


def only_added(
    conn: sqlite3.Connection,
    rel_folder: str,
    items: list[tuple[str, os.stat_result]],
    fingerprint: int,
    recorded: tuple[int, int],
) -> list[tuple[str, os.stat_result]] | None:
    """The files of a walked folder the index has no row for, when those are its only change;
    None when anything else may have changed (then every file is compared).

    `items` and `fingerprint` are the walk's (kindling.index.scan.scan_folder), `recorded`
    the folder's (count, fingerprint) from the last walk. The names the index holds are listed
    (no stat keys); if every one is still there and the files that are not account for the
    whole change of the fingerprint, the others are unchanged, as the fingerprint test of an
    untouched folder judges them.
    """
    known = {
        row[0]
        for row in conn.execute(
            "SELECT substr(path, ?) FROM files WHERE path > ? AND path < ?",
            (len(rel_folder) + 2, rel_folder + "/", rel_folder + "0"),  # '0' sorts after '/'
        )
    }
    if len(known) != recorded[0]:
        return None
    added = [(name, st) for name, st in items if name not in known]
    if len(items) - len(added) != recorded[0]:
        return None  # a recorded file is gone
    gained = sum(hash((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)) for _, st in added)
    if (fingerprint - gained) & FINGERPRINT_MASK != recorded[1]:
        return None  # a recorded file changed too
    return added
