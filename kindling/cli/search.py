"""Commands over the index: search (the three tiers) and reindex."""

from __future__ import annotations

import click

from kindling.cli.common import (
    COUNT,
    echo_json,
    json_option,
    kind_option,
    open_memory,
    progress_bars,
    progress_options,
    read_text,
    scope_from,
    scope_options,
)
from kindling.cli.format import echo, format_time, problems_notice
from kindling.cli.when import INSTANT, TIME_HELP, utc_option
from kindling.search.request import SearchRequest

RULE = "=" * 50


@click.command("search")
@click.argument("query", nargs=-1)
@scope_options
@kind_option
@click.option(
    "--since", type=INSTANT, metavar="TIME", help=f"Only from this time on: {TIME_HELP}."
)
@click.option(
    "--max",
    "max_results",
    type=COUNT,
    metavar="N",
    default=10,
    show_default=True,
    help="Most candidates to return.",
)
@click.option(
    "--max-tokens",
    type=COUNT,
    metavar="N",
    help="Keep the whole result within about N tokens (drops the lowest candidates).",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Show each score's parts: matched terms, relevance, episode boost, recency.",
)
@click.option(
    "--exit-code",
    "exit_code",
    is_flag=True,
    help="Exit 1 when the query matched no candidate, as grep does (pins and the current "
    "summary, shown whatever the query, do not count, nor does a pinned entry, which shows "
    "with the pins). Without it the exit status is 0 whenever the search ran, which agents "
    "read as success.",
)
@utc_option
@json_option
@click.pass_context
def search_cmd(
    ctx, query, kinds, since, max_results, max_tokens, explain, exit_code, json_, **scope_kwargs
) -> None:
    """Search memory: pins, the current summary, then ranked full-text matches.

    Any text works: words, names in any case style (busyTimeout finds busy_timeout), or a
    pasted error (QUERY - reads it from stdin). Rarer shared terms count more; the fix that
    followed a matching error in its session ranks with it. Quoted phrases, OR/NOT between
    words and prefix* are honoured.

    Exit status: 0 when the search ran, found or not; with --exit-code, 1 when no candidate
    matched (2 for a usage error either way).

    \b
    Example:
      kindling search "authentication error"
      kindling search auth --session s-1 --repo ./my-project --max 5 --json
      kindling search "TypeError: Cannot read properties of undefined" --explain
      pbpaste | kindling search -
      kindling search "flaky test" --exit-code --json > hits.json || echo "nothing found"
    """
    text = read_text("-", what="QUERY") if query == ("-",) else " ".join(query)
    memory = open_memory(ctx, autowatch=True)
    request = SearchRequest.checked(
        text,
        scope=scope_from(scope_kwargs, memory),
        kinds=kinds,
        since=since,
        max_results=max_results,
        max_tokens=max_tokens,
        explain=explain,
    )
    result = memory.search(request)
    problems_notice(memory.problems())
    if json_:
        echo_json(result)
    else:
        echo(render(result), nl=False)
    if exit_code and not result["candidates"]:
        ctx.exit(1)


def _content(text: str) -> str:
    # Continuation lines line up under the first one.
    return text.replace("\n", "\n" + " " * 12)


