"""Does Kindling bring back the old fix when the problem comes back? Prompt recall and search.

    python evals/recall/run.py [--split dev|heldout|all] [--json] [--show-misses] [--rebuild]

For every probe, asked from its repository's folder at NOW: what the UserPromptSubmit hook
would inject (prompt recall), where `kindling search` prints the answer, and the same for a
plain FTS5 baseline. Prints the numbers overall and per probe style. The heldout probes are
only scored when asked for by name (`--split heldout` or `--split all`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The checkout this file lives in is the Kindling under test, whatever is installed.
sys.path.insert(1, str(HERE.parent.parent))

import baselines  # noqa: E402
import build  # noqa: E402
import feed  # noqa: E402
import metrics  # noqa: E402

STYLES = ("error", "question", "vague", "ci", "unrelated")
KINDLING = "kindling"
SYSTEMS = (KINDLING, baselines.NAME)
SPLITS = ("dev", "heldout", "all")


def held_out(probe_id: str) -> bool:
    """A probe is held back when the SHA-256 of its id, as an integer, is 0, 1 or 2 mod 10."""
    return int(hashlib.sha256(probe_id.encode()).hexdigest(), 16) % 10 in (0, 1, 2)


def in_split(probe_id: str, split: str) -> bool:
    return split == "all" or (split == "heldout") == held_out(probe_id)


def load_probes(data_dir: Path) -> tuple[list[dict], list[str]]:
    """(probes of every probes_*.json, a corpus error for each one that cannot be scored)."""
    probes, errors, seen = [], [], set()
    for path in sorted(data_dir.glob("probes_*.json")):
        try:
            listed = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            errors.append(f"{path.name}: not JSON ({exc})")
            continue
        for probe in listed if isinstance(listed, list) else [listed]:
            pid = probe.get("id") if isinstance(probe, dict) else None
            if not isinstance(pid, str):
                errors.append(f"{path.name}: a probe without an id")
                continue
            problem = _probe_problem(probe)
            if pid in seen:
                problem = "id used twice"
            if problem:
                errors.append(f"{pid}: {problem}")
                continue
            seen.add(pid)
            probes.append({**probe, "file": path.name})
    return probes, errors


def _probe_problem(probe: dict) -> str | None:
    if probe.get("style") not in STYLES:
        return f"style {probe.get('style')!r} is not one of {', '.join(STYLES)}"
    if not isinstance(probe.get("prompt"), str) or not probe["prompt"].strip():
        return "no prompt"
    for field in ("answers", "superseded"):
        value = probe.get(field, [])
        if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
            return f"{field} must be a list of refs"
    if probe["style"] == "unrelated" and probe.get("answers"):
        return "an unrelated probe lists answers"
    return None


def _why_unresolved(ref: str, manifest: dict) -> str:
    key, _, part = ref.partition("#")
    episode = manifest["episodes"].get(key)
    if episode is None:
        return f"no replayed episode {key!r}"
    if part == "summary":
        return "the episode's last session closed with no summary"
    session, _, event = part.partition(".")
    try:
        s, e = int(session), int(event)
    except ValueError:
        return f"{ref!r} is not <key>#<s>.<e> or <key>#summary"
    if not 0 <= s < episode["sessions"] or not 0 <= e < episode["events"][s]:
        return "no such session or event in the episode"
    return "the event recorded nothing"


def label(probes: list[dict], manifest: dict) -> tuple[list[dict], list[str], list[str]]:
    """(probes with answer and superseded ids, warnings, corpus errors).

    A ref that resolves to nothing is left out of the labels with a warning; a probe left
    without answers (other than an unrelated one) is a corpus error and is not scored.
    """
    refs, repos = manifest["refs"], manifest["repos"]
    out, warnings, errors = [], [], []
    for probe in probes:
        if probe["repo"] not in repos:
            errors.append(f"{probe['id']}: repo {probe['repo']!r} is not in repos.json")
            continue
        ids = {}
        for field in ("answers", "superseded"):
            ids[field] = []
            for ref in probe.get(field, []):
                if ref in refs:
                    ids[field].append(refs[ref])
                else:
                    why = _why_unresolved(ref, manifest)
                    warnings.append(f"{probe['id']}: {field} ref {ref} unresolved ({why})")
        if probe["style"] != "unrelated" and not ids["answers"]:
            errors.append(f"{probe['id']}: no answer left to score")
            continue
        out.append({**probe, "answerIds": ids["answers"], "supersededIds": ids["superseded"]})
    return out, warnings, errors


def printed_order(result: dict) -> list[str]:
    """Ids in the order `kindling search` prints them: pins, current summary, candidates."""
    ids = [p["target"]["id"] for p in result.get("pins", [])]
    if result.get("currentSummary"):
        ids.append(result["currentSummary"]["id"])
    ids += [c["entity"]["id"] for c in result["candidates"]]
    return list(dict.fromkeys(ids))


def probe_session(probe_id: str) -> str:
    """A fresh session id for asking one probe (never one of the replayed sessions)."""
    return str(uuid.uuid5(feed.NAMESPACE, f"probe/{probe_id}"))


def _repo_lookup(memory, base: baselines.Baseline):
    """id -> repoId: from the baseline's rows, else read from the store (None when gone)."""
    from kindling import KindlingError

    known = {i: repo for i, (_, _, repo) in base.entities.items()}

    def repo_of(entity_id: str) -> str | None:
        if entity_id not in known:
            try:
                entity = memory.get(entity_id).entity
                known[entity_id] = (entity.get("scopeIds") or {}).get("repoId")
            except KindlingError:
                known[entity_id] = None
        return known[entity_id]

    return repo_of


