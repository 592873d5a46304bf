"""Benchmark-run formats we own: task input, deny policy, event rows, harness rows, artifacts.

specs/bench-run.md gives the rules. Formats we own refuse unknown keys (`extra="forbid"`) and use
serde-like strictness, except the task file, whose extra keys are task data passed through to the
harness untouched.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from premath.models.bench_policy import describe_rule
from premath.models.trial import ErrorClass
from premath.timefmt import iso8601_problem

APPROVAL_MODE: Final = "full-access"
"""Benchmark runs are unattended: full access, set explicitly, with deny rules still applied."""

FailureClass = Literal[ErrorClass, "command_denied", "interrupted", "atif_invalid"]
"""Why a run failed: the runner's trial classes plus ours (specs/bench-run.md, failures)."""

RunStatus = Literal["succeeded", "failed"]
Outcome = Literal["success", "failure", "error"]
HarnessStatus = Literal[
    "not_started",
    "interrupted",
    "ok",
    "exit_nonzero",
    "timeout",
    "cancelled",
    "spawn_failed",
    "oom_killed",
]
"""runner/process.py's `ProcessStatus`, plus a harness that never started or that we stopped."""


class OwnedModel(BaseModel):
    """A format we own: unknown keys refused, no coercion, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class BenchTask(BaseModel):
    """`--task TASK.json`: one task; keys besides these are passed to the harness as they are."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True, allow_inf_nan=False)

    instruction: str = Field(description="What the agent must do; must not be blank.")
    task_id: str | None = Field(None, description="Id of the task in its dataset.")
    dataset_id: str | None = Field(None, description="Dataset, e.g. terminal-bench@2.0.")

    @field_validator("instruction")
    @classmethod
    def instruction_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("instruction is empty; give the task's instruction text")
        return value


class DenyRule(OwnedModel):
    """One deny rule: an argv prefix or a glob over the shell-quoted command line."""

    argv_prefix: list[str] | None = Field(
        None, description="Refuse commands whose argv starts with these tokens."
    )
    glob: str | None = Field(
        None, description="Refuse commands whose shlex-joined line matches this fnmatch glob."
    )
    reason: str | None = Field(None, description="Why; shown when a command is refused.")

    @model_validator(mode="after")
    def exactly_one_matcher(self) -> DenyRule:
        if (self.argv_prefix is None) == (self.glob is None):
            raise ValueError("a deny rule needs exactly one of 'argv_prefix' or 'glob'")
        if self.argv_prefix is not None and (
            not self.argv_prefix or not all(token for token in self.argv_prefix)
        ):
            raise ValueError("'argv_prefix' must be a non-empty list of non-empty strings")
        if self.glob is not None and not self.glob.strip():
            raise ValueError("'glob' must not be blank")
        return self

    def describe(self) -> str:
        return describe_rule(self.argv_prefix, self.glob, self.reason)


class BenchPolicy(OwnedModel):
    """`--policy FILE`: explicit deny rules that still apply under full access."""

    version: int = Field(1, description="Policy format version: 1.")
    deny: list[DenyRule] = Field([], description="Deny rules, checked in order.")

    @field_validator("version")
    @classmethod
    def known_version(cls, value: int) -> int:
        if value != 1:
            raise ValueError("version must be 1")
        return value


class RowMetrics(OwnedModel):
    """Usage of one agent turn as the harness reports it (non-negative; cost in US dollars)."""

    prompt_tokens: int | None = Field(None, ge=0, description="All input tokens, cached included.")
    completion_tokens: int | None = Field(None, ge=0, description="Output tokens.")
    cached_tokens: int | None = Field(None, ge=0, description="Cached input tokens.")
    cost_usd: float | None = Field(None, ge=0, description="Cost of the turn in US dollars.")


class RowToolCall(OwnedModel):
    tool_call_id: str = Field(min_length=1, description="Id the row's results link to.")
    function_name: str = Field(min_length=1, description="Tool the agent invoked.")
    arguments: dict[str, Any] = Field(description="Arguments of the call.")


class RowResult(OwnedModel):
    source_call_id: str | None = Field(None, description="A tool_call_id of the same row, or null.")
    content: str = Field(description="What the tool returned.")


class HarnessRow(OwnedModel):
    """One trajectory row a harness records (`premath bench record`): an ATIF step, minus its id.

    Every accepted row becomes a valid ATIF step: agent-only fields only on agent rows, results
    linked to the row's own tool calls (specs/bench-run.md "Harness rows").
    """

    source: Literal["system", "user", "agent"] = Field(description="Who produced the row.")
    message: str = Field("", description="The message text.")
    timestamp: str | None = Field(None, description="ISO 8601 time; the record time if absent.")
    model_name: str | None = Field(None, description="Model of this turn (agent rows only).")
    reasoning_content: str | None = Field(None, description="Reasoning (agent rows only).")
    metrics: RowMetrics | None = Field(None, description="Usage of this turn (agent rows only).")
    tool_calls: list[RowToolCall] | None = Field(
        None, description="Calls the harness ran itself (agent rows only)."
    )
    results: list[RowResult] | None = Field(None, description="Results of those calls.")
    extra: dict[str, Any] | None = Field(None, description="Custom data, kept in step extra.")

    @field_validator("timestamp")
    @classmethod
    def iso_timestamp(cls, value: str | None) -> str | None:
        if value is not None and iso8601_problem(value) is not None:
            raise ValueError(f"timestamp is not ISO 8601: {value!r}")
        return value

    @model_validator(mode="after")
    def coherent(self) -> HarnessRow:
        if self.source != "agent":
            for name in ("model_name", "reasoning_content", "metrics", "tool_calls"):
                if getattr(self, name) is not None:
                    raise ValueError(f"'{name}' is only allowed on agent rows, not {self.source}")
        call_ids = {call.tool_call_id for call in self.tool_calls or ()}
        for result in self.results or ():
            if result.source_call_id is not None and result.source_call_id not in call_ids:
                raise ValueError(
                    f"result source_call_id {result.source_call_id!r} names no tool call of "
                    "this row; record the call and its result in the same row"
                )
        return self


