"""Everyday sessions, generated from a fixed seed, that bury the episodes under newer work.

Each repository gets `routine_sessions` of them (repos.json), spread over the time between
its last episode and NOW, in the same compact form as an episode (one session each): a
prompt for a small task, file reads, sometimes a grep, a small edit, a passing test run,
sometimes a flaky timeout that passes on a re-run or a lint failure that is then fixed, and a
stop message saying what was done. The language (paths, commands, outputs) follows the
repository: the extensions its episodes touch, else its name. A fifth of the reads are of
files the repository's episodes touched, as real work keeps coming back to the same files.
Nothing here looks at the probes.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta, timezone

import feed

SEED = 20261201
DAY_MS = 86_400_000
# Work starts at least this long after the repository's last episode, and ends before NOW.
AFTER_LAST_MS = DAY_MS
BEFORE_NOW_MS = 6 * 3_600_000
# When a repository has no episodes: routine work over the weeks before NOW.
DEFAULT_SPAN_MS = 56 * DAY_MS
CRASH_SHARE = 0.05
FLAKY_SHARE = 0.12
LINT_SHARE = 0.10
SECOND_TASK_SHARE = 0.25
EPISODE_PATH_SHARE = 0.2

MODULES = (
    "billing",
    "accounts",
    "export",
    "reports",
    "invoices",
    "notifications",
    "settings",
    "audit",
    "webhooks",
    "profiles",
    "pagination",
    "metrics",
    "scheduler",
    "storage",
    "uploads",
    "teams",
    "feeds",
    "tags",
)
IDENTS = (
    "page_size",
    "retry_count",
    "user_label",
    "row_count",
    "batch_len",
    "fmt_name",
    "tmp_items",
    "out_rows",
    "total_ms",
    "sort_key",
)

# Per language: how its files are named, and what its tests and linter print.
PROFILES: dict[str, dict] = {
    "python": {
        "paths": (
            "src/app/{m}/service.py",
            "src/app/{m}/models.py",
            "src/app/{m}/views.py",
            "src/app/cli/{m}.py",
            "tests/test_{m}.py",
            "README.md",
            "pyproject.toml",
        ),
        "test": ("pytest tests/test_{m}.py -q", "{n} passed in {t}s"),
        "all_tests": ("pytest -q", "{n} passed, 3 skipped in {t}s"),
        "flaky": (
            "FAILED tests/test_{m}.py::test_{m}_roundtrip - TimeoutError: timed out after 5.0s\n"
            "1 failed, {n} passed in {t}s"
        ),
        "lint": ("ruff check src", "All checks passed!"),
        "lint_fail": (
            "src/app/{m}/service.py:{l}:8: F401 [*] `typing.Any` imported but unused\n"
            "Found 1 error.\n[*] 1 fixable with the `--fix` option."
        ),
        "lint_fix": ("src/app/{m}/service.py", "from typing import Any\n", ""),
        "flag": (
            "src/app/cli/{m}.py",
            'parser.add_argument("--format", default="csv")',
            'parser.add_argument("--format", default="csv")\n'
            'parser.add_argument("--verbose", action="store_true", help="say more")',
        ),
        "rename": ("src/app/{m}/service.py", "{a} = len(items)", "{b} = len(items)"),
        "constant": ("src/app/{m}/service.py", "PAGE_SIZE = 50", "PAGE_SIZE = 100"),
        "log": (
            "src/app/{m}/views.py",
            'log.info("{m} done")',
            'log.info("{m} done", extra={{"request_id": request.id}})',
        ),
        "doc": ("src/app/{m}/models.py", '"""{m} model."""', '"""The {m} model and its fields."""'),
        "test_new": (
            "tests/test_{m}.py",
            "def test_{m}_defaults():\n    assert {m}.defaults() == {{}}\n",
        ),
        "grep": "src/app/{m}/service.py:{l}:    {a} = len(items)",
    },
    "node": {
        "paths": (
            "src/{m}/index.ts",
            "src/{m}/{M}View.tsx",
            "src/lib/{m}.ts",
            "src/cli/{m}.ts",
            "test/{m}.test.ts",
            "package.json",
            "README.md",
        ),
        "test": ("npm test -- {m}", "Tests:       {n} passed, {n} total\nTime:        {t} s"),
        "all_tests": ("npm test", "Test Suites: 42 passed, 42 total\nTests:       {n} passed"),
        "flaky": (
            'FAIL test/{m}.test.ts\n  ● {m} › loads the list\n\n    thrown: "Exceeded timeout of '
            '5000 ms for a test.\n    Add a timeout value to this test to increase the timeout."'
        ),
        "lint": ("npx eslint src", ""),
        "lint_fail": (
            "src/lib/{m}.ts\n  {l}:10  error  'unusedHelper' is defined but never used  "
            "@typescript-eslint/no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)"
        ),
        "lint_fix": ("src/lib/{m}.ts", "const unusedHelper = () => null;\n", ""),
        "flag": (
            "src/cli/{m}.ts",
            ".option('--format <fmt>', 'output format', 'csv')",
            ".option('--format <fmt>', 'output format', 'csv')\n"
            "  .option('--verbose', 'say more', false)",
        ),
        "rename": ("src/lib/{m}.ts", "const {a} = items.length;", "const {b} = items.length;"),
        "constant": (
            "src/lib/{m}.ts",
            "export const PAGE_SIZE = 50;",
            "export const PAGE_SIZE = 100;",
        ),
        "log": (
            "src/{m}/index.ts",
            "logger.info('{m} done');",
            "logger.info('{m} done', {{ requestId: req.id }});",
        ),
        "doc": ("src/{m}/index.ts", "// {m}", "/** The {m} module: list, create, update. */"),
        "test_new": (
            "test/{m}.defaults.test.ts",
            "test('{m} defaults', () => {{\n  expect(defaults()).toEqual({{}});\n}});\n",
        ),
        "grep": "src/lib/{m}.ts:{l}:const {a} = items.length;",
    },
    "go": {
        "paths": (
            "internal/{m}/{m}.go",
            "internal/{m}/handler.go",
            "internal/{m}/{m}_test.go",
            "cmd/{m}/main.go",
            "go.mod",
            "README.md",
        ),
        "test": ("go test ./internal/{m}/...", "ok  \tgithub.com/acme/svc/internal/{m}\t{t}s"),
        "all_tests": ("go test ./...", "ok  \tgithub.com/acme/svc/internal/{m}\t{t}s"),
        "flaky": (
            "--- FAIL: Test{M}Roundtrip ({t}s)\n    {m}_test.go:{l}: context deadline exceeded\n"
            "FAIL\tgithub.com/acme/svc/internal/{m}\t{t}s"
        ),
        "lint": ("golangci-lint run ./...", ""),
        "lint_fail": (
            "internal/{m}/handler.go:{l}:12: Error return value of `resp.Body.Close` is not "
            "checked (errcheck)"
        ),
        "lint_fix": ("internal/{m}/handler.go", "resp.Body.Close()", "_ = resp.Body.Close()"),
        "flag": (
            "cmd/{m}/main.go",
            'format := flag.String("format", "csv", "output format")',
            'format := flag.String("format", "csv", "output format")\n'
            'verbose := flag.Bool("verbose", false, "say more")',
        ),
        "rename": ("internal/{m}/{m}.go", "{a} := len(items)", "{b} := len(items)"),
        "constant": ("internal/{m}/{m}.go", "const pageSize = 50", "const pageSize = 100"),
        "log": (
            "internal/{m}/handler.go",
            'log.Printf("{m} done")',
            'log.Printf("{m} done request_id=%s", r.Header.Get("X-Request-Id"))',
        ),
        "doc": ("internal/{m}/{m}.go", "// Package {m}.", "// Package {m} lists and updates {m}."),
        "test_new": (
            "internal/{m}/defaults_test.go",
            "func Test{M}Defaults(t *testing.T) {{\n\tif len(Defaults()) != 0 {{\n"
            '\t\tt.Fatal("want none")\n\t}}\n}}\n',
        ),
        "grep": "internal/{m}/{m}.go:{l}:\t{a} := len(items)",
    },
    "rust": {
        "paths": (
            "src/{m}.rs",
            "src/{m}/mod.rs",
            "src/bin/{m}.rs",
            "tests/{m}.rs",
            "Cargo.toml",
            "README.md",
        ),
        "test": (
            "cargo test {m}",
            "test result: ok. {n} passed; 0 failed; 0 ignored; 0 measured; finished in {t}s",
        ),
        "all_tests": ("cargo test", "test result: ok. {n} passed; 0 failed; 2 ignored"),
        "flaky": (
            "test {m}::tests::roundtrip has been running for over 60 seconds\n"
            "test {m}::tests::roundtrip ... FAILED\nthread '{m}::tests::roundtrip' panicked: "
            "timed out waiting for the test server\ntest result: FAILED. {n} passed; 1 failed"
        ),
        "lint": ("cargo clippy -- -D warnings", "Finished dev [unoptimized + debuginfo]"),
        "lint_fail": (
            "error: redundant clone\n  --> src/{m}.rs:{l}:22\n   |\n   = note: "
            "`-D clippy::redundant-clone` implied by `-D warnings`"
        ),
        "lint_fix": ("src/{m}.rs", "let name = name.clone();", "let name = name;"),
        "flag": (
            "src/bin/{m}.rs",
            '#[arg(long, default_value = "csv")]\n    format: String,',
            '#[arg(long, default_value = "csv")]\n    format: String,\n'
            "    #[arg(long)]\n    verbose: bool,",
        ),
        "rename": ("src/{m}.rs", "let {a} = items.len();", "let {b} = items.len();"),
        "constant": ("src/{m}.rs", "const PAGE_SIZE: usize = 50;", "const PAGE_SIZE: usize = 100;"),
        "log": (
            "src/{m}/mod.rs",
            'info!("{m} done");',
            'info!(request_id = %req.id, "{m} done");',
        ),
        "doc": ("src/{m}/mod.rs", "//! {m}", "//! The {m} module: list, create and update."),
        "test_new": (
            "tests/{m}_defaults.rs",
            "#[test]\nfn defaults() {{\n    assert!(true);\n}}\n",
        ),
        "grep": "src/{m}.rs:{l}:    let {a} = items.len();",
    },
    "infra": {
        "paths": (
            "modules/{m}/main.tf",
            "modules/{m}/variables.tf",
            "k8s/{m}/deployment.yaml",
            ".github/workflows/{m}.yml",
            "docker/{m}.Dockerfile",
            "README.md",
        ),
        "test": ("terraform -chdir=modules/{m} validate", "Success! The configuration is valid."),
        "all_tests": (
            "terraform plan -lock=false",
            "No changes. Your infrastructure matches the configuration.",
        ),
        "flaky": (
            "Error: waiting for {m} to become ready: timeout while waiting for state to become "
            "'available' (last state: 'pending', timeout: 5m0s)"
        ),
        "lint": ("terraform fmt -check -recursive", ""),
        "lint_fail": "modules/{m}/variables.tf",
        "lint_fix": (
            "modules/{m}/variables.tf",
            'variable "{m}_replicas" {{\n  type = number\n  default=2\n}}',
            'variable "{m}_replicas" {{\n  type    = number\n  default = 2\n}}',
        ),
        "flag": (
            "modules/{m}/variables.tf",
            'variable "{m}_log_level" {{\n  default = "info"\n}}',
            'variable "{m}_log_level" {{\n  default = "info"\n}}\n\nvariable "{m}_verbose" {{\n'
            "  type    = bool\n  default = false\n}}",
        ),
        "rename": ("modules/{m}/main.tf", 'name = "{a}"', 'name = "{b}"'),
        "constant": ("k8s/{m}/deployment.yaml", "replicas: 2", "replicas: 3"),
        "log": ("k8s/{m}/deployment.yaml", "LOG_LEVEL: info", "LOG_LEVEL: debug"),
        "doc": ("modules/{m}/main.tf", "# {m}", "# The {m} service: its bucket, queue and role."),
        "test_new": (
            "modules/{m}/outputs.tf",
            'output "{m}_arn" {{\n  value = aws_iam_role.{m}.arn\n}}\n',
        ),
        "grep": 'modules/{m}/main.tf:{l}:  name = "{a}"',
    },
}
LANGUAGE_OF_EXT = {
    ".py": "python",
    ".ts": "node",
    ".tsx": "node",
    ".js": "node",
    ".jsx": "node",
    ".mjs": "node",
    ".go": "go",
    ".rs": "rust",
    ".tf": "infra",
    ".yml": "infra",
    ".yaml": "infra",
    ".hcl": "infra",
}
LANGUAGE_OF_NAME = {"web": "node", "infra": "infra", "engine": "rust", "tools": "go"}

# (prompt, edit kind, stop message). {m}: a module, {p}: the edited file, {x}: the test command.
TASKS = (
    (
        "add a --verbose flag to the {m} command",
        "flag",
        "Added a --verbose flag to the {m} command (off by default); `{x}` passes.",
    ),
    (
        "rename {a} to {b} in {p}, the old name is confusing",
        "rename",
        "Renamed {a} to {b} in {p}; nothing else used the old name. `{x}` passes.",
    ),
    (
        "bump the page size for {m} to 100",
        "constant",
        "Raised the {m} page size from 50 to 100 in {p}; `{x}` still passes.",
    ),
    (
        "make the {m} log line include the request id",
        "log",
        "The {m} completion log line now carries the request id ({p}). `{x}` passes.",
    ),
    (
        "tidy up the doc comment at the top of {p}",
        "doc",
        "Rewrote the doc comment of {p} to say what the {m} module does. No code changed.",
    ),
    (
        "write a small test for the {m} defaults",
        "test_new",
        "Added a defaults test for {m} in {p}; `{x}` passes.",
    ),
    (
        "can you run the {m} tests and tell me if anything is off",
        None,
        "Ran `{x}`: everything passes, nothing looks off in {m}.",
    ),
)


def language(repo: str, episodes: list[dict]) -> str:
    """The profile of a repository: the most common language of the files its episodes touch."""
    found: Counter = Counter()
    for path in touched_paths(repo, episodes):
        for ext, lang in LANGUAGE_OF_EXT.items():
            if path.endswith(ext):
                found[lang] += 1
    if found:
        return sorted(found.items(), key=lambda item: (-item[1], item[0]))[0][0]
    return LANGUAGE_OF_NAME.get(repo, "python")


def touched_paths(repo: str, episodes: list[dict]) -> list[str]:
    """Paths the repository's episodes read, edit or write, first-seen order."""
    out: dict[str, None] = {}
    for episode in episodes:
        if episode.get("repo") != repo:
            continue
        for session in episode["sessions"]:
            for event in session["events"]:
                if event[0] in ("read", "edit", "write"):
                    out.setdefault(event[1], None)
    return list(out)


