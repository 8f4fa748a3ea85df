"""The README and docs/ say what is true: the CLI reference is current, the quick start is what
CI runs, links work outside the repository, and the format examples are valid."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT

from kindling import __version__
from kindling.bundle.format import check_bundle
from kindling.cli import cli
from kindling.model import validate

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
DOCS = REPO_ROOT / "docs"


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def quick_start() -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", _section(README, "## Quick start"), re.S)


def test_cli_reference_is_current():
    reference = _load_script("gen_cli_reference")
    current = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert current == reference.render(), (
        "docs/cli.md is out of date: run `python scripts/gen_cli_reference.py`"
    )


def test_cli_reference_covers_every_command():
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    from test_help import ALL

    for path, _ in ALL:
        assert f"\n## kindling {path}\n" in text, path


def test_quick_start_is_two_commands_and_ci_runs_them_exactly():
    commands = quick_start()
    assert len(commands) == 2 and all("\n" not in c for c in commands), commands
    first, second = commands
    assert "make_venv.py .venv" in first and "kindling --store .kindling-example search" in first
    assert 'pip install -e ".[test]"' in second and second.endswith('python -m pytest -m ""')
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert first in ci and second in ci
    assert ci.index(first) < ci.index(second) < ci.index("python scripts/release_check.py")


def test_readme_links_work_outside_the_repository():
    """The package index shows the README alone: only absolute links, no in-page anchors."""
    relative = re.findall(r"\]\((?!https://)([^)]*)\)", README)
    assert relative == []
    assert not re.search(r"<(?:img|a)\b[^>]*(?:src|href)=\"(?!https://)", README)


def test_readme_names_files_that_exist():
    for name in set(re.findall(r"\b((?:docs|scripts)/[\w.-]+\.(?:md|py))", README)):
        assert (REPO_ROOT / name).is_file(), name
    for name in ("LICENSE", "BENCHMARKS.md", "CHANGELOG.md"):
        assert (REPO_ROOT / name).is_file()


def test_readme_install_lines_before_and_after_the_first_release():
    install = _section(README, "## Install")
    wheel = f"dist/kindling_memory-{__version__}-py3-none-any.whl"
    for tool in ("pip install", "pipx install", "uv tool install"):
        assert f"{tool} {wheel}" in install, tool
        assert f"{tool} kindling-memory" in install, tool
    assert "no release on PyPI yet" in install


def test_readme_keeps_development_material_in_docs():
    for heading in ("## Development", "### Where things live"):
        assert f"\n{heading}\n" not in README
    assert "State that lives in the process" in (DOCS / "development.md").read_text()
    assert "kindling/model.py" in (DOCS / "architecture.md").read_text()


def test_export_help_points_at_the_format_reference():
    result = CliRunner().invoke(cli, ["export", "--help"])
    assert result.exit_code == 0
    assert "docs/formats.md" in result.output
    assert (DOCS / "formats.md").is_file()


def _json_examples(path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", text, re.S)]


def test_format_examples_are_valid():
    examples = _json_examples(DOCS / "formats.md")
    kinds = {"observation": "observations", "capsule": "capsules"}
    seen = set()
    for example in examples:
        if "bundleVersion" in example:
            check_bundle(example)
            seen.add("bundle")
        elif "kind" in example:
            validate(kinds["observation"], example)
            seen.add("observation")
        elif "intent" in example:
            validate(kinds["capsule"], example)
            seen.add("capsule")
    assert seen == {"bundle", "observation", "capsule"}


def test_retrieval_example_has_the_result_keys():
    (example,) = _json_examples(DOCS / "retrieval.md")
    assert set(example) == {"pins", "currentSummary", "candidates", "provenance"}
    assert set(example["provenance"]) == {
        "query",
        "scopeIds",
        "totalCandidates",
        "returnedCandidates",
        "truncatedDueToTokenBudget",
        "providerUsed",
    }


def test_changelog_covers_each_version():
    text = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "Unreleased"
    assert headings[1].startswith(f"{__version__} ")
    assert any(h.startswith("0.1.0 ") for h in headings)


@pytest.mark.parametrize("name", ["formats.md", "retrieval.md", "development.md"])
def test_docs_link_only_absolute_or_in_page(name):
    text = (DOCS / name).read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)]*)\)", text):
        assert target.startswith(("https://", "#")), (name, target)