class Usage(OwnedModel):
    prompt_tokens: int | None = Field(description="Sum over the trajectory's steps; null if none.")
    completion_tokens: int | None = Field(description="Sum over the steps; null if unknown.")
    cached_tokens: int | None = Field(description="Sum over the steps; null if unknown.")
    cost_usd: float | None = Field(description="Sum over the steps, US dollars; null if unknown.")


class ModelInfo(OwnedModel):
    provider: str | None = Field(description="--model-provider.")
    name: str | None = Field(description="--model-name, else the first step's model.")


class HarnessProcess(OwnedModel):
    status: HarnessStatus = Field(description="How the harness process ended.")
    exit_code: int | None = Field(None, description="Its exit status, if it exited.")
    signal: int | None = Field(None, description="The signal that ended it, if any.")
    duration_s: float | None = Field(None, description="Monotonic seconds it ran.")
    stdout_bytes: int | None = Field(None, description="Bytes written, dropped ones included.")
    stderr_bytes: int | None = Field(None, description="Bytes written, dropped ones included.")
    output_truncated: bool | None = Field(None, description="More than --output-cap was written.")
    leftover_descendants: int | None = Field(
        None,
        exclude_if=lambda count: not count,
        description="Processes the harness left running outside its group (ended by premath).",
    )


class ToolCounts(OwnedModel):
    calls: int = Field(description="tool.call events (denied ones included).")
    denied: int = Field(description="Calls a deny rule refused.")


class AtifError(OwnedModel):
    location: str = Field(description="JSON location, 0-based; empty for the whole document.")
    message: str


class TrajectoryCheck(OwnedModel):
    path: str = Field(description="Relative to the run folder.")
    schema_version: str | None = Field(description="The ATIF version written.")
    steps: int = Field(description="Number of steps.")
    valid: bool = Field(description="True when the file passed validation.")
    errors: list[AtifError] = Field(description="What made it invalid.")


class RunSummary(OwnedModel):
    """`summary.json`: what happened, in one document (specs/bench-run.md "Artifacts")."""

    status: RunStatus = Field(description="succeeded only with no failure class.")
    exit_code: int = Field(description="premath's exit status: 0 or 1.")
    failure_class: FailureClass | None = Field(description="The first failure found.")
    failure_message: str | None = Field(description="What went wrong, on one line.")
    outcome: Outcome | None = Field(description="The harness's own outcome from result.json.")
    started_at: str = Field(description="UTC, milliseconds.")
    finished_at: str = Field(description="UTC, milliseconds.")
    duration_s: float = Field(description="Monotonic seconds of the whole run.")
    usage: Usage
    model: ModelInfo
    approval_mode: Literal["full-access"]
    harness: HarnessProcess
    tools: ToolCounts
    trajectory: TrajectoryCheck


class HarnessIdentity(OwnedModel):
    command: list[str] = Field(description="The harness argv (without the two paths).")
    image: str | None = Field(description="--harness-image.")
    image_id: str | None = Field(
        None, description="The image's content id, when the harness ran in a container."
    )
    image_digest: str | None = Field(
        None, description="The image's registry digest, when it has one (a pulled image)."
    )
    version: str | None = Field(description="--harness-version, else result.json's.")


class RunMetadata(OwnedModel):
    """`run-metadata.json`: what makes a run comparable with another."""

    timestamp_utc: str = Field(description="Start of the run, seconds, Z.")
    premath_commit_sha: str | None = Field(description="premath's commit, null when unknown.")
    premath_version: str
    harness: HarnessIdentity
    dataset_id: str | None
    task_id: str | None
    model_provider: str | None
    model_name: str | None
    approval_mode: Literal["full-access"]
    sandbox_backend: str
    atif_schema_version: str | None
    exit_status: int = Field(description="premath's exit status: 0 or 1.")
    session_id: str = Field(description="The trajectory's ATIF session_id (--session-id).")
    pass_env: list[str] = Field(description="Names listed with --pass-env.")
    pass_env_missing: list[str] = Field(
        description="Listed names that were not set, so the harness ran without them."
    )
    policy_digest: str = Field(
        description="sha256 of raw/policy.json as the run started; `bench tool` refuses every "
        "call once the file no longer has this digest."
    )
