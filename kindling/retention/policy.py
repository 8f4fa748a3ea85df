"""The retention policy: what `kindling gc` retires, as committed in `.kindling/retention.json`.

The file is committed with the store, so every clone applies the same policy; it is hostile
input like any committed file: bounded in size, every value bounded, unknown keys refused (a
key this Kindling does not know could be a limit it would otherwise ignore while deleting).

    {"version": 1, "keepDays": 30, "keepSessions": 20,
     "kinds": ["command", "file_diff", "tool_call"]}

- keepDays: raw output is *old* once its `ts` is this many days before the store's horizon,
  the newest timestamp any entity in the store carries (never this machine's clock).
- keepSessions: the raw output of each repository's newest sessions is kept whatever its age
  (a dormant repository, or one clock far ahead, never empties a repository's recent work).
- kinds: the observation kinds that are raw output; errors and messages never are.
"""

from __future__ import annotations

from typing import NamedTuple

from kindling import canonical, hashing
from kindling.errors import KindlingError
from kindling.store import Store, read_committed_json

POLICY_NAME = "retention.json"
POLICY_VERSION = 1
MAX_POLICY_BYTES = 4 * 1024
DAY_MS = 86_400_000
MAX_KEEP_DAYS = 3_650
MAX_KEEP_SESSIONS = 100_000
# Raw output a policy may retire; error, node_error and message never (what went wrong, and
# what people asked and agents concluded, is what a summary is made from).
RETIRABLE_KINDS = ("command", "file_diff", "node_end", "node_output", "node_start", "tool_call")
NEVER_RETIRED = ("error", "message", "node_error")
KEYS = ("version", "keepDays", "keepSessions", "kinds")


class Policy(NamedTuple):
    """A validated retention policy."""

    keep_days: int = 30
    keep_sessions: int = 20
    kinds: tuple[str, ...] = ("command", "file_diff", "tool_call")

    def as_json(self) -> dict:
        return {
            "version": POLICY_VERSION,
            "keepDays": self.keep_days,
            "keepSessions": self.keep_sessions,
            "kinds": list(self.kinds),
        }

    def encode(self) -> bytes:
        """The policy's canonical bytes, as written to retention.json."""
        return canonical.encode(self.as_json())

    @property
    def digest(self) -> str:
        """16 hex digits naming this policy (what a clone remembers it last applied)."""
        return hashing.hexdigest(self.encode())[:16]

    def describe(self) -> str:
        """One line for a person."""
        return (
            f"retire {', '.join(self.kinds)} older than {self.keep_days} days before the "
            f"newest activity, keeping each repository's newest {self.keep_sessions} sessions"
        )


DEFAULT = Policy()


class Loaded(NamedTuple):
    """The policy a store states, and whether it states one (else the default applies)."""

    policy: Policy
    committed: bool


def policy_path(store: Store):
    return store.root / POLICY_NAME


def load_policy(store: Store) -> Loaded:
    """The store's committed policy, or the default when it has none; KindlingError when bad."""
    path = policy_path(store)
    data = read_committed_json(path, "retention policy", MAX_POLICY_BYTES)
    if data is None:
        return Loaded(DEFAULT, False)
    try:
        return Loaded(parse_policy(data), True)
    except ValueError as exc:
        raise KindlingError(f"{path}: {exc}") from None


def parse_policy(data: object) -> Policy:
    """A Policy from its JSON form; ValueError names the first thing wrong."""
    if not isinstance(data, dict):
        raise ValueError("the retention policy must be a JSON object")
    unknown = sorted(str(k) for k in data if k not in KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0][:40]!r} (known: {', '.join(KEYS)})")
    version = data.get("version", POLICY_VERSION)
    if not _is_int(version) or version < 1:
        raise ValueError("version must be a positive integer")
    if version > POLICY_VERSION:
        raise ValueError(f"policy version {version} is newer than this Kindling; upgrade it")
    keep_days = data.get("keepDays", DEFAULT.keep_days)
    if not _is_int(keep_days) or not 1 <= keep_days <= MAX_KEEP_DAYS:
        raise ValueError(f"keepDays must be an integer from 1 to {MAX_KEEP_DAYS}")
    keep_sessions = data.get("keepSessions", DEFAULT.keep_sessions)
    if not _is_int(keep_sessions) or not 0 <= keep_sessions <= MAX_KEEP_SESSIONS:
        raise ValueError(f"keepSessions must be an integer from 0 to {MAX_KEEP_SESSIONS}")
    kinds = data.get("kinds", list(DEFAULT.kinds))
    if not isinstance(kinds, list) or not kinds or len(kinds) > len(RETIRABLE_KINDS):
        raise ValueError(f"kinds must be a non-empty list of: {', '.join(RETIRABLE_KINDS)}")
    for kind in kinds:
        if kind in NEVER_RETIRED:
            raise ValueError(f"kinds: {kind} observations are never retired")
        if kind not in RETIRABLE_KINDS:
            shown = str(kind)[:40]
            raise ValueError(f"kinds: {shown!r} is not one of {', '.join(RETIRABLE_KINDS)}")
    if len(set(kinds)) != len(kinds):
        raise ValueError("kinds: each kind at most once")
    return Policy(keep_days, keep_sessions, tuple(sorted(kinds)))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
