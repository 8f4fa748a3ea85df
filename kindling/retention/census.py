"""What retention reads from a store: every entity file, reduced to the facts a plan needs.

Read from the files themselves, never the index: the index of a clone may lag its files, and
every clone must reach the same plan from the same files. Observations keep only their
episode traits (kindling.index.traits), not their content, so a big store fits in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kindling.errors import CorruptFileError
from kindling.index.episodes import Step
from kindling.index.traits import traits
from kindling.model import entity_time
from kindling.store import Problem, Store


@dataclass
class Observed:
    """One observation file: its step in its session's episode, where it lives, its size."""

    step: Step
    path: str
    size: int


@dataclass
class Census:
    """The facts of a whole store that a retention plan is computed from."""

    observations: dict[str, Observed] = field(default_factory=dict)
    capsules: dict[str, dict] = field(default_factory=dict)
    summaries: dict[str, list[str]] = field(default_factory=dict)  # id -> evidenceRefs
    pinned: set[str] = field(default_factory=set)  # observation ids a pin names
    horizon: int = 0  # the newest timestamp any entity carries
    problems: list[Problem] = field(default_factory=list)


def take_census(store: Store) -> Census:
    """Read every entity file of `store` once."""
    census = Census()
    for found in store.walk():
        try:
            entity, _ = store.load_path(found.entity_type, found.path)
        except CorruptFileError as exc:
            census.problems.append(Problem(found.path, exc.reason))
            continue
        _add(census, found.entity_type, entity, found.path, found.stat.st_size)
    return census


def _add(census: Census, entity_type: str, entity: dict, path: str, size: int) -> None:
    when = entity_time(entity_type, entity)
    if entity_type == "capsules" and entity.get("closedAt") is not None:
        when = max(when, entity["closedAt"])
    census.horizon = max(census.horizon, when)
    ident = entity["id"]
    if entity_type == "observations":
        scope = entity["scopeIds"]
        step = Step(
            len(census.observations),
            "observations",
            ident,
            entity["ts"],
            entity["kind"],
            scope.get("sessionId"),
            scope.get("repoId"),
            *traits("observations", entity),
            int(bool(entity["redacted"])),
        )
        census.observations[ident] = Observed(step, path, size)
    elif entity_type == "capsules":
        census.capsules[ident] = {
            "status": entity["status"],
            "summaryId": entity.get("summaryId"),
            "observationIds": entity["observationIds"],
        }
    elif entity_type == "summaries":
        census.summaries[ident] = list(entity["evidenceRefs"])
    elif entity_type == "pins" and entity["targetType"] == "observation":
        census.pinned.add(entity["targetId"])
