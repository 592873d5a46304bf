"""The JoinClosed gate (`harness-join-check`): normalised evidence, checks, witness document.

Checks run in the reference's order and all of them always run (specs/join-check.md "Checks");
classes are reported sorted and unique. A rejection is data (`result: "rejected"`); only input that
cannot be evaluated raises InvalidUsage, whose message starts `harness_join_check_invalid: `.
"""

from __future__ import annotations

from premath.errors import InvalidUsage
from premath.harness.join.typestate import (
    EvidenceInvalid,
    NormalizedEvidence,
    ascii_lower,
    normalize_evidence,
)
from premath.models.join_check import (
    ACTION,
    GOVERNANCE_CLAIM_ID,
    HANDLED_STOP_REASONS,
    SCHEMA,
    WITNESS_KIND,
    object_with_duplicates,
    parse_join_check_input,
    serde_integer,
)
from premath.models.serde import SchemaViolation
from premath.store import json_codec
from premath.store.documents import os_error_text
from premath.store.files import read_bounded
from premath.store.json_codec import decode_with_pairs, loads
from premath.text import clean_optional, normalize_refs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Row = dict[str, Any]

INVALID_PREFIX = "harness_join_check_invalid: "


def _join_classes(state: Row) -> set[str]:
    classes = {
        failure
        for key, failure in (
            ("missingResultCallIds", "tool.result_missing"),
            ("orphanResultCallIds", "tool.result_orphan"),
            ("missingUseCallIds", "tool.use_missing"),
            ("unknownUseCallIds", "tool.use_without_result"),
        )
        if key in state
    }
    if not state["joinClosed"]:
        classes.add("tool.join_incomplete")
    return classes


def _decomposition_classes(constraints: Row, call_spec: Row) -> set[str]:
    violation = {"coordination.decomposition_policy_violation"}
    if constraints["admissible"] is False:
        return violation
    pattern = clean_optional(constraints["expectedExecutionPattern"])
    if pattern is not None and ascii_lower(pattern) != call_spec["executionPattern"]:
        return violation
    policy = clean_optional(constraints["expectedPolicyDigest"])
    if policy is not None and policy != call_spec["decompositionPolicyDigest"]:
        return violation
    return set()


def _context_classes(normalized: NormalizedEvidence) -> set[str]:
    """Checked when continuation is allowed or any use is `consumed` (join-check.md "Checks" 5)."""
    continuing = normalized.protocol_state["continuationAllowed"]
    consumed = any(row["disposition"] == "consumed" for row in normalized.uses.values())
    if not (continuing or consumed):
        return set()
    context = normalized.context_state
    classes = set()
    if "missingRenderCallIds" in context or not context["stateViewPresent"]:
        classes.add("context.injection_point_missing")
    policies_valid = (
        context["renderPolicyValid"]
        and context["queuePolicyValid"]
        and context["stateViewPolicyValid"]
    )
    if not context["queueReductionPresent"] or not policies_valid:
        classes.add("context.queue_policy_violation")
    return classes


def _handoff_classes(constraints: Row, handoff: Row | None) -> set[str]:
    required = set(normalize_refs(constraints["requiredArtifactRefs"]))
    allowed = set(normalize_refs(constraints["allowedTargets"]))
    require_return = constraints["requireReturnPath"]
    classes = set()
    if handoff is None:
        if required:
            classes.add("handoff.required_artifact_missing")
        if require_return:
            classes.add("handoff.return_path_missing")
        if allowed:
            classes.add("handoff.target_not_allowed")
        return classes
    if not required <= set(handoff.get("requiredArtifactRefs", ())):
        classes.add("handoff.required_artifact_missing")
    if allowed and handoff["target"] not in allowed:
        classes.add("handoff.target_not_allowed")
    if require_return and "returnPathRef" not in handoff:
        classes.add("handoff.return_path_missing")
    return classes


