"""Bytes recorded per tool call, on the recall corpus replayed as Claude Code payloads.

Every PostToolUse / PostToolUseFailure payload of evals/recall (its episodes and the seeded
routine sessions, exactly as evals/recall/feed.py expands them) goes through
kindling.agents.records.tool_record, and the observation file it becomes is encoded as the
store writes it (canonical JSON, a 36-character id, the hooks' scope). The corpus gives a
Read no file text, so each Read is handed a real source file of this checkout (chosen by a
hash of the path read, cut to the lines a Read of that size returns), as Claude Code would.

    python bench/bench_record_bytes.py            # table by tool
    python bench/bench_record_bytes.py --json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evals" / "recall"))

import build  # noqa: E402
import routine  # noqa: E402

from kindling import canonical  # noqa: E402
from kindling.agents.records import tool_record  # noqa: E402

SOURCES = sorted(p for p in (ROOT / "kindling").rglob("*.py") if p.stat().st_size > 2_000)
READ_LINES = 2_000  # what a Read without limit returns at most


def with_file_text(body: dict) -> dict:
    """A Read payload given the text of a real file, as Claude Code's response carries it."""
    path = body["tool_input"]["file_path"]
    pick = int(hashlib.sha256(path.encode()).hexdigest(), 16) % len(SOURCES)
    lines = SOURCES[pick].read_text(encoding="utf-8").splitlines()[:READ_LINES]
    text = "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(lines, 1))
    file = {"filePath": path, "content": text, "numLines": len(lines), "startLine": 1}
    file["totalLines"] = len(lines)
    return {**body, "tool_response": {"type": "text", "file": file}}


def tool_calls() -> list[tuple[str, dict]]:
    repos = build.load_repos(build.DATA)
    episodes, _ = build.load_episodes(build.DATA, repos)
    sessions = episodes + routine.generate(repos, episodes)
    folders = {r["name"]: Path("/home/dev/src") / r["name"] for r in repos}
    calls = []
    for call in build.schedule(sessions, folders):
        if call.event not in ("PostToolUse", "PostToolUseFailure"):
            continue
        body = call.payload
        if body.get("tool_name") == "Read":
            body = with_file_text(body)
        calls.append((call.event, body))
    return calls


def measure() -> dict:
    sizes: dict[str, list[int]] = defaultdict(list)
    for n, (event, body) in enumerate(tool_calls()):
        record = tool_record(event, body)
        if record is None:
            continue
        entity = {
            "id": f"{n:08x}-0000-4000-8000-000000000000",
            "kind": record.kind,
            "content": record.content,
            "provenance": record.provenance,
            "ts": 1_780_000_000_000 + n,
            "scopeIds": {
                "sessionId": body["session_id"],
                "repoId": "github.com/acme/api",
                "agentId": "claude-code",
            },
            "redacted": False,
        }
        tool = body["tool_name"] + (" (failed)" if event == "PostToolUseFailure" else "")
        sizes[tool].append(len(canonical.encode(entity)))
    every = [s for v in sizes.values() for s in v]
    return {
        "calls": len(every),
        "bytesPerCall": round(sum(every) / len(every)),
        "byTool": {
            t: {"calls": len(v), "bytesPerCall": round(sum(v) / len(v))}
            for t, v in sorted(sizes.items())
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'tool':<18} {'calls':>6} {'bytes/call':>11}")
    for tool, row in result["byTool"].items():
        print(f"{tool:<18} {row['calls']:>6} {row['bytesPerCall']:>11,}")
    print(f"{'all tool calls':<18} {result['calls']:>6} {result['bytesPerCall']:>11,}")


if __name__ == "__main__":
    main()
