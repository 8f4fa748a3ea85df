"""Mask secrets in text and JSON before anything is written to the store.

The store is committed and pushed, so a secret that reaches it is a leaked secret. Masking
replaces only the secret part (`api_key=[REDACTED]`, `Bearer [REDACTED]`) so the rest stays
readable, and it is idempotent: masked text masks to itself and counts 0.

Credential assignments are the one ambiguous case. A value is masked when the key ends in a
credential word (password, token, secret, api_key, ...) and is followed by `=`, `:`, `:=` or
`=>` and then a value: quoted, or a run of characters with no space. So `token: expired` is
masked (it reads like an assignment) while `token expired` and `the password field` are not.
An unquoted value ends at whitespace, a quote, `,`, `;`, `&` or a closing bracket; a quoted
value with no closing quote runs to the end of the line. The bare words true, false, null,
none, nil, undefined and the type names str, string, int, bool and bytes are never secrets
and are kept, so `api_key: str` in code stays as it is. Code such as `token = get_token()`
is masked like any other assignment: a false alarm costs a little readability, a miss leaks.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from functools import partial

MASK = "[REDACTED]"

# A name holds a credential when it ends in one of these words: GITHUB_TOKEN, db_password,
# apiKey, aws_secret_access_key. The short or common words must start a word so that
# `oauth`, `OLDPWD` and `preauthorization` are not taken for credentials.
_KEY_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    *(f"{word}{joint}key" for word in ("api", "access", "secret", "private") for joint in "_-"),
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
)
_WORD_START_KEY_WORDS = ("authorization", "auth", "pwd")


def _alternation(words: tuple[str, ...], reverse: bool = False) -> str:
    # Longest first, so that `secret_key` is tried before `secret`.
    ordered = sorted((w[::-1] if reverse else w for w in words), key=len, reverse=True)
    return "|".join(re.escape(w) for w in ordered)


_KEY = (
    rf"(?:{_alternation(_KEY_WORDS)}"
    rf"|(?<![A-Za-z0-9])(?:{_alternation(_WORD_START_KEY_WORDS)}))"
)
# `token_count`, `tokens`, `password.length` and `api-key-id` name something else.
_KEY_END = r"(?![A-Za-z0-9_.-])"

# The auth scheme in `Authorization: Bearer <value>` stays readable; only the value is masked.
_SCHEME = r"(?:(?:Bearer|Basic|Token|Bot|Digest|Negotiate|NTLM)[ \t]+)?"

# Already-masked values match first so that they are left alone and not counted again.
# A bare value may not start with `=`, `:` or `>`, which would make `token == x`,
# `Token::new` and `token => x` look like assignments of `= x`, `:new` and `> x`.
_VALUE = (
    r"(?:(?P<masked>(?-i:\[REDACTED\]))"
    r'|"(?P<dq>(?:[^"\\\n]|\\.)*)"?'
    r"|'(?P<sq>(?:[^'\\\n]|\\.)*)'?"
    r'|\\"(?P<eq>[^"\\\n]*)'
    r"|(?P<bare>[^\s\"'`,;&)\]}=:>][^\s\"'`,;&)\]}]*))"
)
_NOT_SECRETS = frozenset(
    ("true", "false", "null", "none", "nil", "undefined", "str", "string", "int", "bool", "bytes")
)

# `api_key=...`, `"password": "..."`, `Authorization: Bearer ...`. The reversed text is
# searched from each `=` or `:` back to a key (and the `"` or `\"` closing a JSON key): a
# pattern that starts with one literal character is found by a fast scan, while a forward
# search for the keys would stop at every letter that starts one of them.
# Checking the last letter of the key first fails most separators before any word is tried.
_KEY_LAST_LETTERS = "".join(sorted({w[-1] for w in _KEY_WORDS + _WORD_START_KEY_WORDS}))
_KEY_REVERSED = (
    rf"[ \t]*[\"']?\\?(?=[{_KEY_LAST_LETTERS}])"
    rf"(?:{_alternation(_KEY_WORDS, reverse=True)}"
    rf"|(?:{_alternation(_WORD_START_KEY_WORDS, reverse=True)})(?![A-Za-z0-9]))"
)
_SEPARATORS_REVERSED = tuple(re.compile(sep + _KEY_REVERSED, re.IGNORECASE) for sep in "=:")
_ASSIGNED_VALUE = re.compile(rf"[ \t]*{_SCHEME}{_VALUE}", re.IGNORECASE)
# `--password hunter2`, `--github-token ghp_...`; whether the option names a credential is
# checked on the name afterwards, which is cheaper than trying every key inside the pattern.
_FLAG = re.compile(
    rf"--(?<![A-Za-z0-9_-]--)(?P<name>[A-Za-z][A-Za-z0-9_-]*)[ \t]+(?!-){_SCHEME}{_VALUE}",
    re.IGNORECASE,
)
# The whole block, or everything after an unterminated BEGIN line: a partial key is a key.
_PEM = re.compile(
    r"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r"[\s\S]*?(?:-----END (?P=label)-----|\Z)"
)
# `scheme://user:password@host`; the password runs to the last `@` before the path.
_URL_CREDENTIALS = re.compile(r"://[^\s/?#@:\"'<>]*:(?P<secret>[^\s/?#\"'<>]+)@")
# Each starts with its literal prefix and checks the character before it afterwards, so it
# is found by a fast substring search.
_KNOWN_TOKENS = (
    re.compile(r"sk-(?<![A-Za-z0-9_-]sk-)[A-Za-z0-9_-]{16,}"),
    re.compile(r"xox(?<![A-Za-z0-9_-]xox)[abpr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"gh(?<![A-Za-z0-9_-]gh)[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"github_pat_(?<![A-Za-z0-9_-]github_pat_)[A-Za-z0-9_]{20,}"),
    re.compile(r"AKIA(?<![A-Za-z0-9]AKIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    re.compile(r"ASIA(?<![A-Za-z0-9]ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
)
# A standalone `Bearer <value>` is masked only when the value looks like a token (a digit,
# or 20+ characters), so prose such as "send the Bearer token" stays as written.
_BEARER = re.compile(
    r"Bearer(?<![A-Za-z0-9_-]Bearer)[ \t]+"
    r"(?P<secret>(?=[A-Za-z0-9._~+/-]*[0-9]|[A-Za-z0-9._~+/-]{20})[A-Za-z0-9._~+/-]+=*)"
)
_BASIC = re.compile(
    r"Basic(?<![A-Za-z0-9_-]Basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])"
)
# Quoted content that is a mask plus the line breaks around it, as a PEM block leaves it.
_MASK_ONLY = re.compile(r"(?:\s|\\[nrt])*\[REDACTED\](?:\s|\\[nrt])*")
_CREDENTIAL_KEY = re.compile(rf"{_KEY}\Z", re.IGNORECASE)

# What a pass does with one match: the span to replace by MASK, or None to leave it alone.
_Span = tuple[int, int]
_Pick = Callable[[re.Match[str]], _Span | None]


def _value_span(m: re.Match[str]) -> _Span | None:
    group = m.lastgroup
    if group is None or group == "masked":
        return None
    value = m.group(group)
    if group == "bare":
        if value.lower() in _NOT_SECRETS:
            return None
    elif not value or _MASK_ONLY.fullmatch(value):
        return None
    return m.span(group)


def _flag_value_span(m: re.Match[str]) -> _Span | None:
    return _value_span(m) if _CREDENTIAL_KEY.search(m.group("name")) else None


def _secret_span(m: re.Match[str]) -> _Span | None:
    return None if m.group("secret") == MASK else m.span("secret")


def _basic_span(m: re.Match[str]) -> _Span | None:
    # Basic credentials are base64 of `user:password`; prose after "Basic" does not decode so.
    value = m.group("secret")
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
    except (binascii.Error, ValueError):
        return None
    return m.span("secret") if ":" in decoded and decoded.isprintable() else None


def _whole_span(m: re.Match[str]) -> _Span:
    return m.span()


def _join(text: str, spans: list[_Span]) -> tuple[str, int]:
    if not spans:
        return text, 0
    pieces: list[str] = []
    done = 0
    for start, end in spans:
        pieces += (text[done:start], MASK)
        done = end
    pieces.append(text[done:])
    return "".join(pieces), len(spans)


def _substitute(pattern: re.Pattern[str], pick: _Pick, text: str) -> tuple[str, int]:
    # Unlike re.sub, a match that is left alone is searched again one character later, so
    # "Basic Basic <credential>" still finds the credential after the declined word.
    spans: list[_Span] = []
    search_from = 0
    while (m := pattern.search(text, search_from)) is not None:
        span = pick(m)
        if span is None:
            search_from = m.start() + 1
        else:
            spans.append(span)
            search_from = m.end()
    return _join(text, spans)


def _mask_assignments(text: str) -> tuple[str, int]:
    reversed_text, end = text[::-1], len(text)
    # A hit in the reversed text ends at a separator; the value starts right after it.
    starts = sorted(
        end - m.start() for pattern in _SEPARATORS_REVERSED for m in pattern.finditer(reversed_text)
    )
    spans: list[_Span] = []
    done = 0
    for start in starts:
        if start < done:
            continue  # the key is part of a value masked just before
        if text.startswith(">", start) and text[start - 1] == "=":
            start += 1  # `key => value`
        elif text.startswith("=", start) and text[start - 1] == ":":
            start += 1  # `key := value`
        m = _ASSIGNED_VALUE.match(text, start)
        span = _value_span(m) if m else None
        if span is not None:
            spans.append(span)
            done = m.end()
    return _join(text, spans)


# Order matters: a PEM block goes first so no other pattern masks a piece of it, and an
# assignment masks its whole value before a token pattern could mask part of it.
_PASSES: tuple[Callable[[str], tuple[str, int]], ...] = (
    partial(_substitute, _PEM, _whole_span),
    _mask_assignments,
    partial(_substitute, _FLAG, _flag_value_span),
    partial(_substitute, _URL_CREDENTIALS, _secret_span),
    *(partial(_substitute, pattern, _whole_span) for pattern in _KNOWN_TOKENS),
    partial(_substitute, _BEARER, _secret_span),
    partial(_substitute, _BASIC, _basic_span),
)


def mask_text(text: str) -> tuple[str, int]:
    """Return `text` with every secret replaced by MASK, and how many were replaced."""
    total = 0
    for mask_pass in _PASSES:
        text, count = mask_pass(text)
        total += count
    return text, total


def _mask_whole(text: str) -> tuple[str, int]:
    """Under a credential key every string is a secret, however it looks."""
    return (text, 0) if text in ("", MASK) else (MASK, 1)


def _walk(value: object, leaf: Callable[[str], tuple[str, int]]) -> tuple[object, int]:
    """A copy of a JSON value with `leaf` applied to each string under it, and the count."""
    if isinstance(value, str):
        return leaf(value)
    if isinstance(value, dict):
        masked: dict = {}
        total = 0
        for key, item in value.items():
            credential = isinstance(key, str) and _CREDENTIAL_KEY.search(key)
            masked[key], count = _walk(item, _mask_whole if credential else leaf)
            total += count
        return masked, total
    if isinstance(value, (list, tuple)):
        items, total = [], 0
        for item in value:
            item, count = _walk(item, leaf)
            items.append(item)
            total += count
        return (tuple(items) if isinstance(value, tuple) else items), total
    return value, 0


def mask_json(value: object) -> tuple[object, int]:
    """A masked copy of a JSON value and how many secrets were masked; `value` is untouched."""
    return _walk(value, mask_text)
