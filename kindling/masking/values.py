"""Whether a value under a credential name is a secret, or plainly not one.

A value in a credential position is masked whatever it looks like, unless it reads as
code or a stand-in: a reference (`$KEY`, `${KEY}`, `process.env.KEY`, `os.environ[...]`,
`{{ secrets.KEY }}`, `%KEY%`, `<token>`, `!Ref Key`), a placeholder (`xxx`, `***`,
`changeme`, `your-api-key`), a type (`str`, `string | null`, `SecretStr`), a call or a
subscript, an attribute path, a name that is itself a credential name (`api_key=api_key`), a
constant, a path, a count or duration, an empty value. Masking those would corrupt the
record and hide nothing.

`high_entropy` is the weaker test for weaker positions (a name that only ends in `key`, an
`X-...-Key` header, a URL's user with no password): there the value must also look random.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from kindling.masking import patterns as p

Span = tuple[int, int]

# Stand-ins people write where a secret goes: `changeme`, `your_api_key_here`, `<token>`,
# `REPLACE_ME`, `xxxx-xxxx`, `sk-...`, `TODO`.
_PLACEHOLDER = re.compile(
    r"(?i:(?:change|replace)[_-]?(?:me|it|this)\w*|your[_-]?\w*|my[_-]?(?:api[_-]?)?"
    r"(?:key|token|secret|password)\w*|(?:insert|enter|put|add)[_-]\w*|placeholder\w*"
    r"|redacted|dummy|todo|tbd|fixme|none|null|nil|empty|unset|example(?:[_-]\w*)?"
    r"|\w*[_-](?:here|placeholder)|(?:api[_-]?)?(?:key|token|secret|password)[_-]?here"
    r"|[x*•.#_-]{3,}(?:[_-][x*•.#]{2,})*)"
    r"|\.{3}|…|[\w-]{0,12}(?:\.{3}|…)[\w-]{0,4}"
)
# `AuthConfig`, `SecretStr`, `TokenResponse`: a type name of two or more capitalised words.
_TYPE_NAME = re.compile(
    r"(?:[A-Z][a-z]{2,}){2,4}(?:\[[^\]\n]{0,80}\])?|[A-Z][A-Za-z]*<[^<>\n]{1,60}>"
)
_PUBLISHABLE = ("pk_live_", "pk_test_", "pk.eyJ")
_MORE_REFERENCES = re.compile(
    r"!(?:Ref|Sub|GetAtt|ImportValue|Secret|Vault|env)\b|%\([A-Za-z_]\w*\)s|#\{|@\{|\$\$|"
    r"(?:process\.env|import\.meta\.env|os\.environ|ENV|env|System\.getenv|config|settings|"
    r"secrets|vars|inputs|Deno\.env|Environment)[.\[(]"
)


def is_placeholder(value: str) -> bool:
    """`changeme`, `xxx`, `your-token`, `<token>`, `...`: a stand-in, not a secret."""
    return bool(
        _PLACEHOLDER.fullmatch(value)
        or p.PLACEHOLDER.compiled.fullmatch(value)
        or (value.startswith("<") and value.endswith(">"))
    )


def is_code(view: str, start: int, end: int) -> bool:
    """True when the bare value at view[start:end] reads as code or a placeholder."""
    value = view[start:end]
    if len(value) <= 2 or value.lower() in p.NOT_SECRETS or is_placeholder(value):
        return True
    if value.startswith(_PUBLISHABLE):
        return True  # publishable keys are public by design
    if (
        p.REFERENCE.compiled.match(value)
        or _MORE_REFERENCES.match(value)
        or p.SHORT_NUMBER.compiled.fullmatch(value)
    ):
        return True
    if p.CALL.compiled.match(value) or (
        view.startswith(("(", "["), end)
        and (p.NAME.compiled.fullmatch(value) or p.DOTTED_NAME.compiled.fullmatch(value))
    ):
        return True  # a call or a subscript
    if p.DOTTED_NAME.compiled.fullmatch(value) and _reads_as_names(value):
        return True
    if (
        _TYPE_NAME.fullmatch(value)
        and not any(c.isdigit() for c in value)
        and _typed(view, start, end)
    ):
        return True
    if p.NAME.compiled.fullmatch(value) and _credential_name(value):
        return True  # `api_key=api_key`, `password=db_password`: a variable named for it
    path = p.PATH.compiled.fullmatch(value)
    return bool(path and (p.FILE_SUFFIX.compiled.search(value) or value == value.lower()))


_NAME_PART = re.compile(r"[A-Za-z_$]+[0-9]{0,2}|[A-Za-z_$]+(?:_[A-Za-z0-9]+)+|[A-Za-z0-9]{1,4}")


def _typed(view: str, start: int, end: int) -> bool:
    """A type annotation's position: `name: Type` followed by `;`, `,`, `)`, `=`, `|` or `>`
    (`token: AuthToken;`, `auth: AuthConfig = None`), not a value at the end of a line."""
    before = view[max(0, start - 3) : start].rstrip(" \t")
    after = view[end : end + 3].lstrip(" \t")
    return before.endswith(":") and after[:1] in (";", ",", ")", "=", "|", ">", "]", "[", "?")


def _reads_as_names(value: str) -> bool:
    """`settings.API_KEY`, `process.env.TOKEN`: every part a word-like name, none random."""
    return all(
        _NAME_PART.fullmatch(part) and not high_entropy(part, 12) for part in value.split(".")
    )


def _credential_name(value: str) -> bool:
    key = p.CREDENTIAL_KEY.compiled.search(value)
    return bool(
        key
        and (
            key.start() == 0
            or value[key.start() - 1] in "_."
            or (value[key.start() - 1].islower() and value[key.start()].isupper())
        )
    )


def quoted_is_code(value: str) -> bool:
    """True when a quoted value is empty, a mask, a reference or a placeholder."""
    return (
        not value
        or bool(p.MASK_ONLY.compiled.fullmatch(value))
        or bool(p.SCHEME_ONLY.compiled.fullmatch(value))
        or bool(p.REFERENCE.compiled.match(value))
        or bool(_MORE_REFERENCES.match(value))
        or is_placeholder(value)
        or value.startswith(_PUBLISHABLE)
        or value.lower() in ("include", "omit", "same-origin", "none", "null", "true", "false")
        # The quote that closes a string holding the key: `input("Password: ")`, and a JSON
        # string's end (`["mysql -p"]`) read as the start of a value.
        or (len(value) <= 3 and not any(c.isalnum() for c in value))
        or value[0] in ")]},;"
    )


# No code value runs this long: a longer one is masked whole. Besides, a value that reads as
# code is searched again for the assignments inside it, so a long one would be searched
# again and again (`${password=${password=...` over 100 KB).
MAX_CODE_CHARS = 1_000


def value_span(view: str, m: re.Match[str], weak: bool = False) -> Span | None:
    """The span of the value an ASSIGNED_VALUE-style match holds, unless it is no secret.

    With `weak` (a name that only ends in `key`), the value must also look random.
    """
    group = m.lastgroup
    if group is None or group == "masked":
        return None
    start, end = m.span(group)
    if view.startswith("[REDACTED]", start):
        return None
    if end - start > MAX_CODE_CHARS:
        return start, end
    if weak and not high_entropy(view[start:end], 12):
        return None
    if group == "bare":
        return None if is_code(view, start, end) else (start, end)
    return None if quoted_is_code(view[start:end]) else (start, end)


_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def high_entropy(value: str, least: int = 16) -> bool:
    """Random-looking: `least`+ characters, letters and digits mixed, many distinct ones.

    A UUID, a hash (hex) and a word-built name (`cache_key_prefix`) are not.
    """
    if len(value) < least or _UUID.fullmatch(value):
        return False
    if _HEX.fullmatch(value) and len(value) in (32, 40, 56, 64, 96, 128):
        return False
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    upper = sum(c.isupper() for c in value)
    if letters == 0 or (digits == 0 and (upper == 0 or upper == letters)):
        return False
    if re.fullmatch(r"[a-z]+(?:[_.-][a-z0-9]+)*|[A-Z][a-z]+(?:[A-Z][a-z0-9]+)*", value):
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= 3.2
