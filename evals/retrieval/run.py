"""Retrieval quality of `kindling search` and two FTS5 baselines on the labelled bug corpus.

    python evals/retrieval/run.py [--split dev|heldout|all] [--json] [--show-misses]

Prints R@1, R@5, R@10 and MRR, overall and per query style. The heldout queries are only
scored when asked for by name (`--split heldout` or `--split all`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The checkout this file lives in is the Kindling under test, whatever is installed.
sys.path.insert(1, str(HERE.parent.parent))

import baselines  # noqa: E402
import build  # noqa: E402
import corpus  # noqa: E402
import metrics  # noqa: E402

KINDLING = "kindling"


def kindling_ranking(memory, query: dict, max_results: int) -> tuple[list[str], str | None]:
    """Ids in the order `kindling search` shows them (see README: the current summary rule)."""
    from kindling import KindlingError

    try:
        result = memory.search(query["query"], max_results=max_results)
    except KindlingError as exc:
        return [], str(exc)
    ranking = [c["entity"]["id"] for c in result["candidates"]]
    current = result.get("currentSummary")
    if current is not None and current["id"] in query["relevant"]:
        # Shown above the candidates; it counts (as rank 1) only when it is a labelled answer.
        ranking.insert(0, current["id"])
    return ranking, None


def evaluate(split: str, max_results: int, rebuild: bool) -> dict:
    """Rankings and scores of every system for every query of the split."""
    os.environ["KINDLING_NOW"] = str(corpus.ms(corpus.NOW))
    from kindling import Memory

    store = build.cached_store(rebuild=rebuild)
    queries = corpus.load_queries(split)
    base = baselines.Baselines(store)
    per_query = []
    with Memory(store) as memory:
        for query in queries:
            ranking, error = kindling_ranking(memory, query, max_results)
            rankings = {KINDLING: ranking}
            for name in baselines.NAMES:
                rankings[name] = base.rank(name, query["query"], max_results)
            per_query.append(
                {
                    "query": query,
                    "error": error,
                    "rankings": rankings,
                    "scores": {n: metrics.score(r, query["relevant"]) for n, r in rankings.items()},
                }
            )
    base.close()
    systems = {}
    for name in (KINDLING, *baselines.NAMES):
        rows = [q["scores"][name] for q in per_query]
        by_style = {}
        for style in corpus.STYLES:
            style_rows = [q["scores"][name] for q in per_query if q["query"]["style"] == style]
            if style_rows:
                by_style[style] = {"n": len(style_rows), **metrics.mean(style_rows)}
        systems[name] = {"overall": {"n": len(rows), **metrics.mean(rows)}, "by_style": by_style}
    return {
        "split": split,
        "store": str(store),
        "searchable": base.size,
        "systems": systems,
        "per_query": per_query,
    }


def corpus_facts() -> dict:
    sessions = build.all_sessions()
    bugs = [s for s in sessions if not s.get("distractor")]
    other = [s for s in sessions if s.get("distractor")]
    return {
        "bug_sessions": len(bugs),
        "bug_observations": sum(len(s["obs"]) for s in bugs),
        "bug_summaries": sum(1 for s in bugs if s.get("summary")),
        "distractor_sessions": len(other),
        "distractor_observations": sum(len(s["obs"]) for s in other),
        "distractor_summaries": sum(1 for s in other if s.get("summary")),
        "share_of_observations_in_last_30_days": round(build.recent_share(sessions), 3),
        "sources": len({s["source"] for s in bugs}),
    }


def _table(report: dict) -> str:
    lines = []
    header = f"{'system':<16} {'style':<11} {'n':>4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}"
    lines += [header, "-" * len(header)]
    for name, result in report["systems"].items():
        rows = [("all", result["overall"]), *result["by_style"].items()]
        for style, row in rows:
            lines.append(
                f"{name:<16} {style:<11} {row['n']:>4} {row['R@1']:>6.3f} {row['R@5']:>6.3f} "
                f"{row['R@10']:>6.3f} {row['MRR']:>6.3f}"
            )
        lines.append("")
    return "\n".join(lines)


def _misses(report: dict, snippets: dict[str, str]) -> str:
    """Queries whose first answer is not Kindling's first result, with what came instead."""
    lines = []
    for item in report["per_query"]:
        query, ranking = item["query"], item["rankings"][KINDLING]
        if item["scores"][KINDLING]["MRR"] == 1.0:
            continue
        ranks = {
            rid: (ranking.index(rid) + 1 if rid in ranking else None) for rid in query["relevant"]
        }
        shown = ", ".join(f"{rid}@{r or '-'}" for rid, r in ranks.items())
        lines.append(f"{query['id']} [{query['style']}] {query['query']}")
        lines.append(
            f"  answers: {shown}" + (f"  (error: {item['error']})" if item["error"] else "")
        )
        for rank, rid in enumerate(ranking[:5], start=1):
            mark = "*" if rid in query["relevant"] else " "
            text = snippets.get(rid, "").replace("\n", " ")[:90]
            lines.append(f"  {mark}{rank:>2}. {rid:<34} {text}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="dev")
    parser.add_argument(
        "--max",
        dest="max_results",
        type=int,
        default=10,
        help="candidates asked of kindling search (default 10)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--show-misses",
        action="store_true",
        help="list the queries whose first answer is not ranked first",
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached store")
    args = parser.parse_args(argv)
    if args.max_results < 1:
        parser.error("--max must be at least 1")

    report = evaluate(args.split, args.max_results, args.rebuild)
    facts = corpus_facts()
    if args.json:
        out = {k: v for k, v in report.items() if k != "per_query"}
        out["corpus"] = facts
        out["now"] = corpus.NOW.isoformat()
        if args.show_misses:
            out["per_query"] = [
                {
                    "id": q["query"]["id"],
                    "style": q["query"]["style"],
                    "relevant": q["query"]["relevant"],
                    "rankings": q["rankings"],
                    "scores": q["scores"],
                    "error": q["error"],
                }
                for q in report["per_query"]
            ]
        print(json.dumps(out, indent=2))
        return 0
    print(f"split: {args.split}   now: {corpus.NOW.isoformat()}   --max {args.max_results}")
    print("corpus: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in facts.items()))
    print(f"searchable entities: {report['searchable']}\n")
    print(_table(report))
    if args.show_misses:
        snippets = dict(baselines.searchable(Path(report["store"])))
        print(_misses(report, snippets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
