"""Secrets in encoded form, found by decoding and looking again.

- Percent-encoding (`password%3Dhunter2`, `https%3A%2F%2Fuser%3Apass%40host`): a run holding
  `%XX` escapes is decoded, searched, and each secret found is mapped back to the encoded
  characters it came from.
- Base64 segments of plausible length (24 to 8,192 characters) that decode to text: when the
  decoded text holds a secret (or is a PEM private key, as kubeconfig's `client-key-data`
  holds one), the whole segment is masked. Binary data (images, hashes, lockfile integrity
  strings) does not decode to text and is left alone.

Decoded text is searched with every finder but these two, so nothing is decoded twice.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator

Span = tuple[int, int]
Finder = Callable[..., list[Span]]

_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
MAX_SEGMENT = 8_192
_PEM_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY")


def _percent_decoded(run: str) -> tuple[str, list[int]]:
    """The decoded run and, for each decoded character, where it starts in `run`."""
    out: list[str] = []
    where: list[int] = []
    raw = bytearray()
    raw_at: list[int] = []
    pos = 0

    def flush() -> None:
        text = raw.decode("utf-8", "replace")
        if len(text) == len(raw):
            out.extend(text)
            where.extend(raw_at)
        else:  # multi-byte characters: each one placed at its first byte's escape
            out.append(text)
            where.extend([raw_at[0]] * len(text))
        raw.clear()
        raw_at.clear()

    while pos < len(run):
        m = _ESCAPE.match(run, pos)
        if m:
            raw.append(int(m.group(1), 16))
            raw_at.append(pos)
            pos = m.end()
            continue
        if raw:
            flush()
        out.append(run[pos])
        where.append(pos)
        pos += 1
    if raw:
        flush()
    return "".join(out), where


_ESCAPE_AT = re.compile(r"%[0-9A-Fa-f]{2}")
_RUN_BEFORE = re.compile(r"[^\s\"'<>`]*\Z")
_RUN_AFTER = re.compile(r"[^\s\"'<>`]*")


def _percent(view: str, find: Finder) -> Iterator[Span]:
    if "%" not in view:
        return
    done = 0
    for escape in _ESCAPE_AT.finditer(view):
        if escape.start() < done:
            continue
        before = _RUN_BEFORE.search(view, max(0, escape.start() - 2_000), escape.start())
        start = before.start() if before else escape.start()
        end = _RUN_AFTER.match(view, escape.start()).end()
        done = end
        run = view[start:end]
        decoded, where = _percent_decoded(run)
        if len(decoded) != len(where):
            continue
        for found_start, found_end in find(decoded, look=True, decode=False):
            if found_end <= found_start:
                continue
            run_end = where[found_end] if found_end < len(where) else len(run)
            yield start + where[found_start], start + run_end


def _decode64(segment: str) -> str | None:
    core = segment.rstrip("=")
    if len(core) % 4 == 1:
        return None
    padded = core + "=" * (-len(core) % 4)
    try:
        if "-" in core or "_" in core:
            raw = base64.urlsafe_b64decode(padded)
        else:
            raw = base64.b64decode(padded, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in text)
    return text if printable >= 0.95 * len(text) else None


def _plausible(segment: str) -> bool:
    """Base64 of text has both letter cases; hex digests and words in one case do not."""
    return len(segment) <= MAX_SEGMENT and segment.lower() != segment != segment.upper()


_SEGMENT = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")


def _base64(view: str, find: Finder) -> Iterator[Span]:
    from kindling.masking.scan import runs

    for run_start, run_end in runs(view):
        if run_end - run_start < 24:
            continue
        for m in _SEGMENT.finditer(view, run_start, run_end):
            segment = m.group()
            if m.end() < run_end and view[m.end()] not in ".~":
                continue  # `=` inside a run: `key=value`, not one segment
            if not _plausible(segment):
                continue
            decoded = _decode64(segment)
            if decoded is None or len(decoded) < 8:
                continue
            if _PEM_KEY.search(decoded) or find(decoded, look=True, decode=False):
                yield m.span()


def spans(view: str, look: bool, find: Finder) -> Iterator[Span]:
    """Encoded secrets in `view`; `find` is the finder for the decoded text."""
    yield from _percent(view, find)
    if not look or len(view) >= 24:
        yield from _base64(view, find)
