"""Secret masking: what is masked, what is left alone, counts, idempotence and speed."""

from __future__ import annotations

import copy
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kindling.masking import MASK, mask_json, mask_text

GITHUB_TOKEN = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
OPENAI_KEY = "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv"
ANTHROPIC_KEY = "sk-ant-api03-" + "xY9wV8uT7sR6qP5oN4mL3kJ2iH1gF0eD"
SLACK_TOKEN = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
BASIC = "dXNlcjpwYXNz"  # base64 of "user:pass"

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA7bq9Ug8hQz1Jk0yXb3w\n"
    "Qm9yZSBsaW5lcyBvZiBrZXkgbWF0ZXJpYWw=\n"
    "-----END RSA PRIVATE KEY-----"
)

EXACT = [
    # credential assignments: the key and separator stay, the value goes
    ("api_key=abc123", "api_key=[REDACTED]"),
    ("API_KEY: xyz789", "API_KEY: [REDACTED]"),
    ('token = "abc def"', 'token = "[REDACTED]"'),
    ("token = 'abc'", "token = '[REDACTED]'"),
    ("secret=s3cr3t", "secret=[REDACTED]"),
    ("password=hunter2", "password=[REDACTED]"),
    ("passwd: hunter2", "passwd: [REDACTED]"),
    ("client_secret=abc", "client_secret=[REDACTED]"),
    ("access_token=abc", "access_token=[REDACTED]"),
    ("auth_token=abc", "auth_token=[REDACTED]"),
    ("private_key=abc", "private_key=[REDACTED]"),
    ("apiKey=abc", "apiKey=[REDACTED]"),
    ("X-Api-Key: abc", "X-Api-Key: [REDACTED]"),
    ("export GITHUB_TOKEN=abc123", "export GITHUB_TOKEN=[REDACTED]"),
    ("DB_PASSWORD=pw123 psql", "DB_PASSWORD=[REDACTED] psql"),
    ('{"password": "hunter2", "user": "bob"}', '{"password": "[REDACTED]", "user": "bob"}'),
    ("{'password': 'hunter2'}", "{'password': '[REDACTED]'}"),
    ('{\\"password\\": \\"hunter2\\"}', '{\\"password\\": \\"[REDACTED]\\"}'),
    ("TOKEN    =   abc", "TOKEN    =   [REDACTED]"),
    ("token := abc", "token := [REDACTED]"),
    ("'token' => 'abc'", "'token' => '[REDACTED]'"),
    ("login(user, password=pw)", "login(user, password=[REDACTED])"),
    ("GET /cb?access_token=abc&state=1", "GET /cb?access_token=[REDACTED]&state=1"),
    ("token=abc,user=bob", "token=[REDACTED],user=bob"),
    ('password="unterminated value', 'password="[REDACTED]'),
    ("token: expired", "token: [REDACTED]"),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED]"),
    # long command-line options followed by their value
    ("mysql --password hunter2 -h db", "mysql --password [REDACTED] -h db"),
    ("gh --github-token abc", "gh --github-token [REDACTED]"),
    ("tool --token=abc", "tool --token=[REDACTED]"),
    # well-known token formats, wherever they appear
    (f"key {OPENAI_KEY} end", "key [REDACTED] end"),
    (f"using {ANTHROPIC_KEY}.", "using [REDACTED]."),
    ("sk-abcdefghijklmnop", "[REDACTED]"),
    (f"remote: {GITHUB_TOKEN}", "remote: [REDACTED]"),
    ("gho_abcdefghijklmnopqrstuvwxyz0123", "[REDACTED]"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "[REDACTED]"),
    (f"slack {SLACK_TOKEN}", "slack [REDACTED]"),
    (f"id {AWS_KEY_ID} in use", "id [REDACTED] in use"),
    ("ASIAY34FZKBOKMUTVV7A", "[REDACTED]"),
    (f"GITHUB_TOKEN={GITHUB_TOKEN}", "GITHUB_TOKEN=[REDACTED]"),
    # HTTP auth: the scheme word stays
    (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED]"),
    (f"-H 'authorization: bearer {JWT}'", "-H 'authorization: bearer [REDACTED]'"),
    (f"Authorization: Basic {BASIC}", "Authorization: Basic [REDACTED]"),
    ("Authorization: token abc", "Authorization: token [REDACTED]"),
    (f"sent Bearer {JWT} upstream", "sent Bearer [REDACTED] upstream"),
    ("Bearer abc123xyz", "Bearer [REDACTED]"),
    (f"header was Basic {BASIC}", "header was Basic [REDACTED]"),
    (f"Basic Basic {BASIC}", "Basic Basic [REDACTED]"),
    # private keys: the whole block, or everything after an unterminated BEGIN
    (f"key:\n{PEM}\nafter", "key:\n[REDACTED]\nafter"),
    ("a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\nmore", "a\n[REDACTED]"),
    ("-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----", "[REDACTED]"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nx\n-----END PGP PRIVATE KEY BLOCK-----", MASK),
    # credentials in URLs: only the password goes
    (
        "git clone https://user:pa55word@github.com/o/r",
        "git clone https://user:[REDACTED]@github.com/o/r",
    ),
    ("postgres://app:s3cret@db:5432/app", "postgres://app:[REDACTED]@db:5432/app"),
    ("redis://:s3cret@localhost:6379", "redis://:[REDACTED]@localhost:6379"),
    ("https://user:p@ss@host/x", "https://user:[REDACTED]@host/x"),
]


