"""`harness-join-check` input (`JoinCheckInput`) and output vocabulary (specs/join-check.md).

The input is parsed with serde's rules (specs/join-check.md "Input parsing"): unknown keys ignored,
`Option` fields take absent or `null`, `#[serde(default)]` lists and bools take absent but refuse
`null`, a required field must be present with the right type. A parsed struct is a plain dict keyed
by wire name with every field present (defaults filled), so the normaliser never guesses. Plain
checks rather than pydantic: the loop runs this on every step (start-up budget).
"""

from __future__ import annotations

from collections.abc import Callable

from premath.lean import NamedTuple
from premath.models.serde import (
    SchemaViolation,
    boolean,
    describe,
    sequence,
    string,
    string_list,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    Disposition = Literal["consumed", "observed", "discarded"]

    FieldKind = Literal[
        "string", "optional_string", "bool", "optional_bool", "strings", "value", "struct", "rows"
    ]

ACTION = "harness-join-check"
NORMALIZED_KIND = "premath.harness.typestate_normalized.v1"
WITNESS_KIND = "premath.harness.join_check.v1"
SCHEMA = 1
GOVERNANCE_CLAIM_ID = "profile.doctrine_inf_governance.v0"

DISPOSITIONS: tuple[Disposition, ...] = ("consumed", "observed", "discarded")
HANDLED_STOP_REASONS = frozenset({"tool_use", "pause_turn", "max_tokens", "end_turn"})

# Every class the gate can emit (specs/join-check.md "Checks"): the conformance coverage guard
# compares the vectors' expected classes with this set, as the reference's runner does with its Rust
# source.
EMITTED_FAILURE_CLASSES = frozenset(
    {
        "context.injection_point_missing",
        "context.queue_policy_violation",
        "coordination.decomposition_policy_violation",
        "governance.claim_id_invalid",
        "governance.policy_package_mismatch",
        "governance.policy_package_unpinned",
        "handoff.required_artifact_missing",
        "handoff.return_path_missing",
        "handoff.target_not_allowed",
        "protocol.parallel_transport_order_invalid",
        "protocol.stop_reason_unhandled",
        "tool.join_incomplete",
        "tool.response_truncation_policy_violation",
        "tool.result_missing",
        "tool.result_orphan",
        "tool.schema_invalid",
        "tool.use_missing",
        "tool.use_without_result",
    }
)


class Field(NamedTuple):
    """One struct field as serde sees it: kind, whether it must be present, nested struct."""

    name: str
    kind: FieldKind
    required: bool = False
    struct: Struct | None = None


class Struct(NamedTuple):
    name: str
    fields: tuple[Field, ...]


def _strings(*names: str, kind: FieldKind = "string") -> list[Field]:
    return [Field(name, kind, required=kind == "string") for name in names]


CALL_SPEC_FIELDS = (
    "callId",
    "modelRef",
    "actionMode",
    "executionPattern",
    "normalizerId",
    "mutationPolicyDigest",
    "governancePolicyDigest",
    "toolRenderProtocolDigest",
    "reminderQueuePolicyDigest",
    "stateViewPolicyDigest",
    "decompositionPolicyDigest",
)
CALL_SPEC = Struct("ToolCallSpecInput", tuple(_strings(*CALL_SPEC_FIELDS)))
TOOL_REQUEST = Struct(
    "ToolRequestInput",
    (
        *_strings("toolCallId", "toolName"),
        *_strings("schemaDigest", "callerId", "searchRefDigest", kind="optional_string"),
    ),
)
TOOL_RESULT = Struct(
    "ToolResultInput",
    (
        Field("toolCallId", "string", required=True),
        Field("status", "optional_string"),
        Field("resultDigest", "optional_string"),
        Field("payload", "value"),
        Field("errorCode", "optional_string"),
        Field("retryable", "optional_bool"),
        Field("errorMessage", "optional_string"),
        Field("rawError", "value"),
    ),
)
TOOL_USE = Struct(
    "ToolUseInput",
    (
        *_strings("toolCallId", "disposition"),
        Field("resultDigest", "optional_string"),
    ),
)
PROTOCOL_STATE = Struct(
    "ProtocolStateInput",
    (Field("stopReason", "string", required=True), Field("continuationAllowed", "bool")),
)
HANDOFF = Struct(
    "HandoffInput",
    (
        Field("target", "string", required=True),
        Field("requiredArtifactRefs", "strings"),
        Field("returnPathRef", "optional_string"),
    ),
)
TOOL_RENDER_FIELDS = (
    "toolCallId",
    "operatorPayloadDigest",
    "reminderRenderDigest",
    "injectionPoint",
    "policyDigest",
)
TOOL_RENDER = Struct("ToolRenderInput", tuple(_strings(*TOOL_RENDER_FIELDS)))
REMINDER_QUEUE_FIELDS = ("queueId", "reducedDigest", "policyDigest")
REMINDER_QUEUE = Struct("ReminderQueueInput", tuple(_strings(*REMINDER_QUEUE_FIELDS)))
STATE_VIEW = Struct(
    "StateViewInput",
    (*_strings("viewId", "viewDigest", "policyDigest"), Field("sourceRefs", "strings")),
)
EVIDENCE = Struct(
    "TypestateEvidenceInput",
    (
        Field("callSpec", "struct", required=True, struct=CALL_SPEC),
        Field("toolRequests", "rows", struct=TOOL_REQUEST),
        Field("toolResults", "rows", struct=TOOL_RESULT),
        Field("toolUse", "rows", struct=TOOL_USE),
        Field("protocolState", "struct", required=True, struct=PROTOCOL_STATE),
        Field("handoff", "struct", struct=HANDOFF),
        Field("toolRender", "rows", struct=TOOL_RENDER),
        Field("reminderQueue", "rows", struct=REMINDER_QUEUE),
        Field("stateViews", "rows", struct=STATE_VIEW),
        Field("sessionRefs", "strings"),
        Field("trajectoryRefs", "strings"),
    ),
)
POLICY_PROVENANCE = Struct(
    "PolicyProvenanceInput",
    (
        Field("pinned", "bool", required=True),
        *_strings("packageRef", "expectedDigest", "boundDigest", kind="optional_string"),
    ),
)
GOVERNANCE_PROFILE = Struct(
    "GovernanceProfileInput",
    (
        Field("claimId", "optional_string"),
        Field("claimed", "bool", required=True),
        Field("policyProvenance", "struct", struct=POLICY_PROVENANCE),
    ),
)
PROTOCOL_CONSTRAINTS = Struct(
    "ProtocolConstraintsInput", (Field("parallelTransportOrderValid", "optional_bool"),)
)
HANDOFF_CONSTRAINTS = Struct(
    "HandoffConstraintsInput",
    (
        Field("requiredArtifactRefs", "strings"),
        Field("allowedTargets", "strings"),
        Field("requireReturnPath", "bool"),
    ),
)
TRUNCATION_CONSTRAINTS = Struct(
    "TruncationConstraintsInput", (Field("required", "bool"), Field("valid", "bool"))
)
DECOMPOSITION_CONSTRAINTS = Struct(
    "DecompositionConstraintsInput",
    (
        Field("admissible", "optional_bool"),
        Field("expectedExecutionPattern", "optional_string"),
        Field("expectedPolicyDigest", "optional_string"),
    ),
)
JOIN_CHECK_INPUT = Struct(
    "JoinCheckInput",
    (
        Field("evidence", "struct", required=True, struct=EVIDENCE),
        Field("governanceProfile", "struct", struct=GOVERNANCE_PROFILE),
        Field("protocolConstraints", "struct", struct=PROTOCOL_CONSTRAINTS),
        Field("handoffConstraints", "struct", struct=HANDOFF_CONSTRAINTS),
        Field("truncationConstraints", "struct", struct=TRUNCATION_CONSTRAINTS),
        Field("decompositionConstraints", "struct", struct=DECOMPOSITION_CONSTRAINTS),
    ),
)


class JsonObject(dict[str, "Any"]):
    """A decoded object that remembers which keys it saw twice (serde refuses struct repeats)."""

    duplicates: frozenset[str] = frozenset()


def object_with_duplicates(pairs: list[tuple[str, Any]]) -> JsonObject:
    """The object of `pairs` as written (last value wins, as serde's `Value` does inside
    `payload`/`rawError`), its repeated keys kept visible for struct fields to refuse."""
    document = JsonObject(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        repeated: set[str] = set()
        for key, _ in pairs:
            (repeated if key in seen else seen).add(key)
        document.duplicates = frozenset(repeated)
    return document


def serde_integer(text: str) -> int | float:
    """serde_json keeps integers in i64/u64 and reads any other as an f64."""
    value = int(text)
    return value if -(2**63) <= value < 2**64 else float(text)


def _read_field(field: Field, value: Any) -> Any:
    if field.kind == "value":
        return value
    if value is None and field.kind in ("optional_string", "optional_bool"):
        return None
    if field.kind in ("string", "optional_string"):
        return string(value)
    if field.kind in ("bool", "optional_bool"):
        return boolean(value)
    if field.kind == "strings":
        return string_list(value)
    assert field.struct is not None
    if field.kind == "rows":
        return [parse_struct(field.struct, item) for item in sequence(value)]
    if value is None and not field.required:
        return None
    return parse_struct(field.struct, value)


_DEFAULTS: dict[FieldKind, Callable[[], Any]] = {
    "optional_string": lambda: None,
    "optional_bool": lambda: None,
    "value": lambda: None,
    "struct": lambda: None,
    "bool": lambda: False,
    "strings": list,
    "rows": list,
}


def parse_struct(struct: Struct, value: Any) -> dict[str, Any]:
    """One struct with serde's rules: fields read in document order, then missing ones."""
    if not isinstance(value, dict):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected struct {struct.name}")
    duplicates: frozenset[str] = getattr(value, "duplicates", frozenset())
    known = {field.name: field for field in struct.fields}
    parsed: dict[str, Any] = {}
    for name, item in value.items():
        field = known.get(name)
        if field is None:
            continue
        if name in duplicates:
            raise SchemaViolation(f"duplicate field `{name}`")
        parsed[name] = _read_field(field, item)
    for field in struct.fields:
        if field.name not in parsed:
            if field.required:
                raise SchemaViolation(f"missing field `{field.name}`")
            parsed[field.name] = _DEFAULTS[field.kind]()
    return parsed


def parse_join_check_input(value: Any) -> dict[str, Any]:
    """A decoded document as the reference's `JoinCheckInput`; raises SchemaViolation."""
    return parse_struct(JOIN_CHECK_INPUT, value)
