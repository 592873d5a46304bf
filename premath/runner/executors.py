"""Executors: how one trial's harness is started, `local` (default), `docker` or `ray`.

Both build exactly `{command} {variant args} <task.json> <result.json>`; the harness sees the
two paths, the variant's env over a minimal allowlist, and nothing about the runner.

- `local` runs the command on this machine, cwd = the experiment file's folder (the local
  stand-in for the image's WORKDIR), in its own process group, with the memory cap as an
  address-space limit. The task file is made read-only. It cannot isolate the network or swap
  images: images are refused when the experiment is checked; the network is not enforced.
- `docker` runs the seed's line (`docker_argv`), the container named per trial attempt. It never
  pulls: an image must already be on the engine. When the attempt ends, the container we started,
  and only that one, is inspected (the OOM killer's verdict) and removed with `docker rm -f`,
  which ends every process in it, `setsid` descendants included.
- `ray` (premath/runner/ray_executor.py) runs one of the two above on a node of a Ray cluster
  and brings the attempt's files back to this machine.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from premath.errors import InputInvalid
from premath.models.experiment import NetworkMode
from premath.models.trial import ExecutorName
from premath.runner.containers import DockerEngine
from premath.runner.paths import AttemptPaths
from premath.runner.process import (
    DEFAULT_GRACE_S,
    ProcessOutcome,
    ResourceLimits,
    allowlisted_env,
    reap_group_ticket,
    run_bounded,
)

DEFAULT_OUTPUT_CAP = 10 * 1024 * 1024
CONTAINER_TASK = "/in/task.json"
CONTAINER_OUT = "/out"
CONTAINER_RESULT = "/out/result.json"
_CONTAINER_NAME = re.compile(r"[^a-zA-Z0-9_.-]")


@dataclass(frozen=True, slots=True)
class Invocation:
    """Everything an executor needs to start one attempt; nothing trial-specific leaks in."""

    command: tuple[str, ...]
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    image: str | None
    timeout_s: float
    network: NetworkMode
    cpus: float | None
    memory_mb: int | None
    workdir: Path
    """Local executor: the harness's cwd."""
    user: str | None
    """Docker executor: run the harness as this user (`uid[:gid]`); /out is made writable."""
    label: str
    """Run and trial ids: with the attempt folder's name it names the attempt's container."""


class Executor(Protocol):
    name: ExecutorName
    cancel: threading.Event
    """Set it to end every in-flight attempt (their outcome is then `cancelled`)."""

    def execute(self, invocation: Invocation, paths: AttemptPaths) -> ProcessOutcome: ...

    def cleanup(self) -> None:
        """Stop anything this executor started that is still running (after an interrupt)."""

    def reap(self, paths: AttemptPaths) -> bool:
        """End what an attempt of a dead runner left running; True if something was ended."""

    def close(self) -> None:
        """Let go of what the executor holds for the whole run (a Ray connection)."""


def harness_argv(invocation: Invocation, task_path: str, result_path: str) -> list[str]:
    """`{command} {args} <task> <result>`: the two paths always last (the clean contract)."""
    return [*invocation.command, *invocation.args, task_path, result_path]


def container_name(*parts: str) -> str:
    name = "-".join(_CONTAINER_NAME.sub("_", part) for part in parts if part)
    return ("premath-" + name)[:128]


def placed_container_name(folder: Path, *parts: str) -> str:
    """A name unique to `folder` on this engine (runs in two folders may share ids), and the
    same whenever it is derived again from the same folder (so a reaper finds it)."""
    token = hashlib.sha256(os.fsencode(folder.absolute())).hexdigest()[:8]
    return f"{container_name(*parts)[:119]}-{token}"