@pytest.mark.parametrize(("text", "expected"), EXACT)
def test_masks_exactly_the_secret(text, expected):
    assert mask_text(text) == (expected, 1)


PROSE = [
    "JWT validation failed: token expired",
    "reset the password field",
    "the secret sauce",
    "send the Bearer token in the header",
    "Basic setup guide",
    "token expired at 12:00",
    "max_tokens=100 token_count=5 tokens: 42",
    "password_min_length=8 token_type=bearer api_key_id=7",
    "oauth: enabled",
    "if token == expected:",
    "let t = Token::new();",
    "def login(user: str, password: str | None = None, api_key: bool = False):",
    '{"password": null, "token": true, "secret": false}',
    "token_file: /etc/app/token",
    "mytool --token-file ./t --password-stdin",
    "https://example.com:8080/path?q=1",
    "see https://user@example.com/x",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "risk-assessment and task-scheduler",
    "AKIA is a prefix",
    "",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_and_code_without_secrets_stay_untouched(text):
    assert mask_text(text) == (text, 0)


def test_counts_every_secret():
    text = (
        f"api_key=abc password=hunter2\nAuthorization: Bearer {JWT}\n{GITHUB_TOKEN} {AWS_KEY_ID}\n"
        f"{PEM}\nhttps://u:p@h/"
    )
    masked, count = mask_text(text)
    assert count == 7
    assert masked == (
        "api_key=[REDACTED] password=[REDACTED]\nAuthorization: Bearer [REDACTED]\n"
        "[REDACTED] [REDACTED]\n[REDACTED]\nhttps://u:[REDACTED]@h/"
    )


def test_a_secret_is_counted_once_when_patterns_overlap():
    # The assignment masks the whole value; the token pattern then finds nothing left.
    assert mask_text(f"token={GITHUB_TOKEN}") == ("token=[REDACTED]", 1)
    assert mask_text(f'private_key: "{PEM}\\n"') == ('private_key: "[REDACTED]\\n"', 1)
    assert mask_text(f"password=https://u:{GITHUB_TOKEN}@h") == ("password=[REDACTED]", 1)


@pytest.mark.parametrize(
    "masked",
    [
        "api_key=[REDACTED]",
        '"password": "[REDACTED]"',
        "Authorization: Bearer [REDACTED]",
        "Basic [REDACTED]",
        "https://user:[REDACTED]@host",
        "--password [REDACTED]",
        "[REDACTED]",
    ],
)
def test_already_masked_text_is_not_counted_again(masked):
    assert mask_text(masked) == (masked, 0)


def test_masking_twice_changes_nothing_more():
    for text, _ in EXACT:
        once, _ = mask_text(text)
        assert mask_text(once) == (once, 0)


# Pieces that make secrets, near-secrets and already-masked text when joined at random.
FRAGMENTS = [
    "api_key",
    "token",
    "Token",
    "password",
    "secret",
    "Authorization",
    "auth",
    "pwd",
    "oauth",
    "=",
    ":",
    ":=",
    "=>",
    "==",
    "::",
    " ",
    "  ",
    "\t",
    "\n",
    '"',
    "'",
    "\\",
    '\\"',
    ",",
    ")",
    "]",
    "&",
    "[REDACTED]",
    "[REDACTED",
    "Bearer ",
    "Basic ",
    BASIC,
    "abc123",
    "none",
    "sk-",
    "ghp_",
    "xoxb-",
    "github_pat_",
    "AKIA",
    "0123456789ABCDEF",
    "abcdefghij",
    "https://",
    "user",
    "@",
    "host",
    "/",
    "--",
    "-",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----",
    GITHUB_TOKEN,
    JWT,
]
fragment_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=40).map("".join)


