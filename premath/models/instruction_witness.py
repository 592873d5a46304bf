"""`ci.instruction.v1`: the instruction witness (agent-surface.md §4.7).

The witness records the verdict on one instruction envelope. `instruction-witness` prints it;
the instruction pipeline writes it to `artifacts/ciwitness/<instructionId>.json`, the file the
MCP mutation gate reads (§1.6). Field order is the reference's struct order; the optional
fields are left out when absent, `normalizerId` and `policyDigest` are written as `null`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

WITNESS_KIND: Final = "ci.instruction.v1"
CI_SCHEMA: Final = 1
WITNESS_DIR: Final = "artifacts/ciwitness"
"""Where witnesses live, relative to the repository root."""

VerdictClass = Literal["accepted", "rejected"]
OPTIONAL_FIELDS: Final = frozenset(
    {
        "typedCoreProjectionDigest",
        "authorityPayloadDigest",
        "rejectStage",
        "rejectReason",
        "proposalIngest",
        "joinClosed",
        "joinFailureClasses",
        "joinWitnessRef",
    }
)


class _Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)


class InstructionClassification(_Wire):
    """`{state: typed, kind}` or `{state: unknown, reason}`."""

    state: Literal["typed", "unknown"]
    kind: str | None = None
    reason: str | None = None

    def to_document(self) -> dict[str, Any]:
        if self.state == "typed":
            return {"state": "typed", "kind": self.kind}
        return {"state": "unknown", "reason": self.reason}


class TypingPolicy(_Wire):
    allow_unknown: bool = Field(default=False, alias="allowUnknown")


class CheckResult(_Wire):
    """One executed check, as the runtime file reports it."""

    check_id: str = Field(alias="checkId")
    status: str
    exit_code: int = Field(alias="exitCode")
    duration_ms: int = Field(ge=0, alias="durationMs")


class InstructionWitness(_Wire):
    """The witness document; `to_document()` gives the bytes' field order."""

    ci_schema: int = Field(default=CI_SCHEMA, alias="ciSchema")
    witness_kind: str = Field(default=WITNESS_KIND, alias="witnessKind")
    instruction_id: str = Field(alias="instructionId")
    instruction_ref: str = Field(alias="instructionRef")
    instruction_digest: str = Field(alias="instructionDigest")
    instruction_classification: InstructionClassification = Field(alias="instructionClassification")
    typing_policy: TypingPolicy = Field(alias="typingPolicy")
    intent: str
    scope: Any = None
    normalizer_id: str | None = Field(default=None, alias="normalizerId")
    policy_digest: str | None = Field(default=None, alias="policyDigest")
    typed_core_projection_digest: str | None = Field(
        default=None, alias="typedCoreProjectionDigest"
    )
    authority_payload_digest: str | None = Field(default=None, alias="authorityPayloadDigest")
    capability_claims: list[str] = Field(default_factory=list, alias="capabilityClaims")
    required_checks: list[str] = Field(default_factory=list, alias="requiredChecks")
    executed_checks: list[str] = Field(default_factory=list, alias="executedChecks")
    results: list[CheckResult] = Field(default_factory=list)
    verdict_class: VerdictClass = Field(alias="verdictClass")
    operational_failure_classes: list[str] = Field(
        default_factory=list, alias="operationalFailureClasses"
    )
    semantic_failure_classes: list[str] = Field(
        default_factory=list, alias="semanticFailureClasses"
    )
    failure_classes: list[str] = Field(default_factory=list, alias="failureClasses")
    squeak_site_profile: str = Field(alias="squeakSiteProfile")
    run_started_at: str = Field(alias="runStartedAt")
    run_finished_at: str = Field(alias="runFinishedAt")
    run_duration_ms: int = Field(ge=0, alias="runDurationMs")
    reject_stage: str | None = Field(default=None, alias="rejectStage")
    reject_reason: str | None = Field(default=None, alias="rejectReason")
    proposal_ingest: dict[str, Any] | None = Field(default=None, alias="proposalIngest")
    join_closed: bool | None = Field(default=None, alias="joinClosed")
    """Join-gate evidence (ours, D13-6): set when the envelope names a `joinCheckInput`."""
    join_failure_classes: list[str] | None = Field(default=None, alias="joinFailureClasses")
    join_witness_ref: str | None = Field(default=None, alias="joinWitnessRef")

    @property
    def accepted(self) -> bool:
        return self.verdict_class == "accepted"

    def to_document(self) -> dict[str, Any]:
        """The witness as printed and written: struct order, absent optional fields left out."""
        document = self.model_dump(by_alias=True, mode="json")
        document["instructionClassification"] = self.instruction_classification.to_document()
        return {
            key: value
            for key, value in document.items()
            if not (key in OPTIONAL_FIELDS and value is None)
        }


def witness_relative_path(instruction_id: str) -> str:
    """The witness file of an instruction, relative to the repository root."""
    return f"{WITNESS_DIR}/{instruction_id}.json"


def witness_path(repo_root: Path, instruction_id: str) -> Path:
    return repo_root / WITNESS_DIR / f"{instruction_id}.json"


def scope_issue_ids(scope: Any) -> frozenset[str] | None:
    """The issues an instruction's `scope` names, or None when it names none (a repository,
    a path: no issue restriction). `{"kind": "issue", "target": "<id>"}` names one issue,
    `{"kind": "issues", "targets": [...]}` several (`issueId`/`issueIds` are accepted for
    `target`/`targets`, as `harness boot` reads them); malformed ids name nothing, so such a
    scope authorises no issue (specs/mcp-http.md "Witness rules", D22-5)."""
    if not isinstance(scope, dict):
        return None
    kind = scope.get("kind")
    if kind == "issue":
        target = scope.get("target", scope.get("issueId"))
        return frozenset([target]) if isinstance(target, str) and target else frozenset()
    if kind == "issues":
        targets = scope.get("targets", scope.get("issueIds"))
        items = targets if isinstance(targets, list) else []
        return frozenset(item for item in items if isinstance(item, str) and item)
    return None
