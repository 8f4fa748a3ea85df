"""Applying a plan: record what is retired, then delete those files from the work tree.

A policy this clone has not applied before (a first gc, or a changed retention.json pulled
from a teammate) is applied only when the caller confirms it: the plan is shown first, so a
policy change never retires anything unseen. Which policy a clone last applied is kept with
its index (outside the work tree), by digest.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from kindling.errors import KindlingError
from kindling.fileio import fsync_dir, read_regular, write_atomic
from kindling.retention.census import take_census
from kindling.retention.plan import Plan, make_plan
from kindling.retention.policy import load_policy, policy_path
from kindling.retention.record import write_records
from kindling.store import Store

APPLIED_NAME = "retention-applied"


class GcReport(NamedTuple):
    """What gc planned and did."""

    plan: Plan
    committed: bool  # the store states its policy (else the default was used)
    applied: bool = False
    needs_confirmation: bool = False  # a new policy for this clone, not confirmed
    removed: int = 0
    skipped: int = 0  # planned files changed or gone meanwhile, left alone
    records: tuple[str, ...] = ()
    policy_written: bool = False
    unreadable: int = 0  # entity files that do not parse (a dry run plans without them)


def gc(store: Store, *, dry_run: bool = False, confirm: bool = False) -> GcReport:
    """Plan the store's policy and, unless `dry_run`, apply it (see the module docstring)."""
    loaded = load_policy(store)
    census = take_census(store)
    if census.problems and not dry_run:
        first = census.problems[0]
        raise KindlingError(
            f"{len(census.problems)} entity file(s) do not parse (first: {first.path}: "
            f"{first.reason}); gc retires nothing until `kindling fsck` is clean"
        )
    plan = make_plan(census, loaded.policy)
    report = GcReport(plan, loaded.committed, unreadable=len(census.problems))
    if dry_run:
        return report
    if plan.retire and last_applied(store) != loaded.policy.digest and not confirm:
        return report._replace(needs_confirmation=True)
    return _apply(store, report)


def _apply(store: Store, report: GcReport) -> GcReport:
    plan = report.plan
    written = False
    if not report.committed and plan.retire:
        # Commit the policy with the retirements it made: a later default can't change it.
        write_atomic(policy_path(store), plan.policy.encode())
        written = True
    records = (
        write_records(store, [r.id for r in plan.retire], plan.policy.as_json(), plan.horizon)
        if plan.retire
        else []
    )
    removed = skipped = 0
    folders: set[str] = set()
    for item in plan.retire:
        try:
            if os.lstat(item.path).st_size != item.size:
                skipped += 1  # rewritten since the census (forgotten?): the next gc decides
                continue
            os.unlink(item.path)
        except FileNotFoundError:
            skipped += 1
            continue
        removed += 1
        folders.add(os.path.dirname(item.path))
    for folder in sorted(folders):
        fsync_dir(folder)
    remember_applied(store, plan.policy.digest)
    rel = tuple(f"{p.parent.name}/{p.name}" for p in records)
    return report._replace(
        applied=True, removed=removed, skipped=skipped, records=rel, policy_written=written
    )


def _applied_path(store: Store) -> Path:
    return store.state / APPLIED_NAME


def last_applied(store: Store) -> str | None:
    """The digest of the policy this clone last applied, or None."""
    try:
        raw = read_regular(_applied_path(store), follow_symlinks=False, limit=64)
    except OSError:
        return None
    return raw.decode("ascii", "replace").strip() if raw else None


def remember_applied(store: Store, digest: str) -> None:
    try:
        write_atomic(store.ensure_state() / APPLIED_NAME, digest.encode("ascii"))
    except OSError:
        pass  # nowhere to remember it: the next gc asks for confirmation again
