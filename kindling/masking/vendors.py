"""Vendor token formats, as their vendors document them: a fixed prefix, then a body of a
known alphabet and length (and, for GitHub and npm, a CRC32 checksum in the last six
characters).

A token is found from its literal prefix (a fast substring search), then its body is matched
at that spot. The character before the prefix may be anything but a letter or digit, so a
token glued to `-` or `_` (`TOKEN_ghp_...`, `--ghp_...`) is found; the character after the
body may not continue it. Prefixes that also start ordinary words or identifiers (`sk-`,
`pat`, `key-`) require a body that looks random: digits and letters mixed, no long run of
one letter case, which keeps out CSS classes (`sk-button-primary`) and identifiers
(`ghp_config_loader`).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import NamedTuple

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_END = r"(?![A-Za-z0-9])"
MAX_RANDOM_CHECK = 512  # characters of a body looked at to tell random from words
_END_DASH = r"(?![A-Za-z0-9_-])"


class Format(NamedTuple):
    """One documented token format: its name, literal prefix and body (a regex)."""

    name: str
    prefix: str
    body: str
    random: bool = False  # the body must look random (the prefix starts common words)
    back: int = 0  # characters of the token before its prefix (`abc8Q~...`)


FORMATS = (
    Format("GitHub token", "ghp_", r"[A-Za-z0-9]{36,255}" + _END),
    Format("GitHub token", "gho_", r"[A-Za-z0-9]{36,255}" + _END),
    Format("GitHub token", "ghu_", r"[A-Za-z0-9]{36,255}" + _END),
    Format("GitHub token", "ghs_", r"[A-Za-z0-9]{36,255}" + _END),
    Format("GitHub token", "ghr_", r"[A-Za-z0-9]{36,76}" + _END),
    Format("GitHub token", "github_pat_", r"[A-Za-z0-9]{22}_[A-Za-z0-9]{59}" + _END),
    Format("GitLab token", "glpat-", r"[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{2}\.[0-9a-z]{9})?"),
    *(
        Format("GitLab token", prefix, r"[A-Za-z0-9_-]{20,}", random=True)
        for prefix in ("gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "gloas-", "glimt-")
    ),
    Format("GitLab runner token", "GR1348941", r"[A-Za-z0-9_-]{20,}" + _END),
    Format("Slack token", "xox", r"[abpeosr]-[A-Za-z0-9-]{10,}"),
    Format("Slack token", "xapp-", r"[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]{20,}"),
    Format("Stripe key", "sk_live_", r"[A-Za-z0-9]{16,}"),
    Format("Stripe key", "sk_test_", r"[A-Za-z0-9]{16,}"),
    Format("Stripe key", "rk_live_", r"[A-Za-z0-9]{16,}"),
    Format("Stripe key", "rk_test_", r"[A-Za-z0-9]{16,}"),
    Format("Stripe webhook secret", "whsec_", r"[A-Za-z0-9+/=]{20,}"),
    Format("OpenAI key", "sk-proj-", r"[A-Za-z0-9_-]{20,}"),
    Format("OpenAI key", "sk-svcacct-", r"[A-Za-z0-9_-]{20,}"),
    Format("OpenAI key", "sk-admin-", r"[A-Za-z0-9_-]{20,}"),
    Format("Anthropic key", "sk-ant-", r"(?:api|admin|sid)[0-9]{2}-[A-Za-z0-9_-]{20,}"),
    Format("OpenRouter key", "sk-or-v1-", r"[a-f0-9]{64}" + _END),
    Format("Langfuse secret key", "sk-lf-", r"[a-f0-9-]{36}" + _END),
    # A bare `sk-` key (OpenAI's older keys, DeepSeek, Moonshot and many more).
    Format("API key (sk-)", "sk-", r"[A-Za-z0-9_-]{20,}", random=True),
    Format("AWS access key id", "AKIA", r"[A-Z0-9]{16}" + _END),
    Format("AWS access key id", "ASIA", r"[A-Z0-9]{16}" + _END),
    Format("AWS access key id", "ABIA", r"[A-Z0-9]{16}" + _END),
    Format("AWS access key id", "ACCA", r"[A-Z0-9]{16}" + _END),
    Format("Google API key", "AIza", r"[A-Za-z0-9_-]{35}" + _END_DASH),
    Format("Google OAuth client secret", "GOCSPX-", r"[A-Za-z0-9_-]{28}" + _END_DASH),
    Format("Google OAuth token", "ya29.", r"[A-Za-z0-9_-]{30,}"),
    Format("Google refresh token", "1//0", r"[A-Za-z0-9_-]{40,}"),
    Format("npm token", "npm_", r"[A-Za-z0-9]{36}" + _END),
    Format("PyPI token", "pypi-", r"AgE[A-Za-z0-9_-]{50,}"),
    Format("Hugging Face token", "hf_", r"[A-Za-z0-9]{30,}" + _END_DASH, random=True),
    Format("Hugging Face token", "api_org_", r"[A-Za-z0-9]{30,}" + _END_DASH, random=True),
    Format("SendGrid key", "SG.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _END_DASH),
    Format("Twilio key", "SK", r"[0-9a-f]{32}" + _END),
    Format("Mailgun key", "key-", r"[0-9a-f]{32}" + _END),
    Format("Shopify token", "shpat_", r"[a-fA-F0-9]{32}" + _END),
    Format("Shopify token", "shpca_", r"[a-fA-F0-9]{32}" + _END),
    Format("Shopify token", "shppa_", r"[a-fA-F0-9]{32}" + _END),
    Format("Shopify token", "shpss_", r"[a-fA-F0-9]{32}" + _END),
    Format("Atlassian token", "ATATT", r"[A-Za-z0-9_=-]{100,}"),
    Format("Bitbucket token", "ATBB", r"[A-Za-z0-9_=-]{28,}"),
    Format("DigitalOcean token", "dop_v1_", r"[a-f0-9]{64}" + _END),
    Format("DigitalOcean token", "doo_v1_", r"[a-f0-9]{64}" + _END),
    Format("DigitalOcean token", "dor_v1_", r"[a-f0-9]{64}" + _END),
    Format("Doppler token", "dp.", r"(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9_.-]{40,}"),
    Format("Vault token", "hvs.", r"[A-Za-z0-9_-]{24,}"),
    Format("Vault token", "hvb.", r"[A-Za-z0-9_-]{24,}"),
    Format("Vault token", "hvr.", r"[A-Za-z0-9_-]{24,}"),
    Format("Terraform Cloud token", ".atlasv1.", r"[A-Za-z0-9_-]{60,}", back=14),
    Format("Databricks token", "dapi", r"[a-f0-9]{32}(?:-[0-9])?" + _END),
    Format("Linear key", "lin_api_", r"[A-Za-z0-9]{40}" + _END),
    Format("Notion token", "ntn_", r"[A-Za-z0-9]{40,}" + _END),
    Format("Notion token", "secret_", r"[A-Za-z0-9]{43}" + _END, random=True),
    Format("Postman key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}" + _END),
    Format("Grafana token", "glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _END),
    Format("Grafana Cloud token", "glc_", r"[A-Za-z0-9+/]{32,}={0,2}"),
    Format("Sentry token", "sntrys_", r"[A-Za-z0-9+/=_]{40,}"),
    Format("Sentry token", "sntryu_", r"[a-f0-9]{64}" + _END),
    Format("New Relic key", "NRAK-", r"[A-Z0-9]{27}" + _END),
    Format("New Relic key", "NRJS-", r"[a-f0-9]{19}" + _END),
    Format("PlanetScale token", "pscale_", r"(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}"),
    Format("Pulumi token", "pul-", r"[a-f0-9]{40}" + _END),
    Format("Heroku key", "HRKU-", r"[A-Za-z0-9_-]{40,}"),
    Format("Fly.io token", "fo1_", r"[A-Za-z0-9_-]{40,}"),
    Format("Fly.io token", "FlyV1 ", r"fm[12][a-z]?_[A-Za-z0-9+/=_,-]{40,}"),
    Format("Supabase token", "sbp_", r"[a-f0-9]{40}" + _END),
    Format("age secret key", "AGE-SECRET-KEY-1", r"[02-9AC-HJ-NP-Z]{58}" + _END),
    Format("Dropbox token", "sl.", r"[A-Za-z0-9_-]{130,}"),
    Format("Square token", "sq0atp-", r"[A-Za-z0-9_-]{22}" + _END_DASH),
    Format("Square secret", "sq0csp-", r"[A-Za-z0-9_-]{43}" + _END_DASH),
    Format("Square token", "EAAA", r"[A-Za-z0-9_-]{60}" + _END_DASH, random=True),
    Format("Meta token", "EAACEdEose0cBA", r"[A-Za-z0-9]{20,}"),
    Format("Azure client secret", "8Q~", r"[A-Za-z0-9_~.-]{31,34}" + _END, back=3),
    Format("Airtable token", "pat", r"[A-Za-z0-9]{14}\.[a-f0-9]{64}" + _END),
    Format("Figma token", "figd_", r"[A-Za-z0-9_-]{40}" + _END_DASH),
    Format("Adafruit key", "aio_", r"[A-Za-z0-9]{28}" + _END),
    Format("Replicate token", "r8_", r"[A-Za-z0-9]{37}" + _END),
    Format("Groq key", "gsk_", r"[A-Za-z0-9]{52}" + _END),
    Format("Perplexity key", "pplx-", r"[A-Za-z0-9]{48}" + _END),
    Format("xAI key", "xai-", r"[A-Za-z0-9]{80}" + _END),
    Format(
        "Tailscale key",
        "tskey-",
        r"(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{8,}-[A-Za-z0-9]{16,}",
    ),
    Format("Contentful token", "CFPAT-", r"[A-Za-z0-9_-]{43}" + _END_DASH),
    Format("Docker Hub token", "dckr_pat_", r"[A-Za-z0-9_-]{27,}"),
    Format("Netlify token", "nfp_", r"[A-Za-z0-9]{36}" + _END),
    Format("Render key", "rnd_", r"[A-Za-z0-9]{32}" + _END),
    Format("SonarQube token", "squ_", r"[a-f0-9]{40}" + _END),
    Format("SonarQube token", "sqp_", r"[a-f0-9]{40}" + _END),
    Format("SonarQube token", "sqa_", r"[a-f0-9]{40}" + _END),
    Format("RubyGems key", "rubygems_", r"[a-f0-9]{48}" + _END),
    Format("NuGet key", "oy2", r"[a-z0-9]{43}" + _END),
    Format("Alibaba key id", "LTAI", r"[A-Za-z0-9]{12,20}" + _END),
    Format("EasyPost key", "EZAK", r"[A-Za-z0-9]{54}" + _END),
    Format("EasyPost key", "EZTK", r"[A-Za-z0-9]{54}" + _END),
    Format("Brevo key", "xkeysib-", r"[a-f0-9]{64}-[A-Za-z0-9]{16}" + _END),
    Format("Brevo key", "xsmtpsib-", r"[a-f0-9]{64}-[A-Za-z0-9]{16}" + _END),
    Format("LangSmith key", "lsv2_", r"(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _END),
    Format("MailerSend token", "mlsn.", r"[a-f0-9]{64}" + _END),
    Format("Neon key", "napi_", r"[a-z0-9]{64}" + _END),
    Format("Tavily key", "tvly-", r"(?:dev-|prod-)?[A-Za-z0-9]{32}" + _END),
    Format("Firecrawl key", "fc-", r"[a-f0-9]{32}" + _END),
    Format("E2B key", "e2b_", r"[a-f0-9]{40}" + _END),
    Format("Pinecone key", "pcsk_", r"[A-Za-z0-9]{5,}_[A-Za-z0-9]{40,}" + _END),
    Format("Resend key", "re_", r"[A-Za-z0-9]{8}_[A-Za-z0-9]{24}" + _END),
    Format("Buildkite token", "bkua_", r"[a-f0-9]{40}" + _END),
    Format("Clojars token", "CLOJARS_", r"[a-z0-9]{60}" + _END),
    Format("Readme key", "rdme_", r"[a-z0-9]{70}" + _END),
    Format("Shippo token", "shippo_", r"(?:live|test)_[a-f0-9]{40}" + _END),
    Format("Duffel token", "duffel_", r"(?:live|test)_[A-Za-z0-9_-]{43}" + _END_DASH),
    Format("Flutterwave key", "FLWSECK", r"(?:_TEST)?-[a-f0-9]{32}-X" + _END),
    Format("Mapbox secret token", "sk.eyJ", r"[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"),
    Format("1Password service token", "ops_eyJ", r"[A-Za-z0-9+/=_-]{60,}"),
    Format("Twitter bearer token", "AAAAAAAAAAAAAAAAAAAAA", r"[A-Za-z0-9%]{30,}"),
    Format("Frame.io token", "fio-u-", r"[A-Za-z0-9_=-]{64}" + _END),
    Format("Typeform token", "tfp_", r"[A-Za-z0-9_.=-]{44,}"),
    Format("Prefect key", "pnu_", r"[A-Za-z0-9]{36}" + _END),
    Format("CircleCI token", "CCIPAT_", r"[A-Za-z0-9]{22}_[a-f0-9]{40}" + _END),
    Format("JFrog key", "AKCp", r"[A-Za-z0-9]{69}" + _END),
    Format("JFrog token", "cmVmdGtu", r"[A-Za-z0-9]{56}" + _END),
    Format("Slack refresh token", "xoxe.", r"xox[bp]-[0-9]-[A-Za-z0-9-]{20,}"),
)

_COMPILED: dict[str, list[tuple[Format, re.Pattern[str]]]] = {}


def _table() -> dict[str, list[tuple[Format, re.Pattern[str]]]]:
    if not _COMPILED:
        for fmt in FORMATS:
            _COMPILED.setdefault(fmt.prefix, []).append((fmt, re.compile(fmt.body)))
    return _COMPILED


def _b62(number: int) -> str:
    digits = []
    while number:
        number, rest = divmod(number, 62)
        digits.append(_B62[rest])
    return "".join(reversed(digits)).rjust(6, "0")


def github_checksum_ok(token: str) -> bool:
    """Whether a 40-character `ghp_`-style (or `npm_`) token carries its CRC32 checksum."""
    body = token.split("_", 1)[-1]
    if len(body) != 36:
        return False
    return _b62(zlib.crc32(body[:30].encode())) == body[30:]


def looks_random(body: str) -> bool:
    """Digits and letters mixed, no long run of letters (words), at least 16 characters."""
    core = body.replace("-", "").replace("_", "")
    if len(core) < 16:
        return False
    digits = sum(c.isdigit() for c in core)
    upper = sum(c.isupper() for c in core)
    lower = sum(c.islower() for c in core)
    if sum(1 for n in (digits, upper, lower) if n) < 2 or digits == 0 and upper < 3:
        return False
    # A word-like segment (`-button-primary-`): identifiers are made of them, tokens are not.
    segments = re.split(r"[-_]", body)
    wordy = sum(len(s) for s in segments if s.isalpha() and s.islower() and len(s) >= 3)
    return wordy * 2 < len(core)


def _left_ok(text: str, start: int) -> bool:
    return start == 0 or not (text[start - 1].isascii() and text[start - 1].isalnum())


# Where a token may start inside a run: its start, or after one of these (a token glued to
# `TOKEN_`, `--`, `x.`). Formats whose prefix is not at the token's start are found apart.
_JOINT = re.compile(r"[_./=-](?=[A-Za-z0-9])")
_APART = ("8Q~", ".atlasv1.", "FlyV1 ")


def _heads() -> dict[str, list[str]]:
    heads: dict[str, list[str]] = {}
    for prefix in _table():
        if prefix not in _APART:
            heads.setdefault(prefix[:2], []).append(prefix)
    return heads


_HEADS: dict[str, list[str]] = {}


def spans(text: str) -> Iterator[tuple[int, int]]:
    """Every vendor token in `text`, as (start, end)."""
    from kindling.masking.scan import runs

    table = _table()
    heads = _HEADS or _HEADS.update(_heads()) or _HEADS
    for run_start, run_end in runs(text):
        done = run_start
        starts = [run_start, *(m.end() for m in _JOINT.finditer(text, run_start, run_end - 16))]
        for pos in starts:
            candidates = heads.get(text[pos : pos + 2])
            if not candidates or pos < done:
                continue
            for prefix in candidates:
                if text.startswith(prefix, pos):
                    found = _match_at(text, pos, prefix, table[prefix])
                    if found:
                        done = max(done, found[1])
                        if found[0] >= 0:
                            yield found
                            break
    for prefix in _APART:
        pos = text.find(prefix)
        while pos >= 0:
            found = _match_at(text, pos, prefix, table[prefix])
            if found and found[0] >= 0:
                yield found
            pos = text.find(prefix, pos + 1)


def _match_at(text: str, pos: int, prefix: str, formats: list) -> tuple[int, int] | None:
    """(start, end) of the token at `pos`; (-1, end) when a body there did not look random."""
    skip = 0
    for fmt, body in formats:
        start = _start(text, pos, fmt.back)
        if start is None:
            continue
        m = body.match(text, pos + len(prefix))
        if m is None:
            continue
        if fmt.random and not looks_random(m.group()[:MAX_RANDOM_CHECK]):
            skip = max(skip, m.end())
            continue
        if prefix in ("ghp_", "gho_", "ghu_", "ghs_", "npm_") and not (
            github_checksum_ok(text[pos : m.end()]) or looks_random(m.group())
        ):
            continue
        return start, m.end()
    return (-1, skip) if skip else None


def _start(text: str, pos: int, back: int) -> int | None:
    """Where a token whose prefix is at `pos` starts, or None when it is part of a word."""
    start = pos - back
    if start < 0 or not _left_ok(text, start):
        return None
    if back and not all(c.isascii() and (c.isalnum() or c in "_~.") for c in text[start:pos]):
        return None
    return start


def literals() -> tuple[str, ...]:
    """Every prefix, lower-cased, for the gate."""
    return tuple(sorted({fmt.prefix.lower() for fmt in FORMATS}))