def last_episode_end(repo: str, episodes: list[dict]) -> int | None:
    """When the repository's last episode session ended (roughly: its events' total time)."""
    ends = []
    for episode in episodes:
        if episode.get("repo") != repo:
            continue
        for start, session in zip(feed.session_starts(episode), episode["sessions"], strict=True):
            ends.append(start + (len(session["events"]) + 1) * feed.MAX_GAP_S * 1000)
    return max(ends) if ends else None


def _fill(template: str, **values: object) -> str:
    return template.format(**values)


def _session(rng: random.Random, profile: dict, hot_paths: list[str]) -> list[list]:
    """The events of one routine session."""
    events: list[list] = []
    for task_number in range(2):
        if task_number and rng.random() >= SECOND_TASK_SHARE:
            break
        m = rng.choice(MODULES)
        a, b = rng.sample(IDENTS, 2)
        values = {
            "m": m,
            "M": m.capitalize(),
            "a": a,
            "b": b,
            "l": rng.randint(12, 240),
            "n": rng.randint(8, 400),
            "t": f"{rng.uniform(0.2, 30):.2f}",
        }
        prompt, edit_kind, stop = rng.choice(TASKS)
        test_cmd, test_out = profile["test"] if rng.random() < 0.7 else profile["all_tests"]
        test_cmd, test_out = _fill(test_cmd, **values), _fill(test_out, **values)
        edited = _fill(profile[edit_kind][0], **values) if edit_kind else ""
        values.update(p=edited or _fill(profile["paths"][0], **values), x=test_cmd)
        events.append(["prompt", _fill(prompt, **values)])
        for _ in range(rng.randint(1, 3)):
            if hot_paths and rng.random() < EPISODE_PATH_SHARE:
                events.append(["read", rng.choice(hot_paths)])
            else:
                events.append(["read", _fill(rng.choice(profile["paths"]), **values)])
        if rng.random() < 0.3:
            events.append(["grep", a, _fill(profile["grep"], **values)])
        if edit_kind == "test_new":
            events.append(["write", edited, _fill(profile["test_new"][1], **values)])
        elif edit_kind:
            _, old, new = (_fill(x, **values) for x in profile[edit_kind])
            events.append(["edit", edited, old, new])
        roll = rng.random()
        if roll < FLAKY_SHARE:
            events.append(["bash_fail", test_cmd, _fill(profile["flaky"], **values), 1])
            events.append(["bash", test_cmd, test_out])
            stop += " One run timed out first (a flaky test, unrelated); the re-run passed."
        elif roll < FLAKY_SHARE + LINT_SHARE:
            lint_cmd, lint_ok = profile["lint"]
            events.append(["bash_fail", lint_cmd, _fill(profile["lint_fail"], **values), 1])
            path, old, new = (_fill(x, **values) for x in profile["lint_fix"])
            events.append(["edit", path, old, new])
            events.append(["bash", lint_cmd, lint_ok])
            events.append(["bash", test_cmd, test_out])
            stop += f" Also fixed the lint complaint in {path}."
        else:
            events.append(["bash", test_cmd, test_out])
        events.append(["stop", _fill(stop, **values)])
    return events


