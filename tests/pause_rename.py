"""Run Python code with every atomic write paused just before its rename, to be killed there.

    python tests/pause_rename.py ANNOUNCE -c CODE ARGS...
    python tests/pause_rename.py ANNOUNCE -m MODULE ARGS...

The first temp file about to be renamed into place is written to the file ANNOUNCE, then the
process sleeps until it is killed: a crash at the worst moment, on demand, with nothing in
Kindling itself to arrange it.
"""

from __future__ import annotations

import os
import runpy
import sys
import time

_real_replace = os.replace


def _paused_replace(src, dst, *args, **kwargs):
    if os.fspath(src).endswith(".tmp"):
        with open(ANNOUNCE, "w") as fh:
            fh.write(os.fspath(src))
        time.sleep(3600)
    return _real_replace(src, dst, *args, **kwargs)


if __name__ == "__main__":
    ANNOUNCE, how, what, *rest = sys.argv[1:]
    os.replace = _paused_replace
    if how == "-c":
        sys.argv = ["-c", *rest]
        exec(compile(what, "<pause_rename>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = [what, *rest]
        runpy.run_module(what, run_name="__main__", alter_sys=True)