def _raw_text(raw_error: Any, *keys: str) -> bool:
    """Whether any of `keys` in a `rawError` object holds non-blank text (no key precedence)."""
    if not isinstance(raw_error, dict):
        return False
    return any(
        isinstance(raw_error.get(key), str) and clean_optional(raw_error[key]) is not None
        for key in keys
    )


def _untyped_error(raw: Row) -> bool:
    """An error row without a typed envelope, judged on the raw row (join-check.md "Checks" 8).

    This looser reading than normalisation's is the reference's: any non-null
    `rawError` marks a status-less row as an error, and a blank `errorCode` falls back to `code`.
    """
    status = clean_optional(raw["status"])
    status = None if status is None else ascii_lower(status)
    if status == "ok":
        return False
    if status != "error":
        signalled = (
            clean_optional(raw["errorCode"]) is not None
            or raw["retryable"] is not None
            or clean_optional(raw["errorMessage"]) is not None
            or raw["rawError"] is not None
        )
        if not signalled:
            return False
    raw_error = raw["rawError"]
    has_code = clean_optional(raw["errorCode"]) is not None or _raw_text(
        raw_error, "errorCode", "code"
    )
    has_retryable = raw["retryable"] is not None or (
        isinstance(raw_error, dict) and isinstance(raw_error.get("retryable"), bool)
    )
    has_message = clean_optional(raw["errorMessage"]) is not None or _raw_text(
        raw_error, "errorMessage", "message"
    )
    return not (has_code and has_retryable and has_message)


def _governance_classes(profile: Row) -> set[str]:
    """At most one class: each failure ends the check (specs/join-check.md "Checks" 9)."""
    claim_id = clean_optional(profile["claimId"])
    if claim_id is not None and claim_id != GOVERNANCE_CLAIM_ID:
        return {"governance.claim_id_invalid"}
    if not profile["claimed"]:
        return set()
    provenance = profile["policyProvenance"]
    if provenance is None:
        return {"governance.policy_package_unpinned"}
    package_ref, expected, bound = (
        clean_optional(provenance[name]) for name in ("packageRef", "expectedDigest", "boundDigest")
    )
    if not provenance["pinned"] or package_ref is None or expected is None or bound is None:
        return {"governance.policy_package_unpinned"}
    if expected != bound:
        return {"governance.policy_package_mismatch"}
    return set()


def failure_classes(request: Row, normalized: NormalizedEvidence) -> list[str]:
    """Every gate check over the parsed input and its normalised evidence, sorted and unique."""
    classes = _join_classes(normalized.join_state)
    if normalized.protocol_state["stopReason"] not in HANDLED_STOP_REASONS:
        classes.add("protocol.stop_reason_unhandled")
    protocol = request["protocolConstraints"]
    if protocol is not None and protocol["parallelTransportOrderValid"] is False:
        classes.add("protocol.parallel_transport_order_invalid")
    if request["decompositionConstraints"] is not None:
        classes |= _decomposition_classes(request["decompositionConstraints"], normalized.call_spec)
    classes |= _context_classes(normalized)
    if request["handoffConstraints"] is not None:
        classes |= _handoff_classes(request["handoffConstraints"], normalized.handoff)
    truncation = request["truncationConstraints"]
    if truncation is not None and truncation["required"] and not truncation["valid"]:
        classes.add("tool.response_truncation_policy_violation")
    if any(_untyped_error(row) for row in request["evidence"]["toolResults"]):
        classes.add("tool.schema_invalid")
    if request["governanceProfile"] is not None:
        classes |= _governance_classes(request["governanceProfile"])
    return sorted(classes)


def _present_lists(source: Row, names: tuple[str, ...]) -> Row:
    return {name: source[name] for name in names if name in source}


_JOIN_GAPS = (
    "missingResultCallIds",
    "orphanResultCallIds",
    "missingUseCallIds",
    "unknownUseCallIds",
)
_CONTEXT_FLAGS = (
    "queuePolicyValid",
    "queueReductionPresent",
    "renderPolicyValid",
    "stateViewPolicyValid",
    "stateViewPresent",
)