@settings(max_examples=400)
@given(fragment_text)
def test_masking_is_idempotent(text):
    once, _ = mask_text(text)
    assert mask_text(once) == (once, 0)


@given(fragment_text, st.text(alphabet=string.ascii_letters + string.digits + "!#%*+", min_size=1))
def test_an_assigned_secret_never_survives(context, secret):
    secret = "Zq" + secret  # never a word that is kept, such as `none`
    masked, count = mask_text(f"{context} password={secret} {context}")
    # Only copies that the random context itself holds may be left.
    assert masked.count(secret) <= 2 * context.count(secret)
    assert count >= 1


@given(fragment_text)
def test_a_known_token_never_survives(context):
    masked, _ = mask_text(f"{context} {GITHUB_TOKEN} {context}")
    assert masked.count(GITHUB_TOKEN) < 1 + 2 * context.count(GITHUB_TOKEN)


PLAIN_WORDS = ["token", "password", "secret", "api_key", "expired", "field", "the", "auth"]
plain_text = st.lists(
    st.sampled_from(PLAIN_WORDS)
    | st.text(alphabet=string.ascii_lowercase + string.digits + " .,!?\n", max_size=12),
    max_size=30,
).map(" ".join)


@given(plain_text)
def test_text_without_secrets_is_unchanged(text):
    assert mask_text(text) == (text, 0)


# ---------------------------------------------------------------- JSON


def test_mask_json_walks_nested_provenance():
    provenance = {
        "tool": "Bash",
        "command": f"curl -H 'Authorization: Bearer {JWT}' https://api.example.com",
        "env": {"GITHUB_TOKEN": "plain-looking", "PATH": "/usr/bin", "Db-Password": "x"},
        "args": ["--password", "hunter2", "password=hunter2", 3, None, True],
        "headers": [{"Authorization": "Bearer abc"}, {"Accept": "json"}],
        "exitCode": 0,
        "duration": 1.5,
        "token": ["one", "", MASK],
        "auth": {"user": "bob", "password": "pw", "retries": 3},
        "max_tokens": 100,
        "token_count": "12",
    }
    masked, count = mask_json(provenance)
    assert masked == {
        "tool": "Bash",
        "command": "curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com",
        "env": {"GITHUB_TOKEN": MASK, "PATH": "/usr/bin", "Db-Password": MASK},
        # A bare "hunter2" after "--password" in a list has nothing to recognise it by.
        "args": ["--password", "hunter2", "password=[REDACTED]", 3, None, True],
        "headers": [{"Authorization": MASK}, {"Accept": "json"}],
        "exitCode": 0,
        "duration": 1.5,
        "token": [MASK, "", MASK],
        # Everything under a credential key is masked, however deep.
        "auth": {"user": MASK, "password": MASK, "retries": 3},
        "max_tokens": 100,
        "token_count": "12",
    }
    assert count == 8


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apikey",
        "API-KEY",
        "token",
        "access_token",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "pwd",
        "Authorization",
        "auth",
        "private_key",
        "x-auth-token",
        "aws_secret_access_key",
        "refreshToken",
        "PGPASSWORD",
    ],
)
def test_credential_keys_mask_their_string_value_whole(key):
    assert mask_json({key: "looks harmless"}) == ({key: MASK}, 1)
    assert mask_json({key: ""}) == ({key: ""}, 0)
    assert mask_json({key: 1234}) == ({key: 1234}, 0)


