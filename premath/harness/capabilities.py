"""Capability rules the loop applies at boot and stop, and the governance overlay claim.

Boot/stop rules follow the reference's harness capability vectors (specs/join-check.md
"Boot/stop capability rules"):
bootstrap mode from the session state, the recovery action for each lease state, and the
stop handoff's lease witness and lineage refs. The overlay ("Governance overlay" there) turns the
registry's `profileOverlayClaims` into the join check's `governanceProfile`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from premath.errors import InputInvalid
from premath.models.join_check import GOVERNANCE_CLAIM_ID
from premath.models.vocabulary import SESSION_STATES, STEP_KIND

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GOVERNANCE_PROFILE_CLAIM = GOVERNANCE_CLAIM_ID
CI_WITNESSES_CAPABILITY = "capabilities.ci_witnesses"

BootstrapMode = Literal["attach", "resume"]
RECOVERY_ACTIONS: dict[str, str] = {
    "active": "issue_lease_renew",
    "stale": "issue_claim",
    "contended": "stop",
    "released": "issue_claim",
    "unleased": "issue_claim",
}

_LEASE_PREFIX = "lease://handoff/"
_LEASE_REF = re.compile(r"^lease://handoff/([^/]+)/([^/]+)/([A-Za-z0-9._-]+)$")
_LINEAGE_KINDS = {
    "ctx": re.compile(r"^ctx://issue/([^/]+)/([A-Za-z0-9._-]+)$"),
    "cover": re.compile(r"^cover://worker-loop/([^/]+)/([A-Za-z0-9._-]+)$"),
    "refinement": re.compile(r"^refinement://worker-loop/([^/]+)/([^/]+)/([A-Za-z0-9._-]+)$"),
}


def overlay_claims(registry: Mapping[str, Any]) -> frozenset[str]:
    """The profile overlays a capability registry document claims (`profileOverlayClaims`)."""
    claims = registry.get("profileOverlayClaims") or ()
    return frozenset(claim for claim in claims if isinstance(claim, str))


def governance_profile(
    claims: Iterable[str], provenance: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The `governanceProfile` block when the governance overlay is claimed, else None.

    Missing provenance is passed on as missing: the gate refuses it as unpinned.
    """
    if GOVERNANCE_PROFILE_CLAIM not in set(claims):
        return None
    profile: dict[str, Any] = {"claimId": GOVERNANCE_PROFILE_CLAIM, "claimed": True}
    if provenance is not None:
        profile["policyProvenance"] = dict(provenance)
    return profile