def witness_document(normalized: NormalizedEvidence) -> Row:
    """The `premath.harness.join_check.v1` witness (specs/join-check.md "Output")."""
    spec = normalized.call_spec
    context = normalized.context_state
    join = normalized.join_state
    gaps = {
        **_present_lists(join, _JOIN_GAPS),
        **_present_lists(context, ("missingRenderCallIds",)),
    }
    shared = {
        "continuationContextReady": context["continuationContextReady"],
        "joinClosed": join["joinClosed"],
        **{flag: context[flag] for flag in _CONTEXT_FLAGS},
        **gaps,
    }
    join_input = {
        **shared,
        **{key: value for key, value in normalized.digests.items() if key != "callSpecDigest"},
        "decompositionPolicyDigest": spec["decompositionPolicyDigest"],
        "reminderQueuePolicyDigest": spec["reminderQueuePolicyDigest"],
        "stateViewPolicyDigest": spec["stateViewPolicyDigest"],
        "toolRenderProtocolDigest": spec["toolRenderProtocolDigest"],
    }
    mutation_input = {
        **shared,
        "continuationAllowed": normalized.protocol_state["continuationAllowed"],
        "governancePolicyDigest": spec["governancePolicyDigest"],
        "mutationPolicyDigest": spec["mutationPolicyDigest"],
        "normalizerId": spec["normalizerId"],
    }
    if normalized.session_refs:
        mutation_input["sessionRefs"] = normalized.session_refs
    if normalized.trajectory_refs:
        mutation_input["trajectoryRefs"] = normalized.trajectory_refs
    return {
        "digests": normalized.digests,
        "joinInput": join_input,
        "mutationInput": mutation_input,
        "schema": SCHEMA,
        "witnessKind": WITNESS_KIND,
    }


def _invalid(detail: str) -> InvalidUsage:
    return InvalidUsage(f"{INVALID_PREFIX}{detail}")


def evaluate_join_check(document: Any) -> Row:
    """The reference's output document for a decoded input; raises InvalidUsage (exit 2)."""
    try:
        request = parse_join_check_input(document)
    except SchemaViolation as exc:
        raise _invalid(f"failed to parse input json: {exc}") from None
    return _evaluate(request)


def _evaluate(request: Row) -> Row:
    try:
        normalized = normalize_evidence(request["evidence"])
    except EvidenceInvalid as exc:
        raise _invalid(str(exc)) from None
    except SchemaViolation as exc:  # a number JSON cannot hold, in a payload built in code
        raise _invalid(f"failed to parse input json: {exc}") from None
    classes = failure_classes(request, normalized)
    accepted = not classes
    return {
        "action": ACTION,
        "failureClasses": classes,
        "joinClosed": accepted,
        "normalized": normalized.document(),
        "result": "accepted" if accepted else "rejected",
        "witness": witness_document(normalized),
    }


def _parse_bytes(path: str, data: bytes) -> Row:
    try:
        loads(data)
    except json_codec.JSONDecodeError as exc:
        reason = "EOF while parsing a value" if not data.strip() else str(exc)
        raise _invalid(f"failed to parse input json {path}: {reason}") from None
    try:
        document = decode_with_pairs(data, object_with_duplicates, serde_integer)
    except RecursionError:
        raise _invalid(f"failed to parse input json {path}: recursion limit exceeded") from None
    try:
        return parse_join_check_input(document)
    except SchemaViolation as exc:
        raise _invalid(f"failed to parse input json {path}: {exc}") from None


def run_join_check(path: str) -> Row:
    """Read, parse and evaluate the input file at `path` (the CLI's one call)."""
    try:
        data = read_bounded(path)
    except OSError as exc:
        raise _invalid(f"failed to read input {path}: {os_error_text(exc)}") from None
    return _evaluate(_parse_bytes(path, data))