class LocalExecutor:
    name: ExecutorName = "local"

    def __init__(self, output_cap: int = DEFAULT_OUTPUT_CAP, grace_s: float = DEFAULT_GRACE_S):
        self.output_cap = output_cap
        self.grace_s = grace_s
        self.cancel = threading.Event()

    def execute(self, invocation: Invocation, paths: AttemptPaths) -> ProcessOutcome:
        argv = harness_argv(
            invocation,
            os.fspath(paths.task_file.absolute()),
            os.fspath(paths.result_file.absolute()),
        )
        return run_bounded(
            argv,
            cwd=invocation.workdir,
            env=allowlisted_env(dict(invocation.env)),
            timeout_s=invocation.timeout_s,
            stdout_path=paths.stdout_file,
            stderr_path=paths.stderr_file,
            output_cap=self.output_cap,
            grace_s=self.grace_s,
            limits=ResourceLimits(memory_mb=invocation.memory_mb),
            cancel=self.cancel,
            group_ticket=paths.group_ticket,
        )

    def cleanup(self) -> None:
        """Nothing outlives `run_bounded` locally: it kills each trial's process group."""

    def reap(self, paths: AttemptPaths) -> bool:
        return reap_group_ticket(paths.group_ticket)

    def close(self) -> None:
        """Nothing held between attempts."""


def docker_argv(
    invocation: Invocation, name: str, task_file: str, out_dir: str, docker: str = "docker"
) -> list[str]:
    """The seed's `docker run` line, hardened; `invocation.image` must be set."""
    if invocation.image is None:
        raise InputInvalid("the docker executor needs an image (runtime.image or the variant's)")
    argv = [docker, "run", "--pull=never", "--name", name]
    if invocation.network == "none":
        argv.append("--network=none")
    argv += ["--read-only", "--security-opt", "no-new-privileges", "--cap-drop", "ALL"]
    if invocation.cpus is not None:
        argv.append(f"--cpus={invocation.cpus:g}")
    if invocation.memory_mb is not None:
        argv.append(f"--memory={invocation.memory_mb}m")
    if invocation.user is not None:
        argv.append(f"--user={invocation.user}")
    for host_path in (task_file, out_dir):
        if ":" in host_path or "," in host_path:
            raise InputInvalid(f"docker cannot mount {host_path!r}: it contains ':' or ','")
    argv += ["-v", f"{task_file}:{CONTAINER_TASK}:ro", "-v", f"{out_dir}:{CONTAINER_OUT}"]
    for key, value in invocation.env:
        argv += ["-e", f"{key}={value}"]
    argv.append(invocation.image)
    argv += harness_argv(invocation, CONTAINER_TASK, CONTAINER_RESULT)
    return argv


class DockerExecutor:
    name: ExecutorName = "docker"

    def __init__(
        self,
        docker: str = "docker",
        output_cap: int = DEFAULT_OUTPUT_CAP,
        grace_s: float = DEFAULT_GRACE_S,
    ) -> None:
        self.engine = DockerEngine(docker)
        self.output_cap = output_cap
        self.grace_s = grace_s
        self.cancel = threading.Event()
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def require(self, cwd: Path, images: Iterable[str]) -> None:
        """Refuse, before anything is written, a run the engine or its images cannot serve."""
        self.engine.require(
            cwd, images, user="the docker executor", fallback="run with --executor local"
        )

    def execute(self, invocation: Invocation, paths: AttemptPaths) -> ProcessOutcome:
        name = placed_container_name(paths.root, invocation.label, paths.root.name)
        argv = docker_argv(
            invocation,
            name,
            os.fspath(paths.task_file.absolute()),
            os.fspath(paths.out_dir.absolute()),
            self.engine.docker,
        )
        if invocation.user is not None:
            paths.out_dir.chmod(0o777)
        with self._lock:
            self._running.add(name)
        try:
            return self.engine.run(
                name,
                argv,
                paths.root,
                timeout_s=invocation.timeout_s,
                stdout_path=paths.stdout_file,
                stderr_path=paths.stderr_file,
                output_cap=self.output_cap,
                grace_s=self.grace_s,
                cancel=self.cancel,
                group_ticket=paths.group_ticket,
            )
        finally:
            with self._lock:
                self._running.discard(name)

    def cleanup(self) -> None:
        with self._lock:
            names = sorted(self._running)
        for name in names:
            self.engine.remove(name, Path.cwd())

    def reap(self, paths: AttemptPaths) -> bool:
        """The docker CLI's group, then the container: its name is derived from the attempt,
        so only a container this runner started can be removed."""
        reap_group_ticket(paths.group_ticket)
        run_id, trial_id = paths.root.parents[2].name, paths.root.parent.name
        name = placed_container_name(paths.root, f"{run_id}-{trial_id}", paths.root.name)
        self.engine.remove(name, paths.root)
        return True

    def close(self) -> None:
        """Nothing held between attempts: each container is removed when its attempt ends."""
