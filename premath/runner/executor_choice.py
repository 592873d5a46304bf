"""Which executor runs a run's trials: chosen here, above the executors, so `executors.py` never
imports the Ray executor (which builds on it) and importing premath never loads ray."""

from __future__ import annotations

from premath.models.trial import ExecutorName
from premath.runner.executors import DockerExecutor, Executor, LocalExecutor


def make_executor(name: ExecutorName, ray_address: str | None = None) -> Executor:
    """`ray_address`: the cluster of the ray executor (None: a local Ray instance of our own)."""
    if name == "ray":
        from premath.runner.ray_executor import RayExecutor  # lazy: ray is an optional extra

        executor = RayExecutor(ray_address)
        executor.connect()  # here, on the caller's (main) thread, not on the pool's
        return executor
    return DockerExecutor() if name == "docker" else LocalExecutor()
