"""The recall evaluation's harness on a tiny corpus written here: build, ref map, metrics."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

EVAL_DIR = Path(__file__).resolve().parent.parent / "evals" / "recall"
# evals/retrieval has modules of the same names (build, metrics, baselines): load ours under
# their names for a moment and put back whatever was there, so both tests run in one session.
NAMES = ("baselines", "build", "feed", "metrics", "routine", "run")


def _load():
    saved = {n: sys.modules.pop(n) for n in NAMES if n in sys.modules}
    sys.path.insert(0, str(EVAL_DIR))
    try:
        return {n: importlib.import_module(n) for n in NAMES}
    finally:
        sys.path.remove(str(EVAL_DIR))
        for name in NAMES:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


M = _load()
build, feed, metrics, routine, run = M["build"], M["feed"], M["metrics"], M["routine"], M["run"]

REPOS = [
    {"name": "api", "origin": "git@github.com:acme/api.git", "routine_sessions": 2},
    {"name": "tools", "origin": "https://gitlab.com/acme/tools.git", "routine_sessions": 1},
]
OLD_FIX = "Wrapped the quokkasync call in a retry; the zebrafish lock error went away for now."
NEW_FIX = (
    "Root cause of the zebrafish lock error: two quokkasync workers share one sqlite file. "
    "Gave each worker its own file; the retry is gone."
)
EPISODES = [
    {
        "key": "api-zebrafish-retry",
        "source": "https://github.com/example/example/issues/1",
        "repo": "api",
        "start": "2026-05-04T10:00:00Z",
        "supersedes": None,
        "sessions": [
            {
                "after_hours": 0,
                "ends": "end",
                "events": [
                    ["prompt", "quokkasync fails with zebrafish lock error under load"],
                    [
                        "bash_fail",
                        "pytest tests/test_sync.py -q",
                        "E   ZebrafishLockError: database is locked",
                        1,
                    ],
                    ["read", "src/app/sync.py"],
                    ["edit", "src/app/sync.py", "quokkasync(job)", "retry(quokkasync, job)"],
                    ["bash", "pytest tests/test_sync.py -q", "6 passed in 0.4s"],
                    ["stop", OLD_FIX],
                ],
            }
        ],
    },
    {
        "key": "api-zebrafish-own-file",
        "source": "https://github.com/example/example/issues/2",
        "repo": "api",
        "start": "2026-06-10T09:00:00Z",
        "supersedes": "api-zebrafish-retry",
        "sessions": [
            {
                "after_hours": 0,
                "ends": "crash",
                "events": [
                    ["prompt", "the zebrafish lock error is back"],
                    ["grep", "quokkasync", "src/app/sync.py:12:    retry(quokkasync, job)"],
                    ["stop", "Both workers open the same sqlite file."],
                ],
            },
            {
                "after_hours": 26,
                "ends": "end",
                "events": [
                    ["prompt", "give each worker its own file"],
                    [
                        "edit",
                        "src/app/sync.py",
                        "retry(quokkasync, job)",
                        "quokkasync(job, own_db)",
                    ],
                    ["write", "docs/sync.md", "Each quokkasync worker has its own sqlite file.\n"],
                    ["stop", NEW_FIX],
                ],
            },
        ],
    },
    {
        "key": "tools-release-tag",
        "source": "https://github.com/example/example/issues/3",
        "repo": "tools",
        "start": "2026-05-20T14:00:00Z",
        "supersedes": None,
        "sessions": [
            {
                "after_hours": 0,
                "ends": "end",
                "events": [
                    ["prompt", "goreleaser refuses the tag wombatrelease"],
                    [
                        "bash_fail",
                        "goreleaser release",
                        "error=git tag wombatrelease is not semver",
                    ],
                    ["stop", "Tags must be semver: renamed wombatrelease to v1.4.0."],
                ],
            }
        ],
    },
]
PROBES = [
    {
        "id": "api-zebrafish-question",
        "repo": "api",
        "style": "question",
        "prompt": "why two quokkasync workers zebrafish sqlite",
        "answers": ["api-zebrafish-own-file#summary", "api-zebrafish-own-file#1.3"],
        "superseded": ["api-zebrafish-retry#summary", "api-zebrafish-retry#0.5"],
    },
    {
        "id": "tools-wombat-error",
        "repo": "tools",
        "style": "error",
        "prompt": "error=git tag wombatrelease is not semver",
        "answers": ["tools-release-tag#0.2", "tools-release-tag#5.0"],
        "superseded": [],
    },
    {
        "id": "tools-nothing-left",
        "repo": "tools",
        "style": "ci",
        "prompt": "the release job is red",
        "answers": ["tools-no-such-episode#summary"],
        "superseded": [],
    },
    {
        "id": "api-unrelated",
        "repo": "api",
        "style": "unrelated",
        "prompt": "xylophonic gargantuan",
        "answers": [],
        "superseded": [],
    },
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    (data / "repos.json").write_text(json.dumps(REPOS))
    (data / "episodes_t.json").write_text(json.dumps(EPISODES))
    (data / "probes_t.json").write_text(json.dumps(PROBES))
    cache = tmp_path_factory.mktemp("cache")
    manifest = build.cached(data, cache)
    return data, cache, manifest


def _entity(manifest, entity_id):
    from kindling.memory import Memory

    with Memory(manifest["store"]) as memory:
        return memory.get(entity_id).entity


# ---------------------------------------------------------------- build


def test_every_ref_resolves_to_what_its_event_recorded(corpus):
    _, _, manifest = corpus
    refs = manifest["refs"]
    wanted = {f"{e['key']}#summary" for e in EPISODES}
    for episode in EPISODES:
        for s, session in enumerate(episode["sessions"]):
            wanted |= {f"{episode['key']}#{s}.{e}" for e in range(len(session["events"]))}
    assert set(refs) == wanted  # routine sessions are not labelled
    assert len(set(refs.values())) == len(refs)
    assert manifest["problems"] == []
    stop = _entity(manifest, refs["api-zebrafish-own-file#1.3"])
    assert (stop["kind"], stop["content"]) == ("message", NEW_FIX)
    diff = _entity(manifest, refs["api-zebrafish-own-file#1.1"])
    assert diff["kind"] == "file_diff" and "+quokkasync(job, own_db)" in diff["content"]
    failed = _entity(manifest, refs["tools-release-tag#0.1"])
    assert failed["kind"] == "error" and failed["content"].startswith(
        "Bash: goreleaser release -> exit 1\n"
    )
    # The summary of the episode's last session; the crashed first one closed on its own.
    summary = _entity(manifest, refs["api-zebrafish-own-file#summary"])
    assert f"\nLast message: {NEW_FIX} [" in summary["content"]
    assert summary["scopeIds"]["sessionId"] == feed.session_id("api-zebrafish-own-file", 1)


def test_repositories_are_named_by_their_origin_and_share_one_store(corpus):
    _, cache, manifest = corpus
    ids = {name: repo["id"] for name, repo in manifest["repos"].items()}
    assert ids == {"api": "github.com/acme/api", "tools": "gitlab.com/acme/tools"}
    store = Path(manifest["store"])
    for repo in manifest["repos"].values():
        assert not store.is_relative_to(repo["folder"])
    stop = _entity(manifest, manifest["refs"]["tools-release-tag#0.2"])
    assert stop["scopeIds"]["repoId"] == "gitlab.com/acme/tools"
    assert manifest["counts"]["capsules"] == 2 + 1 + 1 + 3  # every session, routine included


def test_routine_sessions_come_after_each_repositorys_last_episode(corpus):
    _, _, manifest = corpus
    made = routine.generate(REPOS, EPISODES)
    assert [r["key"] for r in made] == ["routine-api-000", "routine-api-001", "routine-tools-000"]
    assert made == routine.generate(REPOS, EPISODES)  # same seed, same sessions
    assert manifest["routine_sessions"] == 3
    for repo in ("api", "tools"):
        last = routine.last_episode_end(repo, EPISODES)
        starts = [feed.parse_time(r["start"]) for r in made if r["repo"] == repo]
        assert all(last < at < feed.ms(feed.NOW) for at in starts)
    assert routine.language("api", EPISODES) == "python"
    for session in made:
        for e, event in enumerate(session["sessions"][0]["events"]):
            feed.check_event(event, f"{session['key']}.{e}")


def test_the_cache_is_reused_until_the_data_changes(corpus):
    data, cache, manifest = corpus
    assert build.cached(data, cache) == manifest
    assert [p.name for p in cache.iterdir()] == [build.corpus_hash(data)]


def test_events_expand_to_claude_code_payloads(tmp_path):
    hook, body = feed.payload(["bash_fail", "npm test", "FAIL x", 2], tmp_path, "s1", "toolu_1")
    assert hook == "PostToolUseFailure"
    assert body["error"] == "Exit code 2\nFAIL x"
    assert body["tool_input"]["command"] == "npm test"
    assert body["cwd"] == str(tmp_path) and body["hook_event_name"] == hook
    hook, body = feed.payload(["edit", "a.py", "x = 1\n", "x = 2\n"], tmp_path, "s1", "t2")
    assert body["tool_input"]["file_path"] == str(tmp_path / "a.py")
    (hunk,) = body["tool_response"]["structuredPatch"]
    assert hunk["lines"] == ["-x = 1", "+x = 2"]
    calls = feed.timeline({**EPISODES[1], "key": "k"}, tmp_path)
    assert [c.event for c in calls] == [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "Stop",
        # no SessionEnd: the first session crashed
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ]
    gaps = [
        b.ts - a.ts for a, b in zip(calls[:-1], calls[1:], strict=True) if b.event != "SessionStart"
    ]
    assert all(60_000 <= g <= 180_000 for g in gaps)
    assert calls[4].ts - calls[0].ts == 26 * 3_600_000


# ---------------------------------------------------------------- metrics


def test_reciprocal_rank_and_superseded_first_by_hand():
    ranking = ["x", "old", "y", "new"]
    assert metrics.reciprocal_rank(ranking, ["new"]) == 0.25
    assert metrics.reciprocal_rank(ranking, ["new"], depth=3) == 0.0
    assert metrics.superseded_first(ranking, ["new"], ["old"]) is True
    assert metrics.superseded_first(ranking, ["new", "y"], ["old", "gone"]) is True
    assert metrics.superseded_first(["new", "old"], ["new"], ["old"]) is False
    assert metrics.superseded_first(["x"], ["new"], ["old"]) is False  # neither shown
    assert metrics.superseded_first(ranking, ["new"], []) is None
    assert metrics.superseded_bad(["old"], ["new"], ["old"]) is True  # shown without an answer
    assert metrics.superseded_bad(["new", "old"], ["new"], ["old"]) is False
    assert metrics.superseded_bad([], ["new"], ["old"]) is False


def test_rows_and_their_summary_by_hand():
    repo_of = {"a": "r", "b": "r", "c": "other", "d": "r"}.get
    first = {
        "recall": metrics.recall_row(["c", "a"], ["a"], [], repo_of, "r"),
        "search": metrics.search_row(["b", "a"], ["a"], [], repo_of, "r"),
    }
    assert first["recall"] == {"answer": True, "items": 2, "crossRepo": 1, "supersededBad": None}
    assert first["search"] == {"rr": 0.5, "supersededFirst": None, "crossRepo": 0}
    second = {
        "recall": metrics.recall_row(["b"], ["a"], ["b"], repo_of, "r"),
        "search": metrics.search_row(["b", "d", "a"], ["a"], ["b"], repo_of, "r"),
    }
    unrelated = {
        "recall": metrics.recall_row(["d"], [], [], repo_of, "r"),
        "search": metrics.search_row(["d", "c"], [], [], repo_of, "r"),
    }
    got = metrics.summarise([first, second, unrelated])
    assert got == {
        "n": 3,
        "withAnswers": 2,
        "withSuperseded": 1,
        "recallAnswerRate": 0.5,
        "recallItems": 4 / 3,
        "injectedShare": 1.0,
        "recallSupersededBad": 1.0,
        "recallCrossRepo": 1,
        "mrr": (0.5 + 1 / 3) / 2,
        "supersededFirst": 1.0,
        "searchCrossRepo": 1,
    }
    assert metrics.summarise([])["mrr"] is None


def test_split_rule():
    # sha256 of the id as an integer, mod 10: a 9, b 5, c 8, d 0, e 0.
    assert [run.held_out(i) for i in "abcde"] == [False, False, False, True, True]
    assert [run.in_split(i, "dev") for i in "ad"] == [True, False]
    assert [run.in_split(i, "heldout") for i in "ad"] == [False, True]
    assert all(run.in_split(i, "all") for i in "ad")


# ---------------------------------------------------------------- run


def test_run_labels_and_scores_the_probes(corpus):
    data, cache, manifest = corpus
    report = run.evaluate("all", data_dir=data, cache=cache)
    refs = manifest["refs"]
    assert report["corpusErrors"] == ["tools-nothing-left: no answer left to score"]
    assert report["warnings"] == [
        "tools-wombat-error: answers ref tools-release-tag#5.0 unresolved "
        "(no such session or event in the episode)",
        "tools-nothing-left: answers ref tools-no-such-episode#summary unresolved "
        "(no replayed episode 'tools-no-such-episode')",
    ]
    by_id = {item["probe"]["id"]: item for item in report["per_probe"]}
    assert set(by_id) == {"api-zebrafish-question", "tools-wombat-error", "api-unrelated"}

    # The baseline by hand: only the failed run holds "error=git" and "wombatrelease" both...
    wombat = by_id["tools-wombat-error"]
    base = wombat["lists"]["fts5-or-porter"]
    assert set(base["search"]) == {
        refs["tools-release-tag#0.0"],
        refs["tools-release-tag#0.1"],
        refs["tools-release-tag#0.2"],
        refs["tools-release-tag#summary"],
    }
    assert base["recall"] == base["search"][:3]
    rank = base["search"].index(refs["tools-release-tag#0.2"]) + 1
    assert wombat["rows"]["fts5-or-porter"]["search"]["rr"] == 1 / rank
    # ... and no word of the unrelated probe is anywhere: nothing to inject, for either system.
    for name in run.SYSTEMS:
        assert by_id["api-unrelated"]["rows"][name]["recall"]["items"] == 0
    assert wombat["rows"]["kindling"]["recall"]["crossRepo"] == 0

    # Kindling: the distinctive words find the new fix; the rows follow from the lists.
    zebra = by_id["api-zebrafish-question"]
    answers = {refs["api-zebrafish-own-file#summary"], refs["api-zebrafish-own-file#1.3"]}
    assert zebra["probe"]["answerIds"] == [
        refs["api-zebrafish-own-file#summary"],
        refs["api-zebrafish-own-file#1.3"],
    ]
    got = zebra["lists"]["kindling"]
    assert answers & set(got["search"])
    first = min(got["search"].index(a) for a in answers if a in got["search"]) + 1
    assert zebra["rows"]["kindling"]["search"]["rr"] == 1 / first
    assert zebra["rows"]["kindling"]["recall"]["answer"] == bool(answers & set(got["recall"]))

    overall = report["systems"]["kindling"]["overall"]
    assert overall["n"] == 3 and overall["withAnswers"] == 2 and overall["withSuperseded"] == 1
    rrs = [by_id[p]["rows"]["kindling"]["search"]["rr"] for p in ("api-zebrafish-question",)]
    rrs.append(wombat["rows"]["kindling"]["search"]["rr"])
    assert overall["mrr"] == pytest.approx(sum(rrs) / 2)
    assert set(report["systems"]["kindling"]["by_style"]) == {"question", "error", "unrelated"}
    text = run.table(report)
    assert "unrelated probes (kindling): " in text
