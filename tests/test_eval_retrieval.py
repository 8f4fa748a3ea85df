"""The retrieval evaluation's metrics and corpus files (no store is built here)."""

from __future__ import annotations

import copy
import hashlib
import sys
from pathlib import Path

import pytest

EVAL_DIR = Path(__file__).resolve().parent.parent / "evals" / "retrieval"
sys.path.insert(0, str(EVAL_DIR))

import baselines  # noqa: E402
import corpus  # noqa: E402
import metrics  # noqa: E402

# ---------------------------------------------------------------- metrics


def test_recall_counts_hits_out_of_min_k_and_relevant():
    ranking = ["a", "x", "b", "y", "z", "c", "w", "v", "u", "t", "d"]
    relevant = ["a", "b", "c", "d"]
    assert metrics.recall_at(ranking, relevant, 1) == 1.0
    assert metrics.recall_at(ranking, relevant, 5) == 0.5  # a, b of min(5, 4) = 4
    assert metrics.recall_at(ranking, relevant, 10) == 0.75  # d is 11th


def test_recall_with_one_relevant_is_all_or_nothing():
    assert metrics.recall_at(["x", "a"], ["a"], 1) == 0.0
    assert metrics.recall_at(["x", "a"], ["a"], 5) == 1.0


def test_recall_needs_a_label():
    with pytest.raises(ValueError):
        metrics.recall_at(["a"], [], 1)


def test_reciprocal_rank_stops_at_ten():
    assert metrics.reciprocal_rank(["x", "y", "a"], ["a", "b"]) == pytest.approx(1 / 3)
    assert metrics.reciprocal_rank(["x"] * 10 + ["a"], ["a"]) == 0.0
    assert metrics.reciprocal_rank([], ["a"]) == 0.0


def test_score_and_mean_of_two_queries():
    first = metrics.score(["a", "b"], ["b"])
    second = metrics.score(["c", "x", "y", "z", "w", "d"], ["c", "d"])
    assert first == {"R@1": 0.0, "R@5": 1.0, "R@10": 1.0, "MRR": 0.5}
    assert second == {"R@1": 1.0, "R@5": 0.5, "R@10": 1.0, "MRR": 1.0}
    assert metrics.mean([first, second]) == {"R@1": 0.5, "R@5": 0.75, "R@10": 1.0, "MRR": 0.75}


def test_baseline_words_are_safe_to_quote():
    text = "(sqlite3.OperationalError) \"database\" is locked: 'x' AND NOT y*"
    found = baselines.words(text)
    assert found == [
        "sqlite3",
        "operationalerror",
        "database",
        "is",
        "locked",
        "x",
        "and",
        "not",
        "y",
    ]
    assert all('"' not in w for w in found)


# ---------------------------------------------------------------- corpus files


@pytest.fixture(scope="module")
def sessions():
    return corpus.load_sessions()


@pytest.fixture(scope="module")
def splits():
    return {name: corpus.load_queries(name) for name in corpus.QUERY_FILES}


def test_corpus_files_are_well_formed(sessions, splits):
    assert corpus.problems(sessions, splits) == []


def test_corpus_size_and_split(sessions, splits):
    assert len(sessions) >= 30
    assert len({s["source"] for s in sessions}) == len(sessions)
    total = sum(len(q) for q in splits.values())
    assert total >= 100
    assert 0.2 <= len(splits["heldout"]) / total <= 0.4
    styles = {q["style"] for qs in splits.values() for q in qs}
    assert styles == set(corpus.STYLES)
    assert corpus.load_queries("all") == splits["dev"] + splits["heldout"]


def test_each_query_sits_in_the_split_its_id_hashes_to(splits):
    for name, queries in splits.items():
        for query in queries:
            held = int(hashlib.sha256(query["id"].encode()).hexdigest(), 16) % 10 < 3
            assert (name == "heldout") == held, query["id"]


def test_problems_names_each_defect(sessions, splits):
    broken_sessions = copy.deepcopy(sessions[:2])
    broken_sessions[1]["obs"] = [o for o in broken_sessions[1]["obs"] if o[0] != "file_diff"]
    first = dict(splits["dev"][0])
    bad = [
        {**first, "id": "qa", "style": "guess"},
        {**first, "id": "qb", "relevant": []},
        {**first, "id": "qc", "relevant": ["nowhere.1"]},
    ]
    found = corpus.problems(broken_sessions, {"dev": bad + [first], "heldout": [first]})
    text = "\n".join(found)
    assert "missing kinds ['file_diff']" in text
    assert "qa: style 'guess'" in text
    assert "qb: no relevant ids" in text
    assert "qc: label 'nowhere.1' names nothing" in text
    assert f"{first['id']}: in both dev and heldout" in text
