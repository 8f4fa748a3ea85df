"""Mask secrets inside JSON values: provenance, tool inputs, argument lists.

Strings are masked as text. Under a key that names a credential (`password`, `GITHUB_TOKEN`,
`Authorization`) the whole value is a secret however it looks: each string in it, and a
number given right under the key (`{"pin": ...}` is not such a key, `{"password": 123456}`
is). A key that is itself a secret (`{"ghp_...": "ci token"}`) is masked like any text; if
two keys then collide, the later one gets a ` (2)`-style suffix so no value is lost.

A list of strings is also read as a command line: after a credential option
(`["mysql", "--password", "X"]`) the next item is masked whole, as are `-p X` and `-pX` for
the commands that take a password so (docker login, sshpass, twine; mysql attached),
and the password in `curl -u user:password`.
"""

from __future__ import annotations

import os

from kindling.masking import patterns as p
from kindling.masking.gate import CONFUSABLES, MASK
from kindling.masking.text import mask_text

# How a value is masked: as text, every string whole (somewhere under a credential key),
# or strings and numbers whole (right under a credential key).
_TEXT, _STRINGS, _ALL = 0, 1, 2

_LOGIN_COMMANDS = frozenset(("docker", "podman", "nerdctl", "buildah", "skopeo", "oras", "helm"))
_SHORT_P_COMMANDS = frozenset(("sshpass", "twine"))
_ATTACHED_P_COMMANDS = frozenset(
    ("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlcheck", "mariadb", "mariadb-dump")
)


def _is_credential_key(key: str) -> bool:
    name = key if key.isascii() else key.translate(CONFUSABLES)
    return p.CREDENTIAL_KEY.compiled.search(name) is not None and not p.PAGINATION.compiled.search(
        name
    )


def _whole(value: str) -> tuple[str, int]:
    return (value, 0) if value in ("", MASK) else (MASK, 1)


def _argv_masks(items: list) -> dict[int, tuple[int, int]]:
    """For a command line, the part of each item to mask: index -> (start, end)."""
    masks: dict[int, tuple[int, int]] = {}
    login = short_p = attached_p = curl = False
    for i, item in enumerate(items):
        if not isinstance(item, str):
            continue
        nxt = items[i + 1] if i + 1 < len(items) and isinstance(items[i + 1], str) else None
        name = os.path.basename(item)
        if name in _LOGIN_COMMANDS:
            login = nxt == "login" or (name == "helm" and nxt == "registry")
        short_p = short_p or name in _SHORT_P_COMMANDS or (login and item == "login")
        attached_p = attached_p or name in _ATTACHED_P_COMMANDS
        curl = curl or name == "curl"
        if nxt is not None and not nxt.startswith("-"):
            option = item[2:] if item.startswith("--") else ""
            if option and "=" not in option and _is_credential_key(option):
                masks[i + 1] = (0, len(nxt))
            elif item == "-p" and short_p:
                masks[i + 1] = (0, len(nxt))
            elif item in ("-u", "--user") and curl and ":" in nxt:
                masks[i + 1] = (nxt.index(":") + 1, len(nxt))
        if item.startswith("-p") and len(item) > 2 and item[2] != "-" and (short_p or attached_p):
            masks[i] = (2, len(item))
    return masks


def _walk_list(items: list | tuple, mode: int) -> tuple[list, int]:
    masks = _argv_masks(items) if mode == _TEXT else {}
    out, total = [], 0
    for i, item in enumerate(items):
        if i in masks and item[masks[i][0] :] not in ("", MASK):
            start, end = masks[i]
            item, count = item[:start] + MASK + item[end:], 1
        else:
            item, count = _walk(item, mode)
        out.append(item)
        total += count
    return out, total


def _walk_dict(value: dict, mode: int) -> tuple[dict, int]:
    masked: dict = {}
    total = 0
    for key, item in value.items():
        child = _STRINGS if mode else _TEXT
        if isinstance(key, str):
            if _is_credential_key(key):
                child = _ALL
            key, count = mask_text(key)
            total += count
            suffix = 2
            base = key
            while key in masked:
                key, suffix = f"{base} ({suffix})", suffix + 1
        masked[key], count = _walk(item, child)
        total += count
    return masked, total


def _walk(value: object, mode: int) -> tuple[object, int]:
    """A copy of a JSON value with its secrets masked, and how many were masked."""
    if isinstance(value, str):
        return _whole(value) if mode else mask_text(value)
    if isinstance(value, dict):
        return _walk_dict(value, mode)
    if isinstance(value, (list, tuple)):
        items, total = _walk_list(value, mode)
        return (tuple(items) if isinstance(value, tuple) else items), total
    if mode == _ALL and isinstance(value, (int, float)) and not isinstance(value, bool):
        return MASK, 1
    return value, 0


def mask_json(value: object) -> tuple[object, int]:
    """A masked copy of a JSON value and how many secrets were masked; `value` is untouched."""
    return _walk(value, _TEXT)