def _starts(rng: random.Random, count: int, first: int, last: int) -> list[int]:
    """`count` session starts between first and last, in working hours, sorted."""
    out = []
    for _ in range(count):
        at = rng.randint(first, max(first, last))
        day = datetime.fromtimestamp(at // 1000, tz=timezone.utc).replace(
            hour=0, minute=0, second=0
        )
        moment = day + timedelta(hours=rng.randint(8, 18), minutes=rng.randint(0, 59))
        out.append(min(max(feed.ms(moment), first), last))
    return sorted(out)


def generate(repos: list[dict], episodes: list[dict], seed: int = SEED) -> list[dict]:
    """The routine sessions of every repository, each shaped as a one-session episode."""
    now = feed.ms(feed.NOW)
    out = []
    for repo in repos:
        name, count = repo["name"], int(repo.get("routine_sessions", 0))
        if count <= 0:
            continue
        rng = random.Random(f"{seed}/{name}")
        profile = PROFILES[language(name, episodes)]
        hot = touched_paths(name, episodes)
        end = last_episode_end(name, episodes)
        first = (end + AFTER_LAST_MS) if end is not None else now - DEFAULT_SPAN_MS
        last = now - BEFORE_NOW_MS
        for index, start in enumerate(_starts(rng, count, first, last)):
            moment = datetime.fromtimestamp(start / 1000, tz=timezone.utc)
            out.append(
                {
                    "key": f"routine-{name}-{index:03d}",
                    "repo": name,
                    "routine": True,
                    "start": moment.isoformat().replace("+00:00", "Z"),
                    "sessions": [
                        {
                            "after_hours": 0,
                            "ends": "crash" if rng.random() < CRASH_SHARE else "end",
                            "events": _session(rng, profile, hot),
                        }
                    ],
                }
            )
    return out
