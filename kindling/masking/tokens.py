"""Secrets recognised by their shape: vendor tokens, JWTs, bot tokens, AWS secrets next to
their key id, Basic credentials, a PEM body whose BEGIN line was cut off."""

from __future__ import annotations

from collections.abc import Iterator

from kindling.masking import patterns as p
from kindling.masking import values as v
from kindling.masking import vendors
from kindling.masking.gate import MASK

Span = tuple[int, int]


def group_spans(
    view: str,
    look: bool,
    patterns: tuple[p.Lazy, ...],
    group: str | None = None,
    code: bool = False,
) -> Iterator[Span]:
    """The span of `group` (or of whichever group matched) in each match of `patterns`.

    With `code`, a value that reads as code or a placeholder (`$PASS`, `X`) is left alone.
    """
    for pattern in patterns:
        for m in pattern.finditer(view, look):
            name = group or m.lastgroup
            if not name or not m.group(name) or m.group(name) == MASK:
                continue
            start, end = m.span(name)
            if code and (
                v.quoted_is_code(view[start:end])
                if name in ("sq", "dq")
                else v.is_code(view, start, end)
            ):
                continue
            yield start, end


def pem_without_begin(view: str, look: bool) -> Iterator[Span]:
    for m in p.PEM_END.finditer(view, look):
        start = cur = m.start()
        for _ in range(400):
            brk = break_before(view, cur)
            if brk is None:
                break
            escaped = view.rfind("\\n", 0, brk)
            line_start = max(view.rfind("\n", 0, brk) + 1, escaped + 2 if escaped >= 0 else 0)
            line = view[line_start:brk].strip()
            if p.PEM_LINE.compiled.fullmatch(line) or line.startswith(("Proc-Type:", "DEK-Info:")):
                start = cur = line_start
                continue
            tail = p.PEM_TAIL.compiled.search(view, line_start, brk)
            if tail:
                start = tail.start()
            break
        yield start, m.end()


def break_before(view: str, pos: int) -> int | None:
    """Where the line break that ends right at `pos` starts (a real or an escaped `\\n`)."""
    if view.endswith("\n", 0, pos):
        pos -= 1
        return pos - 1 if view.endswith("\r", 0, pos) else pos
    if view.endswith("\\n", 0, pos):
        pos -= 2
        return pos - 2 if view.endswith("\\r", 0, pos) else pos
    return None


def discord(view: str, look: bool) -> Iterator[Span]:
    for m in p.DISCORD_TAIL.finditer(view, look):
        head = p.DISCORD_HEAD.compiled.search(view, max(0, m.start() - 28), m.start())
        if head and any(c.isdigit() for c in head.group()):
            yield head.start(), m.end()


def telegram(view: str, look: bool) -> Iterator[Span]:
    for m in p.TELEGRAM.finditer(view, look):
        bot_id = p.TELEGRAM_ID.compiled.search(view, max(0, m.start() - 10), m.start())
        if bot_id:
            yield bot_id.start(), m.end()


def aws_secrets(view: str, look: bool) -> Iterator[Span]:
    scanned = 0  # windows overlap: each stretch is searched once (less a key's length)
    ids = sorted(
        (m.start(), m.end()) for pattern in p.AWS_KEY_IDS for m in pattern.finditer(view, look)
    )
    for id_start, id_end in ids:
        lo = max(0, id_start - p.AWS_NEAR, scanned - 40)
        hi = min(len(view), id_end + p.AWS_NEAR)
        for secret in p.AWS_SECRET.compiled.finditer(view, lo, hi):
            yield secret.span()
        scanned = hi
    yield from group_spans(view, look, (p.AWS_SECRET_LABEL,), "secret")


def basic(view: str, look: bool) -> Iterator[Span]:
    # Basic credentials are base64 of `user:password`; prose after "Basic" does not decode so.
    # A declined match is searched again one character on: "Basic Basic <credential>".
    if look and not p.BASIC.may_match(view):
        return
    import base64  # here: most texts never say "Basic"
    import binascii

    pos = 0
    while (m := p.BASIC.compiled.search(view, pos)) is not None:
        value = m.group("secret")
        try:
            decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
        except (binascii.Error, ValueError):
            decoded = ""
        if ":" in decoded and decoded.isprintable():
            yield m.span("secret")
            pos = m.end()
        else:
            pos = m.start() + 1


def token_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char in "_-")


def known_tokens(view: str, look: bool) -> Iterator[Span]:
    """Vendor tokens (kindling.masking.vendors), JWTs and Discord bot tokens."""
    yield from vendors.spans(view)
    for pattern in p.KNOWN_TOKENS:
        for m in pattern.finditer(view, look):
            yield m.span()
    yield from discord(view, look)
