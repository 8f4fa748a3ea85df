"""The password arguments of command-line clients, also inside combined short options.

`mysql -uroot -pX`, `ldapsearch -xw X`, `redis-cli -a X`, `sqlcmd -P X`, `7z -pX`,
`docker login -p X`, `openssl ... -passin pass:X`, `keytool -storepass X`,
`smbclient -U user%X`, `sqlplus scott/X@db`, `curl -fsSLu user:X`, `htpasswd -b f user X`,
`vault login X`, and `config set <credential name> <value>` (aws, npm, yarn, git config).
A command is looked for only where its name is a word of the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kindling.masking import patterns as p
from kindling.masking import scan
from kindling.masking import values as v

Span = tuple[int, int]
_Q = r"(?:'(?P<sq>[^'\n]*)'|\"(?P<dq>[^\"\n]*)\"|(?P<bare>[^\s\"'`,;&|)\]}<>]+))"


# Command -> the short options that carry its password, and whether the value must be
# attached (`mysql -pX`: a lone `-p` prompts).
_SHORT_PASSWORD = {
    **{
        name: ("p", True)
        for name in (
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlcheck",
            "mysqlshow",
            "mariadb",
            "mariadb-dump",
            "7z",
            "7za",
            "7zz",
            "7zr",
        )
    },
    **{
        name: ("w", False)
        for name in (
            "ldapsearch",
            "ldapadd",
            "ldapmodify",
            "ldapdelete",
            "ldapwhoami",
            "ldapcompare",
            "ldapmodrdn",
            "ldappasswd",
            "ldapexop",
        )
    },
    **{name: ("P", False) for name in ("sqlcmd", "bcp", "osql", "zip", "unzip", "zipcloak")},
    **{
        name: ("p", False)
        for name in (
            "sshpass",
            "mongo",
            "mongosh",
            "mongodump",
            "mongorestore",
            "mongoexport",
            "mongoimport",
            "twine",
            "rabbitmqadmin",
            "influx",
            "cqlsh",
        )
    },
    "redis-cli": ("a", False),
    "keydb-cli": ("a", False),
}
_COMMAND_NAMES = frozenset(
    (
        *_SHORT_PASSWORD,
        "mysqlshow",
        "mysqlsh",
        "mariadb-dump",
        "mongofiles",
        "mongostat",
        "mongotop",
        "az",
        "docker",
        "podman",
        "nerdctl",
        "buildah",
        "skopeo",
        "oras",
        "helm",
        "openssl",
        "keytool",
        "jarsigner",
        "smbclient",
        "rpcclient",
        "sqlplus",
        "htpasswd",
        "vault",
        "nmcli",
        "curl",
    )
)
COMMAND = p.Lazy(
    r"(?<![A-Za-z0-9_.-])(?P<cmd>mysql[a-z]*|mariadb(?:-dump)?|7z[ar]?|7zz|"
    r"ldap[a-z]+|sqlcmd|bcp|osql|zip|unzip|zipcloak|sshpass|mongo[a-z]*|twine|redis-cli|"
    r"keydb-cli|rabbitmqadmin|influx|cqlsh|az|docker|podman|nerdctl|buildah|skopeo|oras|"
    r"helm|openssl|keytool|jarsigner|smbclient|rpcclient|sqlplus|htpasswd|vault|nmcli|curl)"
    r"(?![A-Za-z0-9_-])"
)
_LINE_REST = re.compile(r"[^\n;|&]{0,300}")
_ARG = re.compile(
    r"(?:[^\s'\";|&`]*(?:'[^'\n]*'|\"[^\"\n]*\"))+[^\s'\";|&`]*|[^\s'\";|&`]+(?<![,.)])"
)
_LOGIN_P = frozenset(("az", "docker", "podman", "nerdctl", "buildah", "skopeo", "oras", "helm"))
_DASH_OPTIONS = frozenset(
    (
        "-storepass",
        "-keypass",
        "-srcstorepass",
        "-deststorepass",
        "-srckeypass",
        "-destkeypass",
        "-password",
        "-pass",
        "-passin",
        "-passout",
        "-k",
        "-kfile",
    )
)


def _args(view: str, start: int, end: int) -> list[tuple[int, int]]:
    return [m.span() for m in _ARG.finditer(view, start, end)]


def inner(view: str, span: tuple[int, int]) -> Span:
    """An argument's span without the quotes around it."""
    start, end = span
    if end - start >= 2 and view[start] in "'\"" and view[end - 1] == view[start]:
        return start + 1, end - 1
    return start, end


def command_passwords(view: str, look: bool) -> Iterator[Span]:
    """The password arguments of the command-line clients that take one."""
    present = _COMMAND_NAMES.intersection(scan.lowered(view).split())
    if not present:
        return
    found = sorted(
        (m.start("cmd"), m.group("cmd"), m.end())
        for name in present
        for m in _occurrences(view, name)
    )
    done = 0
    for start, cmd, end in found:
        if start < done:
            continue  # an argument of the command before, already read
        rest = _LINE_REST.match(view, end)
        done = rest.end()
        args = _args(view, end, rest.end())
        words = [view[a:b] for a, b in args]
        yield from _command_args(view, cmd, args, words)


def _occurrences(view: str, name: str) -> Iterator[re.Match[str]]:
    pos = view.find(name)
    while pos >= 0:
        m = COMMAND.compiled.match(view, pos)
        if m and m.group("cmd") == name:
            yield m
        pos = view.find(name, pos + 1)


