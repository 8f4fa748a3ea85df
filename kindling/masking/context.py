"""Credential positions beyond `name=value`: headers, cookies, command lines, config shapes.

Each finder reads a position whose value is a credential by where it stands, and masks the
value whatever it looks like unless it is plainly no secret (`kindling.masking.values`):

- `Authorization:` with any scheme (`Bearer`, `token`, `SSWS`, `AWS4-HMAC-SHA256 ...`);
- cookies with session-like names (`Cookie:`, `Set-Cookie:`, `curl -b`);
- names that end in `key` (`STRIPE_KEY=`, `X-RapidAPI-Key:`, `--account-key`): every value
  under an upper-case environment name, a random-looking one under any other;
- XML elements and name/value attribute pairs (`<password>X</password>`,
  `<add key="ApiToken" value="X"/>`), netrc `password X`, pgpass lines;
- `auth=("user", "X")` tuples and credential constructors (`HTTPBasicAuth("u", "X")`,
  `AzureKeyCredential("X")`): the last string argument;
- webhook URLs with the secret in the path, and a URL user that is a token (`https://X@host`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kindling.masking import patterns as p
from kindling.masking import scan
from kindling.masking import values as v
from kindling.masking.commands import inner as _inner
from kindling.masking.commands import secret as _secret

Span = tuple[int, int]
_Q = r"(?:'(?P<sq>[^'\n]*)'|\"(?P<dq>[^\"\n]*)\"|(?P<bare>[^\s\"'`,;&|)\]}<>]+))"

AUTH_HEADER = p.Lazy(
    r"(?<![A-Za-z0-9-])(?:Proxy-)?Authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?P<scheme>[A-Za-z][A-Za-z0-9._-]*)[ \t]+(?P<secret>[^\s\"'`\\][^\n\"'`\\]*)",
    re.IGNORECASE,
    literal=None,
)
COOKIE = p.Lazy(
    r"(?:(?<![A-Za-z0-9-])(?:set-)?cookie[\"']?[ \t]*[:=][ \t]*[\"']?|(?:-b|--cookie)[ \t]+[\"']?)"
    r"(?P<pairs>[^\n\"'`]{1,2000})",
    re.IGNORECASE,
)
_COOKIE_PAIR = re.compile(r"(?:^|;)[ \t]*(?P<name>[^=;\s]{1,80})=(?P<value>[^;\s]*)")
_SESSION_NAME = re.compile(
    r"sess|sid\b|^sid|auth|token|jwt|remember|login|csrf|xsrf|secret|identity|\.aspxauth",
    re.IGNORECASE,
)
_COOKIE_ATTRIBUTES = frozenset(
    ("path", "domain", "expires", "max-age", "samesite", "priority", "version", "comment")
)

_NOT_SECRET_KEYS = re.compile(
    r"(?i)(?:^|[_.-]|(?<=[a-z])(?=[A-Z]))(?:public|pub|publishable|primary|foreign|sort|"
    r"partition|cache|hash|range|routing|idempotency|unique|index|lookup|object|row|map|"
    r"dedupe?|group|shard|s3|i18n|translation|react|list|dict|item|message|event|"
    r"composite|natural|surrogate|hotkey|short|sign[_-]?in|storage[_-]?path|attribute|"
    r"api[_-]?version|ssh|gpg|pgp|site)(?:[_.-]?key)$"
)
_ENV_NAME = re.compile(
    r"[A-Z][A-Z0-9_]*_KEY|(?i:.*(?:encryption|signing|secret|private|master|api|access|account|"
    r"app|client|license|licence|subscription|service|auth|session|storage|shared|sas|admin|"
    r"deploy|webhook|hmac|jwt|cookie|crypto|aes|sign|server|consumer|merchant|partner)[_-]?key)"
)
# Options whose value is a key whatever it looks like (`az storage --account-key X`).
STRONG_KEY_FLAGS = frozenset(
    (
        "account-key",
        "master-key",
        "license-key",
        "encryption-key",
        "signing-key",
        "storage-key",
        "app-key",
        "auth-key",
        "client-key",
        "primary-key",
        "admin-key",
        "subscription-key",
        "shared-key",
        "sas-key",
        "api-key",
        "secret-key",
        "access-key",
    )
)


def not_secret_key(name: str) -> bool:
    """`public_key`, `cache-key`, `PRIMARY_KEY`: names ending in `key` that hold no secret."""
    return _NOT_SECRET_KEYS.search(name) is not None


def key_suffix_span(view: str, reversed_view: str, start: int, key_end: int) -> Span | None:
    """The value after a name that ends in `key` (at `key_end`) and is no credential name
    by itself: every value under an environment-style name or a known kind of key
    (`STRIPE_KEY`, `encryptionKey`), a random-looking one under any other."""
    length = len(view)
    name_match = p.NAME_CHARS.compiled.match(reversed_view, length - key_end)
    name = view[key_end - (name_match.end() - name_match.start()) : key_end]
    if not name or _NOT_SECRET_KEYS.search(name) or p.CREDENTIAL_KEY.compiled.search(name):
        return None
    if name.lower() in ("key", "-key", "--key") and view[start - 1] == ":":
        weak = True  # `key: value` in YAML is anything; only a random value counts
    else:
        weak = not _ENV_NAME.fullmatch(name.lstrip("-"))
    value = p.ASSIGNED_VALUE.compiled.match(view, start)
    return v.value_span(view, value, weak=weak) if value else None


def auth_headers(view: str, look: bool) -> Iterator[Span]:
    """`Authorization: <any scheme> <credentials>`: everything after the scheme."""
    low = scan.lowered(view)
    pos = low.find("authorization")
    while pos >= 0:
        m = AUTH_HEADER.compiled.match(view, max(0, pos - 6))
        m = m or AUTH_HEADER.compiled.match(view, pos)
        pos = low.find("authorization", pos + 1)
        if m is None:
            continue
        start, end = m.span("secret")
        text = view[start:end].rstrip(" \t")
        end = start + len(text)
        if m.group("scheme").lower() in p.NOT_SECRETS or not (
            text[0].isalnum() or text[0] in "+/_~."
        ):
            continue
        if (
            text
            and not v.quoted_is_code(text)
            and not text.startswith("[REDACTED]")
            and len(text) > 2
        ):
            yield start, end


def cookies(view: str, look: bool) -> Iterator[Span]:
    """The values of session-like (or random-looking) cookies in a cookie header or flag."""
    low = scan.lowered(view)
    starts = []
    for word, back in (("cookie", 4), ("-b ", 0), ("--cookie ", 0)):
        pos = low.find(word)
        while pos >= 0:
            starts.append(pos - back if low.startswith("set-", pos - back) and back else pos)
            pos = low.find(word, pos + 1)
    for m in filter(None, (COOKIE.compiled.match(view, at) for at in sorted(set(starts)))):
        base = m.start("pairs")
        for pair in _COOKIE_PAIR.finditer(m.group("pairs")):
            name, value = pair.group("name"), pair.group("value")
            if name.lower() in _COOKIE_ATTRIBUTES or not value or value == "[REDACTED]":
                continue
            if _SESSION_NAME.search(name) or v.high_entropy(value):
                if not v.quoted_is_code(value) and len(value) > 2:
                    yield base + pair.start("value"), base + pair.end("value")


XML_ELEMENT = p.Lazy(
    r"<(?P<tag>[A-Za-z_][\w.:-]{0,60})(?:[ \t][^<>\n]{0,200})?>"
    r"(?P<value>[^<\n]{1,2000})</(?P=tag)>",
    literal="</",
)
NAME_VALUE = p.Lazy(
    r"(?<![A-Za-z0-9_-])(?:key|name|id)[ \t]*=[ \t]*(?P<q>[\"'])(?P<name>[^\"'\n]{1,80})(?P=q)"
    r"[ \t]+value[ \t]*=[ \t]*"
    r"(?P<q2>[\"'])(?P<value>[^\"'\n]*)(?P=q2)",
    literal="value",
)


_VALUE_WORD = re.compile(r"[\"'][ \t]+value[ \t]*=")
_NAME_START = re.compile(r"(?:key|name|id)[ \t]*=[ \t]*[\"'][^\"'\n]{1,80}\Z")


def _name_before(view: str, at: re.Match[str]) -> re.Match[str] | None:
    """The `key="..." value="..."` pair whose `value=` is at `at`."""
    head = _NAME_START.search(view, max(0, at.start() - 100), at.start())
    return NAME_VALUE.compiled.match(view, head.start()) if head else None


def xml_values(view: str, look: bool) -> Iterator[Span]:
    """`<password>X</password>` and `<add key="ApiToken" value="X"/>`."""
    for pattern, key in ((XML_ELEMENT, "tag"), (NAME_VALUE, "name")):
        if pattern is NAME_VALUE:
            if "value" not in view:
                continue
            found = (_name_before(view, at) for at in _VALUE_WORD.finditer(view))
        else:
            found = pattern.finditer(view, look=True)
        for m in filter(None, found):
            name = m.group(key).rsplit(":", 1)[-1]
            strong = p.CREDENTIAL_KEY.compiled.search(name) is not None
            weak = not strong and name.lower().endswith("key") and not _NOT_SECRET_KEYS.search(name)
            if not (strong or weak):
                continue
            start, end = m.span("value")
            value = view[start:end].strip()
            start = start + view[start:end].find(value) if value else start
            end = start + len(value)
            if not value or v.quoted_is_code(value) or (weak and not v.high_entropy(value)):
                continue
            if value.startswith("${") or value.startswith("{{"):
                continue
            yield start, end


NETRC = p.Lazy(
    r"(?:machine|login|default)[ \t\n]+[^\n]{0,200}?(?:\n[ \t]*[^\n]{0,200}?){0,3}?"
    r"(?<![A-Za-z0-9_-])(?:password|passwd|account)[ \t]+(?P<secret>[^\s\"']+|\"[^\"\n]+\")",
    literal="machine",
)
_PORT_FIELD = re.compile(r":(?:[0-9]{1,5}|\*):")
PGPASS = p.Lazy(
    r"[ \t]*(?:[A-Za-z0-9_.*-]+|\[[0-9a-fA-F:]+\]):(?:[0-9]{1,5}|\*):[A-Za-z0-9_.*-]+:"
    r"[A-Za-z0-9_.@*-]+:(?P<secret>[^\s]+)[ \t]*(?:\r?$)",
    re.MULTILINE,
)


def credential_files(view: str, look: bool) -> Iterator[Span]:
    """netrc `password X` (after `machine`) and `.pgpass` lines (`host:port:db:user:X`)."""
    for m in NETRC.finditer(view, look=True):
        start, end = _inner(view, m.span("secret"))
        if _secret(view, (start, end)):
            yield start, end
    line_done = -1
    for field in _PORT_FIELD.finditer(view):
        if field.start() < line_done:
            continue
        line_start = view.rfind("\n", 0, field.start()) + 1
        line_done = view.find("\n", field.end())
        line_done = len(view) if line_done < 0 else line_done
        m = PGPASS.compiled.match(view, line_start, line_done)
        if m is None:
            continue
        start, end = m.span("secret")
        if not v.quoted_is_code(view[start:end]) and not view[start:end].startswith("//"):
            yield start, end


# The name's tail is bounded: unbounded, a long run of letters holding `auth` again and again
# (`AuthorizationAuthorization...`) was read to its end from each one, in quadratic time.
AUTH_CALL = p.Lazy(
    r"(?i:auth|credentials?)[A-Za-z_]{0,40}[ \t]*"
    r"(?:=[ \t]*|\()[(\[]?[ \t]*(?P<args>(?:(?:[\"'][^\"'\n]*[\"']|[A-Za-z_][\w.]*)[ \t]*,[ \t]*)*)"
    r"(?P<q>[\"'])(?P<secret>[^\"'\n]+)(?P=q)[ \t]*[)\]]",
)


def auth_calls(view: str, look: bool) -> Iterator[Span]:
    """`auth=("user", "X")`, `HTTPBasicAuth("user", "X")`, `AzureKeyCredential("X")`."""
    low = scan.lowered(view)
    for word in ("auth", "credential"):
        pos = low.find(word)
        while pos >= 0:
            m = AUTH_CALL.compiled.match(view, pos)
            pos = low.find(word, pos + 1)
            if m is None:
                continue
            start, end = m.span("secret")
            if not v.quoted_is_code(view[start:end]) and len(view[start:end]) > 2:
                yield start, end


# In a URL (a scheme's host first: `src/webhooks/retry.ts:3:1` is a path, not a secret),
# after one of these path segments, the remaining segments hold the secret.
WEBHOOK = p.Lazy(
    r"(?i)://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9_.~-]+){0,8}?"
    r"(?:/(?:hooks?|webhooks?|webhookb2|IncomingWebhook|catch|trigger/[^/\s]+/with/key|"
    r"services)(?=/)|/bot(?=[0-9]{6,}:))(?P<rest>(?:/?[A-Za-z0-9_@:.~-]+)+/?)",
)
_SEGMENT = re.compile(r"[A-Za-z0-9_@:.~-]+")


def webhook_urls(view: str, look: bool) -> Iterator[Span]:
    """The secret path segments of webhook URLs (Discord, Teams, Slack, Zapier, Mattermost)."""
    if not scan.has(view, "hook", "/bot", "/with/key", "/services/"):
        return
    for m in WEBHOOK.compiled.finditer(view):
        base = m.start("rest")
        for seg in _SEGMENT.finditer(m.group("rest")):
            text = seg.group()
            if text.isdigit() or text.lower() in ("catch", "incomingwebhook", "slack", "api"):
                continue
            if len(text) >= 20 or (
                any(c.isdigit() for c in text) and any(c.isalpha() for c in text)
            ):
                yield base + seg.start(), base + seg.end()


URL_USER_TOKEN = p.Lazy(r"://(?P<secret>[A-Za-z0-9_.~+-]{16,})@", literal="://")


def url_user_tokens(view: str, look: bool) -> Iterator[Span]:
    """`https://<token>@host`: a URL user with no password that is itself a token."""
    for m in URL_USER_TOKEN.finditer(view, look):
        if v.high_entropy(m.group("secret")):
            yield m.span("secret")
