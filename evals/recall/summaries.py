"""How well the closing summaries of the recall corpus's episodes say what happened.

On the store `run.py` builds (the same cache), two shares:

- fix stated: of the episodes whose probes list a fixing edit and a root-cause stop message
  among their answers, the share whose final summary (`<key>#summary`) names the file of a
  fixing edit and quotes the root cause: it holds at least half of the rarest words
  (RARE_WORDS, fewest episodes using them) of one of the listed stop messages.
- error still open: of the episodes whose first session crashed or ended with a failure no
  later run of the same command fixed, the share whose summary of that first session names
  it on its `Still failing:` line (the failing run, as the subject rule reads it).

    python evals/recall/summaries.py            # both shares, and every miss
    python evals/recall/summaries.py --json

Targets: 90% each.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent.parent))

import build  # noqa: E402
import feed  # noqa: E402

from kindling.index.traits import run_key  # noqa: E402
from kindling.memory import Memory  # noqa: E402

RARE_WORDS = 8
TARGET = 0.9
_WORD = re.compile(r"[a-z][a-z0-9_]{3,}")


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def episode_texts(episode: dict) -> str:
    return "\n".join(str(part) for s in episode["sessions"] for e in s["events"] for part in e[1:])


def event(episode: dict, ref: str) -> list | None:
    found = re.fullmatch(r".+#(\d+)\.(\d+)", ref)
    if not found:
        return None
    s, e = int(found.group(1)), int(found.group(2))
    try:
        return episode["sessions"][s]["events"][e]
    except IndexError:
        return None


def answers_by_episode(probes: list[dict]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for probe in probes:
        for ref in probe["answers"]:
            out.setdefault(ref.split("#", 1)[0], set()).add(ref)
    return out


def rare(text: str, df: dict[str, int]) -> list[str]:
    """The RARE_WORDS words of `text` that the fewest episodes use."""
    return sorted(words(text), key=lambda w: (df.get(w, 0), w))[:RARE_WORDS]


def open_failure(session: dict) -> tuple[str, str] | None:
    """The session's last failure that no later run of the same command passed: its command's
    first 40 characters and its run as the subject rule reads it."""
    still = None
    for kind, *rest in session["events"]:
        if kind == "bash_fail":
            still = (" ".join(rest[0].split())[:40], run_key(rest[0]))
        elif kind == "bash" and still is not None and run_key(rest[0]) == still[1]:
            still = None
    return still


def measure(manifest: dict, data_dir: Path) -> dict:
    repos = build.load_repos(data_dir)
    episodes, _ = build.load_episodes(data_dir, repos)
    probes = [p for f in sorted(data_dir.glob("probes_*.json")) for p in json.loads(f.read_text())]
    answers = answers_by_episode(probes)
    df: dict[str, int] = {}
    for episode in episodes:
        for w in words(episode_texts(episode)):
            df[w] = df.get(w, 0) + 1
    refs = manifest["refs"]
    fix = {"asked": 0, "stated": 0, "misses": []}
    still = {"asked": 0, "named": 0, "misses": []}
    with Memory(manifest["store"]) as memory:

        def summary_of(summary_id: str | None) -> str:
            return memory.get(summary_id).entity["content"] if summary_id else ""

        for episode in episodes:
            key = episode["key"]
            listed = [(ref, event(episode, ref)) for ref in sorted(answers.get(key, ()))]
            files = [e[1] for _, e in listed if e and e[0] in ("edit", "write")]
            stops = [e[1] for _, e in listed if e and e[0] == "stop"]
            if files and stops:
                fix["asked"] += 1
                text = summary_of(refs.get(f"{key}#summary"))
                named = any(f in text for f in files)
                have = words(text)
                quoted = any(2 * len(set(rare(s, df)) & have) >= len(rare(s, df)) for s in stops)
                if named and quoted:
                    fix["stated"] += 1
                else:
                    fix["misses"].append({"episode": key, "file": named, "cause": quoted})
            first = episode["sessions"][0]
            failing = open_failure(first)
            if first["ends"] == "crash" or failing is not None:
                if failing is None:
                    continue  # crashed with nothing failing: no error to name
                still["asked"] += 1
                session = feed.session_id(key, 0)
                capsules = memory.list("capsules", scope={"sessionId": session}, limit=None)
                text = summary_of(next((c.get("summaryId") for c in capsules), None))
                lines = [x for x in text.split("\n") if x.startswith("Still failing: ")]
                shown = " ".join(lines[0].split()) if lines else ""
                if lines and (failing[0] in shown or failing[1] in shown):
                    still["named"] += 1
                else:
                    still["misses"].append({"episode": key, "failing": failing[0]})
    return {"fix": fix, "still": still}


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.0%}" if whole else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--data", type=Path, default=build.DATA)
    args = parser.parse_args()
    manifest = build.cached(args.data, log=lambda m: print(m, file=sys.stderr))
    result = measure(manifest, args.data)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    fix, still = result["fix"], result["still"]
    print(f"final summary states the fix (file + root cause): {share(fix['stated'], fix['asked'])}")
    print(
        "first session's summary names the error still open: "
        f"{share(still['named'], still['asked'])}"
    )
    for miss in fix["misses"]:
        print(f"  fix not stated: {miss}")
    for miss in still["misses"]:
        print(f"  open error not named: {miss}")


if __name__ == "__main__":
    main()