def with_governance_overlay(
    join_input: Mapping[str, Any],
    claims: Iterable[str],
    provenance: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """A copy of a join-check input carrying the overlay's `governanceProfile` when claimed."""
    document = dict(join_input)
    profile = governance_profile(claims, provenance)
    if profile is not None:
        document["governanceProfile"] = profile
    return document


def expected_bootstrap_mode(state_before: str) -> BootstrapMode:
    """A stopped session is resumed; an active one is attached to."""
    if state_before not in SESSION_STATES:
        raise InputInvalid(f"session state must be active or stopped, got {state_before!r}")
    return "resume" if state_before == "stopped" else "attach"


def recovery_action(lease_state: str) -> str:
    """What the next worker should do about the issue, given the lease state at stop."""
    try:
        return RECOVERY_ACTIONS[lease_state]
    except KeyError:
        raise InputInvalid(
            f"lease state must be one of {', '.join(RECOVERY_ACTIONS)}, got {lease_state!r}"
        ) from None


def lease_handoff_ref(issue_id: str, lease_state: str, digest_hex: str) -> str:
    """`lease://handoff/<issue>/<lease state>/<digest>`: the stop row's lease witness."""
    return f"{_LEASE_PREFIX}{issue_id}/{lease_state}/{digest_hex}"


def lease_witness_classes(
    issue_id: str, lease_state: str, witness_refs: Iterable[str]
) -> list[str]:
    """[] when one `lease://handoff/` ref names this issue and lease state, else one class."""
    handoff_refs = [ref for ref in witness_refs if ref.startswith(_LEASE_PREFIX)]
    matches = [_LEASE_REF.match(ref) for ref in handoff_refs]
    if any(m is not None and m.groups()[:2] == (issue_id, lease_state) for m in matches):
        return []
    if any(m is None for m in matches):
        return ["harness_handoff_lease_ref_malformed"]
    if handoff_refs:
        return ["harness_handoff_lease_ref_mismatch"]
    return ["harness_handoff_lease_ref_missing"]


def _lineage_side_classes(issue_id: str, refs: Sequence[str]) -> set[str]:
    """Classes for one side's refs: each well-formed, for this issue, all three kinds present."""
    kinds: set[str] = set()
    classes: set[str] = set()
    for ref in refs:
        kind, match = next(
            ((k, m) for k, pattern in _LINEAGE_KINDS.items() if (m := pattern.match(ref))),
            (None, None),
        )
        if kind is None or match is None:
            classes.add("harness_lineage_ref_malformed")
        elif match.group(1) != issue_id:
            classes.add("harness_lineage_ref_mismatch")
        else:
            kinds.add(kind)
    if kinds != set(_LINEAGE_KINDS):
        classes.add("harness_lineage_ref_missing")
    return classes


def lineage_classes(
    issue_id: str,
    bootstrap_refs: Sequence[str] | None,
    trajectory_refs: Sequence[str] | None,
) -> list[str]:
    """Both sides carry ctx/cover/refinement refs for this issue, and the same set of them."""
    if not bootstrap_refs or not trajectory_refs:
        return ["harness_lineage_ref_missing"]
    classes = _lineage_side_classes(issue_id, bootstrap_refs) | _lineage_side_classes(
        issue_id, trajectory_refs
    )
    if set(bootstrap_refs) != set(trajectory_refs):
        classes.add("harness_lineage_ref_mismatch")
    return sorted(classes)


@dataclass(frozen=True, slots=True)
class StopHandoff:
    """What one boot/stop cycle recorded, as the capability checks see it."""

    state_before: str
    bootstrap_mode: str
    issue_id: str
    lease_state: str
    session_state_after: str
    recommended_action: str
    step_kind: str
    bootstrap_lineage_refs: tuple[str, ...] = ()
    trajectory_lineage_refs: tuple[str, ...] = ()
    witness_refs: tuple[str, ...] = ()


def stop_handoff_classes(stop: StopHandoff) -> list[str]:
    """Every boot/stop rule (specs/join-check.md), sorted; [] when the cycle is sound."""
    classes: set[str] = set()
    if stop.bootstrap_mode != expected_bootstrap_mode(stop.state_before):
        classes.add("harness_bootstrap_mode_mismatch")
    if stop.session_state_after != "stopped":
        classes.add("harness_stop_state_invalid")
    if stop.recommended_action != recovery_action(stop.lease_state):
        classes.add("harness_recovery_action_mismatch")
    if stop.step_kind != STEP_KIND:
        classes.add("harness_trajectory_kind_invalid")
    classes.update(
        lineage_classes(stop.issue_id, stop.bootstrap_lineage_refs, stop.trajectory_lineage_refs)
    )
    classes.update(lease_witness_classes(stop.issue_id, stop.lease_state, stop.witness_refs))
    return sorted(classes)


@dataclass(frozen=True, slots=True)
class CapabilityOutcome:
    result: str
    kernel_verdict: str
    gate_failure_classes: tuple[str, ...]


def _text(value: Any, label: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputInvalid(f"{label} must be a non-empty string")
    return value


def _texts(value: Any, label: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InputInvalid(f"{label} must be a list of strings")
    return tuple(value)


def _object(value: Any, label: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputInvalid(f"{label} must be an object")
    return value


def evaluate_harness_runtime(case: Mapping[str, Any]) -> CapabilityOutcome:
    """A `capabilities.ci_witnesses` harness vector's outcome; InputInvalid if malformed."""
    artifacts = _object(case.get("artifacts"), "artifacts")
    if case.get("profile") != "local":
        claimed = _texts(artifacts.get("claimedCapabilities"), "claimedCapabilities")
        if CI_WITNESSES_CAPABILITY not in claimed:
            return CapabilityOutcome("rejected", "rejected", ("capability_not_claimed",))
    given = _object(artifacts.get("input", {}), "artifacts.input")
    kernel_verdict = given.get("kernelVerdict", "accepted")
    if kernel_verdict not in ("accepted", "rejected"):
        raise InputInvalid("artifacts.input.kernelVerdict must be accepted or rejected")
    gate_classes = _texts(given.get("gateFailureClasses"), "artifacts.input.gateFailureClasses")
    harness = _object(artifacts.get("harness"), "artifacts.harness")
    session = _object(harness.get("session"), "artifacts.harness.session")
    bootstrap = _object(session.get("bootstrap"), "artifacts.harness.session.bootstrap")
    stop = _object(harness.get("stop"), "artifacts.harness.stop")
    row = _object(stop.get("trajectoryRow"), "artifacts.harness.stop.trajectoryRow")
    mode = _text(bootstrap.get("mode"), "bootstrap.mode")
    if mode not in ("attach", "resume"):
        raise InputInvalid("bootstrap.mode must be attach or resume")
    classes = stop_handoff_classes(
        StopHandoff(
            state_before=_text(session.get("stateBefore"), "session.stateBefore"),
            bootstrap_mode=mode,
            issue_id=_text(stop.get("issueId"), "stop.issueId"),
            lease_state=_text(stop.get("leaseState"), "stop.leaseState"),
            session_state_after=_text(stop.get("sessionStateAfter"), "stop.sessionStateAfter"),
            recommended_action=_text(stop.get("recommendedAction"), "stop.recommendedAction"),
            step_kind=_text(row.get("stepKind"), "trajectoryRow.stepKind"),
            bootstrap_lineage_refs=_texts(bootstrap.get("lineageRefs"), "bootstrap.lineageRefs"),
            trajectory_lineage_refs=_texts(row.get("lineageRefs"), "trajectoryRow.lineageRefs"),
            witness_refs=_texts(row.get("witnessRefs"), "trajectoryRow.witnessRefs"),
        )
    )
    if classes:
        return CapabilityOutcome("rejected", "rejected", tuple(classes))
    return CapabilityOutcome(kernel_verdict, kernel_verdict, gate_classes)
