"""Long work reports progress: bars on a terminal, nothing extra in a pipe."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from conftest import run_kindling

from kindling.cli.common import progress_bars


class Recorder:
    def __init__(self):
        self.stages: dict[str, list[int]] = {}

    def __call__(self, label: str, total: int):
        steps = self.stages.setdefault(label, [total, 0])
        return lambda n: steps.__setitem__(1, steps[1] + n)


def fill(memory, n=5):
    for i in range(n):
        memory.log(f"entry {i}", ts=i)


def test_rebuild_reports_every_folder(memory):
    fill(memory)
    recorder = Recorder()
    report = memory.reindex(full=True, progress=recorder)
    assert report.added + report.unchanged == 5
    total, done = recorder.stages["Indexing"]
    assert total == done and total >= 1


def test_export_reports_every_entity(memory):
    fill(memory, 7)
    recorder = Recorder()
    memory.export(io.BytesIO(), progress=recorder)
    assert recorder.stages["Exporting observations"] == [7, 7]
    assert recorder.stages["Exporting pins"] == [0, 0]


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_bars_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_bars() as progress:
        assert progress is None
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_bars() as progress:
        step = progress("Indexing", 4)
        for _ in range(4):
            step(1)
        progress("Writing", 2)(2)
    shown = terminal.getvalue()
    assert "Indexing" in shown and "Writing" in shown and "100%" in shown


def stderr_of(store_dir, *args: str, terminal: bool) -> str:
    """A real `kindling` process's stderr, attached to a pseudo-terminal or to a pipe."""
    if not terminal:
        result = run_kindling("--store", str(store_dir), *args)
        assert result.returncode == 0, result.stderr
        return result.stderr.decode()
    leader, follower = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kindling", "--store", str(store_dir), *args],
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode(errors="replace")


def test_pipes_get_nothing_extra(memory, store_dir):
    fill(memory)
    # The same commands show bars on a terminal, so the empty pipe is the progress logic's doing.
    assert "Indexing" in stderr_of(store_dir, "reindex", "--full", terminal=True)
    assert stderr_of(store_dir, "reindex", "--full", terminal=False) == ""
    assert "Exporting observations" in stderr_of(store_dir, "export", terminal=True)
    assert stderr_of(store_dir, "export", terminal=False) == ""
