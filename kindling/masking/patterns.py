"""The regular expressions and word lists that recognise secrets, each compiled on first use.

Every pattern is linear in the text: each starts with a literal or a narrow character class,
repeats only classes that cannot overlap what follows, and bounds any look across a line
(`{0,200}`), so no input makes the engine backtrack for long.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable


class Lazy:
    """A pattern compiled the first time it is used: compiling all of them takes about 24 ms,
    and most texts need only a few. `literal`, when given, is in every match."""

    def __init__(self, source: str, flags: int = 0, *, literal: str | None = None) -> None:
        self.source, self.flags, self.literal = source, flags, literal

    @functools.cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.source, self.flags)

    def may_match(self, text: str) -> bool:
        """Whether to run the pattern on `text`: False only when its literal is absent.

        On a short text the look costs less than running even a compiled pattern, and it
        spares compiling the patterns a text cannot match: a short text the gate lets through
        masks in 11 us instead of 16 us, and a hook's first in 1.2 ms instead of 8 ms.
        """
        return self.literal is None or self.literal in text

    def finditer(self, text: str, look: bool = True) -> Iterable[re.Match[str]]:
        """Every match in `text`; with `look`, none (and nothing compiled) when `text` lacks
        the pattern's literal. (`may_match` written out: this runs for every pattern of every
        text masked.)"""
        if look and self.literal is not None and self.literal not in text:
            return ()
        return self.compiled.finditer(text)


# A name holds a credential when it ends in one of these words: GITHUB_TOKEN, db_password,
# apiKey, aws_secret_access_key, AccountKey. The short or common words must start a word so
# that `oauth`, `OLDPWD` and `preauthorization` are not taken for credentials.
KEY_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credentials",
    "amz-signature",
    "signature",
    "passcode",
    "pincode",
    "cookie_secret",
    "_authtoken",
    *(f"{word}{joint}key" for word in ("api", "access", "secret", "private") for joint in "_-"),
    "apikey",
    "accesskey",
    "accountkey",
    "secretkey",
    "privatekey",
)
WORD_START_KEY_WORDS = ("authorization", "auth", "pwd", "sig", "psk", "dsn", "sas")
# `pass` and `pw` are keys only inside a longer name (DB_PASS, smtp-pass, userPass) or in
# lower case on their own (`pass: x`): `PASS: test_login` and `--- PASS:` are test results.
_SHORT_KEYS_REVERSED = (
    r"(?:ssap|wp)(?=[_.-][A-Za-z0-9])"
    r"|(?-i:ssaP|wP|SSAP|WP)(?=[a-z0-9])"
    r"|(?-i:ssap|wp)(?![A-Za-z0-9_-])"
    r"|(?-i:htuA)(?=[a-z0-9])"
)


def _alternation(words: tuple[str, ...], reverse: bool = False) -> str:
    # Longest first, so that `secret_key` is tried before `secret`.
    ordered = sorted((w[::-1] if reverse else w for w in words), key=len, reverse=True)
    return "|".join(re.escape(w) for w in ordered)


_KEY = (
    rf"(?:{_alternation(KEY_WORDS)}"
    rf"|(?<![A-Za-z0-9])(?:{_alternation(WORD_START_KEY_WORDS)})"
    r"|(?<![A-Za-z0-9])(?:pass|pw)|(?<=[a-z0-9])(?-i:Pass|Pw|Auth))"
)
# A whole name (a JSON key, an option) that ends in a credential word; `bypass`, `tokens`
# and `token_count` do not.
CREDENTIAL_KEY = Lazy(rf"{_KEY}\Z", re.IGNORECASE)
# Names that end in `token` but hold a position in a list, not a credential.
PAGINATION = Lazy(
    r"(?:page|next|continuation|cursor|sync|resume|pagination|marker|delta|start|prev|previous"
    r"|change|watch)[_.-]?(?:page[_.-]?)?token\Z",
    re.IGNORECASE,
)

# The auth scheme in `Authorization: Bearer <value>` stays readable; only the value is masked.
SCHEME = r"(?:(?:Bearer|Basic|Token|Bot|Digest|Negotiate|NTLM)[ \t]+)?"

# Already-masked values match first so that they are left alone and not counted again.
# A bare value may not start with `=`, `:` or `>`, which would make `token == x`,
# `Token::new` and `token => x` look like assignments of `= x`, `:new` and `> x`, nor with
# an opening bracket: `token: { exp: number }` is a type, `token = (a, b)` a tuple.
VALUE = (
    r"(?:(?P<masked>(?-i:\[REDACTED\]))"
    r'|"(?P<dq>(?:[^"\\\n]|\\.)*)"?'
    r"|'(?P<sq>(?:[^'\\\n]|\\.)*)'?"
    r'|\\"(?P<eq>[^"\\\n]*)'
    r"|(?P<bare>[^\s\"'`,;&)\]}=:>{(\[][^\s\"'`,;&)\]}]*))"
)

# `api_key=...`, `"password": "..."`, `Authorization: Bearer ...`. The reversed text is
# searched from each `=` or `:` back to a key (and the `"` or `\"` closing a JSON key): a
# pattern that starts with one literal character is found by a fast scan, while a forward
# search for the keys would stop at every letter that starts one of them.
_KEY_LAST_LETTERS = "".join(
    sorted({w[-1] for w in KEY_WORDS + WORD_START_KEY_WORDS} | {"s", "w", "h"})
)
_KEY_REVERSED = (
    rf"[ \t]*[\"']?\\?(?=[{_KEY_LAST_LETTERS}])"
    rf"(?:{_alternation(KEY_WORDS, reverse=True)}"
    rf"|(?:{_alternation(WORD_START_KEY_WORDS, reverse=True)})(?![A-Za-z0-9])"
    rf"|{_SHORT_KEYS_REVERSED}"
    # Last: any other name ending in `key` (`STRIPE_KEY`, `licenseKey`), which
    # kindling.masking.context.key_suffix_span weighs.
    r"|yek)"
)
# One pattern per separator: a pattern that starts with one literal character is found by a
# fast scan, a character class is not.
SEPARATORS_REVERSED = tuple(Lazy(sep + _KEY_REVERSED, re.IGNORECASE, literal=sep) for sep in "=:")
ASSIGNED_VALUE = Lazy(rf"[ \t]*{SCHEME}{VALUE}", re.IGNORECASE)
# What follows a separator when the value is on the next line: `password:` then an indented
# line, `TOKEN=\` then a line, or a YAML block scalar `secret: |`.
LINE_END = Lazy(r"[ \t]*(?P<cont>\\)?(?:\r?\n|\Z)")
BLOCK_SCALAR = Lazy(r"[ \t]*[|>][+-]?[0-9]?[ \t]*(?:\r?\n|\Z)")
NEXT_LINE_VALUE = Lazy(r"(?P<indent>[ \t]*)(?P<value>[^\s#\-{\[][^\s]*)[ \t]*(?:\r?\n|\Z)")

# `--password hunter2`, `--github-token ghp_...`; whether the option names a credential is
# checked on the name afterwards, which is cheaper than trying every key inside the pattern.
FLAG = Lazy(
    rf"--(?<![A-Za-z0-9_-]--)(?P<name>[A-Za-z][A-Za-z0-9_-]*)[ \t]+(?!-){SCHEME}{VALUE}",
    re.IGNORECASE,
    literal="--",
)
# `curl -u user:password` and `--user 'user:password'`: only the password goes.
CURL_USER = Lazy(
    r"curl\b[^\n;|&]{0,300}?[ \t](?:-u|--user)(?:[ \t]*|=)(?P<q>['\"]?)[^\s:'\"]*:"
    r"(?P<secret>[^\s'\"`]+)",
    literal="curl",
)

# The whole block, or everything after an unterminated BEGIN line: a partial key is a key.
PEM = Lazy(
    r"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r"[\s\S]*?(?:-----END (?P=label)-----|\Z)",
    literal="-----BEGIN ",
)
# An END line whose BEGIN was cut off: the base64 lines above it are found by walking back.
PEM_END = Lazy(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", literal="-----END ")
PEM_LINE = Lazy(r"[A-Za-z0-9+/=]+")
PEM_TAIL = Lazy(r"[A-Za-z0-9+/=]{16,}\Z")

# `scheme://user:password@host`; the password runs to the last `@` before the path.
URL_CREDENTIALS = Lazy(r"://[^\s/?#@:\"'<>]*:(?P<secret>[^\s/?#\"'<>]+)@", literal="://")
SLACK_WEBHOOK = Lazy(
    r"hooks\.slack\.com/services/(?P<secret>T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+)",
    literal="hooks.slack.com/",
)
# Each starts with its literal prefix and checks the character before it afterwards, so it
# is found by a fast substring search (and a text without the prefix skips the pattern).
_B = r"(?![A-Za-z0-9_-])"
KNOWN_TOKENS = (
    # A JWT: base64url of `{"` twice (header and payload), then a signature that may be empty.
    Lazy(
        r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        literal="eyJ",
    ),
)
# Stripe secret and restricted keys: found from `k_live_`/`k_test_`, the `s` or `r` before
# it is checked afterwards.
STRIPE = Lazy(r"k_(?:live|test)_[A-Za-z0-9]{16,}", literal="k_")
# Discord: base64 of the numeric bot id, a 6-character timestamp, then the HMAC. The middle
# is searched (it starts with a literal dot), then the id part is checked before it.
DISCORD_TAIL = Lazy(r"\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}" + _B, literal=".")
DISCORD_HEAD = Lazy(r"(?<![A-Za-z0-9_.-])[MNO][A-Za-z0-9_-]{23,27}\Z")
# Telegram: the bot's numeric id, a colon, then 35 characters starting with "AA".
TELEGRAM = Lazy(r":AA[A-Za-z0-9_-]{33}" + _B, literal=":AA")
TELEGRAM_ID = Lazy(r"(?<![0-9])[0-9]{8,10}\Z")  # also in a URL: `/bot<id>:AA...`

# A bare AWS secret access key has no prefix: it counts next to its AKIA id or after the
# label `aws configure` prints (`AWS Secret Access Key [None]: `). Both letter cases are
# required, which keeps out hex digests.
AWS_KEY_IDS = tuple(
    Lazy(prefix + rf"(?<![A-Za-z0-9]{prefix})[A-Z0-9]{{16}}(?![A-Za-z0-9])", literal=prefix)
    for prefix in ("AKIA", "ASIA")
)
AWS_SECRET = Lazy(
    r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])"
    r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
AWS_NEAR = 200
AWS_SECRET_LABEL = Lazy(
    r"AWS Secret Access Key(?: \[[^\]\n]{0,40}\])?:[ \t]*(?P<secret>[A-Za-z0-9/+]{40})",
    literal="AWS Secret Access Key",
)

# A standalone `Bearer <value>` is masked only when the value looks like a token (a digit,
# or 20+ characters), so prose such as "send the Bearer token" stays as written.
BEARER = Lazy(
    r"Bearer(?<![A-Za-z0-9_-]Bearer)[ \t]+"
    r"(?P<secret>(?=[A-Za-z0-9._~+/-]*[0-9]|[A-Za-z0-9._~+/-]{20})[A-Za-z0-9._~+/-]+=*)",
    literal="Bearer",
)
BASIC = Lazy(
    r"Basic(?<![A-Za-z0-9_-]Basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])",
    literal="Basic",
)
# Quoted content that is a mask plus the line breaks around it, as a PEM block leaves it.
MASK_ONLY = Lazy(r"(?:\s|\\[nrt])*\[REDACTED\](?:\s|\\[nrt])*")

# Values that are code, not secrets: a reference to a variable or a template, a call, a
# subscript, an attribute path, a type, a placeholder.
REFERENCE = Lazy(r"\$[A-Za-z_{(]|\{\{|%[A-Za-z_][A-Za-z0-9_]*%|<[^<>\n]{1,60}>")
DOTTED_NAME = Lazy(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+")
CALL = Lazy(r"[A-Za-z_$][A-Za-z0-9_$.]*[(\[]")
NAME = Lazy(r"[A-Za-z_][A-Za-z0-9_]*")
NAME_CHARS = Lazy(r"[A-Za-z0-9_.-]*")
PLACEHOLDER = Lazy(r"\.{3,}|\*{3,}|[xX]{3,}|…")
# Counts, ratios and durations: `refresh_token: 3 failed`, `pass: 12/12`, `auth: 35ms`.
SHORT_NUMBER = Lazy(r"[0-9]{1,3}(?:/[0-9]{1,5})?|[0-9]+(?:\.[0-9]+)?(?:ms|s|%)")
PATH = Lazy(r"(?:~|\.{1,2})?(?:/[A-Za-z0-9_.@-]+)+/?")
FILE_SUFFIX = Lazy(r"\.[a-z]{2,5}\Z")
SCHEME_ONLY = Lazy(r"(?:bearer|basic|token|bot)\s*", re.IGNORECASE)
NOT_SECRETS = frozenset(
    (
        "true",
        "false",
        "null",
        "none",
        "nil",
        "undefined",
        "str",
        "string",
        "int",
        "bool",
        "bytes",
        "number",
        "boolean",
        "any",
        "unknown",
        "object",
        "float",
        "void",
        "secretstr",
        "await",
        "new",
        "yield",
        "function",
        "lambda",
        "async",
        "self",
        "this",
        "typeof",
        "require",
        "not",
        "include",
        "omit",
        "same-origin",
        "required",
        "optional",
    )
)
