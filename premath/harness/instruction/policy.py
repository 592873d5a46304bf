"""The instruction policy registry: `<repoRoot>/policies/instruction/*.json` (§4.3).

Every artifact in the folder must be valid, even one the envelope does not name, and each
declared `pol1_` digest must equal the digest recomputed from the artifact's canonical form.
A repository without that folder uses the registry shipped with premath (divergence D35-1):
the repository's own folder, when present, wins whole.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from premath.errors import IoFailure
from premath.harness.instruction.digests import stable_hash
from premath.harness.instruction.errors import InstructionError, rust_debug
from premath.store.documents import (
    DocumentMalformed,
    DocumentUnreadable,
    os_error_text,
    read_document,
)
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

POLICY_KIND = "ci.instruction.policy.v1"
POLICY_DIGEST_PREFIX = "pol1_"
POLICY_DIR = ("policies", "instruction")
BUILTIN_POLICY_DIR = Path(__file__).resolve().parents[2] / "data" / "policies" / "instruction"
SHAPE = "instruction_policy_invalid_shape"
MISMATCH = "instruction_policy_digest_mismatch"
UNKNOWN = "instruction_unknown_policy"


@dataclass(frozen=True)
class InstructionPolicy:
    policy_digest: str
    policy_id: str
    allowed_checks: frozenset[str]
    allowed_normalizers: frozenset[str]


def policy_digest(policy_id: str, allowed_checks: list[str], allowed_normalizers: list[str]) -> str:
    canonical = {
        "schema": 1,
        "policyKind": POLICY_KIND,
        "policyId": policy_id,
        "allowedChecks": sorted(allowed_checks),
        "allowedNormalizers": sorted(allowed_normalizers),
    }
    return POLICY_DIGEST_PREFIX + stable_hash(canonical)


def non_empty_string(value: Any, label: str, failure_class: str) -> str:
    """Trimmed non-blank string, else `<label> must be a non-empty string`."""
    if not isinstance(value, str) or not rust_trim(value):
        raise InstructionError(failure_class, f"{label} must be a non-empty string")
    return rust_trim(value)


def non_empty_unique_strings(value: Any, label: str, failure_class: str) -> list[str]:
    """A non-empty list of non-blank strings, unique after trimming; order kept, items trimmed."""
    if not isinstance(value, list) or not value:
        raise InstructionError(failure_class, f"{label} must be a non-empty list")
    return unique_strings(value, label, failure_class)


def unique_strings(items: list[Any], label: str, failure_class: str) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for index, item in enumerate(items):
        trimmed = rust_trim(item) if isinstance(item, str) else ""
        if not trimmed:
            raise InstructionError(failure_class, f"{label}[{index}] must be a non-empty string")
        if trimmed in seen:
            raise InstructionError(failure_class, f"{label} must not contain duplicates")
        seen.add(trimmed)
        out.append(trimmed)
    return out


def _canonical_policy(payload: Any, shown: str) -> InstructionPolicy:
    if not isinstance(payload, dict):
        raise InstructionError(SHAPE, f"{shown}: policy artifact root must be an object")
    schema = payload.get("schema")
    if isinstance(schema, bool) or not isinstance(schema, int) or schema != 1:
        raise InstructionError(SHAPE, f"{shown}: schema must be 1")
    kind = non_empty_string(payload.get("policyKind"), f"{shown}: policyKind", SHAPE)
    if kind != POLICY_KIND:
        raise InstructionError(SHAPE, f"{shown}: policyKind must be {rust_debug(POLICY_KIND)}")
    policy_id = non_empty_string(payload.get("policyId"), f"{shown}: policyId", SHAPE)
    checks = non_empty_unique_strings(
        payload.get("allowedChecks"), f"{shown}: allowedChecks", SHAPE
    )
    normalizers = non_empty_unique_strings(
        payload.get("allowedNormalizers"), f"{shown}: allowedNormalizers", SHAPE
    )
    computed = policy_digest(policy_id, checks, normalizers)
    declared = non_empty_string(payload.get("policyDigest"), f"{shown}: policyDigest", SHAPE)
    if not declared.startswith(POLICY_DIGEST_PREFIX):
        raise InstructionError(
            MISMATCH, f"{shown}: policyDigest must start with {rust_debug(POLICY_DIGEST_PREFIX)}"
        )
    if declared != computed:
        raise InstructionError(
            MISMATCH,
            f"{shown}: policyDigest mismatch (declared={declared}, computed={computed})",
        )
    return InstructionPolicy(declared, policy_id, frozenset(checks), frozenset(normalizers))


def registry_directory(repo_root: str) -> str:
    """The repository's registry folder when it has one, else the one shipped with premath."""
    directory = os.path.join(repo_root, *POLICY_DIR)
    if os.path.lexists(directory) or not BUILTIN_POLICY_DIR.is_dir():
        return directory
    return str(BUILTIN_POLICY_DIR)


