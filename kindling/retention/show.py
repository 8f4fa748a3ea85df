"""What `kindling show` says of a retired observation: the record naming it, and its commit."""

from __future__ import annotations

from kindling.errors import KindlingError
from kindling.retention.history import last_holder
from kindling.retention.record import find_retired
from kindling.store import Store, fanout


def retired_info(store: Store, ref: str) -> dict | None:
    """The retired observation `ref` (an id or unique prefix) names, or None when none."""
    matches = find_retired(store, ref)
    if not matches:
        return None
    if len(matches) > 1:
        shown = ", ".join(m.id for m in matches[:10])
        raise KindlingError(f"id prefix {ref!r} is ambiguous among retired observations: {shown}")
    found = matches[0]
    rel = f"objects/observations/{fanout(found.id)}/{found.id}.json"
    held = last_holder(store.root, rel)
    return {
        "id": found.id,
        "retired": True,
        "record": found.record,
        "commit": held.commit,
        "path": held.path,
        "reason": held.why or None,
    }


def absent_member(store: Store, capsules: list[dict], ident: str) -> str | None:
    """For an observation id in no file and no record: a note saying which capsule names it
    and that gc did not retire it (so it was deleted some other way), or None."""
    naming = [c["id"] for c in capsules if ident in c["observationIds"]]
    if not naming:
        return None
    rel = f"objects/observations/{fanout(ident)}/{ident}.json"
    return (
        f"no observation {ident} in the store: capsule {naming[0]} names it, but `kindling gc` "
        f"did not retire it (it was deleted some other way; `git log -- {rel}` in "
        f"{store.root} shows when)"
    )


def retired_text(info: dict) -> str:
    """The lines `kindling show` prints for a retired observation."""
    lines = [
        f"observation {info['id']} was retired by `kindling gc` (recorded in "
        f".kindling/{info['record']}); its summary keeps what it taught"
    ]
    if info["commit"]:
        lines.append(f"Last held in commit {info['commit']}")
        lines.append(f"See it: git show {info['commit']}:{info['path']}")
    else:
        lines.append(f"No commit to show: {info['reason']}")
    return "\n".join(lines) + "\n"
