"""A cheap first look for secrets, so most writes never load the masking patterns.

`might_hold_secret` must answer True for any text in which `kindling.masking` could find a
secret: every pattern there needs one of these fragments (case-insensitive, after mapping
look-alike letters to ASCII) or, for Discord bot tokens, the one small pattern below. Text
without any of them is stored as it is, without compiling the masking patterns.

MASK, what a secret becomes, is here too: naming it must not compile a pattern either.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TypeVar

MASK = "[REDACTED]"

# Credential key words (password, passwd, passphrase, pass, pw, pwd, secret, token, *_key,
# credentials, auth*), PEM blocks, URLs with a password, known token prefixes, Bearer/Basic
# auth values and the commands whose flags carry passwords (curl -u, docker login -p, mysql).
TRIGGERS = (
    "pass",
    "pw",
    "secret",
    "token",
    "key",
    "cred",
    "auth",
    "amz-sig",
    "-----begin",
    "-----end",
    "://",
    "hooks.slack",
    "sk-",
    "sk_",
    "rk_",
    "whsec_",
    "xox",
    "xapp-",
    "gh",
    "akia",
    "asia",
    "aiza",
    "glpat-",
    "hf_",
    "npm_",
    "pypi-",
    "sg.",
    "eyj",
    ":aa",
    "bearer",
    "basic",
    "curl",
    "login",
    "mysql",
    "mariadb",
    "cookie",
    "hook",
    "sig",
    "psk",
    "dsn",
    "ldap",
    "redis",
    "sqlcmd",
    "bcp ",
    "zip",
    "7z",
    "mongo",
    "osql",
    "cqlsh",
    "influx",
    "rabbitmq",
    "keydb",
    "nmcli",
    "openssl",
    "smbclient",
    "rpcclient",
    "sqlplus",
    "vault",
    "machine",
    # Vendor tokens need no fragment here: each is a run of 24 or more token characters
    # (_RUN below), but for these 20-character key ids.
    "ltai",
    "abia",
    "acca",
)

# One character for one, so that positions found in the mapped text hold in the original:
# fullwidth ASCII and the Cyrillic and Greek letters that look like Latin ones.
_LOOK_ALIKES = {
    **{chr(0xFF01 + i): chr(0x21 + i) for i in range(0x5E)},
    **dict(
        zip("аеорсухѕіјԁԛԝһкмнтвАЕОРСУХЅІЈКМНТВ", "aeopcyxsijdqwhkmhtbAEOPCYXSIJKMHTB", strict=True)
    ),
    **dict(zip("αοριυνκτεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "aopiuvkteABEZHIKMNOPTYX", strict=True)),
    "ı": "i",
    "ſ": "s",
}
CONFUSABLES = str.maketrans(_LOOK_ALIKES)

# Shapes with no fixed fragment: a long run of token characters (a vendor token glued to
# other text, a base64 segment that may decode to a secret, a Discord bot token's parts), a
# percent escape, a `.pgpass` line's port field. Each is looked for only when the character
# it needs is there.
_RUN = re.compile(r"[A-Za-z0-9+/_-]{23}")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_PORT_FIELD = re.compile(r":(?:[0-9]{1,5}|\*):")


def _trie(words: list[str]) -> str:
    """A pattern matching any of `words`, written as a prefix tree (`p(?:ass|w)`): at each
    position the engine tries one branch per first letter rather than one per word."""
    tree: dict = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict) -> str:
        branches = [re.escape(char) + emit(node[char]) for char in sorted(node) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(tree)


# All fragments in one pattern, one pass over the text (a fragment holding another is left
# out: the shorter one finds every text the longer one would).
_FRAGMENTS = re.compile(
    _trie([t for t in TRIGGERS if not any(o != t and o in t for o in TRIGGERS)])
)


SHORT = 100  # characters: ids, paths and tool names, which recur across an import's entities
REMEMBERED = 16_384  # strings at most, least recently used forgotten first

_T = TypeVar("_T")


def remembered(fn: Callable[[str], _T]) -> Callable[[str], _T]:
    """`fn`, remembering its answers for strings of up to SHORT characters.

    An import asks again and again: 49,000 of the gate's 51,000 questions in a 10,000-entity
    import (bench/bench_bundle.py). A repeat is answered in 0.1 us, where the gate takes
    0.8 us and masking a short text 11 us (bench/bench_masking.py).
    """
    cached = functools.lru_cache(maxsize=REMEMBERED)(fn)

    @functools.wraps(fn)
    def call(text: str) -> _T:
        return cached(text) if len(text) <= SHORT else fn(text)

    call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]  # to time a first call
    return call


@remembered
def might_hold_secret(text: str) -> bool:
    """False only when no masking pattern can match `text`."""
    lowered = (text if text.isascii() else text.translate(CONFUSABLES)).lower()
    return (
        _FRAGMENTS.search(lowered) is not None
        or (len(text) >= 23 and _RUN.search(text) is not None)
        or ("%" in text and _ESCAPE.search(text) is not None)
        or (":" in text and _PORT_FIELD.search(text) is not None)
    )


def json_might_hold_secret(value: object) -> bool:
    """The same look over every key and string of a JSON value."""
    if isinstance(value, str):
        return might_hold_secret(value)
    # Loops rather than any(): an import runs this for every value of every entity.
    if isinstance(value, dict):
        for k, v in value.items():
            if (isinstance(k, str) and might_hold_secret(k)) or json_might_hold_secret(v):
                return True
    elif isinstance(value, (list, tuple)):
        for v in value:
            if json_might_hold_secret(v):
                return True
    return False
