"""The optional tools some tests drive, each decided once, up front, from a fact about this
machine: a package installed under npm's global prefix, a binary on PATH that answers, a Python
package that can be found, a Docker engine that answers. No test decides from a tool's error
wording (npm changes it between releases), and a missing tool is a skip that says how to install
it. `.ci/run` installs every tool and sets `PREMATH_REQUIRE_TOOLS=all`, so there a missing tool
fails instead of skipping silently.
"""

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SKIP_PREFIX = "optional tool missing"
"""Every skip of this module starts so; `.ci/run` tells these skips from the others by it."""
REQUIRE_ENV = "PREMATH_REQUIRE_TOOLS"
"""Comma-separated tool names (or `all`) whose absence is a failure, not a skip."""

INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "2.12.0"
"""On Node 20 a plain install picks 0.15.0, whose CLI cannot send a bearer token (`--header`)."""
DOCKER_BASE_IMAGE = os.environ.get("PREMATH_BASE_IMAGE", "premath-base:bookworm")
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@dataclass(frozen=True)
class Probe:
    """A tool's verdict: where it is (when found), or what is missing; how to install it."""

    tool: str
    found: str | None
    missing: str = ""
    install: str = ""

    @property
    def skip_reason(self) -> str:
        return f"{SKIP_PREFIX}: {self.missing}; install it with: {self.install}"


def _answers(argv: list[str], env: dict[str, str] | None = None, timeout: float = 30) -> str | None:
    """stdout of a command that exits 0 within `timeout`; None when it cannot run or fails."""
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, env=env
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def npm_global_package(package: str) -> Path | None:
    """The package's folder when npm has it installed globally (under `npm root -g`)."""
    npm = shutil.which("npm")
    if npm is None:
        return None
    root = _answers([npm, "root", "-g"])
    if not root:
        return None
    folder = Path(root.strip()) / package
    return folder if (folder / "package.json").is_file() else None


def _binary(names: tuple[str, ...], version_flag: str = "--version") -> str | None:
    """The first of `names` on PATH that answers `version_flag` with exit 0."""
    for name in names:
        found = shutil.which(name)
        if found is not None and _answers([found, version_flag]) is not None:
            return found
    return None


@functools.cache
def inspector() -> Probe:
    """The MCP Inspector, a third-party MCP client: installed under npm's global prefix."""
    folder = npm_global_package(INSPECTOR_PACKAGE) if shutil.which("npx") else None
    return Probe(
        "inspector",
        None if folder is None else os.fspath(folder),
        f"the MCP Inspector ({INSPECTOR_PACKAGE}) is not installed for npm",
        f"npm install -g {INSPECTOR_PACKAGE}@{INSPECTOR_VERSION}",
    )


@functools.cache
def docker_engine() -> Probe:
    """A Docker CLI whose engine answers, and premath's offline base image on it."""
    install = "mise run docker-setup (tools/docker/setup.sh)"
    docker = shutil.which("docker")
    if docker is None:
        return Probe("docker", None, "the docker command is not on PATH", install)
    version = _answers([docker, "version", "--format", "{{.Server.Version}}"], timeout=20)
    if not (version or "").strip():
        return Probe("docker", None, "no Docker engine answers", install)
    if _answers([docker, "image", "inspect", DOCKER_BASE_IMAGE], timeout=20) is None:
        return Probe("docker", None, f"the base image {DOCKER_BASE_IMAGE} is not built", install)
    return Probe("docker", docker)


@functools.cache
def docker_compose() -> Probe:
    """The docker engine plus the compose v2 plugin (Harbor's docker environment uses it)."""
    engine = docker_engine()
    if engine.found is None:
        return engine
    if _answers([engine.found, "compose", "version"], timeout=20) is None:
        missing = "the docker compose v2 plugin is missing"
        return Probe("docker", None, missing, "apt-get install docker-compose-plugin")
    return engine


@functools.cache
def ray() -> Probe:
    """The ray extra: the package importable here, and its `ray` command beside this Python."""
    command = Path(sys.executable).parent / "ray"
    found = importlib.util.find_spec("ray") is not None and command.is_file()
    return Probe(
        "ray",
        os.fspath(command) if found else None,
        "the ray extra is not installed in this environment",
        "pip install -e '.[ray]'",
    )


