"""MutationReady: whether a step may mutate issues after its join check (specs/join-check.md).

The reference never computes this gate; our loop needs it (D5-15). Ready only when the
check accepted, the structural join is closed, continuation context is ready when continuation
is allowed, the turn's mutation policy is the active one, and the join witness is recorded.
A refusal is data, never an exception: the loop records the classes and skips every mutation.
"""

from __future__ import annotations

from collections.abc import Mapping

from premath.text import clean_optional

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

POLICY_DIGEST_MISMATCH = "mutation.policy_digest_mismatch"
USE_EVIDENCE_MISSING = "mutation.use_evidence_missing"
JOIN_INCOMPLETE = "tool.join_incomplete"


def _context_classes(mutation: Mapping[str, Any]) -> set[str]:
    """The reference's context classes, read from the witness's own flags; never empty."""
    classes = set()
    if mutation.get("missingRenderCallIds") or not mutation.get("stateViewPresent"):
        classes.add("context.injection_point_missing")
    flags = (
        "queueReductionPresent",
        "renderPolicyValid",
        "queuePolicyValid",
        "stateViewPolicyValid",
    )
    if not all(mutation.get(flag) for flag in flags) or not classes:
        classes.add("context.queue_policy_violation")
    return classes


def mutation_ready(
    result: Mapping[str, Any], active_policy_digest: str, *, witness_ref: str | None
) -> tuple[bool, tuple[str, ...]]:
    """(ready, sorted failure classes) for a join-check result document."""
    classes: set[str] = set()
    if result.get("result") != "accepted":
        classes.update(result.get("failureClasses") or (JOIN_INCOMPLETE,))
    witness = result.get("witness")
    mutation = witness.get("mutationInput") if isinstance(witness, Mapping) else None
    if not isinstance(mutation, Mapping):
        classes.add(USE_EVIDENCE_MISSING)
        return False, tuple(sorted(classes))
    if mutation.get("joinClosed") is not True:
        classes.add(JOIN_INCOMPLETE)
    if mutation.get("continuationAllowed") and mutation.get("continuationContextReady") is not True:
        classes |= _context_classes(mutation)
    active = clean_optional(active_policy_digest)
    if active is None or mutation.get("mutationPolicyDigest") != active:
        classes.add(POLICY_DIGEST_MISMATCH)
    if clean_optional(witness_ref) is None:
        classes.add(USE_EVIDENCE_MISSING)
    return not classes, tuple(sorted(classes))


def join_gate_fields(result: Mapping[str, Any], witness_ref: str | None) -> dict[str, Any]:
    """The fields the reference's mutation consumer reads (specs/join-check.md "MutationReady").

    `joinClosed` is the top-level one (no failure class at all), the stricter of the two.
    """
    fields: dict[str, Any] = {
        "joinClosed": result.get("joinClosed") is True,
        "joinFailureClasses": list(result.get("failureClasses") or ()),
    }
    if clean_optional(witness_ref) is not None:
        fields["joinWitnessRef"] = witness_ref
    return fields
