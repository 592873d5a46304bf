"""The Docker engine as premath uses it: one place that calls the docker CLI.

premath never pulls: an image must already be on the engine (built locally, loaded, or made by
`mise run docker-setup`). A container premath starts is named by its caller, inspected for the
OOM killer's verdict when it ends, and removed with `docker rm -f`, which ends every process
in it, `setsid` descendants included.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from premath.errors import InputInvalid
from premath.runner.process import ProcessOutcome, allowlisted_env, run_bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DOCKER_CLIENT_ENV = (
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "DOCKER_CONTEXT",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "XDG_RUNTIME_DIR",
)
"""The docker CLI (not the container) needs these to find its engine and config."""
START_ENGINE_HINT = "start one (`mise run docker-setup`, or `dockerd &` as root)"


@dataclass(frozen=True, slots=True)
class ImageIdentity:
    """What run-metadata.json records of an image: its content id and registry digest, if any."""

    image_id: str
    repo_digest: str | None


def docker_client_env(source: Mapping[str, str] | None = None) -> dict[str, str]:
    origin = os.environ if source is None else source
    return allowlisted_env({k: origin[k] for k in DOCKER_CLIENT_ENV if k in origin}, source=origin)


class DockerEngine:
    """Short docker CLI calls (version, inspect, rm); long ones go through `run_bounded`."""

    def __init__(self, docker: str = "docker") -> None:
        self.docker = docker

    def call(self, args: Sequence[str], cwd: Path, timeout_s: float = 60.0) -> ProcessOutcome:
        return run_bounded(
            [self.docker, *args],
            cwd=cwd,
            env=docker_client_env(),
            timeout_s=timeout_s,
            stdout_path=None,
            stderr_path=None,
            output_cap=0,
        )

    def problem(self, cwd: Path) -> str | None:
        """None when an engine answers, else why not."""
        outcome = self.call(["version", "--format", "{{.Server.Version}}"], cwd, 20.0)
        if outcome.status == "ok" and outcome.stdout_tail.strip():
            return None
        reason = outcome.spawn_error or outcome.stderr_tail.strip() or outcome.status
        return f"no Docker engine answers ({reason.splitlines()[-1] if reason else 'unknown'})"

    def require(self, cwd: Path, images: Iterable[str], user: str, fallback: str) -> None:
        """Refuse, before anything is written, work the engine or its images cannot serve."""
        problem = self.problem(cwd)
        if problem is not None:
            raise InputInvalid(
                f"{user} needs a Docker engine: {problem}; {START_ENGINE_HINT} or {fallback}"
            )
        missing = [image for image in sorted(set(images)) if self.identity(image, cwd) is None]
        if missing:
            raise InputInvalid(
                f"image {', '.join(missing)} is not on the Docker engine and premath never pulls: "
                "build it (`docker build -t NAME .`) or load it (`docker load`) first"
            )

    def identity(self, image: str, cwd: Path) -> ImageIdentity | None:
        probe = self.call(
            ["image", "inspect", "--format", "{{.Id}} {{range .RepoDigests}}{{.}} {{end}}", image],
            cwd,
            20.0,
        )
        if probe.status != "ok" or not probe.stdout_tail.split():
            return None
        image_id, *digests = probe.stdout_tail.split()
        return ImageIdentity(image_id, digests[0] if digests else None)

    def run(self, name: str, argv: Sequence[str], cwd: Path, **bounded: Any) -> ProcessOutcome:
        """`docker run --name NAME ...` to its end, then the OOM verdict, then the container
        removed whatever happened (timeout, cancel, an exception such as an interrupt)."""
        try:
            outcome = run_bounded(list(argv), cwd=cwd, env=docker_client_env(), **bounded)
            if outcome.status == "exit_nonzero" and self.oom_killed(name, cwd):
                outcome = replace(outcome, status="oom_killed")
        finally:
            self.remove(name, cwd)
        return outcome

    def oom_killed(self, name: str, cwd: Path) -> bool:
        state = self.call(["inspect", "--format", "{{.State.OOMKilled}}", name], cwd, 20.0)
        return state.status == "ok" and state.stdout_tail.strip() == "true"

    def remove(self, name: str, cwd: Path) -> None:
        self.call(["rm", "-f", name], cwd)
