"""Replay the corpus through `kindling hook` into one shared store, once per corpus version.

Every repository of repos.json gets a folder with `git init` and its `origin` remote, so
Kindling names it by the origin (github.com/acme/api). One store outside all of them holds
the memory of every repository, as KINDLING_STORE would. Each episode's sessions and the
seeded routine sessions (routine.py) are expanded into hook payloads (feed.py) and fed,
every call of every session in time order, through `run_hook` (exactly what
`kindling hook EVENT` does) with KINDLING_NOW set to the call's time. While feeding, the id
each labelled event recorded is kept: `<key>#<s>.<e>`; afterwards `<key>#summary` is looked
up through the capsule of the episode's last session. The result is cached under
`.cache/<hash>/` (build.json: the store, the repository folders and the ref map).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import feed
import routine

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
CACHE = HERE / ".cache"
KINDLING_ROOT = HERE.parent.parent / "kindling"
# Code whose change changes the store: this folder's build code, and the Kindling modules
# that turn a hook payload into what is stored.
BUILD_CODE = ("build.py", "feed.py", "routine.py")
CAPTURE_CODE = (
    "agents/hooks.py",
    "agents/records.py",
    "agents/digest.py",
    "agents/summary.py",
    "agents/summary_text.py",
    "agents/payload.py",
)
MANIFEST = "build.json"


def data_files(data_dir: Path) -> list[Path]:
    """The files the store is built from: repos.json and every episodes_*.json."""
    return [data_dir / "repos.json", *sorted(data_dir.glob("episodes_*.json"))]


def corpus_hash(data_dir: Path) -> str:
    """A short hash of the data files and the code that builds the store from them."""
    digest = hashlib.sha256()
    inputs = [*data_files(data_dir), *(HERE / n for n in BUILD_CODE)]
    inputs += [KINDLING_ROOT / n for n in CAPTURE_CODE if (KINDLING_ROOT / n).exists()]
    for path in inputs:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def load_repos(data_dir: Path) -> list[dict]:
    repos = json.loads((data_dir / "repos.json").read_text(encoding="utf-8"))
    names = [r["name"] for r in repos]
    if len(set(names)) != len(names):
        raise feed.CorpusError("repos.json names a repository twice")
    return repos


def load_episodes(data_dir: Path, repos: list[dict]) -> tuple[list[dict], list[str]]:
    """(replayable episodes of every episodes_*.json, a problem line for each one left out)."""
    names = {r["name"] for r in repos}
    episodes, problems, seen = [], [], set()
    for path in sorted(data_dir.glob("episodes_*.json")):
        try:
            listed = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            problems.append(f"{path.name}: not JSON ({exc})")
            continue
        for episode in listed if isinstance(listed, list) else [listed]:
            try:
                feed.check_episode(episode, names)
            except feed.CorpusError as exc:
                problems.append(f"{path.name}: {exc}; left out")
                continue
            if episode["key"] in seen:
                problems.append(f"{path.name}: {episode['key']}: key used twice; left out")
                continue
            seen.add(episode["key"])
            episodes.append(episode)
    keys = {e["key"]: e for e in episodes}
    for episode in episodes:
        old = episode.get("supersedes")
        if old is not None and (old not in keys or keys[old]["repo"] != episode["repo"]):
            problems.append(f"{episode['key']}: supersedes {old!r}, no episode of its repository")
    return episodes, problems


def _git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_repo(folder: Path, origin: str) -> None:
    """An empty git repository whose origin remote is `origin`."""
    folder.mkdir(parents=True)
    _git("init", "-q", cwd=folder)
    _git("remote", "add", "origin", origin, cwd=folder)


@contextlib.contextmanager
def environment(**values: str | None):
    """Set (or, for None, remove) environment variables; restore them afterwards."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def schedule(sessions: list[dict], folders: dict[str, Path]) -> list[feed.Call]:
    """Every hook call of every episode and routine session, in time order.

    Sessions are taken in order of their start; calls made at the same moment keep that order.
    """
    ordered = sorted(sessions, key=lambda e: (feed.parse_time(e["start"]), e["key"]))
    calls = []
    for rank, episode in enumerate(ordered):
        for step, call in enumerate(feed.timeline(episode, folders[episode["repo"]])):
            calls.append((call.ts, rank, step, call))
    calls.sort(key=lambda item: item[:3])
    return [call for *_, call in calls]