def ask(memory, base, repo, probe: dict, repo_of) -> dict:
    """Both systems' recall and search for one probe, with their rows."""
    from kindling import KindlingError
    from kindling.agents.context import prompt_recall

    answers, old = probe["answerIds"], probe["supersededIds"]
    _, shown = prompt_recall(memory, repo, probe_session(probe["id"]), probe["prompt"], set())
    error = None
    try:
        result = memory.search(
            probe["prompt"], scope={"repoId": repo.id}, max_results=metrics.DEPTH
        )
        ranking = printed_order(result)
    except KindlingError as exc:
        ranking, error = [], str(exc)
    base_ranking = base.rank(probe["prompt"], repo.ids, metrics.DEPTH)
    lists = {
        KINDLING: {"recall": list(shown), "search": ranking},
        baselines.NAME: {
            "recall": base_ranking[: baselines.RECALL_TOP],
            "search": base_ranking,
        },
    }
    rows = {
        name: {
            "recall": metrics.recall_row(got["recall"], answers, old, repo_of, repo.id),
            "search": metrics.search_row(got["search"], answers, old, repo_of, repo.id),
        }
        for name, got in lists.items()
    }
    return {"probe": probe, "repoId": repo.id, "lists": lists, "rows": rows, "error": error}


def evaluate(
    split: str = "dev",
    *,
    rebuild: bool = False,
    data_dir: Path = build.DATA,
    cache: Path = build.CACHE,
    log=None,
) -> dict:
    """Build (or reuse) the store, label the probes and score every probe of the split."""
    from kindling import Memory
    from kindling.repo_identity import identify

    began = time.monotonic()
    manifest = build.cached(data_dir, cache, rebuild=rebuild, log=log)
    probes, errors = load_probes(data_dir)
    probes, warnings, label_errors = label(probes, manifest)
    errors += label_errors
    chosen = [p for p in probes if in_split(p["id"], split)]
    saved = {n: os.environ.get(n) for n in ("KINDLING_NOW", "KINDLING_AUTOWATCH")}
    os.environ["KINDLING_NOW"] = str(feed.ms(feed.NOW))
    os.environ["KINDLING_AUTOWATCH"] = "0"
    try:
        store = Path(manifest["store"])
        base = baselines.Baseline(store)
        per_probe = []
        with Memory(store) as memory:
            repo_of = _repo_lookup(memory, base)
            for probe in chosen:
                repo = identify(manifest["repos"][probe["repo"]]["folder"])
                per_probe.append(ask(memory, base, repo, probe, repo_of))
        base.close()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    systems = {}
    for name in SYSTEMS:
        rows = [item["rows"][name] for item in per_probe]
        by_style = {}
        for style in STYLES:
            picked = [i["rows"][name] for i in per_probe if i["probe"]["style"] == style]
            if picked:
                by_style[style] = metrics.summarise(picked)
        systems[name] = {"overall": metrics.summarise(rows), "by_style": by_style}
    return {
        "split": split,
        "now": feed.NOW.isoformat(),
        "store": manifest["store"],
        "build": {
            k: manifest[k]
            for k in ("build_seconds", "hook_calls", "counts", "routine_sessions")
            if k in manifest
        }
        | {"episodes": len(manifest["episodes"]), "problems": manifest["problems"]},
        "probes": {"total": len(probes) + len(errors), "scored": len(per_probe)},
        "warnings": warnings,
        "corpusErrors": errors,
        "systems": systems,
        "per_probe": per_probe,
        "seconds": round(time.monotonic() - began, 1),
        "snippets": base.entities,
    }


def _num(value: float | None, width: int = 6, digits: int = 3) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


COLUMNS = (
    f"{'system':<15} {'style':<10} {'n':>4} {'recall':>6} {'items':>6} {'inj':>6} "
    f"{'supbad':>6} {'MRR':>6} {'sup1st':>6} {'xrepo':>7}"
)


