"""Boot/stop capability rules (the reference's six harness capability vectors, typestate.md §10)
and the governance overlay the loop adds before the join check (§2.3)."""

from typing import Any

import orjson
import pytest

from premath.errors import InputInvalid
from premath.harness.capabilities import (
    GOVERNANCE_PROFILE_CLAIM,
    StopHandoff,
    evaluate_harness_runtime,
    expected_bootstrap_mode,
    governance_profile,
    lease_handoff_ref,
    lease_witness_classes,
    lineage_classes,
    overlay_claims,
    recovery_action,
    stop_handoff_classes,
    with_governance_overlay,
)
from premath.harness.join.check import evaluate_join_check
from tests.harness.join_check_inputs import baseline
from tests.support.cli import SHARED
from tests.support.corpus import require_shared

VECTORS = SHARED / "conformance" / "capabilities"
VECTOR_IDS = [
    "golden/harness_boot_stop_recovery_accept",
    "adversarial/harness_bootstrap_mode_mismatch_reject",
    "adversarial/harness_stop_handoff_missing_lease_ref_reject",
    "adversarial/harness_stop_handoff_missing_lineage_ref_reject",
    "invariance/same_harness_recovery_local",
    "invariance/same_harness_recovery_external",
]


def _load(vector_id: str, name: str) -> dict[str, Any]:
    document: dict[str, Any] = orjson.loads(require_shared(VECTORS / vector_id / name).read_bytes())
    return document


@pytest.mark.parametrize("vector_id", VECTOR_IDS)
def test_capability_vector(vector_id):
    case, expect = _load(vector_id, "case.json"), _load(vector_id, "expect.json")
    outcome = evaluate_harness_runtime(case)
    assert outcome.result == expect["result"]
    if "expectedFailureClasses" in expect:
        assert sorted(set(outcome.gate_failure_classes)) == sorted(
            set(expect["expectedFailureClasses"])
        )


def test_invariance_pair_agrees():
    local, external = (
        evaluate_harness_runtime(_load(f"invariance/same_harness_recovery_{p}", "case.json"))
        for p in ("local", "external")
    )
    assert (local.kernel_verdict, local.gate_failure_classes) == (
        external.kernel_verdict,
        external.gate_failure_classes,
    )


def test_external_profile_without_the_claim_is_rejected():
    case = _load("invariance/same_harness_recovery_external", "case.json")
    del case["artifacts"]["claimedCapabilities"]
    assert evaluate_harness_runtime(case).gate_failure_classes == ("capability_not_claimed",)


def test_kernel_verdict_passes_through_when_the_harness_is_sound():
    case = _load("invariance/same_harness_recovery_local", "case.json")
    case["artifacts"]["input"] = {"kernelVerdict": "rejected", "gateFailureClasses": ["k.x"]}
    outcome = evaluate_harness_runtime(case)
    assert (outcome.result, outcome.gate_failure_classes) == ("rejected", ("k.x",))


def test_structural_violations_raise():
    case = _load("golden/harness_boot_stop_recovery_accept", "case.json")
    case["artifacts"]["harness"]["stop"]["leaseState"] = "lost"
    with pytest.raises(InputInvalid):
        evaluate_harness_runtime(case)


def test_bootstrap_mode_follows_the_session_state():
    assert expected_bootstrap_mode("stopped") == "resume"
    assert expected_bootstrap_mode("active") == "attach"
    with pytest.raises(InputInvalid, match="session state must be active or stopped"):
        expected_bootstrap_mode("paused")


@pytest.mark.parametrize(
    ("lease_state", "action"),
    [
        ("active", "issue_lease_renew"),
        ("stale", "issue_claim"),
        ("contended", "stop"),
        ("released", "issue_claim"),
        ("unleased", "issue_claim"),
    ],
)
def test_recovery_action_by_lease_state(lease_state, action):
    assert recovery_action(lease_state) == action


