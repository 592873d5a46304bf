"""The `harness-policy decide|classify|escalate` documents, rendered from the typed results."""

from __future__ import annotations

from premath.harness.escalation import PolicyEscalation
from premath.harness.retry import Classification, PolicyDecision

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _decided(action: str, decided: PolicyDecision) -> dict[str, Any]:
    return {
        "action": action,
        "policyId": decided.policy.policy_id,
        "policyDigest": decided.policy.policy_digest,
        "decision": decided.decision.to_document(),
    }


def decision_document(decided: PolicyDecision) -> dict[str, Any]:
    """`harness-policy decide`: the decision and the backoff it implies."""
    return {**_decided("harness-policy.decide", decided), "backoffSeconds": decided.backoff_s}


def classify_document(classification: Classification, decided: PolicyDecision) -> dict[str, Any]:
    """`harness-policy classify`: the decision, then the classes it was made on."""
    return {
        **_decided("harness-policy.classify", decided),
        "backoffSeconds": decided.backoff_s,
        "processFailureClasses": list(classification.process_classes),
        "witnessFailureClasses": list(classification.witness_classes),
        "failureClasses": list(classification.failure_classes),
    }


def escalate_document(result: PolicyEscalation) -> dict[str, Any]:
    escalation = result.escalation
    return {
        **_decided("harness-policy.escalate", result.decided),
        "escalation": None if escalation is None else escalation.to_document(),
        "issueSource": result.issue_source,
    }
