"""Size, load time and filter time of the `kindling browse` page, in headless Chromium.

    python bench/bench_browse.py                      # 10,000 and 100,000 observations
    python bench/bench_browse.py --sizes 10000 --markdown

For each size it builds a store of plausible agent captures (commands with output, edits as
diffs, tool calls, errors, prompts; sessions as capsules, some summarised, a few pins), writes
the page, opens it and measures: the page's size; the load (navigation start to the load event,
and the page script's own time from parsing the data to the first rendered list); and several
filters, each from the keystroke or selection to the finished list, with the longest task that
held the main thread meanwhile (what a person would feel as a freeze).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kindling.store import Store  # noqa: E402

WORDS = (
    "jwt token expiry middleware validate seconds milliseconds refresh session cache request "
    "header auth retry timeout handler config deploy migration index query limiter"
).split()
FILES = [f"src/{a}/{b}.ts" for a in ("auth", "api", "db", "jobs") for b in WORDS[:12]]
TOOLS = ("Grep", "Glob", "Read", "WebFetch", "Task")
PER_CAPSULE = 200
CHROME_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _capture(rng: random.Random, i: int) -> tuple[str, str, dict]:
    """(kind, content, provenance) shaped like what the Claude Code hooks record."""
    base = {"source": "claude-code", "hook": "PostToolUse", "toolUseId": f"toolu_{i:08d}"}
    pick = i % 5
    if pick == 0:
        command = f"npm test -- {rng.choice(WORDS)}"
        lines = [
            f"  {'ok' if rng.random() < 0.9 else 'FAIL'} {k} {_words(rng, 6)}"
            for k in range(rng.randint(1, 60))
        ]
        return (
            "command",
            f"$ {command}\n" + "\n".join(lines),
            {**base, "tool": "Bash", "command": command},
        )
    if pick == 1:
        path = rng.choice(FILES)
        body = []
        for _ in range(rng.randint(1, 3)):
            start = rng.randint(1, 400)
            body.append(f"@@ -{start},4 +{start},4 @@")
            body += [
                f"   {_words(rng, 5)}",
                f"-  {_words(rng, 6)}",
                f"+  {_words(rng, 6)}",
                f"   {_words(rng, 4)}",
            ]
        text = f"--- a/{path}\n+++ b/{path}\n" + "\n".join(body) + "\n"
        return "file_diff", text, {**base, "tool": rng.choice(("Edit", "Write")), "file": path}
    if pick == 2:
        tool = rng.choice(TOOLS)
        return (
            "tool_call",
            f"{tool} {_words(rng, 3)}\n{_words(rng, rng.randint(5, 60))}",
            {**base, "tool": tool},
        )
    if pick == 3:
        code = f"E{rng.randint(1000, 9999)}"
        return (
            "error",
            f"$ npm run build\nBash failed: {code} {_words(rng, 12)}",
            {**base, "hook": "PostToolUseFailure", "tool": "Bash"},
        )
    return (
        "message",
        _words(rng, rng.randint(8, 80)),
        {"source": "claude-code", "hook": "UserPromptSubmit", "role": "user"},
    )


def build_store(root: Path, n: int, seed: int = 7) -> dict:
    """A store of `n` observations in sessions of PER_CAPSULE; returns what it holds."""
    rng = random.Random(seed)
    store = Store.create(root)
    t0 = 1_780_000_000_000
    counts = {"observations": n, "capsules": 0, "summaries": 0, "pins": 0}
    members: list[str] = []
    for i in range(n):
        session = f"session-{i // PER_CAPSULE:04d}"
        kind, content, prov = _capture(rng, i)
        oid = f"{rng.getrandbits(64):016x}-{i:07d}"
        store.write(
            "observations",
            {
                "id": oid,
                "kind": kind,
                "content": content,
                "provenance": prov,
                "ts": t0 + i * 1000,
                "scopeIds": {"sessionId": session, "repoId": "bench", "agentId": "claude-code"},
                "redacted": False,
            },
            durable=False,
        )
        members.append(oid)
        if len(members) == PER_CAPSULE or i == n - 1:
            _close_session(store, rng, session, members, t0 + i * 1000, counts)
            members = []
    store.sync_to_disk()
    return counts


def _close_session(store: Store, rng, session: str, members: list, ts: int, counts: dict) -> None:
    number = counts["capsules"]
    cap_id, sum_id = f"cap_{number:032x}", f"sum_{number:032x}"
    summarised = number % 3 == 0
    scope = {"sessionId": session, "repoId": "bench"}
    capsule = {
        "id": cap_id,
        "type": "session",
        "intent": f"work on {_words(rng, 4)}",
        "status": "closed" if summarised else "open",
        "openedAt": ts - len(members) * 1000,
        "scopeIds": scope,
        "observationIds": list(members),
    }
    if summarised:
        capsule.update(closedAt=ts, summaryId=sum_id)
        store.write(
            "summaries",
            {
                "id": sum_id,
                "content": f"Fixed {_words(rng, 10)}",
                "confidence": 0.8,
                "evidenceRefs": members[:2],
                "capsuleId": cap_id,
                "ts": ts,
                "scopeIds": scope,
            },
            durable=False,
        )
        counts["summaries"] += 1
    store.write("capsules", capsule, durable=False)
    counts["capsules"] += 1
    if number % 10 == 0:
        store.write(
            "pins",
            {
                "id": f"pin_{number:032x}",
                "targetType": "observation",
                "targetId": members[0],
                "reason": "keep handy",
                "createdAt": ts,
                "expiresAt": None,
                "scopeIds": scope,
            },
            durable=False,
        )
        counts["pins"] += 1


# ---------------------------------------------------------------- the browser side


def open_browser(profile: Path):
    """A headless Chromium driven by chromedriver (Debian's chromium and chromium-driver)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in CHROME_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={profile}")
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


def load(driver, page: Path) -> dict:
    """Open the page; navigation-to-load-event and the script's own time, in ms."""
    driver.get(page.as_uri())
    # driver.get can return before a large file:// page has run its script.
    while not driver.execute_script(
        "return document.readyState === 'complete' && !!document.body.dataset.loadMs"
    ):
        time.sleep(0.01)
    nav = driver.execute_script(
        "var n = performance.getEntriesByType('navigation')[0];"
        "return [n.loadEventEnd, Number(document.body.dataset.loadMs)];"
    )
    driver.execute_script(
        "window.longest = 0; new PerformanceObserver(function (l) { l.getEntries().forEach("
        "function (e) { window.longest = Math.max(window.longest, e.duration); }); })"
        ".observe({type: 'longtask'});"
    )
    return {"load_ms": nav[0], "script_ms": nav[1]}


def filtered(driver, action) -> dict:
    """Run `action` (a keystroke or a choice), wait for the list; elapsed ms and longest task."""
    runs = driver.execute_script("window.longest = 0; return document.body.dataset.filterRuns")
    start = time.perf_counter()
    action()
    deadline = start + 120
    while driver.execute_script("return document.body.dataset.filterRuns") == runs:
        if time.perf_counter() > deadline:
            raise TimeoutError("the filter never finished")
        time.sleep(0.005)
    elapsed = (time.perf_counter() - start) * 1000
    time.sleep(0.3)  # long-task entries reach their observer a little after the task
    info = driver.execute_script(
        "return [Number(document.body.dataset.filterMs), window.longest,"
        " document.getElementById('match-count').textContent];"
    )
    return {
        "wall_ms": elapsed,
        "filter_ms": info[0],
        "longest_task_ms": info[1],
        "matches": info[2],
    }


def set_filter(driver, element_id: str, value: str):
    """An action that sets a filter control the way a person would."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    def act():
        node = driver.find_element(By.ID, element_id)
        if node.tag_name == "select":
            Select(node).select_by_value(value)
        else:
            node.clear()
            node.send_keys(value)

    return act


def option_value(driver, select_id: str, label_start: str) -> str:
    return driver.execute_script(
        "var start = arguments[1];"
        "var o = Array.from(document.getElementById(arguments[0]).options).find("
        "  function (o) { return o.textContent.indexOf(start) === 0; });"
        "return o ? o.value : '';",
        select_id,
        label_start,
    )


def measure(n: int, work: Path, runs: int) -> list[tuple[str, str]]:
    from selenium.webdriver.common.by import By

    from kindling.browse import write_page
    from kindling.memory import Memory

    root = work / f"store-{n}"
    start = time.perf_counter()
    build_store(root, n)
    built = time.perf_counter() - start
    page = work / f"browse-{n}.html"
    with Memory(root) as memory:
        memory.fresh()
        start = time.perf_counter()
        write_page(memory, page)
        written = time.perf_counter() - start
    rows = [
        ("store built (s, not part of the page)", f"{built:.1f}"),
        ("kindling browse: collect + write page (s)", f"{written:.2f}"),
        ("page size (MiB)", f"{page.stat().st_size / 2**20:.1f}"),
    ]
    driver = open_browser(work / f"profile-{n}")
    try:
        loads = [load(driver, page) for _ in range(runs)]
        rows.append(
            (
                "load: navigation to load event (ms, median)",
                f"{statistics.median(x['load_ms'] for x in loads):.0f}",
            )
        )
        rows.append(
            (
                "load: page script, parse to first list (ms, median)",
                f"{statistics.median(x['script_ms'] for x in loads):.0f}",
            )
        )
        clear = driver.find_element(By.ID, "f-clear").click
        cases = [
            ("text 'e42' (a rare error code)", "search", "e42"),
            ("text 'token expiry'", "search", "token expiry"),
            ("text cleared", "search", " "),
            ("kind file_diff", "f-kind", option_value(driver, "f-kind", "file_diff")),
            ("and file 'auth/'", "f-file", "auth/"),
            ("cleared, then tool Bash", "f-tool", option_value(driver, "f-tool", "Bash")),
            (
                "and session session-0003",
                "f-session",
                option_value(driver, "f-session", "session-0003"),
            ),
        ]
        for label, element, value in cases:
            if label.startswith("cleared"):
                filtered(driver, clear)
            r = filtered(driver, set_filter(driver, element, value))
            rows.append(
                (
                    f"filter: {label} (ms, wall / in page / longest task)",
                    f"{r['wall_ms']:.0f} / {r['filter_ms']:.0f} / {r['longest_task_ms']:.0f}"
                    f"  ({r['matches']})",
                )
            )
    finally:
        driver.quit()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="observation counts")
    parser.add_argument("--runs", type=int, default=3, help="page loads per size (median)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kindling-bench-browse-"))
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            print(f"{n:,} observations ...", file=sys.stderr)
            rows = measure(n, work, args.runs)
            if args.markdown:
                print(f"\n| {n:,} observations | value |\n|---|---:|")
            for label, value in rows:
                print(
                    f"| {label} | {value} |" if args.markdown else f"{n:>7,}  {label:<70} {value}"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
