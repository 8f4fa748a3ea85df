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

from kindling.masking import commands, context, custom, encoded, scan, tokens
from kindling.masking import patterns as p
from kindling.masking import values as v
from kindling.masking.gate import CONFUSABLES, MASK

Span = tuple[int, int]


def _view(text: str) -> str:
    return text if text.isascii() else text.translate(CONFUSABLES)


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
        return v.value_span(view, m) if m else None
    # YAML: a plain scalar indented under its key; `user: bob` below is a nested mapping.
    nxt = p.NEXT_LINE_VALUE.compiled.match(view, end.end())
    if nxt is None or nxt.group("value").endswith(":"):
        return None
    if len(nxt.group("indent")) <= _indent_of_line(view, sep):
        return None
    m = p.ASSIGNED_VALUE.compiled.match(view, nxt.start("value"))
    return v.value_span(view, m) if m else None


def _not_an_assignment(view: str, reversed_view: str, sep: int, key_start: int) -> bool:
    """A credential word that is part of something else: a URL's user, an ARN segment."""
    # The whole name the key word ends (`x-access-token`), read backwards from the word.
    rest = p.NAME_CHARS.compiled.match(reversed_view, len(view) - key_start)
    name_start = key_start - (rest.end() - rest.start())
    if view.endswith("://", 0, name_start):
        return True  # `https://x-access-token:<token>@host`: the URL pattern masks the token
    if p.PAGINATION.compiled.search(view[name_start:sep].rstrip(" \t\"'\\")):
        return True  # `nextPageToken`, `page_token`: a place in a list
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
        if view[key_start : key_start + 3].lower() == "key" and not view[key_start:sep].rstrip(
            " \t\"'\\"
        ).lower().endswith(("apikey", "accesskey", "secretkey", "privatekey", "accountkey")):
            span = context.key_suffix_span(view, reversed_view, start, key_start + 3)
            if span is not None:
                yield span
                done = span[1]
            continue
        if _not_an_assignment(view, reversed_view, sep, key_start):
            continue
        if view[key_start : key_start + 13].lower() == "authorization" and _has_scheme(view, start):
            continue  # `Authorization: <scheme> <value>`: context.auth_headers keeps the scheme
        if view.startswith(">", start) and view[sep] == "=":
            start += 1  # `key => value`
        elif view.startswith("=", start) and view[sep] == ":":
            start += 1  # `key := value`
        m = p.ASSIGNED_VALUE.compiled.match(view, start)
        span = v.value_span(view, m) if m else None
        if span is None and (m is None or m.lastgroup != "masked"):
            span = _next_line_span(view, sep, start)
        if span is not None:
            yield span
            done = span[1]


_SCHEME = re.compile(r"[ \t]*[\"']?[A-Za-z][A-Za-z0-9._-]*[ \t]+[^\s\"'`\\]")


def _has_scheme(view: str, start: int) -> bool:
    return _SCHEME.match(view, start) is not None


def _flags(view: str, look: bool) -> Iterator[Span]:
    for m in p.FLAG.finditer(view, look):
        name = m.group("name")
        if p.CREDENTIAL_KEY.compiled.search(name):
            span = v.value_span(view, m)
        elif name.lower().endswith("key") and not context.not_secret_key(name):
            span = v.value_span(view, m, weak=name.lower() not in context.STRONG_KEY_FLAGS)
        else:
            continue
        if span:
            yield span


_RUN = "\0run"  # stands for "a run of 20 token characters" (kindling.masking.scan.runs)
# Each finder with the fragments (lower case) one of its matches must hold, and the least
# length of a match; a short text runs only the finders it can feed (a finder also does its
# own looking, so these only save calls).
_FINDERS = (
    ("credential name", ("=", ":"), 0, _assignments),
    ("command-line option", ("--",), 0, _flags),
    ("command-line password", (" ",), 0, commands.command_passwords),
    ("command-line password", ("set ",), 0, commands.config_set),
    ("URL credentials", ("://", "curl"), 0, lambda view, look: _url_credentials(view, look)),
    ("webhook URL", ("hooks.slack",), 0, lambda view, look: _slack(view, look)),
    ("URL credentials", ("://",), 0, context.url_user_tokens),
    ("webhook URL", ("hook", "/bot", "/with/key", "/services/"), 0, context.webhook_urls),
    ("HTTP authorization", ("bearer",), 0, lambda view, look: _bearer(view, look)),
    ("HTTP authorization", ("basic",), 0, tokens.basic),
    ("HTTP authorization", ("authorization",), 0, context.auth_headers),
    ("session cookie", ("cookie", "-b "), 0, context.cookies),
    ("vendor token", (_RUN,), 20, tokens.known_tokens),
    ("vendor token", (":aa",), 0, tokens.telegram),
    ("AWS secret key", ("akia", "asia", "aws secret"), 0, tokens.aws_secrets),
    ("private key", ("-----end ",), 0, tokens.pem_without_begin),
    ("config file", ("</", "value"), 0, context.xml_values),
    ("config file", ("machine", ":"), 0, context.credential_files),
    ("code credential", ("auth", "credential"), 0, context.auth_calls),
)

_FRAGMENTS = frozenset(fragment for _, fragments, _, _ in _FINDERS for fragment in fragments)


def _url_credentials(view: str, look: bool) -> Iterator[Span]:
    patterns = (p.CURL_USER, p.URL_CREDENTIALS)
    return tokens.group_spans(view, look, patterns, "secret", code=True)


def _slack(view: str, look: bool) -> Iterator[Span]:
    return tokens.group_spans(view, look, (p.SLACK_WEBHOOK,), "secret")


def _bearer(view: str, look: bool) -> Iterator[Span]:
    return tokens.group_spans(view, look, (p.BEARER,), "secret")


def labelled_spans(view: str, *, look: bool, decode: bool = True) -> Iterator[tuple[str, Span]]:
    """Every secret in `view`, each with the kind of finding that recognised it."""
    present: set[str] = set()
    if look:
        low = view.lower()
        present = {fragment for fragment in _FRAGMENTS if fragment in low}
        if len(view) >= scan.RUN_LEAST and scan.runs(view):
            present.add(_RUN)
    for label, fragments, least, finder in _FINDERS:
        if not look or (len(view) >= least and not present.isdisjoint(fragments)):
            for span in finder(view, look):
                yield label, span
    if decode and ("%" in view or (not look and len(view) >= 24) or _RUN in present):
        for span in encoded.spans(view, look, find_spans):
            yield "encoded secret", span
    if custom.in_use().found:
        for span in custom.spans(view):
            yield "repository pattern", span


def find_spans(view: str, *, look: bool, decode: bool = True) -> list[Span]:
    """Every secret in `view` as merged, sorted spans.

    With `look`, a pattern runs only when `view` holds its literal.
    """
    spans = sorted(span for _, span in labelled_spans(view, look=look, decode=decode))
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
        touching = (start > 0 and tokens.token_char(text[start - 1])) or (
            end < len(text) and tokens.token_char(text[end])
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
