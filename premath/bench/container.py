"""`--sandbox-backend docker`: the harness, and every `bench tool` call it makes, in one container.

The run folder and the harness's working folder are mounted at their own absolute paths, so the
task file, the result file and `raw/` read the same inside and out, and the harness calls back
`premath bench tool` from the image's own premath: a tool command runs in the container too.
The container is hardened like the experiment executor's (read-only root with a `/tmp` tmpfs,
no new privileges, no capabilities, no network unless asked) and removed when the run ends.
"""

from __future__ import annotations

import os
from pathlib import Path

from premath.errors import InputInvalid
from premath.runner.containers import DockerEngine, ImageIdentity
from premath.runner.executors import placed_container_name

DOCKER_BACKEND = "docker"
CONTAINER_PREMATH_ARGV = ("premath",)
"""How a harness in the container calls premath back: the image's own `premath`."""


def check_harness_image(engine: DockerEngine, image: str | None, cwd: Path) -> ImageIdentity:
    """The image's identity, once the engine, the image and its premath are known to work."""
    if image is None:
        raise InputInvalid("--sandbox-backend docker needs --harness-image IMAGE")
    engine.require(cwd, [image], user="--sandbox-backend docker", fallback="use another backend")
    probe = engine.call(
        [
            "run",
            "--rm",
            "--pull=never",
            "--network=none",
            image,
            *CONTAINER_PREMATH_ARGV,
            "--version",
        ],
        cwd,
        120.0,
    )
    if probe.status != "ok":
        raise InputInvalid(
            f"image {image} has no working `premath` on its PATH, so the harness could not call "
            "`premath bench tool`; install premath in it (tools/docker/build-premath-image.sh)"
        )
    identity = engine.identity(image, cwd)
    if identity is None:
        raise InputInvalid(f"image {image} disappeared from the Docker engine")
    return identity


def harness_container_argv(
    *,
    engine: DockerEngine,
    name: str,
    image: str,
    run_dir: Path,
    cwd: Path,
    network: str,
    env: dict[str, str],
    harness_argv: list[str],
) -> list[str]:
    """`docker run` for the harness: same absolute paths inside, hardened, named for removal."""
    for host_path in (run_dir, cwd):
        if ":" in os.fspath(host_path) or "," in os.fspath(host_path):
            raise InputInvalid(f"docker cannot mount {host_path}: it contains ':' or ','")
    argv = [engine.docker, "run", "--pull=never", "--name", name]
    if network == "none":
        argv.append("--network=none")
    argv += ["--read-only", "--tmpfs", "/tmp", "--security-opt", "no-new-privileges"]
    argv += ["--cap-drop", "ALL", "-v", f"{run_dir}:{run_dir}"]
    if cwd != run_dir:
        argv += ["-v", f"{cwd}:{cwd}"]
    argv += ["-w", os.fspath(cwd)]
    for key, value in sorted(env.items()):
        argv += ["-e", f"{key}={value}"]
    return [*argv, image, *harness_argv]


def harness_container_name(run_dir: Path) -> str:
    return placed_container_name(run_dir, "bench", run_dir.name)
