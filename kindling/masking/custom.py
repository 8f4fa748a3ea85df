"""A repository's own token formats: `.kindling/masking.json`, committed with the store.

    {"patterns": [{"name": "acme deploy token", "regex": "acme_dt_[A-Za-z0-9]{32}"}]}

The file is hostile input like everything in a repository, so it can only add masking,
never remove it: each pattern's matches are masked on top of what Kindling masks anyway.
It is bounded (MAX_PATTERNS patterns of at most MAX_REGEX_CHARS characters, a file of at
most MAX_FILE_BYTES) and every pattern is checked before use so that none can make the
regular expression engine backtrack for long: no quantifier inside a quantified group
(`(a+)+`), no back-references, at most MAX_UNBOUNDED unbounded repeats, and no pattern
that matches the empty string. A pattern runs on at most MAX_TEXT_CHARS characters of a
text at a time (longer texts are searched in overlapping windows).

A file that breaks a rule is refused whole with a one-line error naming the rule; until it
is fixed, writing to the store fails rather than store text without the masking the
repository asked for.

A store's patterns are loaded as a value (`load`) and applied for the span of that store's
writes (`applied`, which `Memory` enters for each batch of calls and each import), so a
process serving several stores masks each store's writes with that store's patterns only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import NamedTuple

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover - older interpreters
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

from kindling.errors import KindlingError
from kindling.fileio import read_regular

FILE_NAME = "masking.json"
MAX_FILE_BYTES = 16 * 1024
MAX_PATTERNS = 32
MAX_REGEX_CHARS = 200
MAX_NAME_CHARS = 80
MAX_UNBOUNDED = 2
MAX_TEXT_CHARS = 65_536
_OVERLAP = 1_024  # a match longer than this across a window's edge may be missed

Span = tuple[int, int]



class Patterns(NamedTuple):
    """A store's patterns, (name, compiled) each, or the problem with its file."""

    found: tuple[tuple[str, re.Pattern[str]], ...] = ()
    problem: str | None = None


NONE = Patterns()
_APPLIED: ContextVar[Patterns] = ContextVar("kindling_repository_patterns", default=NONE)
# Each file parsed once per process while its stat data stays the same.
_PARSED: dict[tuple[str, int, int, int], Patterns] = {}


def _repeats(tree, inside: bool, counts: list[int]) -> None:
    for op, arg in tree:
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
            low, high, sub = arg
            if inside:
                raise ValueError("a quantifier inside a quantified group")
            if high == _c.MAXREPEAT or high > 1_000:
                counts[0] += 1
            _repeats(sub, high > 1, counts)
        elif op in (_c.GROUPREF, _c.GROUPREF_EXISTS):
            raise ValueError("a back-reference")
        elif op == _c.SUBPATTERN:
            _repeats(arg[-1], inside, counts)
        elif op == _c.BRANCH:
            for branch in arg[1]:
                _repeats(branch, inside, counts)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            _repeats(arg[1], inside, counts)
        elif op == getattr(_c, "ATOMIC_GROUP", None):
            _repeats(arg, inside, counts)


def check(regex: str) -> re.Pattern[str]:
    """`regex` compiled, or a ValueError naming the rule it breaks."""
    if not isinstance(regex, str) or not regex:
        raise ValueError("a pattern must be a non-empty string")
    if len(regex) > MAX_REGEX_CHARS:
        raise ValueError(f"longer than {MAX_REGEX_CHARS} characters")
    try:
        tree = _parser.parse(regex)
        compiled = re.compile(regex)
    except (re.error, OverflowError, RecursionError) as exc:
        raise ValueError(f"not a regular expression ({exc})") from None
    counts = [0]
    _repeats(tree, False, counts)
    if counts[0] > MAX_UNBOUNDED:
        raise ValueError(f"more than {MAX_UNBOUNDED} unbounded repeats")
    if compiled.fullmatch(""):
        raise ValueError("matches the empty string")
    return compiled


def parse(data: bytes, where: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The patterns a masking.json holds; a KindlingError names what is wrong."""
    if len(data) > MAX_FILE_BYTES:
        raise KindlingError(f"{where}: over {MAX_FILE_BYTES // 1024} KiB")
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise KindlingError(f"{where}: not JSON ({exc})") from None
    items = doc.get("patterns") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise KindlingError(f'{where}: expected {{"patterns": [...]}}')
    if len(items) > MAX_PATTERNS:
        raise KindlingError(f"{where}: more than {MAX_PATTERNS} patterns")
    out = []
    for i, item in enumerate(items, 1):
        regex = item.get("regex") if isinstance(item, dict) else item
        name = item.get("name", f"pattern {i}") if isinstance(item, dict) else f"pattern {i}"
        if not isinstance(name, str) or len(name) > MAX_NAME_CHARS:
            raise KindlingError(f"{where}: pattern {i}: name must be a string of at most 80")
        try:
            out.append((name, check(regex)))
        except ValueError as exc:
            raise KindlingError(f"{where}: pattern {i} ({name}): {exc}") from None
    return tuple(out)


def load(store_root: str | os.PathLike) -> Patterns:
    """The patterns of the store at `store_root` (NONE when it has no masking.json)."""
    path = Path(store_root) / FILE_NAME
    try:
        st = path.lstat()
    except OSError:
        return NONE
    key = (str(path), st.st_mtime_ns, st.st_size, st.st_ino)
    if key not in _PARSED:
        try:
            if not path.is_file() or path.is_symlink():
                raise KindlingError(f"{path}: not a regular file")
            _PARSED[key] = Patterns(parse(_read(path), str(path)))
        except KindlingError as exc:
            _PARSED[key] = Patterns(problem=str(exc))
    return _PARSED[key]


@contextmanager
def applied(patterns: Patterns) -> Iterator[None]:
    """Mask with `patterns` (on top of Kindling's own masking) inside the block."""
    token = _APPLIED.set(patterns)
    try:
        yield
    finally:
        _APPLIED.reset(token)


def in_use() -> Patterns:
    """The patterns applied here (NONE outside any store's writes)."""
    return _APPLIED.get()


def _read(path: Path) -> bytes:
    """The file's bytes, as a regular file opened without following a symlink (the check
    before it could be raced)."""
    try:
        raw = read_regular(path, follow_symlinks=False, limit=MAX_FILE_BYTES)
    except OSError as exc:
        raise KindlingError(f"{path}: unreadable ({exc.strerror or exc})") from None
    return b"" if raw is None else raw


def active() -> bool:
    """Whether masking must run repository patterns (or refuse, when the file is bad)."""
    patterns = _APPLIED.get()
    if patterns.problem is not None:
        raise KindlingError(patterns.problem)
    return bool(patterns.found)


def spans(view: str) -> Iterator[Span]:
    """Every match of the applied patterns, each text searched in bounded windows."""
    for _, pattern in _APPLIED.get().found:
        start = 0
        while True:
            end = min(len(view), start + MAX_TEXT_CHARS)
            for m in pattern.finditer(view, start, end):
                if m.end() > m.start():
                    yield m.span()
            if end >= len(view):
                break
            start = end - _OVERLAP


def names(view: str) -> Iterator[tuple[str, Span]]:
    """(pattern name, span) for each match: what `kindling mask --check` reports."""
    for name, pattern in _APPLIED.get().found:
        for m in pattern.finditer(view[:MAX_TEXT_CHARS]):
            if m.end() > m.start():
                yield name, m.span()
