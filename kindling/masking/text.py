"""Find the secrets in a piece of text and replace each with MASK.

Every finder returns spans over the same text; overlapping spans are merged, so a secret
that two patterns recognise is replaced and counted once. Keys are matched on a copy in
which look-alike letters (Cyrillic `а`, Greek `ο`, fullwidth `ｐ`) read as ASCII, one
character for one, so the spans found there apply to the text as written.

Credential assignments are the one ambiguous case. A value is masked when the key ends in a
credential word (password, token, secret, api_key, credentials, ...) and is followed by `=`,
`:`, `:=` or `=>` and then a value: quoted, a run of characters with no space, the next
line when the line ends there (`password:` + an indented line, `TOKEN=\\`), or an indented
YAML block (`secret: |`). What reads as code is kept, because masking it would corrupt it
and it holds no secret: calls and subscripts (`get_token()`, `os.environ["KEY"]`),
attribute paths (`settings.API_KEY`), variable and template references (`${KEY}`, `$KEY`,
`{{ secrets.KEY }}`, `%KEY%`, `<token>`), names that are themselves credential names
(`api_key=api_key`), types (`str`, `number`), constants (`true`, `null`), placeholders
(`...`, `***`), paths (`/home/dev`), counts, ratios and durations (`3`, `12/12`, `35ms`)
and values of one or two characters. Anything else under a credential key is masked: a miss
leaks, a false alarm costs a little readability.

Masking is idempotent: when a new mask touches a word, the text around it is searched again,
since `-----END ... KEY-----ghp_...` shows its token only once the key before it is a mask.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kindling.masking import patterns as p
from kindling.masking.gate import CONFUSABLES, MASK

Span = tuple[int, int]


def _view(text: str) -> str:
    return text if text.isascii() else text.translate(CONFUSABLES)


def _is_code(view: str, start: int, end: int) -> bool:
    """True when the bare value at view[start:end] reads as code or a placeholder."""
    value = view[start:end]
    if len(value) <= 2 or value.lower() in p.NOT_SECRETS:
        return True
    if (
        p.REFERENCE.compiled.match(value)
        or p.PLACEHOLDER.compiled.fullmatch(value)
        or p.SHORT_NUMBER.compiled.fullmatch(value)
    ):
        return True
    if p.CALL.compiled.match(value) or (
        view.startswith(("(", "["), end)
        and (p.NAME.compiled.fullmatch(value) or p.DOTTED_NAME.compiled.fullmatch(value))
    ):
        return True  # a call or a subscript
    if p.DOTTED_NAME.compiled.fullmatch(value):
        return True
    if p.NAME.compiled.fullmatch(value):
        # `api_key=api_key`, `password=db_password`: a variable named for what it holds.
        key = p.CREDENTIAL_KEY.compiled.search(value)
        if key and (
            key.start() == 0
            or value[key.start() - 1] in "_."
            or (value[key.start() - 1].islower() and value[key.start()].isupper())
        ):
            return True
    path = p.PATH.compiled.fullmatch(value)
    return bool(path and (p.FILE_SUFFIX.compiled.search(value) or value == value.lower()))


def _quoted_is_code(value: str) -> bool:
    return (
        not value
        or bool(p.MASK_ONLY.compiled.fullmatch(value))
        or bool(p.SCHEME_ONLY.compiled.fullmatch(value))
        or bool(p.REFERENCE.compiled.match(value))
        or bool(p.PLACEHOLDER.compiled.fullmatch(value))
        or value.lower() in ("include", "omit", "same-origin")
        # The quote that closes a string holding the key: `input("Password: ")`.
        or (len(value) <= 3 and not any(c.isalnum() for c in value))
    )


# No code value runs this long: a longer one is masked whole. Besides, a value that reads as
# code is searched again for the assignments inside it, so a long one would be searched
# again and again (`${password=${password=...` over 100 KB).
MAX_CODE_CHARS = 1_000


def _value_span(view: str, m: re.Match[str]) -> Span | None:
    group = m.lastgroup
    if group is None or group == "masked":
        return None
    start, end = m.span(group)
    if end - start > MAX_CODE_CHARS:
        return start, end
    if group == "bare":
        return None if _is_code(view, start, end) else (start, end)
    return None if _quoted_is_code(view[start:end]) else (start, end)


def _indent_of_line(view: str, pos: int) -> int:
    line_start = view.rfind("\n", 0, pos) + 1
    return len(view[line_start:pos]) - len(view[line_start:pos].lstrip(" \t"))


def _block_span(view: str, first: int, indent: int) -> Span | None:
    """The indented lines of a YAML block scalar starting at `first`, as one span."""
    pos, last = first, None
    while pos < len(view):
        newline = view.find("\n", pos)
        line_end = len(view) if newline < 0 else newline
        line = view[pos:line_end]
        if line.strip():
            if len(line) - len(line.lstrip(" \t")) <= indent:
                break
            last = line_end
        pos = line_end + 1
    if last is None or view[first:last].strip() == MASK:
        return None
    return first, last


def _next_line_span(view: str, sep: int, start: int) -> Span | None:
    """The value of `key:` or `KEY=\\` when it sits on the next line (or a block below)."""
    block = p.BLOCK_SCALAR.compiled.match(view, start)
    if block:
        return _block_span(view, block.end(), _indent_of_line(view, sep))
    end = p.LINE_END.compiled.match(view, start)
    if end is None or end.end() == len(view):
        return None
    if end.group("cont") is not None:
        m = p.ASSIGNED_VALUE.compiled.match(view, end.end())  # `TOKEN=\\` then the value on its own
        return _value_span(view, m) if m else None
    # YAML: a plain scalar indented under its key; `user: bob` below is a nested mapping.
    nxt = p.NEXT_LINE_VALUE.compiled.match(view, end.end())
    if nxt is None or nxt.group("value").endswith(":"):
        return None
    if len(nxt.group("indent")) <= _indent_of_line(view, sep):
        return None
    m = p.ASSIGNED_VALUE.compiled.match(view, nxt.start("value"))
    return _value_span(view, m) if m else None


def _not_an_assignment(view: str, reversed_view: str, sep: int, key_start: int) -> bool:
    """A credential word that is part of something else: a URL's user, an ARN segment."""
    # The whole name the key word ends (`x-access-token`), read backwards from the word.
    rest = p.NAME_CHARS.compiled.match(reversed_view, len(view) - key_start)
    name_start = key_start - (rest.end() - rest.start())
    if view.endswith("://", 0, name_start):
        return True  # `https://x-access-token:<token>@host`: the URL pattern masks the token
    # `arn:aws:secretsmanager:...:secret:prod/db`: a segment between colons names a type.
    return view[sep] == ":" and view.endswith(":", 0, name_start) and name_start == key_start


