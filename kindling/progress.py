"""How long-running work reports itself (a bar on a terminal, nothing elsewhere)."""

from __future__ import annotations

from collections.abc import Callable

# step(n): n more units of work are done.
Step = Callable[[int], object]
# progress(label, total) -> the step function for that piece of work.
ProgressFactory = Callable[[str, int], Step]