def secret(view: str, span: Span) -> Span | None:
    """The argument at `span` (unquoted) when it is a secret, not an option, code or a file."""
    start, end = inner(view, span)
    value = view[start:end]
    if not value or value == "[REDACTED]" or value.startswith("-"):
        return None
    if v.is_code(view, start, end) or value.startswith(("pass:$", "env:", "file:", "fd:", "stdin")):
        return None
    return start, end


def _short_option(cmd: str, words: list[str]) -> tuple[str, bool]:
    """The short option that carries `cmd`'s password, and whether it must be attached."""
    if cmd in _SHORT_PASSWORD:
        return _SHORT_PASSWORD[cmd]
    if cmd.startswith("mysql"):
        return "p", True
    if cmd.startswith("mongo"):
        return "p", False
    if cmd.startswith("ldap"):
        return "w", False
    if (cmd in _LOGIN_P and "login" in words[:4]) or (cmd == "helm" and "registry" in words[:2]):
        return "p", False
    return "", False


def _clustered(
    view: str, args: list, words: list[str], letter: str, attached: bool
) -> Iterator[Span]:
    """`-p X`, `-pX`, and the option inside a cluster of short options (`-xw X`, `-uroot`)."""
    for i, word in enumerate(words):
        if len(word) < 2 or word[0] != "-" or word[1] == "-":
            continue
        at = word.find(letter, 1)
        if at < 1 or not (at == 1 or word[1:at].isalpha()):
            continue
        if at + 1 < len(word):
            found = secret(view, (args[i][0] + at + 1, args[i][1]))
        elif not attached and i + 1 < len(words):
            found = secret(view, args[i + 1])
        else:
            found = None
        if found:
            yield found


def _next_value(view: str, args: list, words: list[str], names: tuple[str, ...]) -> Iterator[Span]:
    """The argument after each of `names` (`keytool -storepass X`, `vault login X`)."""
    for i, word in enumerate(words[:-1]):
        if word in names:
            found = secret(view, args[i + 1])
            if found:
                start, end = found
                if view.startswith("pass:", start):
                    start += 5
                if end > start and "=" not in view[start:end]:
                    yield start, end


def _split_value(view: str, span: tuple[int, int], sep: str, stop: str = "") -> Span | None:
    """The part of an argument after `sep` (and before `stop`): `user%X`, `scott/X@db`."""
    start, end = inner(view, span)
    cut = view.find(sep, start, end)
    if cut <= start:
        return None
    tail = view.find(stop, cut, end) if stop else -1
    end = tail if tail > 0 else end
    return (cut + 1, end) if end > cut + 1 else None


def _command_args(view: str, cmd: str, args: list, words: list[str]) -> Iterator[Span]:
    letter, attached = _short_option(cmd, words)
    if letter:
        yield from _clustered(view, args, words, letter, attached)
    if cmd in ("openssl", "keytool", "jarsigner", "influx"):
        yield from _next_value(view, args, words, tuple(_DASH_OPTIONS))
    elif cmd == "vault":
        yield from _next_value(view, args, words, ("login",))
    elif cmd == "nmcli":
        yield from _next_value(view, args, words, ("password", "wifi-sec.psk", "802-1x.password"))
    elif cmd == "curl":
        for i, word in enumerate(words):
            if word.startswith("-") and not word.startswith("--"):
                yield from _curl_user(view, args, words, i)
    elif cmd in ("smbclient", "rpcclient"):
        for i, word in enumerate(words[:-1]):
            found = _split_value(view, args[i + 1], "%") if word in ("-U", "--user") else None
            if found:
                yield found
    elif cmd == "sqlplus" and words and "/" in words[0] and not words[0].startswith("/"):
        found = _split_value(view, args[0], "/", "@")
        if found:
            yield found
    elif cmd == "htpasswd":
        yield from _htpasswd(view, args, words)


def _htpasswd(view: str, args: list, words: list[str]) -> Iterator[Span]:
    """`htpasswd -b [-c] file user X`: the third operand after the batch flag."""
    for i, word in enumerate(words):
        if word.startswith("-") and not word.startswith("--") and "b" in word:
            names = [j for j in range(i + 1, len(words)) if not words[j].startswith("-")]
            if len(names) >= 3:
                found = secret(view, args[names[2]])
                if found:
                    yield found
            return


def _curl_user(view: str, args: list, words: list[str], i: int) -> Iterator[Span]:
    """`curl -fsSLu user:X`: the password after the user, attached or the next argument."""
    word = words[i]
    at = max(word.find("u", 1), word.find("U", 1))
    if at < 1 or not word[1:at].isalpha():
        return
    if at + 1 < len(word):
        start, end = args[i][0] + at + 1, args[i][1]
    elif i + 1 < len(words):
        start, end = inner(view, args[i + 1])
    else:
        return
    colon = view.find(":", start, end)
    if colon > 0 and end > colon + 1 and secret(view, (colon + 1, end)):
        yield colon + 1, end


CONFIG_SET = p.Lazy(
    r"(?<![A-Za-z0-9_-])set[ \t]+(?:-[-\w]+[ \t]+)*(?P<name>[A-Za-z_./:@-]*[A-Za-z_])[ \t]+" + _Q,
    literal="set",
)


def config_set(view: str, look: bool) -> Iterator[Span]:
    """`aws configure set aws_secret_access_key X`, `yarn config set npmAuthToken X`."""
    pos = view.find("set ")
    while pos >= 0:
        m = CONFIG_SET.compiled.match(view, pos)
        pos = view.find("set ", pos + 1)
        if m and p.CREDENTIAL_KEY.compiled.search(m.group("name")):
            span = v.value_span(view, m)
            if span:
                yield span