def load_policy_registry(repo_root: str) -> dict[str, InstructionPolicy]:
    """Every policy artifact by digest; raises InstructionError for the first invalid one."""
    directory = registry_directory(repo_root)
    if not os.path.isdir(directory):
        raise InstructionError(UNKNOWN, f"policy registry not found at {directory}")
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".json"))
    except OSError as exc:
        raise InstructionError(
            UNKNOWN, f"failed to read policy registry {directory}: {os_error_text(exc)}"
        ) from None
    registry: dict[str, InstructionPolicy] = {}
    for name in names:
        if name == ".json":
            continue
        path = os.path.join(directory, name)
        shown = "/".join((*POLICY_DIR, name))
        try:
            payload = read_document(path, refuse_duplicates=False)
        except DocumentUnreadable as exc:
            raise InstructionError(
                SHAPE, f"failed to read policy artifact {path}: {exc.detail}"
            ) from None
        except DocumentMalformed as exc:
            raise InstructionError(SHAPE, f"invalid json policy artifact {path}: {exc}") from None
        policy = _canonical_policy(payload, shown)
        if policy.policy_digest in registry:
            raise InstructionError(
                SHAPE, f"{shown}: duplicate policyDigest {rust_debug(policy.policy_digest)}"
            )
        registry[policy.policy_digest] = policy
    if not registry:
        raise InstructionError(UNKNOWN, f"no policy artifacts found under {directory}")
    return registry


def resolve_policy(repo_root: str, digest: str) -> InstructionPolicy:
    if not rust_trim(digest):
        raise InstructionError(UNKNOWN, "policyDigest must be a non-empty string")
    if not digest.startswith(POLICY_DIGEST_PREFIX):
        raise InstructionError(
            UNKNOWN,
            "policyDigest must be a canonical digest (pol1_...) referencing a registry artifact",
        )
    policy = load_policy_registry(repo_root).get(digest)
    if policy is None:
        raise InstructionError(UNKNOWN, f"policyDigest {rust_debug(digest)} is not registered")
    return policy


def write_shipped_registry(repo_root: str) -> list[str]:
    """`premath init --with-policies`: copy the shipped registry into the repository, for a
    team that wants to edit it. A repository that already has the folder keeps it untouched
    (its registry wins whole, D35-1); the paths written, relative to the repository root."""
    from premath.store.atomic import write_atomic

    if os.path.lexists(os.path.join(repo_root, *POLICY_DIR)):
        return []
    written = []
    for source in sorted(BUILTIN_POLICY_DIR.glob("*.json")):
        target = os.path.join(repo_root, *POLICY_DIR, source.name)
        try:
            write_atomic(target, source.read_bytes())
        except OSError as exc:
            raise IoFailure(f"failed to write {target}: {os_error_text(exc)}") from None
        written.append("/".join((*POLICY_DIR, source.name)))
    return written
