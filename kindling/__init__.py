"""Kindling: local, git-committable memory for AI coding agents."""

__version__ = "0.2.0"
# The name on the package index (`kindling` there is an unrelated project); the import
# package and the `kindling` command keep the short name.
DISTRIBUTION = "kindling-memory"

from kindling.errors import KindlingError  # noqa: E402

__all__ = ["KindlingError", "Memory", "__version__"]


def __getattr__(name: str):
    # Keep `import kindling` cheap: the Memory API (and sqlite3) load on first use.
    if name == "Memory":
        from kindling.memory import Memory

        return Memory
    raise AttributeError(name)
