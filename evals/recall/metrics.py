"""What is scored for one probe, and the means over a group of probes (see README.md).

A probe's row for one system has two parts:

- recall (what a UserPromptSubmit hook would inject): `answer` (an answer id is among the
  shown ids; None for a probe without answers), `items` (ids shown), `crossRepo` (shown ids
  stored under another repository) and `supersededBad` (a superseded id is shown before the
  first answer, or shown with no answer at all; None for a probe without a superseded list).
- search (the printed order of `kindling search`, its first DEPTH ids): `rr` (1 / rank of the
  first answer, 0 when none is in the first DEPTH; None without answers), `supersededFirst`
  (the first of answers and superseded ids to appear is a superseded one, False when none
  appears; None without a superseded list) and `crossRepo`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

DEPTH = 10


def reciprocal_rank(ranking: Sequence[str], answers: Sequence[str], depth: int = DEPTH) -> float:
    """1 / rank of the first answer in the first `depth` ids, 0 when none is there."""
    wanted = set(answers)
    if not wanted:
        raise ValueError("a reciprocal rank needs at least one answer")
    for rank, entity_id in enumerate(ranking[:depth], start=1):
        if entity_id in wanted:
            return 1.0 / rank
    return 0.0


def superseded_first(
    ranking: Sequence[str], answers: Sequence[str], superseded: Sequence[str], depth: int = DEPTH
) -> bool | None:
    """Whether the first labelled id (answer or superseded) in the first `depth` is superseded.

    False when neither appears; None when the probe has no superseded ids.
    """
    if not superseded:
        return None
    old, new = set(superseded), set(answers)
    for entity_id in ranking[:depth]:
        if entity_id in new:
            return False
        if entity_id in old:
            return True
    return False


def superseded_bad(
    shown: Sequence[str], answers: Sequence[str], superseded: Sequence[str]
) -> bool | None:
    """Whether a superseded id is shown before the first answer, or without any answer.

    None when the probe has no superseded ids.
    """
    if not superseded:
        return None
    return superseded_first(shown, answers, superseded, depth=len(shown))


def cross_repo(ids: Sequence[str], repo_of: Callable[[str], str | None], repo_id: str) -> int:
    """How many of `ids` are stored under another repository than `repo_id`."""
    return sum(1 for i in ids if repo_of(i) != repo_id)


def recall_row(
    shown: Sequence[str],
    answers: Sequence[str],
    superseded: Sequence[str],
    repo_of: Callable[[str], str | None],
    repo_id: str,
) -> dict:
    """The recall part of a probe's row (ids in the order they were shown)."""
    return {
        "answer": bool(set(answers) & set(shown)) if answers else None,
        "items": len(shown),
        "crossRepo": cross_repo(shown, repo_of, repo_id),
        "supersededBad": superseded_bad(shown, answers, superseded),
    }


def search_row(
    ranking: Sequence[str],
    answers: Sequence[str],
    superseded: Sequence[str],
    repo_of: Callable[[str], str | None],
    repo_id: str,
    depth: int = DEPTH,
) -> dict:
    """The search part of a probe's row (ids in printed order)."""
    return {
        "rr": reciprocal_rank(ranking, answers, depth) if answers else None,
        "supersededFirst": superseded_first(ranking, answers, superseded, depth),
        "crossRepo": cross_repo(ranking[:depth], repo_of, repo_id),
    }


def _rate(values: list) -> float | None:
    """The mean of the values that apply (not None); None when none does."""
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def summarise(rows: list[dict]) -> dict:
    """The numbers of a group of probe rows ({"recall": ..., "search": ...} each)."""
    recall = [r["recall"] for r in rows]
    search = [r["search"] for r in rows]
    return {
        "n": len(rows),
        "withAnswers": sum(1 for r in recall if r["answer"] is not None),
        "withSuperseded": sum(1 for r in recall if r["supersededBad"] is not None),
        "recallAnswerRate": _rate([r["answer"] for r in recall]),
        "recallItems": _rate([r["items"] for r in recall]),
        "injectedShare": _rate([r["items"] > 0 for r in recall]),
        "recallSupersededBad": _rate([r["supersededBad"] for r in recall]),
        "recallCrossRepo": sum(r["crossRepo"] for r in recall),
        "mrr": _rate([s["rr"] for s in search]),
        "supersededFirst": _rate([s["supersededFirst"] for s in search]),
        "searchCrossRepo": sum(s["crossRepo"] for s in search),
    }