def _assignments(view: str, look: bool) -> Iterator[Span]:
    separators = [
        pattern for pattern in p.SEPARATORS_REVERSED if (not look or pattern.may_match(view))
    ]
    if not separators:
        return
    reversed_view, length = view[::-1], len(view)
    # A hit in the reversed text ends at a separator; the value starts right after it.
    found = sorted(
        (length - m.start(), length - m.end())
        for pattern in separators
        for m in pattern.compiled.finditer(reversed_view)
    )
    done = 0
    for start, key_start in found:
        if start < done:
            continue  # the key is part of a value masked just before
        sep = start - 1
        if _not_an_assignment(view, reversed_view, sep, key_start):
            continue
        if view.startswith(">", start) and view[sep] == "=":
            start += 1  # `key => value`
        elif view.startswith("=", start) and view[sep] == ":":
            start += 1  # `key := value`
        m = p.ASSIGNED_VALUE.compiled.match(view, start)
        span = _value_span(view, m) if m else None
        if span is None and (m is None or m.lastgroup != "masked"):
            span = _next_line_span(view, sep, start)
        if span is not None:
            yield span
            done = span[1]


def _flags(view: str, look: bool) -> Iterator[Span]:
    for m in p.FLAG.finditer(view, look):
        if p.CREDENTIAL_KEY.compiled.search(m.group("name")):
            span = _value_span(view, m)
            if span:
                yield span


def _group_spans(
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
                _quoted_is_code(view[start:end])
                if name in ("sq", "dq")
                else _is_code(view, start, end)
            ):
                continue
            yield start, end


def _pem_without_begin(view: str, look: bool) -> Iterator[Span]:
    for m in p.PEM_END.finditer(view, look):
        start = cur = m.start()
        for _ in range(400):
            brk = _break_before(view, cur)
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


def _break_before(view: str, pos: int) -> int | None:
    """Where the line break that ends right at `pos` starts (a real or an escaped `\\n`)."""
    if view.endswith("\n", 0, pos):
        pos -= 1
        return pos - 1 if view.endswith("\r", 0, pos) else pos
    if view.endswith("\\n", 0, pos):
        pos -= 2
        return pos - 2 if view.endswith("\\r", 0, pos) else pos
    return None


def _commands(view: str, look: bool) -> Iterator[Span]:
    for m in p.LOGIN_WORD.finditer(view, look):
        if p.LOGIN_COMMAND.compiled.search(view, max(0, m.start() - 40), m.start()):
            found = p.LOGIN_PASSWORD.compiled.match(view, m.end())
            if found and found.group(found.lastgroup) != MASK:
                start, end = found.span(found.lastgroup)
                if found.lastgroup != "bare" or not _is_code(view, start, end):
                    yield start, end
    yield from _group_spans(view, look, (p.SSHPASS, *p.MYSQL), code=True)


def _discord(view: str, look: bool) -> Iterator[Span]:
    for m in p.DISCORD_TAIL.finditer(view, look):
        head = p.DISCORD_HEAD.compiled.search(view, max(0, m.start() - 28), m.start())
        if head and any(c.isdigit() for c in head.group()):
            yield head.start(), m.end()