def build(data_dir: Path, target: Path, *, log=None) -> dict:
    """Create the repositories and the store under `target`, feed the corpus; the manifest."""
    from kindling.agents.hooks import run_hook
    from kindling.memory import Memory
    from kindling.repo_identity import identify

    began = time.monotonic()
    repos = load_repos(data_dir)
    episodes, problems = load_episodes(data_dir, repos)
    routines = routine.generate(repos, episodes)
    folders = {r["name"]: target / "repos" / r["name"] for r in repos}
    for repo in repos:
        make_repo(folders[repo["name"]], repo["origin"])
    store = target / "store"
    calls = schedule(episodes + routines, folders)
    refs: dict[str, str] = {}
    failures: list[str] = []
    with environment(
        KINDLING_STORE=str(store),
        KINDLING_AUTOWATCH="0",
        CLAUDE_PROJECT_DIR=None,
        KINDLING_NOW=None,
    ):
        Memory.init(store=store).close()
        for number, call in enumerate(calls, start=1):
            os.environ["KINDLING_NOW"] = str(call.ts)
            data = json.dumps(call.payload, ensure_ascii=False).encode()
            result = run_hook(call.event, data, store=str(store))
            if result.message and "masked" not in result.message:
                failures.append(f"{call.ref or call.event}: {result.message}")
            if call.ref is not None and result.recorded is not None:
                refs[call.ref] = result.recorded
            if log and number % 500 == 0:
                log(f"  fed {number}/{len(calls)} hook calls")
        os.environ["KINDLING_NOW"] = str(feed.ms(feed.NOW))
        with Memory(store) as memory:
            for episode in episodes:
                last = feed.session_id(episode["key"], len(episode["sessions"]) - 1)
                for capsule in memory.list("capsules", scope={"sessionId": last}, limit=None):
                    if capsule.get("summaryId"):
                        refs[f"{episode['key']}#summary"] = capsule["summaryId"]
            counts = {
                t: len(memory.list(t, limit=None))
                for t in ("observations", "capsules", "summaries")
            }
    manifest = {
        "store": str(store),
        "repos": {
            name: {"folder": str(folder), "id": identify(folder).id}
            for name, folder in folders.items()
        },
        "refs": refs,
        "episodes": {
            e["key"]: {
                "repo": e["repo"],
                "sessions": len(e["sessions"]),
                "events": [len(s["events"]) for s in e["sessions"]],
                "supersedes": e.get("supersedes"),
            }
            for e in episodes
        },
        "routine_sessions": len(routines),
        "routine_observations": sum(len(r["sessions"][0]["events"]) for r in routines),
        "hook_calls": len(calls),
        "counts": counts,
        "problems": problems + failures,
        "build_seconds": round(time.monotonic() - began, 1),
    }
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def cached(data_dir: Path = DATA, cache: Path = CACHE, *, rebuild: bool = False, log=None) -> dict:
    """The manifest of the store for the current corpus, built on first use and then reused."""
    target = cache / corpus_hash(data_dir)
    done = target / MANIFEST
    if done.exists() and not rebuild:
        return json.loads(done.read_text(encoding="utf-8"))
    cache.mkdir(parents=True, exist_ok=True)
    # Stores of older corpus versions are never read again.
    for old in cache.iterdir():
        if old.is_dir():
            shutil.rmtree(old)
    if log:
        log(f"building the store under {target} ...")
    return build(data_dir, target, log=log)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent.parent))
    found = cached(rebuild="--rebuild" in sys.argv, log=lambda m: print(m, file=sys.stderr))
    print(json.dumps({k: v for k, v in found.items() if k not in ("refs", "episodes")}, indent=2))