ISSUE = "bd-7"
LINEAGE = (
    f"ctx://issue/{ISSUE}/c1",
    f"cover://worker-loop/{ISSUE}/v1",
    f"refinement://worker-loop/{ISSUE}/worker.1/r1",
)


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ([lease_handoff_ref(ISSUE, "stale", "abc")], []),
        ([f"lease://handoff/{ISSUE}/stale/a/b", lease_handoff_ref(ISSUE, "stale", "x")], []),
        ([f"lease://handoff/{ISSUE}/stale/a/b"], ["harness_handoff_lease_ref_malformed"]),
        ([lease_handoff_ref(ISSUE, "active", "abc")], ["harness_handoff_lease_ref_mismatch"]),
        ([lease_handoff_ref("bd-8", "stale", "abc")], ["harness_handoff_lease_ref_mismatch"]),
        (["ciw://witness/x"], ["harness_handoff_lease_ref_missing"]),
        ([], ["harness_handoff_lease_ref_missing"]),
    ],
)
def test_lease_witness_ref(refs, expected):
    assert lease_witness_classes(ISSUE, "stale", refs) == expected


@pytest.mark.parametrize(
    ("bootstrap", "trajectory", "expected"),
    [
        (LINEAGE, LINEAGE[::-1], []),
        (LINEAGE, None, ["harness_lineage_ref_missing"]),
        ((), LINEAGE, ["harness_lineage_ref_missing"]),
        (LINEAGE[:2], LINEAGE[:2], ["harness_lineage_ref_missing"]),
        (
            (*LINEAGE, "ctx://issue/bd-7/bad ref"),
            (*LINEAGE, "ctx://issue/bd-7/bad ref"),
            ["harness_lineage_ref_malformed"],
        ),
        (
            (*LINEAGE, "ctx://issue/bd-8/c1"),
            (*LINEAGE, "ctx://issue/bd-8/c1"),
            ["harness_lineage_ref_mismatch"],
        ),
        (LINEAGE, (*LINEAGE, "ctx://issue/bd-7/c2"), ["harness_lineage_ref_mismatch"]),
    ],
)
def test_lineage_refs(bootstrap, trajectory, expected):
    assert lineage_classes(ISSUE, bootstrap, trajectory) == expected


def test_stop_handoff_reports_every_broken_rule():
    stop = StopHandoff(
        state_before="active",
        bootstrap_mode="resume",
        issue_id=ISSUE,
        lease_state="contended",
        session_state_after="active",
        recommended_action="issue_claim",
        step_kind="premath.harness.step.v2",
        bootstrap_lineage_refs=LINEAGE,
        trajectory_lineage_refs=(),
        witness_refs=(),
    )
    assert stop_handoff_classes(stop) == [
        "harness_bootstrap_mode_mismatch",
        "harness_handoff_lease_ref_missing",
        "harness_lineage_ref_missing",
        "harness_recovery_action_mismatch",
        "harness_stop_state_invalid",
        "harness_trajectory_kind_invalid",
    ]


PINNED = {
    "pinned": True,
    "packageRef": "policy/governance/v1",
    "expectedDigest": "sha256:abc",
    "boundDigest": "sha256:abc",
}
REGISTRY = {"profileOverlayClaims": [GOVERNANCE_PROFILE_CLAIM], "capabilities": []}


def test_registry_overlay_claims():
    assert overlay_claims(REGISTRY) == {GOVERNANCE_PROFILE_CLAIM}
    assert overlay_claims({}) == frozenset()


def test_unclaimed_overlay_leaves_the_input_alone():
    assert governance_profile([], PINNED) is None
    assert with_governance_overlay(baseline(), [], None) == baseline()


@pytest.mark.parametrize(
    ("provenance", "expected"),
    [
        (PINNED, []),
        (None, ["governance.policy_package_unpinned"]),
        ({**PINNED, "pinned": False}, ["governance.policy_package_unpinned"]),
        ({"pinned": True, "packageRef": "p"}, ["governance.policy_package_unpinned"]),
        ({**PINNED, "boundDigest": "sha256:def"}, ["governance.policy_package_mismatch"]),
    ],
)
def test_claimed_overlay_binds_provenance_and_fails_closed(provenance, expected):
    join_input = with_governance_overlay(baseline(), overlay_claims(REGISTRY), provenance)
    assert join_input["governanceProfile"]["claimId"] == GOVERNANCE_PROFILE_CLAIM
    assert join_input["governanceProfile"]["claimed"] is True
    assert evaluate_join_check(join_input)["failureClasses"] == expected
