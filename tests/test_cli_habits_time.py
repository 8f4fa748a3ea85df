"""Human time wherever a time is taken; printed times in local time with the offset."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from kindling.cli import cli
from kindling.when import TimeError, format_instant, parse_duration, parse_instant

# 2026-12-02 09:15:04.000 UTC, a Wednesday; 10:15 in Paris (CET, +01:00)
NOW = 1_796_202_904_000
HOUR, DAY = 3_600_000, 86_400_000


@pytest.fixture
def zone(monkeypatch):
    """Set the local zone for one test (TZ, as a person's environment does); restored after."""

    def use(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    "text, back",
    [
        ("7d", 7 * DAY),
        ("36h", 36 * HOUR),
        ("90m", 90 * 60_000),
        ("2w", 14 * DAY),
        ("2 weeks ago", 14 * DAY),
        ("3 days ago", 3 * DAY),
        ("1h30m", 90 * 60_000),
        ("1d 12h ago", 36 * HOUR),
        ("45s", 45_000),
        ("now", 0),
    ],
)
def test_a_span_is_that_long_ago(text, back):
    assert parse_instant(text, NOW) == NOW - back


def test_calendar_words_and_dates_are_local_time(zone):
    zone("Europe/Paris")
    midnight_paris = 1_796_166_000_000  # 2026-12-02T00:00+01:00
    assert parse_instant("today", NOW) == midnight_paris
    assert parse_instant("yesterday", NOW) == midnight_paris - DAY
    assert parse_instant("2026-12-02", NOW) == midnight_paris
    assert parse_instant("2026-12-02T10:15:04", NOW) == NOW
    assert parse_instant("2026-12-02 10:15:04", NOW) == NOW
    assert parse_instant("2026-07-01", NOW) == 1_782_856_800_000  # summer: +02:00
    zone("America/New_York")
    assert parse_instant("2026-12-02T04:15:04", NOW) == NOW


def test_an_offset_or_z_says_which_zone(zone):
    zone("Asia/Tokyo")  # ignored when the text names its own offset
    assert parse_instant("2026-12-02T09:15:04Z", NOW) == NOW
    assert parse_instant("2026-12-02T10:15:04+01:00", NOW) == NOW
    assert parse_instant("2026-12-02T09:15:04.000+00:00", NOW) == NOW


def test_epoch_milliseconds_still_work():
    assert parse_instant("1750416064123", NOW) == 1_750_416_064_123
    assert parse_instant("0", NOW) == 0
    assert parse_duration("60000") == 60_000


@pytest.mark.parametrize(
    "text", ["", "soon", "7x", "7 days from now", "-5", "2026-13-01", "99999-01-01", "d7", "x" * 80]
)
def test_nonsense_is_refused_with_the_forms_that_work(text):
    with pytest.raises(TimeError) as caught:
        parse_instant(text, NOW)
    assert "\n" not in str(caught.value)


def test_a_time_before_1970_or_after_9999_is_refused():
    with pytest.raises(TimeError, match="1970"):
        parse_instant("100000w", NOW)
    with pytest.raises(TimeError):
        parse_instant("10000-01-01", NOW)


def test_durations():
    assert parse_duration("7d") == 7 * DAY
    assert parse_duration("2 weeks") == 14 * DAY
    assert parse_duration("1d 12h") == 36 * HOUR
    for bad in ("7d ago", "yesterday", "2026-01-01", "", "5 parsecs"):
        with pytest.raises(TimeError):
            parse_duration(bad)


def test_printed_times_carry_their_offset(zone):
    zone("Europe/Paris")
    assert format_instant(NOW) == "2026-12-02 10:15:04 +01:00"
    assert format_instant(NOW, utc=True) == "2026-12-02 09:15:04 +00:00"
    assert format_instant(NOW, seconds=False) == "2026-12-02 10:15 +01:00"
    zone("Asia/Kolkata")
    assert format_instant(NOW) == "2026-12-02 14:45:04 +05:30"
    assert format_instant(2**70).endswith(" ms")  # never raises


# ---------------------------------------------------------------- the command line


@pytest.fixture
def cli_run(store_dir, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", str(NOW))
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(cli, ["--store", str(store_dir), *args], input=input)

    return invoke


def ts_of(result) -> int:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["ts"]


def test_log_ts_search_since_and_pin_ttl_take_human_time(cli_run, zone):
    zone("Europe/Paris")
    assert ts_of(cli_run("log", "old", "--ts", "3 weeks ago", "--json")) == NOW - 21 * DAY
    assert ts_of(cli_run("log", "new", "--ts", "yesterday", "--json")) == 1_796_166_000_000 - DAY
    assert ts_of(cli_run("log", "iso", "--ts", "2026-12-01T12:00Z", "--json")) == (
        1_796_166_000_000 - DAY + 13 * HOUR
    )
    for since, expected in (("7d", {"new", "iso"}), ("2026-11-01", {"old", "new", "iso"})):
        found = cli_run("search", "old new iso", "--since", since, "--json")
        assert found.exit_code == 0, found.output
        assert {c["entity"]["content"] for c in json.loads(found.stdout)["candidates"]} == expected
    obs = cli_run("log", "keep").stdout.strip()
    pin = json.loads(cli_run("pin", "observation", obs, "--ttl", "7d", "--json").stdout)
    assert pin["expiresAt"] == pin["createdAt"] + 7 * DAY


@pytest.mark.parametrize(
    "args, option",
    [
        (["log", "x", "--ts", "soonish"], "--ts"),
        (["search", "x", "--since", "last tuesday-ish"], "--since"),
        (["pin", "observation", "abc", "--ttl", "7d ago"], "--ttl"),
        (["pin", "observation", "abc", "--ttl", "0"], "--ttl"),
        (["log", "x", "--ts", "253402300800000"], "--ts"),
    ],
)
def test_nonsense_is_a_one_line_usage_error(cli_run, args, option):
    result = cli_run(*args)
    assert result.exit_code == 2
    error = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(error) == 1 and option in error[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "path", [["log"], ["search"], ["pin"], ["watch"], ["list"], ["status"]]
)
def test_help_shows_no_raw_ranges(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    assert "<=x<=" not in result.output and "253402300799999" not in result.output


def test_watch_durations_take_units():
    from kindling.cli.when import Duration

    assert Duration(unit="ms", most=3_600_000).convert("2s", None, None) == 2000
    assert Duration(unit="ms").convert("150", None, None) == 150
    assert Duration(unit="s", least=0, seconds=True).convert("10m", None, None) == 600.0
    assert Duration(unit="s", least=0, seconds=True).convert("0", None, None) == 0.0
    assert Duration(unit="s", seconds=True).convert("1.5", None, None) == 1.5


def test_list_and_search_print_local_time_or_utc(cli_run, zone):
    zone("Europe/Paris")
    cli_run("log", "hello", "--ts", str(NOW))
    listed = cli_run("list", "observations")
    assert "2026-12-02 10:15:04 +01:00" in listed.stdout
    assert "2026-12-02 09:15:04 +00:00" in cli_run("list", "observations", "--utc").stdout
    assert "2026-12-02 09:15:04 +00:00" in cli_run("--utc", "search", "hello").stdout
    assert "10:15:04 +01:00" in cli_run("search", "hello").stdout
    as_json = json.loads(cli_run("list", "observations", "--json").stdout)
    assert as_json[0]["ts"] == NOW  # JSON keeps epoch milliseconds
