"""Check that Kindling can be released: build, inspect, install three ways, and test the sdist.

    python scripts/release_check.py              # everything (.ci/run runs this)
    python scripts/release_check.py --quick      # the sdist's tests without those marked slow
    python scripts/release_check.py --keep       # keep the work folder to look at afterwards

Everything happens in a temporary folder, on a copy of the checkout's last commit (with
`--worktree`: of the files git tracks or would track, uncommitted changes included), with
tools installed from PyPI into a throwaway virtual environment: the checkout, and whatever
environment runs this script, are left as they were.

1. `python -m build`: the sdist, then the wheel built from that sdist; setuptools may not warn.
2. `twine check --strict` on both.
3. The wheel holds the package data (py.typed, schemas, example store, plugin, templates) and
   the license; its metadata says the version, License-Expression and classifiers. The sdist
   holds what the tests need (conftest.py, the masking corpus, fixtures/, evals/, bench/).
4. The wheel installs with pip (on every Python from 3.10 on that it finds), pipx and uv, and
   each install's commands work: `kindling --version`, `--help`, `search` on a copy of the
   example store, `kindling-hook`, `mcp --help`, and the schemas load.
5. scripts/make_venv.py makes a working environment where `ensurepip` is missing (as on
   Debian and Ubuntu without python3-venv).
6. The unpacked sdist's test suite passes in a fresh virtual environment.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ["build", "twine", "pipx", "uv", "setuptools>=77"]
WHEEL_MUST_HOLD = [
    "kindling/__init__.py",
    "kindling/py.typed",
    "kindling/schemas/observation.schema.json",
    "kindling/schemas/capsule.schema.json",
    "kindling/schemas/summary.schema.json",
    "kindling/schemas/pin.schema.json",
    "kindling/schemas/bundle.schema.json",
    "kindling/example/config.json",
    "kindling/templates/browse.html",
    "kindling/plugin/claude-code/.claude-plugin/plugin.json",
]
SDIST_MUST_HOLD = [
    "LICENSE",
    "README.md",
    "CHANGELOG.md",
    "pyproject.toml",
    "tests/conftest.py",
    "tests/masking/corpus.txt",
    "fixtures",
    "evals/retrieval/run.py",
    "evals/recall/run.py",
    "bench/bench_browse.py",
    "scripts/gen_cli_reference.py",
    "docs/formats.md",
    "kindling/example/config.json",
    ".ci/run",
    ".github/workflows/publish.yml",
]
SDIST_MUST_NOT_HOLD = ["__pycache__", "/.cache/", "index.sqlite", "bench/out/"]
# Variables that would point a fresh environment back at the checkout or another store.
LEAKY_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV", "KINDLING_STORE")


class Failed(Exception):
    """A release check that did not pass."""


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
    env["KINDLING_AUTOWATCH"] = "0"
    env.update(extra)
    return env


def run(cmd: list, *, cwd: Path | None = None, env: dict | None = None, input: str | None = None):
    """Run a command; its output, or Failed with what it printed."""
    shown = " ".join(str(c) for c in cmd)
    print(f"$ {shown}", flush=True)
    result = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=env or clean_env(),
        input=input,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise Failed(f"`{shown}` exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def copy_checkout(dest: Path, worktree: bool = False) -> Path:
    """The committed files (HEAD), or with `worktree` the files git tracks or would track with
    their uncommitted changes, copied to `dest`; outside git (an unpacked sdist) every file
    but caches."""
    dest.mkdir(parents=True, exist_ok=True)
    if (ROOT / ".git").exists() and not worktree:
        archive = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "archive", "--format=tar", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tf:
            _extract(tf, dest)
        return dest
    if (ROOT / ".git").exists():
        listed = run(
            ["git", "-c", "core.fsmonitor=false", "ls-files", "-z", "-co", "--exclude-standard"],
            cwd=ROOT,
        ).stdout
        names = list(filter(None, listed.split("\0")))
    else:
        names = [
            p.relative_to(ROOT).as_posix()
            for p in ROOT.rglob("*")
            if not p.is_dir() and not {"__pycache__", ".cache"} & set(p.relative_to(ROOT).parts)
        ]
    for name in names:
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree, not yet in git
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        elif source.is_file():
            shutil.copy2(source, target)
    return dest


def _extract(tf: tarfile.TarFile, dest: Path) -> None:
    try:
        tf.extractall(dest, filter="data")
    except TypeError:  # a Python without extraction filters (before 3.11.4)
        tf.extractall(dest)


def make_venv(path: Path, python: str = sys.executable) -> Path:
    run([python, "-m", "venv", path])
    return path / "bin"


def tools_env(work: Path) -> Path:
    step("tools: build, twine, pipx, uv from PyPI into a throwaway environment")
    bin_dir = make_venv(work / "tools")
    run([bin_dir / "python", "-m", "pip", "install", "-q", "--upgrade", "pip", *TOOLS])
    return bin_dir


def build(tools: Path, source: Path, dist: Path) -> tuple[Path, Path]:
    step("build: sdist, then the wheel from the sdist")
    out = run([tools / "python", "-m", "build", "--outdir", dist, source], cwd=source)
    noise = [
        line
        for line in (out.stdout + out.stderr).splitlines()
        if "Deprecat" in line or "SetuptoolsWarning" in line
    ]
    if noise:
        raise Failed("the build warns:\n" + "\n".join(noise))
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        raise Failed(f"expected one sdist and one wheel in {dist}, found {sdists + wheels}")
    step("twine check --strict")
    run([tools / "twine", "check", "--strict", sdists[0], wheels[0]])
    return sdists[0], wheels[0]


def version_of(source: Path) -> str:
    text = (source / "kindling" / "__init__.py").read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise Failed("no __version__ in kindling/__init__.py")


def inspect_wheel(wheel: Path, version: str) -> None:
    step(f"inspect {wheel.name}")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = [n for n in WHEEL_MUST_HOLD if n not in names]
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(meta_name).decode()
        licenses = [n for n in names if ".dist-info/licenses/" in n]
    if missing:
        raise Failed(f"the wheel lacks {missing}")
    if not any(n.endswith("/LICENSE") for n in licenses):
        raise Failed("the wheel carries no LICENSE under .dist-info/licenses/")
    expected = [
        f"Version: {version}",
        "License-Expression: MIT",
        "License-File: LICENSE",
        "Classifier: Programming Language :: Python :: 3.11",
        "Classifier: Typing :: Typed",
        "Requires-Python: >=3.10",
    ]
    absent = [line for line in expected if line not in metadata.splitlines()]
    if absent:
        raise Failed(f"the wheel's METADATA lacks {absent}")
    if any(line.startswith("Classifier: License ::") for line in metadata.splitlines()):
        raise Failed("a License classifier next to License-Expression (PEP 639 forbids both)")
    print(f"ok: {len(names)} files, metadata as expected")


def inspect_sdist(sdist: Path) -> None:
    step(f"inspect {sdist.name}")
    with tarfile.open(sdist) as tf:
        names = [n.split("/", 1)[1] for n in tf.getnames() if "/" in n]
    held = set(names) | {n.rsplit("/", i)[0] for n in names for i in range(1, n.count("/") + 1)}
    missing = [m for m in SDIST_MUST_HOLD if m not in held]
    if missing:
        raise Failed(f"the sdist lacks {missing}")
    stray = sorted({bad for bad in SDIST_MUST_NOT_HOLD for n in names if bad in "/" + n})
    if stray:
        raise Failed(f"the sdist holds derived files: {stray}")
    print(f"ok: {len(names)} files")


def smoke(bin_dir: Path, work: Path, version: str, label: str) -> None:
    """The installed commands answer, and search finds the JWT story in the example store."""
    step(f"smoke test: {label}")
    kindling = bin_dir / "kindling"
    home = work / f"home-{label.replace(' ', '-')}"
    home.mkdir()
    env = clean_env(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    shown = run([kindling, "--version"], env=env, cwd=home).stdout.strip()
    if shown != f"kindling-memory {version}":
        raise Failed(f"{label}: `kindling --version` says {shown!r}")
    if "search" not in run([kindling, "--help"], env=env, cwd=home).stdout:
        raise Failed(f"{label}: `kindling --help` lists no search")
    store = home / "example" / ".kindling"
    shutil.copytree(ROOT / "kindling" / "example", store)
    found = run([kindling, "--store", store, "search", "JWT", "--json"], env=env, cwd=home)
    result = json.loads(found.stdout)
    if not result["candidates"] or "JWT" not in json.dumps(result):
        raise Failed(f"{label}: `kindling search JWT` on the example store found nothing")
    text = run([kindling, "--store", store, "search", "JWT"], env=env, cwd=home).stdout
    if "JWT" not in text:
        raise Failed(f"{label}: text search output lacks the match")
    run([kindling, "mcp", "--help"], env=env, cwd=home)
    payload = json.dumps({"session_id": "release-check", "cwd": str(home / "example")})
    run([bin_dir / "kindling-hook", "session-start"], env=env, cwd=home, input=payload)
    print(f"ok: {label}")


def pip_installs(wheel: Path, work: Path, version: str) -> None:
    for python in interpreters():
        label = f"pip on {Path(python).name}"
        env_dir = work / f"pip-{Path(python).name}"
        bin_dir = make_venv(env_dir, python)
        run([bin_dir / "python", "-m", "pip", "install", "-q", wheel])
        probe = "from kindling import schemas; print(len(schemas.load('bundle')['properties']))"
        run([bin_dir / "python", "-c", probe], cwd=work)
        smoke(bin_dir, work, version, label)


def interpreters() -> list[str]:
    """This Python, and one of each other CPython from 3.10 on found on PATH or under pyenv."""
    found = [sys.executable]
    seen = {f"{sys.version_info[0]}.{sys.version_info[1]}"}
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for minor in range(10, 20):
        names = [shutil.which(f"python3.{minor}")]
        names += sorted(str(p) for p in pyenv.glob(f"3.{minor}.*/bin/python3.{minor}"))
        for name in filter(None, names):
            probe = subprocess.run(
                [name, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
            )
            version = probe.stdout.strip()
            if probe.returncode == 0 and version not in seen:
                seen.add(version)
                found.append(name)
                break
    return found


def pipx_install(tools: Path, wheel: Path, work: Path, version: str) -> None:
    env = clean_env(PIPX_HOME=str(work / "pipx"), PIPX_BIN_DIR=str(work / "pipx-bin"))
    env["PATH"] = f"{tools}{os.pathsep}{env.get('PATH', '')}"
    step("pipx install")
    run([tools / "pipx", "install", wheel], env=env)
    smoke(work / "pipx-bin", work, version, "pipx")


def uv_install(tools: Path, wheel: Path, work: Path, version: str) -> None:
    env = clean_env(UV_TOOL_DIR=str(work / "uv-tools"), UV_TOOL_BIN_DIR=str(work / "uv-bin"))
    step("uv tool install")
    run([tools / "uv", "tool", "install", "--python", sys.executable, wheel], env=env)
    smoke(work / "uv-bin", work, version, "uv")


def no_ensurepip(source: Path, work: Path) -> None:
    """scripts/make_venv.py where `ensurepip` fails as on Debian without python3-venv."""
    step("scripts/make_venv.py without ensurepip (Debian/Ubuntu without python3-venv)")
    fake = work / "no-ensurepip" / "ensurepip"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(
        "import sys\nsys.exit('ensurepip is disabled in Debian/Ubuntu for the system python.')\n"
    )
    target = work / "debian-venv"
    env = clean_env(PYTHONPATH=str(fake.parent))
    said = run([sys.executable, source / "scripts" / "make_venv.py", target], env=env).stdout
    if "no ensurepip" not in said:
        raise Failed(f"make_venv.py did not take the no-ensurepip path: {said!r}")
    run([target / "bin" / "python", "-m", "pip", "--version"])
    print("ok: pip installed from its wheel")


def sdist_tests(sdist: Path, work: Path, quick: bool) -> None:
    marker = "not slow" if quick else ""
    step(f"the unpacked sdist's tests (-m {marker!r}) in a fresh environment")
    with tarfile.open(sdist) as tf:
        _extract(tf, work / "sdist")
    (unpacked,) = (work / "sdist").iterdir()
    bin_dir = make_venv(work / "sdist-env")
    run([bin_dir / "python", "-m", "pip", "install", "-q", ".[test]"], cwd=unpacked)
    started = time.monotonic()
    env = clean_env(HOME=str(work / "sdist-home"))
    result = subprocess.run(
        [bin_dir / "python", "-m", "pytest", "-m", marker, "-q", "-p", "no:cacheprovider"],
        cwd=unpacked,
        env=env,
    )
    if result.returncode != 0:
        raise Failed(f"the sdist's tests failed (exit {result.returncode})")
    print(f"ok: the sdist's tests pass ({time.monotonic() - started:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sdist tests without slow ones")
    parser.add_argument("--no-sdist-tests", action="store_true", help="skip step 6")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--worktree", action="store_true", help="check uncommitted changes too, not only HEAD"
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kindling-release-"))
    print(f"work folder: {work}")
    try:
        source = copy_checkout(work / "src", args.worktree)
        version = version_of(source)
        tools = tools_env(work)
        sdist, wheel = build(tools, source, work / "dist")
        inspect_wheel(wheel, version)
        inspect_sdist(sdist)
        pip_installs(wheel, work, version)
        pipx_install(tools, wheel, work, version)
        uv_install(tools, wheel, work, version)
        no_ensurepip(source, work)
        if not args.no_sdist_tests:
            sdist_tests(sdist, work, args.quick)
    except Failed as exc:
        print(f"\nrelease check FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nrelease check passed: kindling-memory {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
