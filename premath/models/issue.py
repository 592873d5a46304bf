"""The issue row as a pydantic model: the documented schema of `.premath/issues.jsonl` rows.

Hot commands never import this module (pydantic alone costs more than their start-up budget):
they check rows with `premath.models.issue_row.check_row`. This model states the same contract
with field descriptions (for `premath schema issue-row`), and a hypothesis test proves both
accept and reject the same rows and write the same bytes. Validate from bytes with
`IssueModel.model_validate_json(line, context={"now_text": ...})`; `now_text` fills a missing
`created_at` / `updated_at` as the reference does at load time.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from premath.models.issue_row import (
    DEPENDENCY_TYPES,
    I32_MAX,
    I32_MIN,
    ISSUE_TYPES,
    normalize_issue_type,
    sort_metadata,
    stored_timestamp,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.models.issue_row import DependencyType, IssueType
else:  # pydantic reads annotations at run time; issue_row spells them for the type checker only
    DependencyType = Literal[DEPENDENCY_TYPES]
    IssueType = Literal[ISSUE_TYPES]


def _is_empty(value: Any) -> bool:
    return value == "" or value == [] or value is None


class _ReferenceRow(BaseModel):
    """serde's strictness, unknown keys ignored (and dropped on rewrite), snake_case keys."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, allow_inf_nan=False)


class LeaseModel(_ReferenceRow):
    lease_id: str = Field(description="Lease id; `lease1_<issue>_<assignee>` by default")
    owner: str = Field(description="Who holds the lease")
    acquired_at: str = Field(description="When the lease was taken (RFC3339, stored with `Z`)")
    expires_at: str = Field(description="Active while later than now, stale after")
    renewed_at: str | None = Field(None, exclude_if=_is_empty, description="Last renewal")

    @field_validator("acquired_at", "expires_at", "renewed_at")
    @classmethod
    def _stored_time(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else stored_timestamp(value, info.field_name or "")


class DependencyModel(_ReferenceRow):
    issue_id: str = Field(description="The depending issue (the row that stores the edge)")
    depends_on_id: str = Field(description="The issue it depends on")
    # serde's alias: the reference reads `dep_type` too. Constructed from rows, never by keyword.
    type: DependencyType = Field(  # type: ignore[pydantic-alias]
        validation_alias=AliasChoices("type", "dep_type"),
        description="Edge type; blocks, parent-child, conditional-blocks, waits-for block",
    )
    created_by: str = Field("", exclude_if=_is_empty, description="Who added the edge")

    @model_validator(mode="before")
    @classmethod
    def _one_type_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and "type" in data and "dep_type" in data:
            raise ValueError("duplicate field `type`")
        return data


class IssueModel(_ReferenceRow):
    """One row of the issues store, fields in stored order."""

    id: str = Field(description="Issue id, unique in the store")
    title: str = Field(description="Short title")
    description: str = Field("", exclude_if=_is_empty, description="Body; `Acceptance:` lines")
    design: str = Field("", exclude_if=_is_empty, description="Design notes")
    acceptance_criteria: str = Field("", exclude_if=_is_empty, description="Not read by checks")
    notes: str = Field("", exclude_if=_is_empty, description="Working notes, kept compact")
    status: str = Field("open", description="Free-form; open, in_progress, blocked, closed mean")
    priority: int = Field(2, ge=I32_MIN, le=I32_MAX, description="Lower is more urgent")
    issue_type: IssueType = Field("task", description="epic or task (read trimmed, lowercased)")
    assignee: str = Field("", exclude_if=_is_empty, description="Who works on it")
    owner: str = Field("", exclude_if=_is_empty, description="Who owns it")
    lease: LeaseModel | None = Field(None, exclude_if=_is_empty, description="Work lease")
    created_at: str = Field(description="RFC3339, stored with `Z`; missing: load time")
    updated_at: str = Field(description="RFC3339, stored with `Z`; missing: load time")
    closed_at: str | None = Field(None, exclude_if=_is_empty, description="Set when closed")
    ephemeral: bool = Field(False, description="Exempt from the active-issue contract")
    mol_type: str = Field("", exclude_if=_is_empty, description="Unused by the harness")
    # Lists, not tuples: the before-validators hand pydantic Python objects, and strict mode
    # takes a tuple only from a tuple.
    labels: list[str] = Field([], exclude_if=_is_empty, description="Labels, order kept")
    dependencies: list[DependencyModel] = Field(
        [], exclude_if=_is_empty, description="Edges `id -> depends_on_id`"
    )
    metadata: Any = Field(
        None, exclude_if=lambda value: value is None, description="Any JSON, keys sorted"
    )

    @model_validator(mode="before")
    @classmethod
    def _load_time_defaults(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, dict) and not ("created_at" in data and "updated_at" in data):
            now_text = (info.context or {}).get("now_text")
            if now_text is not None:
                data = {"created_at": now_text, "updated_at": now_text, **data}
        return data

    @field_validator("issue_type", mode="before")
    @classmethod
    def _normalized_type(cls, value: Any) -> Any:
        return normalize_issue_type(value) if isinstance(value, str) else value

    @field_validator("created_at", "updated_at", "closed_at")
    @classmethod
    def _stored_time(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else stored_timestamp(value, info.field_name or "")

    @field_validator("metadata")
    @classmethod
    def _sorted_metadata(cls, value: Any) -> Any:
        return sort_metadata(value)
