"""Everyday work around the bug sessions, generated from a seed: same words, other meanings.

The distractors read the same files, run the same test commands and talk about clients,
requests, limits, timeouts, tokens and locks, but none of them answers a labelled query.
Almost half are from the last 30 days, fresher than every bug session, as real memory is.
"""

from __future__ import annotations

import random
import re
from datetime import timedelta

from corpus import NOW, ms

SEED = 20261201
SESSIONS = 300
RECENT_SHARE = 0.45
SUMMARISED_SHARE = 0.2

SERVICES = (
    "orders",
    "billing",
    "notify",
    "chat",
    "queue",
    "crawler",
    "scheduler",
    "ingest",
    "web",
    "admin",
    "sidecar",
    "reports",
    "worker",
    "auth",
    "search",
    "gateway",
)
NOUNS = (
    "client",
    "request",
    "token",
    "session",
    "limit",
    "timeout",
    "retry",
    "cache",
    "pool",
    "connection",
    "module",
    "handler",
    "config",
    "schema",
    "migration",
    "job",
    "queue",
    "lock",
    "buffer",
    "index",
    "webhook",
    "payload",
    "header",
    "cursor",
    "worker",
    "runtime",
    "loop",
    "map",
    "storage",
    "build",
    "image",
    "workflow",
    "database",
    "error",
    "test",
    "locale",
)
TABLES = ("orders", "invoices", "users", "messages", "reports", "instances", "tasks", "events")
ROUTES = ("v1/orders", "v2/charges", "healthz", "login", "messages", "search", "webhooks/stripe")
VENDORS = ("stripe", "sendgrid", "github", "slack", "twilio")
CRATES = ("metrics-core", "crates-tui", "sidecar", "echo", "wire-format")
RUST_CODES = ("E0308", "E0425", "E0433", "E0599", "E0061")
PY_MODULES = ("yaml", "orjson", "httpx", "pydantic_settings", "boto3", "tenacity")
NPM_PACKAGES = ("left-pad", "request", "uuid", "querystring", "glob", "rimraf")


def _camel(words: list[str]) -> str:
    return "".join(w.capitalize() for w in words)


def _snake(words: list[str]) -> str:
    return "_".join(words)