def render(result: dict) -> str:
    """The human output of a RetrieveResult, grouped by tier."""
    lines = [f'Search Results for: "{result["provenance"]["query"]}"', RULE]
    pins = result["pins"]
    if pins:
        lines += ["", f"Pins ({len(pins)}):"]
        for n, item in enumerate(pins, 1):
            pin, target = item["pin"], item["target"]
            lines += ["", f"{n}. [PIN] {pin['id']}", f"   Type: {pin['targetType']}"]
            lines.append(f"   Content: {_content(target['content'])}")
            if pin["reason"]:
                lines.append(f"   Note: {_content(pin['reason'])}")
    summary = result.get("currentSummary")
    why = (result.get("explain") or {}).get("currentSummary")
    if summary is not None:
        lines += ["", "Current Summary:", ""]
        lines.append(f"{summary['id']} (confidence: {summary['confidence']:.2f})")
        lines.append(f"   Content: {_content(summary['content'])}")
        lines.append(f"   Capsule: {summary['capsuleId']}")
        lines.append(f"   Time: {format_time(summary['ts'])}")
        if why is not None:
            lines.append(f"   Why: {summary_reason(why)}")
    elif why is not None:
        lines += ["", f"Current Summary: none ({summary_reason(why)})"]
    candidates = result["candidates"]
    if candidates:
        lines += ["", f"Candidates ({len(candidates)}):"]
        for n, item in enumerate(candidates, 1):
            entity = item["entity"]
            etype = "observation" if "kind" in entity else "summary"
            lines += ["", f"{n}. {entity['id']} (score: {item['score']:.2f})"]
            lines.append(f"   Type: {etype}")
            lines.append(f"   Content: {_content(entity['content'])}")
            lines.append(f"   Time: {format_time(entity['ts'])}")
            if item.get("supersededBy"):
                lines.append(f"   Superseded by: {item['supersededBy']}")
            if "explain" in item:
                lines += explain_lines(item["score"], item["explain"])
    if not pins and summary is None and not candidates:
        lines += ["", "No results."]
    return "\n".join(lines) + "\n"


def summary_reason(why: dict) -> str:
    """Why a search shows its current summary, or none, in one line."""
    if why["rule"] == "session":
        return f"the latest summarised capsule of session {why['sessionId']}"
    if why["rule"] == "best answer":
        via = f", through {why['episodeFrom']}" if why.get("episodeFrom") else ""
        return (
            f"the best-scoring summary that answers the query (coverage {why['coverage']:.2f}"
            f" >= {why['threshold']:.2f}{via}) and that no later episode superseded"
        )
    return f"no summary answers the query with coverage >= {why['threshold']:.2f}"


def explain_lines(score: float, parts: dict) -> list[str]:
    """The parts of one candidate's score, as indented lines."""
    matched = ", ".join(
        f"{term} ({how['in']}, idf {how['idf']:.2f})" for term, how in parts["matched"].items()
    )
    bm25 = "no match" if parts["bm25"] is None else f"bm25 {parts['bm25']:.2f}"
    lines = [
        f"   Matched: {matched or 'none'}",
        f"   Score {score:.4f} = relevance {parts['relevance']:.4f}"
        f" + episode {parts['episode']:.4f} + recency {parts['recency']:.4f}"
        + (f" - superseded {-parts['supersession']:.4f}" if parts["supersession"] else ""),
        f"   Relevance: coverage {parts['coverage']:.2f}, {bm25},"
        f" kind weight {parts['kindWeight']:.2f}",
    ]
    if parts["episodeFrom"]:
        lines.append(f"   Episode: follows from {parts['episodeFrom']}")
    if parts["fixedBy"]:
        lines.append(f"   Fixed by: {parts['fixedBy']}")
    return lines


@click.command("reindex")
@click.option("--full", is_flag=True, help="Rebuild the whole index from the files.")
@progress_options
@json_option
@click.pass_context
def reindex_cmd(ctx, full, json_) -> None:
    """Bring the index up to date with the files; exit 1 when some files cannot be read.

    \b
    Example:
      kindling reindex
      kindling reindex --full --json
    """
    memory = open_memory(ctx)
    with progress_bars(ctx, json_=json_) as progress:
        report = memory.reindex(full=full, progress=progress)
    if json_:
        echo_json(report.as_dict())
    else:
        total = report.added + report.updated + report.unchanged
        echo(
            f"Indexed {total} {'entity' if total == 1 else 'entities'}: {report.added} added, "
            f"{report.updated} updated, {report.removed} removed, {report.unchanged} unchanged."
        )
        if report.problems:
            echo(f"Problem files ({len(report.problems)}), left untouched:")
            for problem in report.problems:
                echo(f"  {problem.path}: {problem.reason}")
    if report.problems:
        ctx.exit(1)
