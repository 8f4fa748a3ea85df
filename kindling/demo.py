"""`kindling demo`: a throwaway copy of the bundled example store, ready to search."""

from __future__ import annotations

import shutil
import tempfile
from importlib import resources
from pathlib import Path

from kindling.errors import KindlingError
from kindling.store import CONFIG_NAME, STORE_DIRNAME

DEMO_QUERY = "token expired"
# Derived or transient files that may sit in a checkout's example store; never copied.
_SKIP = shutil.ignore_patterns("index.sqlite*", "locks", "watch.*", "*.tmp", "__pycache__")


def _example_root(base: Path) -> Path:
    if (base / CONFIG_NAME).is_file() or (base / "objects").is_dir():
        return base
    if (base / STORE_DIRNAME).is_dir():
        return base / STORE_DIRNAME
    raise KindlingError(f"the bundled example store is missing from {base}; reinstall Kindling")


def copy_example(dest: str | Path | None = None) -> Path:
    """Copy the packaged example store to `dest` (default: a new temp dir); returns the store."""
    target = (
        Path(dest)
        if dest is not None
        else (Path(tempfile.mkdtemp(prefix="kindling-demo-")) / STORE_DIRNAME)
    )
    if target.exists() and any(target.iterdir()):
        raise KindlingError(f"{target} already exists and is not empty")
    example = resources.files("kindling").joinpath("example")
    # as_file gives a real directory even when Kindling is installed as a zip.
    with resources.as_file(example) as source:
        source = Path(source)
        if not source.is_dir():
            raise KindlingError("the bundled example store is missing; reinstall Kindling")
        shutil.copytree(_example_root(source), target, ignore=_SKIP, dirs_exist_ok=True)
    return target


def next_steps(store: Path, pinned_id: str | None) -> list[str]:
    """The commands a newcomer might try next against the demo store, one per line."""
    steps = [
        (f"export KINDLING_STORE={store}", "point later commands at the demo store"),
        (f'kindling search "{DEMO_QUERY}" --json', "the full RetrieveResult"),
        ("kindling list observations", "everything recorded, newest first"),
    ]
    if pinned_id:
        steps.append((f"kindling show {pinned_id[:8]}", "the pinned root cause, by id prefix"))
    steps += [
        ('kindling log "my first note" --session demo', "record an observation"),
        ("kindling browse", "the whole store as one offline web page"),
        ("kindling init", "then, in your own project"),
    ]
    width = max(len(command) for command, _ in steps[1:])
    lines = [steps[0][0] + "   # " + steps[0][1]]
    lines += [f"{command:<{width}}   # {comment}" for command, comment in steps[1:]]
    return lines
