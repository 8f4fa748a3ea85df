"""A cheap first look for secrets, so most writes never load the masking patterns.

`might_hold_secret` must answer True for any text in which `kindling.masking` could find a
secret: every pattern there needs one of these fragments (case-insensitive). Text without
any of them is stored as it is, without compiling a single regex.
"""

from __future__ import annotations

import orjson

# Credential key words (password, passwd, passphrase, secret, token, *_key, auth*, pwd), PEM
# blocks, URLs with a password, known token prefixes, and Bearer/Basic auth values.
TRIGGERS = (
    "pass",
    "secret",
    "token",
    "key",
    "auth",
    "pwd",
    "-----begin",
    "://",
    "sk-",
    "xox",
    "gh",
    "akia",
    "asia",
    "bearer",
    "basic",
)


def might_hold_secret(text: str) -> bool:
    """False only when no masking pattern can match `text`."""
    lowered = text.lower()
    return any(fragment in lowered for fragment in TRIGGERS)


def json_might_hold_secret(value: object) -> bool:
    """The same look over every key and string of a JSON value."""
    return might_hold_secret(orjson.dumps(value).decode("utf-8"))
