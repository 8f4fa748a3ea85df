"""Retention: a committed policy retires old raw tool output from the work tree (`kindling gc`).

policy (what the committed retention.json says), census (the facts read from every file),
plan (what the policy retires), record (the committed list of retired ids), apply (deleting),
history (which commit last held a retired file).
"""

from __future__ import annotations

from kindling.retention.apply import GcReport, gc
from kindling.retention.plan import Plan, Retiree, make_plan
from kindling.retention.policy import DEFAULT, Policy, load_policy, parse_policy

__all__ = [
    "DEFAULT",
    "GcReport",
    "Plan",
    "Policy",
    "Retiree",
    "gc",
    "load_policy",
    "make_plan",
    "parse_policy",
]
