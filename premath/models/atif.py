"""ATIF (Agent Trajectory Interchange Format) trajectories, with Harbor 0.26.0's rules.

Strictness follows the format's owner (Harbor's `harbor.models.trajectories`): unknown keys are
refused everywhere (`extra="forbid"`), types use pydantic's lax mode (`"1"` and `true` are the
integer 1, `"yes"` is true), `schema_version` is a closed `Literal` defaulting to the newest.
Document-level rules run after every field passed, in Harbor's order (step positions, embedded
subagents, tool-call linkage), and the first failing one stops the rest, as in Harbor.
Errors raised by those rules carry the JSON location they concern in `ctx["location"]`, relative
to the trajectory that raised them (specs/atif.md "Validation").
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from premath.timefmt import iso8601_problem

AtifSchemaVersion = Literal[
    "ATIF-v1.0",
    "ATIF-v1.1",
    "ATIF-v1.2",
    "ATIF-v1.3",
    "ATIF-v1.4",
    "ATIF-v1.5",
    "ATIF-v1.6",
    "ATIF-v1.7",
    "ATIF-v1.8",
]
ATIF_SCHEMA_VERSIONS: Final[tuple[str, ...]] = get_args(AtifSchemaVersion)

# The version premath's exporter writes by default: the newest one Harbor 0.26 accepts, so a
# trajectory carries that version's fields where premath has the data (`trajectory_id`, tool
# status in observation results' `extra`, both v1.7). `--atif-schema-version` selects an older
# one and is recorded in run-metadata.json; the exporter refuses to claim a version lower than
# the document's features need (specs/atif.md "Versions").
ATIF_SCHEMA_VERSION: Final[AtifSchemaVersion] = "ATIF-v1.8"

StepSource = Literal["system", "user", "agent"]
ImageMediaType = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
AudioMediaType = Literal[
    "audio/wav",
    "audio/mpeg",
    "audio/mp4",
    "audio/aac",
    "audio/ogg",
    "audio/flac",
    "audio/webm",
    "audio/aiff",
]
AUDIO_MEDIA_TYPE_ALIASES: Final = {
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/mp3": "audio/mpeg",
    "audio/x-mp3": "audio/mpeg",
    "audio/mpeg3": "audio/mpeg",
    "audio/x-mpeg": "audio/mpeg",
    "audio/m4a": "audio/mp4",
    "audio/x-m4a": "audio/mp4",
    "audio/x-aac": "audio/aac",
    "audio/x-flac": "audio/flac",
    "audio/x-aiff": "audio/aiff",
    "audio/aif": "audio/aiff",
}
AGENT_ONLY_FIELDS: Final = (
    "model_name",
    "reasoning_effort",
    "reasoning_content",
    "tool_calls",
    "metrics",
)
LLM_ONLY_FIELDS: Final = ("metrics", "reasoning_content")


def _is_none(value: Any) -> bool:
    return value is None


def optional(description: str, **constraints: Any) -> Any:
    """An optional ATIF field: absent from the dump when None, as Harbor writes it."""
    return Field(None, exclude_if=_is_none, description=description, **constraints)


def rule_error(location: str, message: str) -> PydanticCustomError:
    """A document-rule failure naming its JSON location (relative to the raising trajectory)."""
    return PydanticCustomError("atif_rule", message, {"atif_location": location})


class AtifModel(BaseModel):
    """An ATIF object: unknown keys refused, pydantic's lax types, as Harbor's models."""

    model_config = ConfigDict(extra="forbid")


class ImageSource(AtifModel):
    media_type: ImageMediaType = Field(description="MIME type of the image.")
    path: str = Field(description="Relative (to trajectory.json) or absolute path, or a URL.")


class AudioSource(AtifModel):
    media_type: AudioMediaType = Field(
        description="MIME type of the audio (aliases such as audio/mp3 are normalised)."
    )
    path: str = Field(description="Relative (to trajectory.json) or absolute path, or a URL.")
    duration_sec: float | None = optional("Length of the clip in seconds (v1.8).")

    @field_validator("media_type", mode="before")
    @classmethod
    def normalise_alias(cls, value: Any) -> Any:
        if isinstance(value, str):
            spelled = value.strip().lower()
            return AUDIO_MEDIA_TYPE_ALIASES.get(spelled, spelled)
        return value


class ContentPart(AtifModel):
    type: Literal["text", "image", "audio"] = Field(description="Kind of content (v1.6+).")
    text: str | None = optional("The text of a text part.")
    source: ImageSource | AudioSource | None = optional("The media of an image or audio part.")

    @model_validator(mode="after")
    def validate_content_type(self) -> ContentPart:
        if self.type == "text":
            if self.text is None:
                raise ValueError("'text' field is required when type='text'")
            if self.source is not None:
                raise ValueError("'source' field is not allowed when type='text'")
            return self
        if self.source is None:
            raise ValueError(f"'source' field is required when type='{self.type}'")
        if self.text is not None:
            raise ValueError(f"'text' field is not allowed when type='{self.type}'")
        wanted = ImageSource if self.type == "image" else AudioSource
        if not isinstance(self.source, wanted):
            raise ValueError(
                f"type='{self.type}' requires a {wanted.__name__}, but the source's media_type "
                f"is '{self.source.media_type}'"
            )
        return self


Content = str | list[ContentPart]


class ToolCall(AtifModel):
    tool_call_id: str = Field(description="Id that observation results link to (source_call_id).")
    function_name: str = Field(description="Name of the tool the agent invoked.")
    arguments: dict[str, Any] = Field(description="Arguments as an object (may be empty).")
    extra: dict[str, Any] | None = optional("Custom tool-call data (v1.7).")


class SubagentTrajectoryRef(AtifModel):
    session_id: str | None = optional("Informational only since v1.7.")
    trajectory_id: str | None = optional("Id of an embedded subagent trajectory.")
    trajectory_path: str | None = optional("Path of a subagent trajectory file.")
    extra: dict[str, Any] | None = optional("Custom reference data.")

    @model_validator(mode="after")
    def validate_resolvable(self) -> SubagentTrajectoryRef:
        if self.trajectory_id is None and self.trajectory_path is None:
            raise ValueError(
                "SubagentTrajectoryRef must be resolvable: set either `trajectory_id` (for "
                "embedded references) or `trajectory_path` (for external-file references); "
                "`session_id` alone is not a resolution key"
            )
        return self


class ObservationResult(AtifModel):
    source_call_id: str | None = optional("tool_call_id of the call in the same step, or null.")
    content: Content | None = optional("What the environment returned.")
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = optional(
        "Subagent trajectories that produced this result."
    )
    extra: dict[str, Any] | None = optional("Custom result data (v1.7).")


class Observation(AtifModel):
    results: list[ObservationResult] = Field(description="Results of the step's actions.")


class Metrics(AtifModel):
    prompt_tokens: int | None = optional("All input tokens, cached ones included (v1.2).")
    completion_tokens: int | None = optional("Output tokens.")
    cached_tokens: int | None = optional("Cached input tokens, a subset of prompt_tokens.")
    cost_usd: float | None = optional("Cost of the step in US dollars.")
    prompt_token_ids: list[int] | None = optional("Token ids of the prompt (v1.4).")
    completion_token_ids: list[int] | None = optional("Token ids of the completion (v1.3).")
    logprobs: list[float] | None = optional("Log probabilities of the completion tokens.")
    extra: dict[str, Any] | None = optional("Provider-specific metrics.")


class FinalMetrics(AtifModel):
    total_prompt_tokens: int | None = optional("Sum of the steps' prompt_tokens.")
    total_completion_tokens: int | None = optional("Sum of the steps' completion_tokens.")
    total_cached_tokens: int | None = optional("Sum of the steps' cached_tokens.")
    total_cost_usd: float | None = optional("Sum of the steps' cost_usd.")
    total_steps: int | None = optional("Number of steps.", ge=0)
    extra: dict[str, Any] | None = optional("Custom aggregate metrics.")


class Step(AtifModel):
    step_id: int = Field(ge=1, description="Position of the step, from 1.")
    timestamp: str | None = optional("ISO 8601 time of the step.")
    source: StepSource = Field(description="Who produced the step.")
    model_name: str | None = optional("Model of this turn (agent steps only).")
    reasoning_effort: str | float | None = optional("Effort setting (agent steps only).")
    message: Content = Field(description="The dialogue message (may be empty).")
    reasoning_content: str | None = optional("The agent's explicit reasoning (agent steps only).")
    tool_calls: list[ToolCall] | None = optional("The agent's actions (agent steps only).")
    observation: Observation | None = optional("Environment feedback for this step.")
    metrics: Metrics | None = optional("LLM usage of this step (agent steps only).")
    is_copied_context: bool | None = optional("True when copied from an earlier trajectory.")
    llm_call_count: int | None = optional("LLM inferences this step represents (v1.7).", ge=0)
    extra: dict[str, Any] | None = optional("Custom step data.")

    @field_validator("timestamp")
    @classmethod
    def validate_timestamp(cls, value: str | None) -> str | None:
        problem = None if value is None else iso8601_problem(value)
        if problem is not None:
            raise ValueError(f"Invalid ISO 8601 timestamp: {problem}")
        return value

    @model_validator(mode="after")
    def validate_agent_only_fields(self) -> Step:
        if self.source != "agent":
            for name in AGENT_ONLY_FIELDS:
                if getattr(self, name) is not None:
                    raise rule_error(
                        name,
                        f"Field '{name}' is only applicable when source is 'agent', "
                        f"but source is '{self.source}'",
                    )
        return self

    @model_validator(mode="after")
    def validate_llm_call_count_zero(self) -> Step:
        if self.llm_call_count == 0 and self.source == "agent":
            for name in LLM_ONLY_FIELDS:
                if getattr(self, name) is not None:
                    raise rule_error(
                        name,
                        f"Field '{name}' must be absent when llm_call_count is 0 "
                        "(deterministic dispatch on a 'source: agent' step)",
                    )
        return self


class Agent(AtifModel):
    name: str = Field(description="Name of the agent system.")
    version: str = Field(description="Version of the agent system.")
    model_name: str | None = optional("Default model of the run.")
    tool_definitions: list[dict[str, Any]] | None = optional("Tools offered (v1.5).")
    extra: dict[str, Any] | None = optional("Custom agent data.")


class Trajectory(AtifModel):
    schema_version: AtifSchemaVersion = Field(
        "ATIF-v1.8", description="ATIF version of the document."
    )
    session_id: str | None = optional("Run-scoped id (required up to v1.6).")
    trajectory_id: str | None = optional("Id of this trajectory (v1.7; required when embedded).")
    agent: Agent = Field(description="The agent system that produced the trajectory.")
    steps: list[Step] = Field(min_length=1, description="The steps, in order.")
    notes: str | None = optional("Free-form notes.")
    final_metrics: FinalMetrics | None = optional("Aggregates over the steps.")
    continued_trajectory_ref: str | None = optional("File that continues this trajectory.")
    extra: dict[str, Any] | None = optional("Custom trajectory data (v1.1).")
    subagent_trajectories: list[Trajectory] | None = optional("Embedded subagents (v1.7).")

    @model_validator(mode="after")
    def validate_step_positions(self) -> Trajectory:
        for index, step in enumerate(self.steps):
            if step.step_id != index + 1:
                raise rule_error(
                    f"steps[{index}].step_id",
                    f"steps[{index}].step_id: expected {index + 1} (sequential from 1), "
                    f"got {step.step_id}",
                )
        return self

    @model_validator(mode="after")
    def validate_embedded_subagents(self) -> Trajectory:
        seen: set[str] = set()
        for index, sub in enumerate(self.subagent_trajectories or ()):
            location = f"subagent_trajectories[{index}].trajectory_id"
            if sub.trajectory_id is None:
                raise rule_error(
                    location,
                    f"subagent_trajectories[{index}].trajectory_id is required for embedded "
                    f"subagents (agent.name='{sub.agent.name}', session_id='{sub.session_id}')",
                )
            if sub.trajectory_id in seen:
                raise rule_error(
                    location,
                    f"subagent_trajectories[{index}].trajectory_id '{sub.trajectory_id}' is not "
                    "unique within subagent_trajectories",
                )
            seen.add(sub.trajectory_id)
        return self

    @model_validator(mode="after")
    def validate_tool_call_links(self) -> Trajectory:
        for index, step in enumerate(self.steps):
            if step.observation is None:
                continue
            call_ids = {call.tool_call_id for call in step.tool_calls or ()}
            for result_index, result in enumerate(step.observation.results):
                if result.source_call_id is not None and result.source_call_id not in call_ids:
                    raise rule_error(
                        f"steps[{index}].observation.results[{result_index}].source_call_id",
                        f"Observation result references source_call_id "
                        f"'{result.source_call_id}' which is not found in step "
                        f"{step.step_id}'s tool_calls",
                    )
        return self


Trajectory.model_rebuild()
