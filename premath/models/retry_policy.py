"""The retry policy (`ci.harness.retry.policy.v1`) and the decisions taken from it.

Plain frozen dataclasses, not pydantic: the loader reports the reference's failure classes
(`retry_policy_invalid_shape`, ...) with its reasons, and the loop imports this on every step.
specs/retry-policy.md describes the file and the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RETRY_POLICY_KIND = "ci.harness.retry.policy.v1"
RETRY_POLICY_SCHEMA = 1
POLICY_DIGEST_PREFIX = "pol1_"
DEFAULT_RULE_ID = "default"

EscalationAction = Literal["issue_discover", "mark_blocked", "stop"]
ESCALATION_ACTIONS: tuple[EscalationAction, ...] = ("issue_discover", "mark_blocked", "stop")

BackoffClass = Literal["none", "fixed_short", "exponential_short"]
BACKOFF_CLASSES: tuple[BackoffClass, ...] = ("none", "fixed_short", "exponential_short")

MISSING_FAILURE_CLASS = "pipeline_missing_failure_class"


@dataclass(frozen=True, slots=True)
class RetryRule:
    rule_id: str
    failure_classes: tuple[str, ...]
    """Trimmed, unique, sorted."""
    max_attempts: int
    backoff_class: BackoffClass
    escalation_action: EscalationAction


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    policy_path: str
    policy_id: str
    policy_digest: str
    default_rule: RetryRule
    rules: tuple[RetryRule, ...]

    def rule_for(self, failure_class: str) -> RetryRule | None:
        return next((rule for rule in self.rules if failure_class in rule.failure_classes), None)

    def to_document(self) -> dict[str, object]:
        """The policy as `harness-policy show` prints it (the reference loader's fields)."""
        return {
            "policyPath": self.policy_path,
            "policyKind": RETRY_POLICY_KIND,
            "policyId": self.policy_id,
            "policyDigest": self.policy_digest,
            "defaultRule": rule_document(self.default_rule),
            "rules": [rule_document(rule) for rule in self.rules],
            "rulesByFailureClass": {
                failure_class: rule.rule_id
                for rule in self.rules
                for failure_class in rule.failure_classes
            },
        }


def rule_document(rule: RetryRule) -> dict[str, object]:
    return {
        "ruleId": rule.rule_id,
        "failureClasses": list(rule.failure_classes),
        "maxAttempts": rule.max_attempts,
        "backoffClass": rule.backoff_class,
        "escalationAction": rule.escalation_action,
    }


@dataclass(frozen=True, slots=True)
class RetryDecision:
    attempt: int
    retry: bool
    max_attempts: int
    backoff_class: BackoffClass
    escalation_action: EscalationAction
    rule_id: str
    matched_failure_class: str
    failure_classes: tuple[str, ...]
    """Sorted, unique."""

    def to_document(self) -> dict[str, object]:
        return {
            "attempt": self.attempt,
            "retry": self.retry,
            "maxAttempts": self.max_attempts,
            "backoffClass": self.backoff_class,
            "escalationAction": self.escalation_action,
            "ruleId": self.rule_id,
            "matchedFailureClass": self.matched_failure_class,
            "failureClasses": list(self.failure_classes),
        }