def _telegram(view: str, look: bool) -> Iterator[Span]:
    for m in p.TELEGRAM.finditer(view, look):
        bot_id = p.TELEGRAM_ID.compiled.search(view, max(0, m.start() - 10), m.start())
        if bot_id:
            yield bot_id.start(), m.end()


def _aws_secrets(view: str, look: bool) -> Iterator[Span]:
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
    yield from _group_spans(view, look, (p.AWS_SECRET_LABEL,), "secret")


def _basic(view: str, look: bool) -> Iterator[Span]:
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


def _token_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char in "_-")


def _known_tokens(view: str, look: bool) -> Iterator[Span]:
    for pattern in p.KNOWN_TOKENS:
        for m in pattern.finditer(view, look):
            yield m.span()
    for m in p.STRIPE.finditer(view, look):
        start = m.start() - 1
        if start >= 0 and view[start] in "sr" and (start == 0 or not _token_char(view[start - 1])):
            yield start, m.end()
    yield from _discord(view, look)


def find_spans(view: str, *, look: bool) -> list[Span]:
    """Every secret in `view` as merged, sorted spans.

    With `look`, a pattern runs only when `view` holds its literal.
    """
    spans = [
        *_assignments(view, look),
        *_flags(view, look),
        *_commands(view, look),
        *_group_spans(view, look, (p.CURL_USER, p.URL_CREDENTIALS), "secret", code=True),
        *_group_spans(view, look, (p.SLACK_WEBHOOK, p.BEARER), "secret"),
        *_known_tokens(view, look),
        *_telegram(view, look),
        *_aws_secrets(view, look),
        *_basic(view, look),
        *_pem_without_begin(view, look),
    ]
    spans.sort()
    merged: list[Span] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        elif end > start and view[start:end] != MASK:
            merged.append((start, end))
    return merged


def _join(text: str, spans: list[Span]) -> str:
    pieces: list[str] = []
    done = 0
    for start, end in spans:
        pieces += (text[done:start], MASK)
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


# How far around a new mask a secret can start or end that the mask itself brought to light
# (`-----END ...-----ghp_...`: the token counts only once the key before it is a mask).
_BEFORE, _AFTER = 100, 400


def _mask_once(text: str, look: bool) -> tuple[str, int, list[tuple[int, bool]]]:
    """One round: the masked text, the count, and where each later mask now starts.

    Each position comes with whether the mask touches a letter, digit, `_` or `-` on either
    side: only then can it have changed what the patterns see around it.
    """
    # A private key block goes first, whole, so that nothing else masks a piece of it and a
    # quoted key such as `"-----BEGIN ...-----\n"` keeps its quotes and trailing escape.
    blocks = [m.span() for m in p.PEM.finditer(text, look)]
    if blocks:
        text = _join(text, blocks)
    spans = find_spans(_view(text), look=look)
    placed: list[tuple[int, bool]] = []
    shift = 0
    for start, end in spans:
        touching = (start > 0 and _token_char(text[start - 1])) or (
            end < len(text) and _token_char(text[end])
        )
        placed.append((start - shift, touching))
        shift += (end - start) - len(MASK)
    return (_join(text, spans) if spans else text), len(blocks) + len(spans), placed


def _uncovered_near(text: str, placed: list[tuple[int, bool]], look: bool) -> bool:
    """Whether the text around a mask that touches a word holds a secret it brought to light."""
    windows: list[Span] = []
    for at, touching in placed:
        if not touching:
            continue
        lo, hi = max(0, at - _BEFORE), at + len(MASK) + _AFTER
        if windows and lo <= windows[-1][1]:
            windows[-1] = (windows[-1][0], hi)  # dense masks: one window, searched once
        else:
            windows.append((lo, hi))
    if not windows:
        return False
    # One search over all windows; a false hit where two meet only costs one more round.
    return bool(find_spans(_view("\n\n".join(text[lo:hi] for lo, hi in windows)), look=look))


# Longer texts run every pattern rather than first look for each one's literal, which a
# compiled pattern finds as fast as `in` does: a 100 KB text masks in 2.9 ms instead of 3.4.
LOOK_LIMIT = 16_384  # characters


def mask_text(text: str, *, look: bool | None = None) -> tuple[str, int]:
    """Return `text` with every secret replaced by MASK, and how many were replaced.

    With `look` (by default for texts of up to LOOK_LIMIT characters), a pattern runs only on
    text that holds its literal; without, every pattern is compiled and run. The answer is the
    same either way.
    """
    if look is None:
        look = len(text) <= LOOK_LIMIT
    total = 0
    for _ in range(3):  # a second round only when a mask exposed a secret next to it
        text, count, placed = _mask_once(text, look)
        total += count
        if not _uncovered_near(text, placed, look):
            break
    return text, total