@pytest.mark.parametrize(
    "key", ["tokens", "max_tokens", "token_type", "author", "oauth", "cwd", "passage", "keys"]
)
def test_other_keys_only_mask_secrets_inside_their_value(key):
    assert mask_json({key: "plain value"}) == ({key: "plain value"}, 0)
    assert mask_json({key: "password=x"}) == ({key: "password=[REDACTED]"}, 1)


def test_mask_json_keeps_keys_and_scalars_and_never_mutates():
    value = {"password=abc": [1, 2.5, None, False, {"nested": ["api_key=abc"]}], 7: "x"}
    before = copy.deepcopy(value)
    masked, count = mask_json(value)
    assert value == before
    nested = {"nested": ["api_key=[REDACTED]"]}
    assert masked == {"password=abc": [1, 2.5, None, False, nested], 7: "x"}
    assert count == 1
    assert masked is not value
    assert masked["password=abc"] is not value["password=abc"]


def test_mask_json_of_a_plain_string_or_scalar():
    assert mask_json("token=abc") == ("token=[REDACTED]", 1)
    assert mask_json(42) == (42, 0)
    assert mask_json(None) == (None, 0)


json_keys = st.sampled_from(["password", "token", "name", "cmd", "Authorization", "env", "n"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | fragment_text,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(json_keys | st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_mask_json_is_idempotent_and_leaves_its_input_alone(value):
    before = copy.deepcopy(value)
    once, _ = mask_json(value)
    assert value == before
    assert mask_json(once) == (once, 0)


# ---------------------------------------------------------------- size


def test_ten_megabytes_mask_in_one_pass():
    line = (
        "2025-06-20T10:00:00Z INFO GET /api/v1/items?page=2 status=200 took=12ms "
        "user=bob note='token expired, retrying'\n"
    )
    secret_line = f"export GITHUB_TOKEN={GITHUB_TOKEN} && curl -H 'Authorization: Bearer {JWT}'\n"
    block = line * 99 + secret_line
    repeats = 10_000_000 // len(block) + 1
    masked, count = mask_text(block * repeats)
    assert count == 2 * repeats
    expected_line = "export GITHUB_TOKEN=[REDACTED] && curl -H 'Authorization: Bearer [REDACTED]'\n"
    assert masked == (line * 99 + expected_line) * repeats


@pytest.mark.parametrize(
    "unit",
    [
        "a",
        "=",
        ":",
        "token=",
        "token= ",
        "token:",
        "token ",
        "password-",
        "://",
        "://a:",
        "--a-",
        "--token ",
        "-----BEGIN ",
        "Bearer ",
        "Basic ",
        "Basic abcd ",
        "sk-",
        'token="\\',
        "AAAA",
        "\\",
    ],
)
def test_pathological_input_completes(unit):
    # Patterns that backtrack badly would take minutes here; these finish in well under one.
    text = unit * (1_000_000 // len(unit))
    masked, count = mask_text(text)
    assert mask_text(masked) == (masked, 0)
    assert count >= 0


# ------------------------------------------------------------------ the cheap first look

from kindling.secret_gate import TRIGGERS, json_might_hold_secret, might_hold_secret  # noqa: E402


@pytest.mark.parametrize(("text", "expected"), EXACT)
def test_the_gate_lets_every_masked_case_through(text, expected):
    assert might_hold_secret(text)
    assert might_hold_secret(text.upper()) and might_hold_secret(text.swapcase())


fragments = st.sampled_from(
    [
        *TRIGGERS,
        "=",
        ":",
        " ",
        "\n",
        '"',
        "api_",
        "_",
        "-",
        "/",
        "@",
        "Bearer ",
        "Basic ",
        "ghp_",
        "AKIA",
        "sk-",
        "x" * 20,
        "A1b2C3d4E5f6G7h8I9j0",
        BASIC,
        "-----END",
    ]
)


@settings(max_examples=400)
@given(st.lists(st.one_of(fragments, st.text(max_size=6)), max_size=12).map("".join))
def test_text_the_gate_turns_away_never_holds_a_secret(text):
    if not might_hold_secret(text):
        assert mask_text(text) == (text, 0)


@settings(max_examples=200)
@given(st.dictionaries(st.text(max_size=12), st.text(max_size=20), max_size=4))
def test_json_the_gate_turns_away_never_holds_a_secret(value):
    if not json_might_hold_secret(value):
        assert mask_json(value) == (value, 0)
