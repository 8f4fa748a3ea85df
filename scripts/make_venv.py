"""Make a virtual environment with pip in it, with nothing but the standard library.

    python3 scripts/make_venv.py [DIR]        # default DIR: .venv

`python3 -m venv` fails on Debian and Ubuntu unless the python3-venv package is installed:
their Python leaves out the copy of pip that `ensurepip` installs. This script creates the
environment without pip (which always works), tries `ensurepip`, and where that is missing
downloads pip's wheel from PyPI, checks it against the SHA-256 that PyPI lists, and installs
pip from that wheel. An environment that already has pip is left as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
import venv
from pathlib import Path
from urllib.parse import urljoin

PYPI_PIP = "https://pypi.org/pypi/pip/json"


def env_python(target: Path) -> Path:
    """The environment's own interpreter."""
    if os.name == "nt":
        return target / "Scripts" / "python.exe"
    return target / "bin" / "python"


def has_pip(python: Path) -> bool:
    """True when `python -m pip` works in the environment."""
    probe = subprocess.run([python, "-m", "pip", "--version"], capture_output=True)
    return probe.returncode == 0


def pip_wheel(folder: Path) -> Path:
    """The newest pip wheel from PyPI, saved in `folder` after its SHA-256 is checked."""
    with urllib.request.urlopen(PYPI_PIP, timeout=60) as answer:
        release = json.load(answer)
        base = answer.geturl()
    wheels = [f for f in release["urls"] if f["packagetype"] == "bdist_wheel"]
    if not wheels:
        raise SystemExit("error: PyPI lists no wheel for pip's latest release")
    chosen = wheels[0]
    # A mirror may list the file relative to the page; PyPI itself gives an absolute URL.
    with urllib.request.urlopen(urljoin(base, chosen["url"]), timeout=120) as answer:
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != chosen["digests"]["sha256"]:
        raise SystemExit("error: the downloaded pip wheel does not match PyPI's SHA-256")
    path = folder / chosen["filename"]
    path.write_bytes(data)
    return path


def install_pip(python: Path) -> str:
    """Put pip into the environment; how it was done."""
    ensure = subprocess.run(
        [python, "-m", "ensurepip", "--upgrade", "--default-pip"], capture_output=True
    )
    if ensure.returncode == 0 and has_pip(python):
        return "pip from ensurepip"
    with tempfile.TemporaryDirectory(prefix="kindling-pip-") as tmp:
        wheel = pip_wheel(Path(tmp))
        # A wheel is a zip that Python can import from: pip installs itself from its own wheel.
        run = subprocess.run(
            [python, str(wheel / "pip"), "install", "--quiet", "--no-index", str(wheel)]
        )
        if run.returncode != 0 or not has_pip(python):
            raise SystemExit("error: installing pip from its wheel failed")
    return f"pip from PyPI ({wheel.name}; this Python has no ensurepip)"


def main(argv: list[str]) -> int:
    target = Path(argv[0] if argv else ".venv")
    python = env_python(target)
    if not python.exists():
        venv.EnvBuilder(with_pip=False).create(target)
    if has_pip(python):
        print(f"{target}: ready (pip already there)")
        return 0
    how = install_pip(python)
    print(f"{target}: ready ({how})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
