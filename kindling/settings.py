"""What the environment says about Kindling, read once into one value and passed down.

`Settings.from_environ()` is called at the edge (the command line, the hook runner, a `Memory`
built without settings); below that, code does what its arguments say. The store's own
committed choices are read with the store (kindling.store.read_config).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import NamedTuple

STORE_ENV = "KINDLING_STORE"
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
            store=store_from(env),
            autowatch=False if word in _OFF else True if word in _ON else None,
            autowatch_raw=raw,
            ci=in_ci(env),
            min_files=int(_number(env, MIN_FILES_ENV, DEFAULT_MIN_FILES, 10**9)),
            idle_exit_s=_number(env, IDLE_ENV, DEFAULT_IDLE_S, MAX_IDLE_S),
        )


def store_from(environ: Mapping[str, str]) -> str | None:
    """KINDLING_STORE, with an empty value counting as unset (as click does)."""
    return environ.get(STORE_ENV) or None


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