@functools.cache
def harbor() -> Probe:
    """Harbor 0.26 (Python >= 3.12): importable only in the Harbor venv that `.ci/run` builds."""
    found = importlib.util.find_spec("harbor") is not None
    return Probe(
        "harbor",
        "harbor" if found else None,
        "Harbor 0.26 (Python >= 3.12) is not importable here",
        "python3.12 -m venv .venv-harbor && .venv-harbor/bin/pip install 'harbor==0.26.*' uv "
        "-e '.[test]', then .venv-harbor/bin/python -m pytest tests/harbor",
    )


@functools.cache
def playwright() -> Probe:
    """Playwright's Python package (it drives Debian's chromium; never a browser of its own)."""
    found = importlib.util.find_spec("playwright")
    return Probe(
        "playwright",
        None if found is None else found.origin,
        "Playwright is not installed in this environment",
        "pip install -e '.[test]' (brings playwright)",
    )


@functools.cache
def chromium() -> Probe:
    """A headless-capable Chromium on PATH that answers `--version`."""
    return Probe(
        "chromium",
        _binary(CHROMIUM_NAMES),
        "no chromium on PATH",
        "apt-get install chromium (Debian)",
    )


@functools.cache
def mise() -> Probe:
    """The mise task runner on PATH, answering `--version`."""
    return Probe("mise", _binary(("mise",)), "mise is not on PATH", "npm install -g @jdxcode/mise")


@functools.cache
def prlimit() -> Probe:
    """util-linux `prlimit` on PATH, answering `--version`."""
    missing = "util-linux prlimit is not on PATH"
    return Probe("prlimit", _binary(("prlimit",)), missing, "apt-get install util-linux")


@functools.cache
def git() -> Probe:
    """git on PATH, answering `--version`."""
    return Probe("git", _binary(("git",)), "git is not on PATH", "apt-get install git")


@functools.cache
def uv() -> Probe:
    """uv installed beside this interpreter (the Harbor venv's, where `.ci/run` installs it)."""
    found = shutil.which("uv", path=os.path.dirname(sys.executable))
    return Probe("uv", found, "uv is not installed beside this Python", "pip install uv")


@functools.cache
def pid_namespaces() -> Probe:
    """`unshare` can make a PID namespace: as root (found "root"), or in a user namespace
    (found "user"); decided by the exit status of a trial `unshare ... true`."""
    install = "apt-get install util-linux, on a host that allows PID namespaces"
    unshare = shutil.which("unshare")
    if unshare is None:
        return Probe("unshare", None, "the unshare tool is not on PATH", install)
    pid = ["--pid", "--fork", "--mount-proc", "true"]
    if _answers([unshare, *pid]) is not None:
        return Probe("unshare", "root")
    if _answers([unshare, "--user", "--map-root-user", *pid]) is not None:
        return Probe("unshare", "user")
    return Probe("unshare", None, "this machine refuses new PID namespaces", install)


def required(tool: str) -> bool:
    """Whether this run must have `tool` (CI sets PREMATH_REQUIRE_TOOLS; Harbor's own variable
    PREMATH_REQUIRE_HARBOR=1 still counts for harbor)."""
    names = {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",") if name.strip()}
    if tool == "harbor" and os.environ.get("PREMATH_REQUIRE_HARBOR") == "1":
        return True
    return "all" in names or tool in names


def require(probe: Probe, *, module_level: bool = False) -> str:
    """The tool's location; else skip with the install command (fail where it is required)."""
    if probe.found is not None:
        return probe.found
    if required(probe.tool):
        pytest.fail(
            f"this run requires {probe.tool} ({REQUIRE_ENV}), but {probe.missing}", pytrace=False
        )
    pytest.skip(probe.skip_reason, allow_module_level=module_level)


def summary() -> dict[str, str | None]:
    """Each tool's verdict, for a look from the shell: `python -m tests.support.optional_tools`."""
    probes = (inspector, docker_engine, ray, harbor, chromium, mise, prlimit, git, uv)
    return {probe().tool: probe().found or probe().skip_reason for probe in probes}


if __name__ == "__main__":
    sys.stdout.write(json.dumps(summary(), indent=2) + "\n")
