"""A cheap first look for secrets, so most writes never load the masking patterns.

`might_hold_secret` must answer True for any text in which `kindling.masking` could find a
secret: every pattern there needs one of these fragments (case-insensitive, after mapping
look-alike letters to ASCII) or, for Discord bot tokens, the one small pattern below. Text
without any of them is stored as it is, without compiling the masking patterns.
"""

from __future__ import annotations

import re

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

# Discord bot tokens carry no fixed fragment: three dot-separated base64url parts.
_DOTTED_TOKEN = re.compile(r"[A-Za-z0-9_-]{23}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27}")


def might_hold_secret(text: str) -> bool:
    """False only when no masking pattern can match `text`."""
    lowered = (text if text.isascii() else text.translate(CONFUSABLES)).lower()
    return any(fragment in lowered for fragment in TRIGGERS) or (
        "." in text and _DOTTED_TOKEN.search(text) is not None
    )


def json_might_hold_secret(value: object) -> bool:
    """The same look over every key and string of a JSON value."""
    if isinstance(value, str):
        return might_hold_secret(value)
    if isinstance(value, dict):
        return any(
            (isinstance(k, str) and might_hold_secret(k)) or json_might_hold_secret(v)
            for k, v in value.items()
        )
    if isinstance(value, (list, tuple)):
        return any(json_might_hold_secret(v) for v in value)
    return False
