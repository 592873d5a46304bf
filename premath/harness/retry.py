"""Retry policy: load and check it, classify failures, decide retry or escalation, back off.

Behaviour follows specs/retry-policy.md "Decision". Divergences: D5-1 (the
escalation action, backoff class and integer fields are checked at load), D5-2 (no failure class
means `pipeline_missing_failure_class` and its rule), D5-3 (typed classes read from command output
count only when the policy knows them), D5-6 (the backoff is applied, not only named).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from premath.errors import ArtifactInvalid, InputInvalid, NotFound
from premath.models.retry_policy import (
    BACKOFF_CLASSES,
    DEFAULT_RULE_ID,
    ESCALATION_ACTIONS,
    MISSING_FAILURE_CLASS,
    POLICY_DIGEST_PREFIX,
    RETRY_POLICY_KIND,
    RETRY_POLICY_SCHEMA,
    BackoffClass,
    RetryDecision,
    RetryPolicy,
    RetryRule,
)
from premath.store.canonical import digest_input
from premath.store.files import read_bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

DEFAULT_POLICY_PATH = "policies/control/harness-retry-policy-v1.json"
BUILTIN_POLICY_PATH = (
    Path(__file__).resolve().parent.parent / "data" / "harness-retry-policy-v1.json"
)

WITNESS_CLASS_KEYS = ("failureClasses", "operationalFailureClasses", "semanticFailureClasses")
# Lowercase snake tokens with at least one `_`, immediately followed by `:` (the reference's rule).
_TYPED_CLASS = re.compile(r"(?<![A-Za-z0-9_.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+):")

_BACKOFF_BASE_S: dict[BackoffClass, float] = {
    "none": 0.0,
    "fixed_short": 1.0,
    "exponential_short": 0.5,
}
_BACKOFF_CAP_S = 8.0


class RetryPolicyInvalid(ArtifactInvalid):
    """The policy file is missing, unreadable or fails its checks; `failure_class` says which."""

    failure_classes: ClassVar[tuple[str, ...]] = (
        "retry_policy_missing",
        "retry_policy_invalid_json",
        "retry_policy_io_error",
        "retry_policy_invalid_shape",
        "retry_policy_invalid_digest",
    )

    def __init__(self, failure_class: str, reason: str) -> None:
        super().__init__(f"{failure_class}: {reason}")
        self.failure_class = failure_class
        self.reason = reason


def resolve_policy_path(path: str | None) -> str:
    """The given path; else the repository's policy; else the one shipped with premath."""
    if path is not None:
        return path
    return DEFAULT_POLICY_PATH if Path(DEFAULT_POLICY_PATH).exists() else str(BUILTIN_POLICY_PATH)


def policy_digest(payload: dict[str, Any]) -> str:
    """`pol1_` + sha256 of the compact, key-sorted policy without its `policyDigest`."""
    body = {key: value for key, value in payload.items() if key != "policyDigest"}
    return POLICY_DIGEST_PREFIX + hashlib.sha256(digest_input(body)).hexdigest()


def _shape(reason: str) -> RetryPolicyInvalid:
    return RetryPolicyInvalid("retry_policy_invalid_shape", reason)


