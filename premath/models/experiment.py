"""`experiment.yaml`: the clean-harness experiment file (specs/experiment.md).

A format we own, so every model forbids unknown keys and the loader reports every wrong field
at once. Field names follow AgentLab's `version: "1.0"` clean contract (specs/experiment.md);
`retry`, `concurrency` and `design.scheduling` are the runner policies users ask for.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Comparison = Literal["paired", "unpaired", "none"]
Scheduling = Literal["paired_interleaved", "variant_sequential", "randomized"]
NetworkMode = Literal["none", "full"]
RetryOn = Literal["error", "failure", "timeout"]
ExecutorChoice = Literal["local", "docker", "ray"]

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RUNNER_ENV_PREFIXES = ("PREMATH_", "AGENTLAB_")
DEFAULT_TIMEOUT_MS = 300_000
DEFAULT_SEED = 1


class ExperimentModel(BaseModel):
    """A part of a file we own: unknown keys are errors, values keep their YAML types."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def _check_env(env: dict[str, str]) -> dict[str, str]:
    for name in env:
        if not ENV_NAME.fullmatch(name):
            raise ValueError(f"env name {name!r} is not a valid variable name")
        if name.upper().startswith(RUNNER_ENV_PREFIXES):
            raise ValueError(
                f"env name {name!r} is reserved: the harness sees no runner metadata "
                "(PREMATH_*, AGENTLAB_*); pass configuration as args"
            )
    return env


def _check_args(args: list[str]) -> list[str]:
    if any("\x00" in arg for arg in args):
        raise ValueError("args must not contain NUL characters")
    return args


Args = Annotated[
    list[str],
    Field(description="Arguments appended after the runtime command, before the two paths."),
]
Env = Annotated[
    dict[str, str],
    Field(description="Environment variables set for the harness, over a minimal allowlist."),
]


class ExperimentInfo(ExperimentModel):
    id: str = Field(min_length=1, description="Stable experiment id; names the run folders.")
    name: str = Field(min_length=1, description="Human-readable title.")


class Dataset(ExperimentModel):
    path: str = Field(
        min_length=1, description="tasks.jsonl, relative to the experiment file's folder."
    )
    limit: int | None = Field(None, ge=1, description="Use only the first N tasks.")


class Design(ExperimentModel):
    comparison: Comparison = Field(
        "paired", description="How variants are compared with the baseline in the report."
    )
    replications: int = Field(ge=1, le=10_000, description="Runs of each (variant, task).")
    seed: int = Field(DEFAULT_SEED, description="Seed of the randomized schedule and bootstrap.")
    scheduling: Scheduling = Field(
        "paired_interleaved",
        description="Trial order: task-major (paired_interleaved), variant-major "
        "(variant_sequential), or a seeded shuffle (randomized).",
    )


class _Arm(ExperimentModel):
    """What the baseline and each variant set; subclasses only describe `variant_id`."""

    variant_id: str = Field(min_length=1)
    args: Args = []
    env: Env = {}
    image: str | None = Field(None, min_length=1, description="Image override (docker only).")

    _env = field_validator("env")(_check_env)
    _args = field_validator("args")(_check_args)


class Baseline(_Arm):
    variant_id: str = Field(min_length=1, description="Id of the control variant.")


class Variant(_Arm):
    variant_id: str = Field(min_length=1, description="Unique id of this treatment.")


class Resources(ExperimentModel):
    cpus: float | None = Field(
        None, gt=0, description="CPUs for the container (docker); the Ray task's num_cpus (ray)."
    )
    memory_mb: int | None = Field(
        None,
        ge=16,
        description="Memory cap in MiB (docker --memory; local address-space limit); the Ray "
        "task's memory request (ray).",
    )


class Runtime(ExperimentModel):
    image: str | None = Field(
        None, min_length=1, description="Harness image; required by the docker executor only."
    )
    command: list[str] | str = Field(
        description="Harness command: an array, or a string split once like a shell would."
    )
    timeout_ms: int = Field(DEFAULT_TIMEOUT_MS, ge=1, description="Per-trial deadline.")
    network: NetworkMode = Field("none", description="Container network (docker).")
    user: str | None = Field(
        None,
        pattern=r"^[0-9]+(:[0-9]+)?$",
        description="Run the harness as this uid[:gid] in the container (docker); /out stays "
        "writable for it.",
    )
    resources: Resources = Resources()

    @field_validator("command")
    @classmethod
    def _command_not_empty(cls, value: list[str] | str) -> list[str] | str:
        if isinstance(value, list) and (not value or not value[0]):
            raise ValueError("command must name a program")
        if isinstance(value, str) and not value.strip():
            raise ValueError("command must name a program")
        return value


class Retry(ExperimentModel):
    max_attempts: int = Field(1, ge=1, le=100, description="Attempts per trial, first included.")
    retry_on: list[RetryOn] = Field(
        ["error"],
        description="Outcomes that trigger another attempt: error (except timeouts), "
        "failure, timeout.",
    )


class ExperimentSpec(ExperimentModel):
    """The experiment file as written by its author."""

    version: Literal["1.0"] = Field(description='Format version; always "1.0".')
    experiment: ExperimentInfo
    dataset: Dataset
    design: Design
    baseline: Baseline
    variant_plan: list[Variant] = Field([], description="Treatments compared with the baseline.")
    runtime: Runtime
    retry: Retry = Retry()
    concurrency: int = Field(1, ge=1, le=256, description="Trials run at once.")
    executor: ExecutorChoice | None = Field(
        None,
        description="Where trials run when `--executor` is not given: local (default), docker, "
        "or ray (one Ray task per trial; `--ray-address` / RAY_ADDRESS names the cluster).",
    )

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        return "1.0" if value == 1.0 and not isinstance(value, bool) else value
