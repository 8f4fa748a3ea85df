"""Git configuration read as git reads it, without running git: never anything executed.

The files git reads for a repository (system, global, the repository's own, the worktree's)
are parsed following git-config(1): sections and subsections, quoting and escapes,
continuation lines, comments, `[include] path` and `[includeIf "gitdir:…"]`,
`"gitdir/i:…"` and `"onbranch:…"` (other conditions never match, as in a git that lacks
them). Everything is bounded: include depth, file size, file count; only regular files are
read, so a FIFO or a device never blocks, and nothing under /dev, /proc or /sys is opened.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from kindling.fileio import read_regular

MAX_DEPTH = 10  # git's own include depth limit
MAX_FILE_BYTES = 1 << 20  # a config file larger than this is skipped whole
MAX_FILES = 64  # config files read for one repository, includes counted
_WEIRD = ("/dev/", "/proc/", "/sys/")


class Entry(NamedTuple):
    """One `section.subsection.key = value`; section and key lowercased, as git compares."""

    section: str
    subsection: str | None
    key: str
    value: str | None  # None: a bare key (a boolean true)


class Repo(NamedTuple):
    """What the conditions of `includeIf` look at."""

    git_dir: Path | None
    branch: str | None


class FileStat(NamedTuple):
    """A config file's identity for caching: path, size, mtime_ns, inode (None if absent)."""

    path: str
    stat: tuple[int, int, int] | None


class Config(NamedTuple):
    """Every entry in the order git sees them, and the files that were read (for caching)."""

    entries: list[Entry]
    files: list[FileStat]

    def get_all(self, section: str, subsection: str | None, key: str) -> list[str | None]:
        """Every value of one key, in order (the last is the one that counts)."""
        key = key.lower()
        return [
            e.value
            for e in self.entries
            if e.section == section and e.subsection == subsection and e.key == key
        ]

    def get(self, section: str, subsection: str | None, key: str) -> str | None:
        """The last value of one key, or None."""
        values = self.get_all(section, subsection, key)
        return values[-1] if values else None


def standard_files(environ: dict | os._Environ = os.environ) -> list[Path]:
    """System and global config files, in git's order, as the environment says."""
    files: list[Path] = []
    if not environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(Path(environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    if environ.get("GIT_CONFIG_GLOBAL"):
        files.append(Path(environ["GIT_CONFIG_GLOBAL"]).expanduser())
        return files
    home = environ.get("HOME")
    xdg = environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    if xdg:
        files.append(Path(xdg) / "git" / "config")
    if home:
        files.append(Path(home) / ".gitconfig")
    return files


def read_config(files: list[Path], repo: Repo, environ=os.environ) -> Config:
    """Parse `files` in order, following includes as git would for `repo`."""
    reader = Reader(repo, environ)
    for path in files:
        reader.read_file(path, depth=0)
    return Config(reader.entries, reader.stats)


class Reader:
    """Reads config files into entries, following includes; bounded (see the module)."""

    def __init__(self, repo: Repo, environ=os.environ) -> None:
        self.repo = repo
        self.environ = environ
        self.entries: list[Entry] = []
        self.stats: list[FileStat] = []

    def read_file(self, path: Path, depth: int) -> None:
        if depth > MAX_DEPTH or len(self.stats) >= MAX_FILES:
            return
        text = self._load(path, included=depth > 0)
        if text is not None:
            self.parse(text, path, depth)

    def _load(self, path: Path, *, included: bool) -> str | None:
        try:
            # Where an include leads (its links resolved); the standard files are the user's own.
            real = os.path.realpath(path) if included else str(path)
            if real.startswith(_WEIRD):
                self.stats.append(FileStat(str(path), None))
                return None
            st = os.stat(path)
            self.stats.append(FileStat(str(path), (st.st_size, st.st_mtime_ns, st.st_ino)))
            if st.st_size > MAX_FILE_BYTES:
                return None
            data = read_regular(path, limit=MAX_FILE_BYTES)
        except OSError:
            self.stats.append(FileStat(str(path), None))
            return None
        if data is None or len(data) > MAX_FILE_BYTES:
            return None
        return data.decode("utf-8", "replace")

    def parse(self, text: str, path: Path, depth: int) -> None:
        section, subsection = "", None
        for kind, a, b in _lines(text):
            if kind == "section":
                section, subsection = a, b
            elif section:
                self.entries.append(Entry(section, subsection, a, b))
                if a == "path" and b and self._includes(section, subsection, path):
                    self.read_file(_include_path(b, path, self.environ), depth + 1)

    def _includes(self, section: str, subsection: str | None, path: Path) -> bool:
        if section == "include" and subsection is None:
            return True
        if section != "includeif" or subsection is None:
            return False
        return condition_holds(subsection, path, self.repo, self.environ)


def file_stat(path: Path) -> FileStat:
    """`path`'s identity now (None when it cannot be stat'ed)."""
    try:
        st = os.stat(path)
    except OSError:
        return FileStat(str(path), None)
    return FileStat(str(path), (st.st_size, st.st_mtime_ns, st.st_ino))


def _include_path(value: str, including: Path, environ) -> Path:
    """An include's path: `~/` expanded, relative ones from the including file's folder."""
    if value.startswith("~/") and environ.get("HOME"):
        return Path(environ["HOME"]) / value[2:]
    path = Path(value)
    return path if path.is_absolute() else including.parent / path


def condition_holds(condition: str, including: Path, repo: Repo, environ=os.environ) -> bool:
    """Whether an `includeIf` condition holds for `repo` (unknown conditions never do)."""
    kind, _, pattern = condition.partition(":")
    if kind in ("gitdir", "gitdir/i") and repo.git_dir is not None:
        full = _gitdir_pattern(pattern, including, environ)
        fold = kind == "gitdir/i"
        candidates = {str(repo.git_dir), os.path.realpath(repo.git_dir)}
        return any(wildmatch(full, c, fold=fold) for c in candidates)
    if kind == "onbranch" and repo.branch is not None and pattern:
        return wildmatch(pattern + "**" if pattern.endswith("/") else pattern, repo.branch)
    return False


def _gitdir_pattern(pattern: str, including: Path, environ) -> str:
    if pattern.startswith("~/") and environ.get("HOME"):
        pattern = environ["HOME"].rstrip("/") + "/" + pattern[2:]
    elif pattern.startswith("./"):
        pattern = str(including.parent) + "/" + pattern[2:]
    if not pattern.startswith("/"):
        pattern = "**/" + pattern
    if pattern.endswith("/"):
        pattern += "**"
    return pattern


def wildmatch(pattern: str, text: str, *, fold: bool = False) -> bool:
    """git's wildmatch with WM_PATHNAME: `*` stays within a path part, `**` crosses them."""
    return re.fullmatch(_glob_regex(pattern), text, re.IGNORECASE if fold else 0) is not None


def _glob_regex(pattern: str) -> str:
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body[:1] in ("!", "^") else "[" + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i + 1] if c == "\\" and i + 1 < n else c))
            i += 2 if c == "\\" and i + 1 < n else 1
    return "".join(out)


