"""What a harness writes (`result.json`) and what the runner records per trial (`trials.jsonl`).

specs/runner.md "Trial outcome classes" and specs/experiment.md "Run folder" give the rules.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["success", "failure", "error"]
ErrorClass = Literal[
    "timeout",
    "harness_exit_nonzero",
    "spawn_failed",
    "result_missing",
    "result_invalid",
    "harness_error",
    "executor_failed",
    "oom_killed",
]
ExecutorName = Literal["local", "docker", "ray"]

TRIAL_RECORD_KIND: Final = "premath.experiment.trial.v1"
RUN_MANIFEST_KIND: Final = "premath.experiment.run.v1"


class Objective(BaseModel):
    """The primary metric the analysis keys on."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    name: str = Field(min_length=1, description="Metric name, e.g. accuracy.")
    value: float = Field(description="Metric value; higher is better in the report.")


class HarnessResult(BaseModel):
    """`out/result.json`: only `outcome` is required; unknown keys are tolerated and dropped."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)

    outcome: Outcome = Field(description="success | failure | error.")
    objective: Objective | None = Field(None, description="Primary metric (optional).")
    metrics: dict[str, Any] = Field({}, description="Free key/value bag of secondary metrics.")


class TrialRecord(BaseModel):
    """One line of a run's `trials.jsonl`: one attempt of one (variant, task, replication)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)

    record_kind: Literal["premath.experiment.trial.v1"] = Field(
        TRIAL_RECORD_KIND, description="Row kind and version."
    )
    run_id: str
    trial_id: str = Field(description="Stable id of the (variant, task, replication) slot.")
    schedule_index: int = Field(ge=0, description="Position in the run's schedule.")
    variant_id: str
    task_id: str
    task_index: int = Field(ge=0, description="Line order of the task in the dataset.")
    replication: int = Field(ge=0)
    attempt: int = Field(ge=1, description="1 for the first try; retries and reruns count up.")
    final: bool = Field(description="False when another attempt of this slot follows.")
    outcome: Outcome
    error_class: ErrorClass | None = None
    message: str | None = Field(None, description="Why an error trial failed, for humans.")
    objective: Objective | None = None
    metrics: dict[str, Any] = {}
    exit_code: int | None = None
    signal: int | None = None
    duration_ms: int = Field(ge=0, description="Monotonic wall time of the harness process.")
    executor: ExecutorName
    started_at: str = Field(description="UTC, YYYY-MM-DDTHH:MM:SSZ.")
    finished_at: str = Field(description="UTC, YYYY-MM-DDTHH:MM:SSZ.")
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    leftover_descendants: int = Field(
        0,
        ge=0,
        exclude_if=lambda count: count == 0,
        description="Processes the harness left running outside its group (ended by premath).",
    )

    @property
    def slot(self) -> tuple[str, str, int]:
        """The resume key: (variant, task, replication)."""
        return (self.variant_id, self.task_id, self.replication)
