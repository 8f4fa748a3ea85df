"""Per-repository masking patterns (.kindling/masking.json) and `kindling mask --check`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kindling.cli import cli
from kindling.errors import KindlingError
from kindling.masking import custom, mask_json, mask_text
from kindling.memory import Memory

ACME = "acme_dt_" + "Q7f2Kp9LmX3vB8nR4tY6wZ1cD5gH0jS2"


def write_patterns(store_dir, patterns) -> None:
    (store_dir / custom.FILE_NAME).write_text(json.dumps({"patterns": patterns}))


def test_a_repository_pattern_masks_its_in_house_tokens_on_every_write(store_dir):
    Memory(store_dir).log("first write")
    write_patterns(store_dir, [{"name": "acme deploy token", "regex": r"acme_dt_[A-Za-z0-9]{32}"}])
    memory = Memory(store_dir)
    written = memory.log(f"deploying with {ACME} now", provenance={"argv": ["x", ACME]})
    assert written.masked == 2
    assert ACME not in json.dumps(written.entity)
    assert written.entity["content"] == "deploying with [REDACTED] now"


def test_a_repository_pattern_only_adds_masking():
    found = custom.parse(b'{"patterns": ["nothing-matches-this-[0-9]{3}"]}', "t")
    with custom.applied(custom.Patterns(found)):
        assert mask_text("password=hunter2")[0] == "password=[REDACTED]"
        assert mask_json({"token": "abc123"})[0] == {"token": "[REDACTED]"}


@pytest.mark.parametrize(
    "regex, rule",
    [
        ("(a+)+b", "quantifier inside a quantified group"),
        ("(x|xy)*(a*)*", "quantifier inside a quantified group"),
        (r"(a)\1", "back-reference"),
        ("a*b*c*d", "unbounded repeats"),
        ("x*", "matches the empty string"),
        ("[unclosed", "not a regular expression"),
        ("a" * 201, "longer than 200"),
        ("", "non-empty string"),
    ],
)
def test_a_pattern_that_could_backtrack_or_is_malformed_is_refused(regex, rule):
    with pytest.raises(ValueError, match=rule):
        custom.check(regex)


def test_a_file_with_too_many_patterns_or_bytes_is_refused():
    many = json.dumps({"patterns": [f"tok{i}_[a-z]{{8}}" for i in range(40)]}).encode()
    with pytest.raises(KindlingError, match="more than 32 patterns"):
        custom.parse(many, "masking.json")
    with pytest.raises(KindlingError, match="KiB"):
        custom.parse(b" " * (custom.MAX_FILE_BYTES + 1), "masking.json")
    with pytest.raises(KindlingError, match="patterns"):
        custom.parse(b'{"other": 1}', "masking.json")


def test_a_bad_patterns_file_refuses_the_write_with_one_line(store_dir):
    Memory(store_dir).log("first write")
    write_patterns(store_dir, ["(a+)+$"])
    result = CliRunner().invoke(cli, ["--store", str(store_dir), "log", "hello"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and "quantifier" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_long_text_is_searched_in_bounded_windows():
    found = custom.parse(b'{"patterns": ["zz_[0-9]{6}"]}', "t")
    text = "a" * 200_000 + " zz_123456 " + "b" * 10
    with custom.applied(custom.Patterns(found)):
        masked, count = mask_text(text)
    assert count == 1 and "zz_123456" not in masked
    assert mask_text(text) == (text, 0)  # outside a store's writes: Kindling's own only


def test_each_store_masks_with_its_own_patterns_in_one_process(tmp_path):
    """An MCP server serving two stores: one's patterns never leave the other unmasked."""
    acme = tmp_path / "acme" / ".kindling"
    other = tmp_path / "other" / ".kindling"
    Memory.init(acme.parent).close()
    Memory.init(other.parent).close()
    write_patterns(acme, [{"name": "acme deploy token", "regex": r"acme_dt_[A-Za-z0-9]{32}"}])
    first, second = Memory(acme), Memory(other)
    second.log("opened the other store first")
    written = first.log(f"deploying with {ACME}")
    assert written.masked == 1 and ACME not in json.dumps(written.entity)
    kept = second.log(f"deploying with {ACME}")
    assert kept.masked == 0 and ACME in kept.entity["content"]  # not acme's pattern: kept
    again = first.log(f"and again {ACME}")
    assert again.masked == 1


def test_mask_check_shows_what_would_be_stored_and_by_what(store_dir):
    before = sorted(p.name for p in (store_dir / "objects").rglob("*"))
    text = "export STRIPE_KEY=abc123XYZ789\ncurl -H 'Authorization: SSWS 00aB-cD3fG'"
    result = CliRunner().invoke(cli, ["--store", str(store_dir), "mask", "--check", "--json", text])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["stored"] == (
        "export STRIPE_KEY=[REDACTED]\ncurl -H 'Authorization: SSWS [REDACTED]'"
    )
    assert out["masked"] == 2
    assert out["kinds"] == {"HTTP authorization": 1, "credential name": 1}
    assert sorted(p.name for p in (store_dir / "objects").rglob("*")) == before


def test_mask_check_reads_stdin_and_applies_the_repository_patterns(store_dir):
    write_patterns(store_dir, [{"name": "acme", "regex": r"acme_dt_[A-Za-z0-9]{32}"}])
    result = CliRunner().invoke(
        cli, ["--store", str(store_dir), "mask", "--check", "-"], input=f"token {ACME}\n"
    )
    assert result.exit_code == 0
    assert result.stdout == "token [REDACTED]\n"
    assert "repository pattern 1" in result.stderr


def test_mask_without_check_is_a_usage_error():
    assert CliRunner().invoke(cli, ["mask", "x"]).exit_code == 2
