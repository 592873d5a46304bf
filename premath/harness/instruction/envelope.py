"""Instruction envelope validation and classification (agent-surface.md §4.2-§4.4, §4.6).

`check_envelope` returns the document `instruction-check --json` prints, in struct order.
Every failure is an InstructionError (`<class>: <message>`, exit 2).
"""

from __future__ import annotations

import os

import orjson

from premath.errors import InputInvalid
from premath.harness.instruction.digests import stable_hash
from premath.harness.instruction.errors import InstructionError, rust_debug, rust_debug_list
from premath.harness.instruction.policy import resolve_policy, unique_strings
from premath.harness.instruction.proposal import validate_proposal
from premath.store.documents import os_error_text
from premath.store.files import read_bounded
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SUPPORTED_TYPES = ("ci.gate.check", "ci.gate.pre_commit", "ci.gate.pre_push")


def resolve_under_root(repo_root: str, path: str) -> str:
    """The reference's `Path::join`: relative paths are shown under the root (`./i/x.json`)."""
    return os.path.join(repo_root, path)


def read_envelope_bytes(path: str) -> bytes:
    """The envelope's bytes: a regular file (never a blocking FIFO read), capped (D7-3)."""
    try:
        return read_bounded(path)
    except OSError as exc:
        raise InstructionError(
            "instruction_envelope_invalid",
            f"failed to read instruction file {path}: {os_error_text(exc)}",
        ) from None
    except InputInvalid as exc:
        raise InstructionError(
            "instruction_envelope_invalid", f"failed to read instruction file {path}: {exc.message}"
        ) from None