def table(report: dict) -> str:
    lines = [COLUMNS, "-" * len(COLUMNS)]
    for name, result in report["systems"].items():
        for style, row in [("all", result["overall"]), *result["by_style"].items()]:
            cross = f"{row['recallCrossRepo']}/{row['searchCrossRepo']}"
            lines.append(
                f"{name:<15} {style:<10} {row['n']:>4} {_num(row['recallAnswerRate'])} "
                f"{_num(row['recallItems'], digits=2)} {_num(row['injectedShare'])} "
                f"{_num(row['recallSupersededBad'])} {_num(row['mrr'])} "
                f"{_num(row['supersededFirst'])} {cross:>7}"
            )
        lines.append("")
    lines.append(
        "recall: answer among the injected ids; items: mean ids injected; inj: share of probes "
        "with >= 1 injected id;\nsupbad: a superseded id injected before any answer or without "
        "one; MRR: search, printed order, first 10;\nsup1st: the first labelled id in search is "
        "a superseded one; xrepo: ids of another repository (recall/search, total)."
    )
    for name, result in report["systems"].items():
        row = result["by_style"].get("unrelated")
        if row:
            lines.append(
                f"unrelated probes ({name}): {_num(row['injectedShare'], 0)} got >= 1 injected "
                f"item, {row['recallItems']:.2f} items on average"
            )
    return "\n".join(lines)


def _describe(entity_id: str, snippets: dict, probe: dict) -> str:
    kind, text, _ = snippets.get(entity_id, ("?", "", None))
    mark = (
        "*"
        if entity_id in probe["answerIds"]
        else "~"
        if entity_id in probe["supersededIds"]
        else " "
    )
    return f"   {mark} {entity_id[:12]:<12} {kind:<9} {text.replace(chr(10), ' ')[:80]}"


def misses(report: dict) -> str:
    """Probes whose answer Kindling does not inject or does not print first (and unrelated
    probes that got something injected), with what came instead."""
    snippets, lines = report["snippets"], []
    for item in report["per_probe"]:
        probe, row = item["probe"], item["rows"][KINDLING]
        got = item["lists"][KINDLING]
        if probe["answerIds"]:
            if row["recall"]["answer"] and row["search"]["rr"] == 1.0:
                continue
        elif not got["recall"]:
            continue
        prompt = probe["prompt"].replace("\n", " ")[:100]
        lines.append(f"{probe['id']} [{probe['style']}, {probe['repo']}] {prompt}")
        rr = row["search"]["rr"]
        lines.append(
            f"  answers: {', '.join(a[:12] for a in probe['answerIds']) or '-'}"
            f"   superseded: {', '.join(a[:12] for a in probe['supersededIds']) or '-'}"
            f"   search RR: {'-' if rr is None else f'{rr:.3f}'}"
            + (f"   (search error: {item['error']})" if item["error"] else "")
        )
        lines.append(f"  injected ({len(got['recall'])}):")
        lines += [_describe(i, snippets, probe) for i in got["recall"]]
        lines.append("  search, first 5:")
        lines += [_describe(i, snippets, probe) for i in got["search"][:5]]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=SPLITS, default="dev")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--show-misses",
        action="store_true",
        help="list the probes whose answer is not injected or not printed first",
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached store")
    parser.add_argument(
        "--data", type=Path, default=build.DATA, help="the corpus folder (default: data/)"
    )
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    report = evaluate(args.split, rebuild=args.rebuild, data_dir=args.data, log=log)
    for line in report["build"]["problems"]:
        log(f"corpus problem: {line}")
    for line in report["warnings"]:
        log(f"warning: {line}")
    for line in report["corpusErrors"]:
        log(f"corpus error: {line}")
    if args.json:
        out = {k: v for k, v in report.items() if k not in ("per_probe", "snippets")}
        if args.show_misses:
            out["per_probe"] = [
                {
                    "id": i["probe"]["id"],
                    "style": i["probe"]["style"],
                    "repo": i["probe"]["repo"],
                    "answers": i["probe"]["answerIds"],
                    "superseded": i["probe"]["supersededIds"],
                    "lists": i["lists"],
                    "rows": i["rows"],
                    "error": i["error"],
                }
                for i in report["per_probe"]
            ]
        print(json.dumps(out, indent=2))
        return 0
    built = report["build"]
    counts = built.get("counts", {})
    print(
        f"split: {args.split}   now: {report['now']}   probes scored: "
        f"{report['probes']['scored']} (of {report['probes']['total']} in all splits)"
    )
    print(
        f"store: {built['episodes']} episodes, {built.get('routine_sessions', 0)} routine "
        f"sessions, {built.get('hook_calls', 0)} hook calls -> "
        + ", ".join(f"{n} {t}" for t, n in counts.items())
        + f"; built in {built.get('build_seconds', 0)} s"
    )
    print(f"warnings: {len(report['warnings'])}   corpus errors: {len(report['corpusErrors'])}\n")
    print(table(report))
    if args.show_misses:
        print("\n" + misses(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
