"""How long-running work reports itself: a line per stage on a terminal, nothing elsewhere.

Library functions take an optional `progress(label, total) -> step` (a ProgressFactory) and
call `step(n)` as work gets done; they never draw anything themselves. `Bars` is the one
drawer the command line uses.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

# step(n): n more units of work are done.
Step = Callable[[int], object]
# progress(label, total) -> the step function for that piece of work.
ProgressFactory = Callable[[str, int], Step]

WIDTH = 24  # characters of the bar itself
REDRAW_S = 0.1  # a terminal is redrawn at most this often (the last state always shows)


def stage(progress: ProgressFactory | None, label: str, total: int) -> Step | None:
    """`progress(label, total)`, or None when nobody listens (so callers skip the calls)."""
    return progress(label, total) if progress is not None else None


class Bars:
    """A ProgressFactory drawing `label [#####.....]  n/total  pct%` on a stream.

    On a terminal the line is redrawn in place (at most every REDRAW_S); elsewhere (a pipe or
    a log, when progress was asked for) each stage is one line once it is done. `close()`
    ends the last stage.
    """

    def __init__(self, stream: TextIO, *, terminal: bool, clock=time.monotonic) -> None:
        self.stream, self.terminal, self.clock = stream, terminal, clock
        self.label, self.total, self.done = "", 0, 0
        self.active = False
        self.drawn_at = float("-inf")

    def __call__(self, label: str, total: int) -> Step:
        self.close()
        self.label, self.total, self.done = label, max(0, int(total)), 0
        self.active = True
        self.drawn_at = float("-inf")
        self._draw(force=True)
        return self.step

    def step(self, n: int = 1) -> None:
        """`n` more units of the current stage are done."""
        if not self.active:
            return
        self.done = min(self.done + n, self.total) if self.total else self.done + n
        self._draw(force=False)

    def close(self) -> None:
        """Finish the current stage: its final state, then a new line."""
        if not self.active:
            return
        self.active = False
        if self.terminal:
            self._draw(force=True)
            self.stream.write("\n")
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def line(self) -> str:
        """The current stage as one line of text."""
        if self.total <= 0:
            return f"{self.label:<14} {self.done}"
        fraction = min(1.0, self.done / self.total)
        filled = int(fraction * WIDTH)
        bar = "#" * filled + "." * (WIDTH - filled)
        return f"{self.label:<14} [{bar}] {self.done}/{self.total} {int(fraction * 100):3d}%"

    def _draw(self, *, force: bool) -> None:
        if not self.terminal:
            return
        now = self.clock()
        if not force and now - self.drawn_at < REDRAW_S and self.done < self.total:
            return
        self.drawn_at = now
        # \r and erase-line: the same line, redrawn in place.
        self.stream.write("\r\x1b[K" + self.line())
        self.stream.flush()