def parse_envelope(path: str, data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InstructionError(
            "instruction_envelope_invalid_json", f"failed to parse instruction json {path}: {exc}"
        ) from None


def _validate_filename(path: str) -> None:
    name = os.path.basename(path)
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem or extension != "json":
        raise InstructionError("instruction_filename_invalid", "filename must end with .json")
    if "-" not in stem:
        raise InstructionError(
            "instruction_filename_invalid", "filename stem must follow <ts>-<id> format"
        )


def _exact_string(value: Any, label: str, failure_class: str) -> str:
    """Non-blank and without surrounding whitespace."""
    if not isinstance(value, str) or not rust_trim(value):
        raise InstructionError(failure_class, f"{label} must be a non-empty string")
    if rust_trim(value) != value:
        raise InstructionError(
            failure_class, f"{label} must not include leading/trailing whitespace"
        )
    return value


def _schema_ok(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63


def _typing_policy(root: dict[str, Any]) -> bool:
    if "typingPolicy" not in root:
        return False
    policy = root["typingPolicy"]
    invalid = "instruction_typing_policy_invalid"
    if not isinstance(policy, dict):
        raise InstructionError(invalid, "typingPolicy must be an object when provided")
    allow = policy.get("allowUnknown", False)
    if not isinstance(allow, bool):
        raise InstructionError(invalid, "typingPolicy.allowUnknown must be a boolean when provided")
    return allow


def _capability_claims(root: dict[str, Any]) -> list[str]:
    if "capabilityClaims" not in root:
        return []
    claims = root["capabilityClaims"]
    invalid = "instruction_capability_claims_invalid"
    if not isinstance(claims, list):
        raise InstructionError(invalid, "capabilityClaims must be a list when provided")
    return sorted(unique_strings(claims, "capabilityClaims", invalid))


def _proposal(root: dict[str, Any], normalizer: str, policy: str) -> dict[str, Any] | None:
    if "proposal" in root and "llmProposal" in root:
        raise InstructionError(
            "proposal_invalid_shape", "instruction may include only one of proposal or llmProposal"
        )
    key = "proposal" if "proposal" in root else "llmProposal" if "llmProposal" in root else None
    if key is None:
        return None
    if not isinstance(root[key], dict):
        raise InstructionError("proposal_invalid_shape", "instruction proposal must be an object")
    proposal = validate_proposal(root[key])
    binding = proposal["canonical"]["binding"]
    for field, expected in (("normalizerId", normalizer), ("policyDigest", policy)):
        if binding[field] != expected:
            raise InstructionError(
                "proposal_binding_mismatch",
                f"proposal.binding.{field} must match instruction {field} "
                f"({rust_debug(binding[field])} != {rust_debug(expected)})",
            )
    return proposal


def classify(instruction_type: str | None, checks: list[str]) -> dict[str, str]:
    if instruction_type is not None:
        if instruction_type in SUPPORTED_TYPES:
            return {"state": "typed", "kind": instruction_type}
        return {"state": "unknown", "reason": "unsupported_instruction_type"}
    if checks and all(check.startswith("hk-") for check in checks):
        kind = {"hk-pre-commit": "ci.gate.pre_commit", "hk-pre-push": "ci.gate.pre_push"}
        single = kind.get(checks[0]) if len(checks) == 1 else None
        return {"state": "typed", "kind": single or "ci.gate.check"}
    return {"state": "unknown", "reason": "unrecognized_requested_checks"}


def execution_decision(
    classification: dict[str, str], allow_unknown: bool, proposal: dict[str, Any] | None
) -> dict[str, Any]:
    if classification["state"] == "unknown" and not allow_unknown:
        return {
            "state": "reject",
            "source": "instruction_classification",
            "reason": classification["reason"],
            "operationalFailureClasses": ["instruction_unknown_unroutable"],
            "semanticFailureClasses": [],
        }
    if proposal is not None and proposal["discharge"]["outcome"] == "rejected":
        classes = {rust_trim(c) for c in proposal["discharge"]["failureClasses"]}
        return {
            "state": "reject",
            "source": "proposal_discharge",
            "reason": "proposal_discharge_rejected",
            "operationalFailureClasses": [],
            "semanticFailureClasses": sorted(c for c in classes if c),
        }
    return {"state": "execute"}


def validate_envelope(raw: Any, path: str, repo_root: str) -> dict[str, Any]:
    """The validated envelope (struct order) of a decoded file at `path`."""
    _validate_filename(path)
    if not isinstance(raw, dict):
        raise InstructionError("instruction_envelope_invalid_shape", "root must be a JSON object")
    if not _schema_ok(raw.get("schema")):
        raise InstructionError("instruction_invalid_schema", "schema must be a positive integer")
    intent = _exact_string(raw.get("intent"), "intent", "instruction_invalid_intent")
    normalizer = _exact_string(
        raw.get("normalizerId"), "normalizerId", "instruction_invalid_normalizer"
    )
    policy_digest = _exact_string(
        raw.get("policyDigest"), "policyDigest", "instruction_invalid_policy_digest"
    )
    if "scope" not in raw:
        raise InstructionError("instruction_scope_missing", "scope is required")
    scope = raw["scope"]
    if scope is None or scope == "":
        raise InstructionError("instruction_scope_invalid", "scope must be non-empty")
    checks_class = "instruction_requested_checks_invalid"
    checks = raw.get("requestedChecks")
    if not isinstance(checks, list) or not checks:
        raise InstructionError(checks_class, "requestedChecks must be a non-empty list")
    checks = unique_strings(checks, "requestedChecks", checks_class)
    policy = resolve_policy(repo_root, policy_digest)
    disallowed = sorted({check for check in checks if check not in policy.allowed_checks})
    if disallowed:
        raise InstructionError(
            "instruction_check_not_allowed",
            f"requestedChecks include check IDs not allowed by policyDigest "
            f"{rust_debug(policy_digest)}: {rust_debug_list(disallowed)}",
        )
    if normalizer not in policy.allowed_normalizers:
        raise InstructionError(
            "instruction_normalizer_not_allowed",
            f"normalizerId is not allowed by policyDigest {rust_debug(policy_digest)}: "
            f"{rust_debug(normalizer)}",
        )
    instruction_type = None
    if "instructionType" in raw:
        instruction_type = _exact_string(
            raw["instructionType"], "instructionType", "instruction_instruction_type_invalid"
        )
    allow_unknown = _typing_policy(raw)
    claims = _capability_claims(raw)
    proposal = _proposal(raw, normalizer, policy_digest)
    classification = classify(instruction_type, checks)
    document: dict[str, Any] = {
        "intent": intent,
        "scope": scope,
        "normalizerId": normalizer,
        "policyDigest": policy_digest,
        "instructionDigest": "instr1_" + stable_hash(raw),
        "requestedChecks": checks,
    }
    if instruction_type is not None:
        document["instructionType"] = instruction_type
    document["instructionClassification"] = classification
    document["executionDecision"] = execution_decision(classification, allow_unknown, proposal)
    document["typingPolicy"] = {"allowUnknown": allow_unknown}
    document["capabilityClaims"] = claims
    if proposal is not None:
        document["proposal"] = proposal
    return document


def check_envelope(instruction: str, repo_root: str) -> tuple[str, dict[str, Any]]:
    """`instruction-check`: the path as shown and the validated envelope."""
    path = resolve_under_root(repo_root, instruction)
    raw = parse_envelope(path, read_envelope_bytes(path))
    return path, validate_envelope(raw, path, repo_root)


def check_text(path: str, document: dict[str, Any]) -> str:
    from premath.store.canonical import stdout_bytes

    summary = {
        "instruction": path,
        "normalizerId": document["normalizerId"],
        "policyDigest": document["policyDigest"],
        "requestedChecks": document["requestedChecks"],
    }
    return "premath instruction-check\n" + stdout_bytes(summary).decode("utf-8").rstrip("\n")
