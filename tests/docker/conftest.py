"""A real Docker engine and premath's offline base image, or a skip that says why.

`tools/docker/setup.sh` (`mise run docker-setup`, run by `.ci/run`) starts the engine and builds
the base image from Debian's packages; these tests never start or stop the engine themselves.
"""

import os
import subprocess
from pathlib import Path

import pytest

from tests.support import optional_tools

REPO = Path(__file__).resolve().parents[2]
BASE_IMAGE = optional_tools.DOCKER_BASE_IMAGE
HARNESS_IMAGE = "premath-clean-harness-test:latest"


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="session")
def engine() -> str:
    optional_tools.require(optional_tools.docker_engine())
    return BASE_IMAGE


@pytest.fixture(scope="session")
def harness_image(engine: str) -> str:
    """The bundled example's Dockerfile, built on the local base image (no registry)."""
    build = docker(
        "build",
        "--build-arg",
        f"BASE={engine}",
        "-t",
        HARNESS_IMAGE,
        os.fspath(REPO / "examples" / "clean_harness"),
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    return HARNESS_IMAGE


def containers_named(prefix: str) -> list[str]:
    listing = docker("ps", "-a", "--filter", f"name={prefix}", "--format", "{{.Names}}")
    assert listing.returncode == 0, listing.stderr
    return [name for name in listing.stdout.split() if name.startswith(prefix)]


@pytest.fixture(scope="session")
def premath_image(engine: str) -> str:
    """This checkout's premath installed in the base image (tools/docker/build-premath-image.sh)."""
    tag = "premath-runtime:test"
    build = subprocess.run(
        ["bash", os.fspath(REPO / "tools" / "docker" / "build-premath-image.sh"), tag],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    return tag