# ------------------------------------------------------------ the file syntax

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _lines(text: str):
    """("section", name, subsection) and ("entry", key, value) items of a config file."""
    pos, n = 0, len(text)
    while pos < n:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return
        c = text[pos]
        if c in "#;":
            pos = _line_end(text, pos)
        elif c == "[":
            header, pos = _section(text, pos)
            if header is None:
                pos = _line_end(text, pos)  # a broken header: git would stop; we skip it
                yield ("section", "", None)
            else:
                yield ("section", *header)
        else:
            name = _NAME.match(text, pos)
            if name is None:
                pos = _line_end(text, pos)
                continue
            pos = name.end()
            value, pos = _value(text, pos)
            yield ("entry", name.group().lower(), value)


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end == -1 else end + 1


def _section(text: str, pos: int) -> tuple[tuple[str, str | None] | None, int]:
    """`[name]`, `[name "sub"]` or the old `[name.sub]`; the position after `]`."""
    match = re.compile(r'\[\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\\n]|\\.)*)"\s*)?\]').match(text, pos)
    if match is None:
        return None, pos
    name, sub = match.group(1), match.group(2)
    if sub is not None:
        return (name.lower(), re.sub(r"\\(.)", r"\1", sub)), match.end()
    if "." in name:  # [section.subsection]: the subsection lowercased
        head, _, rest = name.partition(".")
        return (head.lower(), rest.lower()), match.end()
    return (name.lower(), None), match.end()


def _value(text: str, pos: int) -> tuple[str | None, int]:
    """A key's value after its name: None for a bare key; quotes, escapes, continuations."""
    n = len(text)
    while pos < n and text[pos] in " \t":
        pos += 1
    if pos >= n or text[pos] in "\n#;":
        return None, _line_end(text, pos) if pos < n and text[pos] != "\n" else pos + 1
    if text[pos] != "=":
        return None, _line_end(text, pos)  # garbage after a name: the line is skipped
    pos += 1
    end = text.find("\n", pos)
    end = n if end == -1 else end
    line = text[pos:end]
    if '"' not in line and "\\" not in line:  # the common case: no quotes, no escapes
        cut = min((i for i in (line.find("#"), line.find(";")) if i != -1), default=len(line))
        return line[:cut].strip(" \t\r").replace("\t", " "), end + 1  # git: a tab is a space
    out: list[str] = []
    quoted, trailing = False, 0  # `trailing`: unquoted whitespace at the end, dropped
    while pos < n:
        c = text[pos]
        if c == "\n" and not quoted:
            pos += 1
            break
        if c == "\n":  # a newline inside quotes: git refuses; end the value here
            pos += 1
            break
        if not quoted and c in "#;":
            pos = _line_end(text, pos)
            break
        if c == '"':
            quoted = not quoted
            trailing = 0
            pos += 1
            continue
        if c == "\\" and pos + 1 < n:
            nxt = text[pos + 1]
            if nxt == "\n":
                pos += 2
                continue
            if nxt == "\r" and text[pos + 2 : pos + 3] == "\n":
                pos += 3
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            trailing = 0
            pos += 2
            continue
        if c in " \t\r" and not quoted:
            if out:  # leading whitespace is skipped, inner kept, trailing dropped below
                out.append(" " if c != "\r" else "")
                trailing += 1 if c != "\r" else 0
            pos += 1
            continue
        out.append(c)
        trailing = 0
        pos += 1
    value = "".join(out)
    if trailing:
        value = value[: len(value) - trailing]
    return value, pos


def branch_of(git_dir: Path | None) -> str | None:
    """The branch HEAD names (`main` for `ref: refs/heads/main`), or None when detached."""
    if git_dir is None:
        return None
    try:
        head = read_regular(git_dir / "HEAD", follow_symlinks=False, limit=4096)
    except OSError:
        return None
    if not head:
        return None
    text = head.decode("utf-8", "replace").strip()
    prefix = "ref: refs/heads/"
    return text[len(prefix) :] if text.startswith(prefix) else None
