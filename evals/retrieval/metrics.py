"""Recall at k and reciprocal rank over ranked id lists, and their means by group."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

KS = (1, 5, 10)
MRR_DEPTH = 10


def recall_at(ranking: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Share of the relevant ids in the top k, out of min(k, number relevant)."""
    wanted = set(relevant)
    if not wanted:
        raise ValueError("a query needs at least one relevant id")
    found = len(wanted.intersection(ranking[:k]))
    return found / min(k, len(wanted))


def reciprocal_rank(ranking: Sequence[str], relevant: Iterable[str]) -> float:
    """1 / rank of the first relevant id, 0 when none is in the top MRR_DEPTH."""
    wanted = set(relevant)
    for rank, entity_id in enumerate(ranking[:MRR_DEPTH], start=1):
        if entity_id in wanted:
            return 1.0 / rank
    return 0.0


def score(ranking: Sequence[str], relevant: Iterable[str]) -> dict[str, float]:
    """R@1, R@5, R@10 and RR of one ranking."""
    relevant = list(relevant)
    row = {f"R@{k}": recall_at(ranking, relevant, k) for k in KS}
    row["MRR"] = reciprocal_rank(ranking, relevant)
    return row


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    """The mean of each metric over rows (all zeros for no rows)."""
    names = [f"R@{k}" for k in KS] + ["MRR"]
    if not rows:
        return {name: 0.0 for name in names}
    return {name: sum(r[name] for r in rows) / len(rows) for name in names}
