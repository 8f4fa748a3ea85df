"""Packaging: license and metadata in their current standard form, one version, package data,
an sdist that carries its tests, the virtual-environment script, and the release tooling."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest
import tomllib
from conftest import REPO_ROOT

import kindling

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


release_check = _script("release_check")


def test_license_is_an_spdx_expression_with_its_file():
    assert PROJECT["license"] == "MIT"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "WITHOUT WARRANTY OF ANY KIND" in text
    # PEP 639: a license expression excludes the old license classifiers.
    assert not [c for c in PROJECT["classifiers"] if c.startswith("License ::")]
    assert PYPROJECT["build-system"]["requires"] == ["setuptools>=77"]


def test_classifiers_name_the_pythons_tested():
    assert PROJECT["requires-python"] == ">=3.10"
    versions = [
        c.rsplit(" :: ", 1)[1]
        for c in PROJECT["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert versions[0] == "3.10" and "3.11" in versions  # the floor, and what CI runs
    assert f"3.{sys.version_info.minor}" in versions
    assert "Typing :: Typed" in PROJECT["classifiers"]
    assert PROJECT["keywords"]
    assert "urls" not in PROJECT  # until the project has a public home; see the comment there
    assert "# [project.urls]" in (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_the_version_has_one_source():
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kindling.__version__"}
    assert kindling.__version__ == "0.2.0"
    plugin = REPO_ROOT / "kindling" / "plugin" / "claude-code" / ".claude-plugin" / "plugin.json"
    assert json.loads(plugin.read_text())["version"] == kindling.__version__


def test_build_ships_py_typed_and_schemas_without_warnings(tmp_path):
    """setuptools' build_py (what a wheel holds) with the environment's setuptools: the typing
    marker and the schemas are package data, and the metadata raises no deprecation."""
    source = tmp_path / "src"
    shutil.copytree(
        REPO_ROOT / "kindling",
        source / "kindling",
        ignore=shutil.ignore_patterns("__pycache__", "index.sqlite*", "locks"),
    )
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(REPO_ROOT / name, source / name)
    build = subprocess.run(
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "build_py"]
        + ["--build-lib", str(tmp_path / "built")],
        capture_output=True,
        text=True,
        cwd=source,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    assert "Deprecat" not in build.stderr + build.stdout
    built = tmp_path / "built" / "kindling"
    assert (built / "py.typed").is_file()
    names = {p.name for p in (built / "schemas").iterdir()}
    assert {
        f"{n}.schema.json" for n in ("observation", "capsule", "summary", "pin", "bundle")
    } <= names


def _zip(path, names: list[str], metadata: str) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(name, "")
        zf.writestr("kindling_memory-0.2.0.dist-info/METADATA", metadata)
        zf.writestr("kindling_memory-0.2.0.dist-info/licenses/LICENSE", "MIT License\n")


def test_release_check_refuses_a_wheel_without_package_data(tmp_path):
    good_metadata = "\n".join(
        [
            "Version: 0.2.0",
            "License-Expression: MIT",
            "License-File: LICENSE",
            "Classifier: Programming Language :: Python :: 3.11",
            "Classifier: Typing :: Typed",
            "Requires-Python: >=3.10",
        ]
    )
    whole = tmp_path / "whole.whl"
    _zip(whole, release_check.WHEEL_MUST_HOLD, good_metadata)
    release_check.inspect_wheel(whole, "0.2.0")
    untyped = tmp_path / "untyped.whl"
    _zip(untyped, [n for n in release_check.WHEEL_MUST_HOLD if "py.typed" not in n], good_metadata)
    with pytest.raises(release_check.Failed, match="py.typed"):
        release_check.inspect_wheel(untyped, "0.2.0")
    old_style = tmp_path / "old.whl"
    _zip(old_style, release_check.WHEEL_MUST_HOLD, good_metadata.replace("Expression", "X"))
    with pytest.raises(release_check.Failed, match="License-Expression"):
        release_check.inspect_wheel(old_style, "0.2.0")


def _tar(path, names: list[str]) -> None:
    with tarfile.open(path, "w:gz") as tf:
        for name in names:
            info = tarfile.TarInfo(f"kindling_memory-0.2.0/{name}")
            tf.addfile(info, io.BytesIO(b""))


def test_release_check_refuses_an_sdist_that_cannot_run_its_tests(tmp_path):
    files = [
        m if "." in m.rsplit("/", 1)[-1] else f"{m}/x.json" for m in release_check.SDIST_MUST_HOLD
    ]
    whole = tmp_path / "whole.tar.gz"
    _tar(whole, files)
    release_check.inspect_sdist(whole)
    no_conftest = tmp_path / "no-conftest.tar.gz"
    _tar(no_conftest, [f for f in files if f != "tests/conftest.py"])
    with pytest.raises(release_check.Failed, match="conftest"):
        release_check.inspect_sdist(no_conftest)
    cached = tmp_path / "cached.tar.gz"
    _tar(cached, files + ["evals/recall/.cache/store/x.json"])
    with pytest.raises(release_check.Failed, match="derived"):
        release_check.inspect_sdist(cached)


@pytest.mark.slow
def test_the_sdist_holds_what_the_tests_need(tmp_path):
    """An sdist built from a copy of the checkout passes the release check's inspection."""
    source = release_check.copy_checkout(tmp_path / "src")
    build = subprocess.run(
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "sdist"]
        + ["--dist-dir", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        cwd=source,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    release_check.inspect_sdist(sdist)
    with tarfile.open(sdist) as tf:
        names = tf.getnames()
    assert any(n.endswith("tests/masking/corpus.txt") for n in names)
    assert any("/fixtures/bundles/" in n for n in names)


@pytest.mark.slow
def test_make_venv_gives_an_environment_with_pip(tmp_path):
    target = tmp_path / "env"
    script = REPO_ROOT / "scripts" / "make_venv.py"
    first = subprocess.run([sys.executable, script, target], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "ready" in first.stdout
    pip = subprocess.run([target / "bin" / "python", "-m", "pip", "--version"], capture_output=True)
    assert pip.returncode == 0
    again = subprocess.run([sys.executable, script, target], capture_output=True, text=True)
    assert again.returncode == 0 and "pip already there" in again.stdout


def test_publish_workflow_uses_trusted_publishing_on_one_build():
    text = (REPO_ROOT / ".github" / "workflows" / "publish.yml").read_text(encoding="utf-8")
    assert re.search(r"^on:\n  release:\n    types: \[published\]", text, re.M)
    assert "id-token: write" in text
    assert "pypa/gh-action-pypi-publish@release/v1" in text
    assert "password" not in text and "PYPI_API_TOKEN" not in text  # no stored token
    # Built once, in the build job; the publish job only downloads those files.
    assert text.count("python -m build") == 1
    assert "actions/upload-artifact" in text and "actions/download-artifact" in text
    assert "twine check --strict" in text