def _text(value: Any, label: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _shape(f"{label} must be a non-empty string")
    return value.strip()


def _positive_int(value: Any, label: str) -> int:
    # bool is an int in Python; the reference let `true` through (B11), we do not (D5-1).
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _shape(f"{label} must be an integer >= 1")
    return value


def _rule(raw: Any, label: str, rule_id: str | None) -> RetryRule:
    if not isinstance(raw, dict):
        raise _shape(f"{label} must be an object")
    if rule_id is None:
        rule_id = _text(raw.get("ruleId"), f"{label}.ruleId")
        classes_raw = raw.get("failureClasses")
        if not isinstance(classes_raw, list):
            raise _shape(f"{label}.failureClasses must be a non-empty list")
        classes = tuple(
            sorted({c.strip() for c in classes_raw if isinstance(c, str) and c.strip()})
        )
        if not classes:
            raise _shape(f"{label}.failureClasses must be a non-empty list")
    else:
        classes = ()
    backoff = _text(raw.get("backoffClass"), f"{label}.backoffClass")
    if backoff not in BACKOFF_CLASSES:
        raise _shape(
            f"{label}.backoffClass must be one of {', '.join(BACKOFF_CLASSES)} (got {backoff})"
        )
    action = _text(raw.get("escalationAction"), f"{label}.escalationAction")
    if action not in ESCALATION_ACTIONS:
        raise _shape(
            f"{label}.escalationAction must be one of {', '.join(ESCALATION_ACTIONS)} "
            f"(got {action})"
        )
    return RetryRule(
        rule_id=rule_id,
        failure_classes=classes,
        max_attempts=_positive_int(raw.get("maxAttempts"), f"{label}.maxAttempts"),
        backoff_class=backoff,
        escalation_action=action,
    )


def parse_retry_policy(payload: Any, policy_path: str) -> RetryPolicy:
    """Check a decoded policy document; shape first, then the digest, as the reference does."""
    if not isinstance(payload, dict):
        raise _shape("policy root must be an object")
    schema = payload.get("schema")
    if isinstance(schema, bool) or schema != RETRY_POLICY_SCHEMA:
        raise _shape(f"schema must be {RETRY_POLICY_SCHEMA}")
    if payload.get("policyKind") != RETRY_POLICY_KIND:
        raise _shape(f"policyKind must be {RETRY_POLICY_KIND!r}")
    policy_id = _text(payload.get("policyId"), "policyId")
    raw_default = payload.get("defaultRule")
    default_id = DEFAULT_RULE_ID
    if isinstance(raw_default, dict) and "ruleId" in raw_default:
        default_id = _text(raw_default["ruleId"], "defaultRule.ruleId")
    default_rule = _rule(raw_default, "defaultRule", default_id)
    raw_rules = payload.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise _shape("rules must be a non-empty list")
    rules = tuple(_rule(raw, f"rules[{index}]", None) for index, raw in enumerate(raw_rules))
    seen_ids = {default_rule.rule_id}
    owner: dict[str, str] = {}
    for rule in rules:
        if rule.rule_id in seen_ids:
            raise _shape(f"duplicate ruleId: {rule.rule_id}")
        seen_ids.add(rule.rule_id)
        for failure_class in rule.failure_classes:
            if failure_class in owner:
                raise _shape(
                    f"failure class {failure_class} is bound by both {owner[failure_class]} "
                    f"and {rule.rule_id}"
                )
            owner[failure_class] = rule.rule_id
    stated = payload.get("policyDigest")
    if not isinstance(stated, str) or not stated.startswith(POLICY_DIGEST_PREFIX):
        raise RetryPolicyInvalid(
            "retry_policy_invalid_digest", f"policyDigest must start with {POLICY_DIGEST_PREFIX}"
        )
    expected = policy_digest(payload)
    if stated != expected:
        raise RetryPolicyInvalid(
            "retry_policy_invalid_digest",
            f"policyDigest mismatch (expected {expected}, got {stated})",
        )
    return RetryPolicy(policy_path, policy_id, stated, default_rule, rules)


def load_retry_policy(path: str | None = None) -> RetryPolicy:
    """The policy at `path` (see `resolve_policy_path`), checked."""
    resolved = resolve_policy_path(path)
    try:
        data = read_bounded(resolved)
    except InputInvalid as exc:
        raise RetryPolicyInvalid("retry_policy_io_error", exc.message) from None
    except FileNotFoundError as exc:
        raise RetryPolicyInvalid(
            "retry_policy_missing", f"retry policy not found: {resolved}"
        ) from exc
    except OSError as exc:
        raise RetryPolicyInvalid(
            "retry_policy_io_error",
            f"failed to read retry policy {resolved}: {exc.strerror or exc}",
        ) from exc
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RetryPolicyInvalid(
            "retry_policy_invalid_json", f"invalid JSON in retry policy {resolved}: {exc}"
        ) from exc
    return parse_retry_policy(payload, resolved)


def _ordered_unique(values: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for value in values:
        cleaned = value.strip()
        if cleaned:
            seen.setdefault(cleaned, None)
    return tuple(seen)


def resolve_retry_decision(
    policy: RetryPolicy, failure_classes: Sequence[str], attempt: int
) -> RetryDecision:
    """The rule of the first class (input order) that has one; else the default rule."""
    if attempt < 1:
        raise InputInvalid(f"retry_policy_invalid_shape: attempt must be >= 1 (got {attempt})")
    ordered = _ordered_unique(failure_classes) or (MISSING_FAILURE_CLASS,)  # D5-2
    matched = next((c for c in ordered if policy.rule_for(c) is not None), None)
    rule = policy.rule_for(matched) if matched is not None else None
    if rule is None:
        rule, matched = policy.default_rule, ordered[0]
    assert matched is not None
    return RetryDecision(
        attempt=attempt,
        retry=attempt < rule.max_attempts,
        max_attempts=rule.max_attempts,
        backoff_class=rule.backoff_class,
        escalation_action=rule.escalation_action,
        rule_id=rule.rule_id,
        matched_failure_class=matched,
        failure_classes=tuple(sorted(set(ordered))),
    )


def failure_classes_from_witness_payload(payload: Any) -> tuple[str, ...]:
    """The union of a witness's three class lists, sorted; an unlabelled rejection is typed."""
    if not isinstance(payload, dict):
        return ("pipeline_invalid_witness_shape",)
    classes: set[str] = set()
    for key in WITNESS_CLASS_KEYS:
        values = payload.get(key)
        if isinstance(values, list):
            classes.update(v.strip() for v in values if isinstance(v, str) and v.strip())
    if classes:
        return tuple(sorted(classes))
    return () if payload.get("verdictClass") == "accepted" else (MISSING_FAILURE_CLASS,)


def failure_classes_from_witness_path(path: str | os.PathLike[str]) -> tuple[str, ...]:
    try:
        data = read_bounded(path)
    except FileNotFoundError:
        return ("pipeline_missing_witness",)
    except (OSError, InputInvalid):
        return ("pipeline_witness_io_error",)
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        return ("pipeline_invalid_witness_json",)
    return failure_classes_from_witness_payload(payload)


def _classes_from_blob(blob: str) -> list[str]:
    found: list[str] = []
    try:
        payload = orjson.loads(blob) if blob.strip() else None
    except orjson.JSONDecodeError:
        payload = None
    if isinstance(payload, dict):
        for key in ("failureClass", "reasonClass"):
            value = payload.get(key)
            if isinstance(value, str):
                found.append(value)
        for key in WITNESS_CLASS_KEYS:
            values = payload.get(key)
            if isinstance(values, list):
                found.extend(v for v in values if isinstance(v, str))
    for line in blob.splitlines():
        found.extend(match.group(1) for match in _TYPED_CLASS.finditer(line))
    return found


def failure_classes_from_output(stdout: str, stderr: str) -> tuple[str, ...]:
    """Typed classes a command printed: stderr first, then stdout, first occurrence kept."""
    return _ordered_unique([*_classes_from_blob(stderr), *_classes_from_blob(stdout)])


def classify_failure_classes(
    process_classes: Sequence[str], witness_classes: Sequence[str]
) -> tuple[str, ...]:
    """Process classes, then witness classes; nothing at all is `pipeline_missing_failure_class`."""
    return _ordered_unique([*process_classes, *witness_classes]) or (MISSING_FAILURE_CLASS,)


def known_failure_classes(policy: RetryPolicy, classes: Iterable[str]) -> tuple[str, ...]:
    """Only the classes a policy rule binds (D5-3: `issue_id: x` in a log is no class)."""
    return tuple(c for c in _ordered_unique(classes) if policy.rule_for(c) is not None)


def backoff_delay_s(backoff_class: BackoffClass, attempt: int, scale: float = 1.0) -> float:
    """Seconds before attempt `attempt + 1`: none 0, fixed 1 s, exponential 0.5 s * 2^(n-1)."""
    base = _BACKOFF_BASE_S[backoff_class]
    if backoff_class == "exponential_short":
        base = min(base * 2 ** max(attempt - 1, 0), _BACKOFF_CAP_S)
    return base * max(scale, 0.0)


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """A policy's decision on failure classes at an attempt, and the backoff it implies."""

    policy: RetryPolicy
    decision: RetryDecision
    backoff_s: float


def decide(
    policy_path: str | None, failure_classes: Sequence[str], attempt: int, scale: float = 1.0
) -> PolicyDecision:
    """Load the policy and decide; no backoff when the decision is to escalate."""
    policy = load_retry_policy(policy_path)
    decision = resolve_retry_decision(policy, failure_classes, attempt)
    backoff = backoff_delay_s(decision.backoff_class, attempt, scale) if decision.retry else 0.0
    return PolicyDecision(policy, decision, backoff)


@dataclass(frozen=True, slots=True)
class Classification:
    """Classes read from a command's output, from its witness, and the step's classes."""

    process_classes: tuple[str, ...]
    witness_classes: tuple[str, ...]
    failure_classes: tuple[str, ...]


def _read_text(path: str | None) -> str:
    if path is None:
        return ""
    try:
        return Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise NotFound(f"cannot read {path}: {exc.strerror or exc}") from exc


def classify_files(
    stdout_path: str | None, stderr_path: str | None, witness_path: str | None
) -> Classification:
    """Classify a failed command from its captured output files and its gate witness."""
    process = failure_classes_from_output(_read_text(stdout_path), _read_text(stderr_path))
    witness = failure_classes_from_witness_path(witness_path) if witness_path else ()
    return Classification(process, witness, classify_failure_classes(process, witness))
