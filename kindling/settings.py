"""What the environment says about Kindling, read once into one value and passed down.

`Settings.from_environ()` is called at the edge (the command line, the hook runner, a `Memory`
built without settings); below that, code does what its arguments say. The store's own
committed choices are read with the store (kindling.store.read_config).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from kindling.errors import KindlingError

STORE_ENV = "KINDLING_STORE"
STORE_DIRNAME = ".kindling"  # as kindling.store names it (settings sit below the store)
AUTOWATCH_ENV = "KINDLING_AUTOWATCH"
MIN_FILES_ENV = "KINDLING_AUTOWATCH_MIN_FILES"
IDLE_ENV = "KINDLING_AUTOWATCH_IDLE_S"
DEFAULT_MIN_FILES = 5_000
DEFAULT_IDLE_S = 1_800.0
MAX_IDLE_S = 7 * 86_400.0
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")

# Set by the CI systems in common use (each one's documented variable); any of them non-empty
# (and not "false" or "0") means this run is a CI job, where a watcher would only outlive it.
CI_VARIABLES = (
    "CI",
    "CONTINUOUS_INTEGRATION",
    "BUILD_NUMBER",  # Jenkins, TeamCity
    "JENKINS_URL",
    "HUDSON_URL",
    "TF_BUILD",  # Azure Pipelines
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "BUILDKITE",
    "CIRCLECI",
    "TRAVIS",
    "TEAMCITY_VERSION",
    "BITBUCKET_BUILD_NUMBER",
    "CODEBUILD_BUILD_ID",  # AWS CodeBuild
    "DRONE",
    "APPVEYOR",
    "bamboo_buildKey",
    "GO_PIPELINE_NAME",  # GoCD
    "SEMAPHORE",
    "CF_BUILD_ID",  # Codefresh
    "CIRRUS_CI",
    "BUILDER_OUTPUT",  # Google Cloud Build
    "HEROKU_TEST_RUN_ID",
    "NETLIFY",
    "VERCEL",
    "WOODPECKER",
    "SCREWDRIVER",
    "BUDDY",
    "HARNESS_BUILD_ID",
)


class Settings(NamedTuple):
    """Kindling's environment variables, parsed and bounded.

    A NamedTuple rather than a dataclass: it is built on every hook's path, and a frozen
    dataclass's class creation alone costs a hook about 1 ms.
    """

    store: str | None = None  # KINDLING_STORE: the store when none is named
    autowatch: bool | None = None  # KINDLING_AUTOWATCH: on, off, or None for the default
    autowatch_raw: str = ""  # as written, to say why the watcher is off
    ci: bool = False  # one of CI_VARIABLES says this is a CI job
    min_files: int = DEFAULT_MIN_FILES  # files a walk meets before a watcher pays off
    idle_exit_s: float = DEFAULT_IDLE_S  # seconds a background watcher waits unused

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings `environ` (default: this process's environment) gives."""
        env = os.environ if environ is None else environ
        raw = env.get(AUTOWATCH_ENV, "")
        word = raw.strip().lower()
        return cls(
            store=store_value(env),
            autowatch=False if word in _OFF else True if word in _ON else None,
            autowatch_raw=raw,
            ci=in_ci(env),
            min_files=int(_number(env, MIN_FILES_ENV, DEFAULT_MIN_FILES, 10**9)),
            idle_exit_s=_number(env, IDLE_ENV, DEFAULT_IDLE_S, MAX_IDLE_S),
        )


def store_from(environ: Mapping[str, str]) -> str | None:
    """KINDLING_STORE as written, with an empty value counting as unset (as click does)."""
    return environ.get(STORE_ENV) or None


def find_store(value: str | os.PathLike, *, upwards: bool = True) -> str:
    """The store a `--store` or KINDLING_STORE value names, as `git -C` finds a repository:
    the store folder itself, else `nearest_store`, else the path as given, for the caller's own
    "no store" error or for `init` to create."""
    given = Path(value).expanduser().absolute()
    if _is_store(given):
        return str(given)
    found = nearest_store(given, upwards=upwards)
    return str(found if found is not None else given)


def nearest_store(start: Path, *, upwards: bool = True) -> Path | None:
    """The nearest `.kindling/` at or above `start` (None: there is none).

    A `.kindling` that is a symlink is never followed (it could lead anywhere). Without
    `upwards`, only the folder itself and its own `.kindling/` are looked at (what `init` may
    reuse rather than create).
    """
    for folder in (start, *start.parents) if upwards else (start,):
        candidate = folder / STORE_DIRNAME
        try:
            if candidate.is_symlink():
                raise KindlingError(
                    f"{candidate} is a symlink, and Kindling never follows one into a store; "
                    "name the store folder itself with --store or KINDLING_STORE"
                )
            if candidate.is_dir():
                return candidate
        except OSError:  # unreadable folder on the way up: as if nothing were there
            continue
    return None


def _is_store(path: Path) -> bool:
    """True for a folder laid out as a store: its own objects/ or config.json, not symlinks
    (the folder itself may be reached through one: the person named it)."""
    try:
        return path.is_dir() and (
            _real_dir(path / "objects") or _real_file(path / "config.json")
        )
    except OSError:
        return False


def _real_dir(path: Path) -> bool:
    return not path.is_symlink() and path.is_dir()


def _real_file(path: Path) -> bool:
    return not path.is_symlink() and path.is_file()


def store_value(environ: Mapping[str, str]) -> str | None:
    """The store KINDLING_STORE names (see find_store), or None when it is unset."""
    raw = store_from(environ)
    if raw is None:
        return None
    try:
        return find_store(raw)
    except KindlingError:  # a symlinked .kindling: left as given, never opened as a store
        return raw


def in_ci(environ: Mapping[str, str]) -> bool:
    """True when one of the common CI systems' variables says this is a CI job."""
    for name in CI_VARIABLES:
        value = environ.get(name, "").strip().lower()
        if value and value not in ("false", "0"):
            return True
    return False


def _number(environ: Mapping[str, str], name: str, default: float, most: float) -> float:
    try:
        value = float(environ.get(name, ""))
    except ValueError:
        return default
    return min(value, most) if math.isfinite(value) and value >= 0 else default