class _Maker:
    """One seeded source of names, paths and observation texts."""

    def __init__(self, rng: random.Random, bug_paths: list[str]) -> None:
        self.r = rng
        self.bug_paths = bug_paths

    def pick(self, seq):
        return self.r.choice(seq)

    def words(self, n: int = 2) -> list[str]:
        return self.r.sample(NOUNS, n)

    def num(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def path(self) -> str:
        # One path in five is a file a bug session touched: reading it again is everyday work.
        if self.bug_paths and self.r.random() < 0.2:
            return self.pick(self.bug_paths)
        svc, words = self.pick(SERVICES), self.words()
        return self.pick(
            (
                f"{svc}/{words[0]}/{_snake(words)}.py",
                f"services/{svc}/internal/{words[0]}/{words[1]}.go",
                f"apps/web/src/hooks/use-{'-'.join(words)}.ts",
                f"services/{svc}/src/{words[0]}.js",
                f"crates/{self.pick(CRATES)}/src/{words[1]}.rs",
                f".github/workflows/{svc}.yml",
                f"tests/{svc}/test_{_snake(words)}.py",
            )
        )

    # ------------------------------------------------------------ one text per kind

    def command(self) -> str:
        svc, w, n, t = self.pick(SERVICES), self.words(), self.num(3, 400), self.num(1, 90)
        return self.pick(
            (
                f"pytest tests/{svc} -q\n{n} passed in {t}.{self.num(0, 99):02d}s",
                f"pytest tests/{svc}/test_{_snake(w)}.py -x -q\n{n} passed, 2 skipped in {t}s",
                f"go test ./{svc}/... -run Test{_camel(w)} -count=1\n"
                f"ok  \tacme/{svc}\t{t}.{n % 100}s",
                f"cargo test -p {self.pick(CRATES)}\n"
                f"test result: ok. {n} passed; 0 failed; 0 ignored",
                f"npm test --workspace {svc}\nTests:       {n} passed, {n} total",
                f"git log --oneline -5 -- {self.path()}",
                f"git diff --stat main...HEAD -- {self.path()}",
                f"docker compose up -d {svc} postgres redis",
                f"kubectl rollout status deploy/{svc}-api --timeout=120s",
                f"gh run view {self.num(9000000, 29999999)} --log | tail -20",
                f"psql -c 'select count(*) from {self.pick(TABLES)}'",
                f'curl -s -H "Authorization: Bearer $TOKEN" localhost:{self.num(3000, 9000)}/'
                f"{self.pick(ROUTES)} | jq .",
                f"npm run lint --workspace {svc} -- --fix",
                f"ruff check {svc} && mypy {svc}",
                f"python -m {svc}.cli {self.pick(('sync', 'export', 'backfill'))} --limit {n}",
            )
        )

    def error(self) -> str:
        w, n, ln = self.words(), self.num(2, 900), self.num(10, 400)
        return self.pick(
            (
                f"KeyError: '{_snake(w)}'\n  File \"{self.path()}\", line {ln}, in get_{w[0]}",
                f"requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: "
                f"https://api.{self.pick(VENDORS)}.com/{self.pick(ROUTES)} (rate limit {n}/min)",
                f"jwt.exceptions.ExpiredSignatureError: Signature has expired (token issued {n} "
                f"minutes ago)",
                f"TypeError: Cannot read properties of undefined (reading '{w[0]}')\n    at "
                f"{_camel(w)} ({self.path()}:{ln}:{n % 80})",
                f"Error: connect ECONNREFUSED 127.0.0.1:{self.num(3000, 9000)}\n    at "
                f"TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)",
                f"AssertionError: assert {n} == {n + 1}\n  tests/test_{_snake(w)}.py:{ln}: in "
                f"test_{w[0]}_{w[1]}_limit",
                f"ModuleNotFoundError: No module named '{self.pick(PY_MODULES)}'",
                f"--- FAIL: Test{_camel(w)} (0.{n % 100:02d}s)\n    {w[0]}_test.go:{ln}: expected "
                f"status 200, got {self.pick((400, 401, 404, 500, 503))}",
                f"error[{self.pick(RUST_CODES)}]: mismatched types in `{_snake(w)}`\n  --> "
                f"src/{w[0]}.rs:{ln}:{n % 60}",
                f"psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint "
                f'"{self.pick(TABLES)}_pkey"',
                "redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. "
                "Connection refused.",
                f"TimeoutError: request to {self.pick(SERVICES)} timed out after {n * 10}ms",
                f"Error: ENOENT: no such file or directory, open '{self.path()}'",
                f"panic: runtime error: index out of range [{n}] with length {n}",
                f"sqlite3.IntegrityError: UNIQUE constraint failed: {self.pick(TABLES)}.id",
                f"npm WARN deprecated {self.pick(NPM_PACKAGES)}@{n % 9}.{n % 7}.0: this version is "
                f"no longer supported",
            )
        )

    def tool_call(self) -> str:
        w = self.words()
        return self.pick(
            (
                f"read_file {self.path()}",
                f"read_file {self.path()} lines {self.num(1, 200)}-{self.num(201, 400)}",
                f'grep -rn "{_snake(w)}" {self.pick(SERVICES)}/',
                f'grep -rn "{_camel(w)}" services/ apps/',
                f"list_dir {self.pick(SERVICES)}/{w[0]}",
                f"search_code {_camel(w)}",
                f"edit_file {self.path()}",
            )
        )

    def file_diff(self) -> str:
        path = self.path()
        old, new = self.pick(_EDITS)
        ln = self.num(3, 300)
        return f"--- a/{path}\n+++ b/{path}\n@@ -{ln},1 +{ln},1 @@\n-{old}\n+{new}"

    def message(self) -> str:
        svc, w, n = self.pick(SERVICES), self.words(), self.num(2, 500)
        return self.pick(
            (
                f"The {svc} client retries {n % 7 + 1} times with exponential backoff; the rate "
                f"limit of {n} requests per minute is per token, not per IP.",
                f"Looked at the flaky test_{_snake(w)}: it depends on the order of the {w[0]} map; "
                f"sorting the keys makes it deterministic.",
                f"p95 request latency for {svc} is {n} ms after the cache change; "
                f"the {n % 30 + 5} s "
                f"timeout is plenty.",
                f"Token refresh lives in {self.path()}; an expired token returns 401 "
                f"and the client "
                f"refreshes once before failing.",
                f"Decided to keep the {w[0]} limit at {n} for now; revisit when the {svc} module "
                f"moves to the new queue.",
                f"The {w[0]} module is only imported by tests; safe to delete after the release.",
                f"Error budget for {svc} is fine this week; the 5xx spike came from a bot hitting "
                f"/{self.pick(ROUTES)}.",
                f"Migration {n:04d}_{_snake(w)} ran in {n % 40 + 1}s on staging; no lock waits and "
                f"no long transactions.",
                f"CI took {n % 30 + 8} minutes; most of it is the docker image build, "
                f"caching layers "
                f"would halve it.",
                f"Reviewed the {svc} PR: the new request validation rejects an empty "
                f"{w[0]} payload "
                f"with 422, which is what the client expects.",
                f"The {w[0]} {w[1]} in {svc} is created once per process and shared; no change "
                f"needed there.",
                f"Database connection settings for {svc} are in {self.path()}; "
                f"pool size {n % 20 + 2}"
                f" matches the deployment.",
            )
        )


_EDITS = (
    ("    timeout = 10", "    timeout = 30"),
    ('logger.info("retry %s", attempt)', 'logger.debug("retry %s", attempt)'),
    ("MAX_PAGE_SIZE = 100", "MAX_PAGE_SIZE = 200"),
    ("def get_client():", "def get_client(*, timeout: float = 10.0):"),
    ("\tclient := &http.Client{}", "\tclient := &http.Client{Timeout: 15 * time.Second}"),
    ("const LIMIT = 20;", "const LIMIT = 50;"),
    ("export function useToken() {", "export function useAuthToken() {"),
    ("    timeout-minutes: 10", "    timeout-minutes: 20"),
    ("      - uses: actions/checkout@v3", "      - uses: actions/checkout@v4"),
    ("          node-version: 18", "          node-version: 20"),
    ("    let limit = 64;", "    let limit = 128;"),
    ("\treturn nil, err", '\treturn nil, fmt.Errorf("load config: %w", err)'),
    ('    "typescript": "5.3.3",', '    "typescript": "5.4.5",'),
    ("requests==2.31.0", "requests==2.32.3"),
    ("CACHE_TTL_SECONDS = 60", "CACHE_TTL_SECONDS = 300"),
    ("  retries: 3", "  retries: 5"),
)

_INTENTS = (
    "Add pagination to the {svc} list endpoint",
    "Move {svc} settings to environment variables",
    "Tidy the {svc} test fixtures",
    "Raise the {svc} request limit for partners",
    "Rotate the {svc} API token handling",
    "Split the {svc} client module",
)
_SUMMARIES = (
    "Added cursor pagination to the {svc} list endpoint; the page limit is {n} and clients get a "
    "next token. Tests pass.",
    "Moved {svc} settings to environment variables with defaults; the request timeout is now "
    "configurable. No behaviour change.",
    "Tidied the {svc} test fixtures into one conftest module; the suite runs in {n} s.",
    "Raised the partner request limit in {svc} to {n} per minute behind a feature flag.",
    "The {svc} client now refreshes an expired token once and retries the request.",
    "Split the {svc} client module into transport and models; imports updated everywhere.",
)


def bug_paths(sessions: list[dict]) -> list[str]:
    """File paths named by the bug sessions' tool calls, for distractors to read again."""
    found = set()
    for session in sessions:
        for kind, text in session["obs"]:
            if kind == "tool_call":
                found.update(re.findall(r"[\w.-]+(?:/[\w.-]+)+\.\w+", text))
    return sorted(found)


def generate(sessions: list[dict]) -> list[dict]:
    """The distractor sessions: dicts with key, start (ms), intent, optional summary and obs."""
    rng = random.Random(SEED)
    maker = _Maker(rng, bug_paths(sessions))
    kinds = (
        ("command",) * 30
        + ("tool_call",) * 30
        + ("message",) * 15
        + ("file_diff",) * 12
        + ("error",) * 13
    )
    earliest, recent_from = NOW - timedelta(days=330), NOW - timedelta(days=30)
    made = []
    for i in range(SESSIONS):
        lo = recent_from if rng.random() < RECENT_SHARE else earliest
        hi = NOW - timedelta(hours=6) if lo is recent_from else recent_from
        start = lo + (hi - lo) * rng.random()
        svc = rng.choice(SERVICES)
        obs = [[kind, getattr(maker, kind)()] for kind in rng.choices(kinds, k=rng.randint(6, 14))]
        entry = {
            "key": f"d{i:04d}",
            "index": i,
            "distractor": True,
            "start": ms(start),
            "intent": rng.choice(_INTENTS).format(svc=svc),
            "obs": obs,
        }
        if rng.random() < SUMMARISED_SHARE:
            entry["summary"] = rng.choice(_SUMMARIES).format(svc=svc, n=rng.randint(10, 500))
        made.append(entry)
    return made
