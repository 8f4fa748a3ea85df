"""fsck's view of retention: the committed policy and the records of retired observations.

A capsule naming an observation that is not in the store is never a finding (a retired or
forgotten member is expected); a policy `kindling gc` would refuse, or a record it cannot
read, is.
"""

from __future__ import annotations

from kindling.errors import KindlingError
from kindling.fsck.report import Finding
from kindling.retention.policy import POLICY_NAME, load_policy
from kindling.retention.record import read_records
from kindling.store import Store


def retention_problems(store: Store) -> list[Finding]:
    """Findings for retention.json and retired/*.json (never repaired: a person decides)."""
    found = []
    try:
        load_policy(store)
    except KindlingError as exc:
        reason = str(exc).removeprefix(f"{store.root / POLICY_NAME}: ")
        found.append(Finding(POLICY_NAME, "invalid", f"retention policy: {reason}"))
    _, bad = read_records(store)
    for record in bad:
        found.append(
            Finding(record.path, "parse", f"record of retired observations: {record.reason}")
        )
    return found
