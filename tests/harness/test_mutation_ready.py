"""MutationReady over a join-check result: ready only when every binding holds; a refusal is
a list of classes, never an exception."""

import copy
from typing import Any

import pytest

from premath.harness.join.check import evaluate_join_check
from premath.harness.join.mutation_ready import join_gate_fields, mutation_ready
from tests.harness.join_check_inputs import baseline, evidence

ACTIVE_POLICY = "mut.pol.v1"
WITNESS = ".premath/join-witnesses/call-1.0123456789abcdef.json"


@pytest.fixture
def accepted() -> dict[str, Any]:
    return evaluate_join_check(baseline())


def test_accepted_result_with_active_policy_and_witness_is_ready(accepted):
    assert mutation_ready(accepted, ACTIVE_POLICY, witness_ref=WITNESS) == (True, ())


def test_active_policy_is_compared_trimmed(accepted):
    assert mutation_ready(accepted, f" {ACTIVE_POLICY}\n", witness_ref=WITNESS) == (True, ())


def test_another_active_policy_refuses(accepted):
    assert mutation_ready(accepted, "mut.pol.v2", witness_ref=WITNESS) == (
        False,
        ("mutation.policy_digest_mismatch",),
    )
    assert mutation_ready(accepted, "  ", witness_ref=WITNESS)[1] == (
        "mutation.policy_digest_mismatch",
    )


@pytest.mark.parametrize("witness_ref", [None, "", "  "])
def test_unrecorded_witness_refuses(accepted, witness_ref):
    assert mutation_ready(accepted, ACTIVE_POLICY, witness_ref=witness_ref) == (
        False,
        ("mutation.use_evidence_missing",),
    )


def test_rejected_result_carries_its_classes():
    document = baseline()
    evidence(document)["toolUse"] = []
    rejected = evaluate_join_check(document)
    assert mutation_ready(rejected, ACTIVE_POLICY, witness_ref=WITNESS) == (
        False,
        ("tool.join_incomplete", "tool.use_missing"),
    )


def test_governance_rejection_blocks_although_the_structural_join_is_closed():
    document = baseline()
    document["governanceProfile"] = {"claimed": True}
    result = evaluate_join_check(document)
    assert result["witness"]["mutationInput"]["joinClosed"] is True
    assert mutation_ready(result, ACTIVE_POLICY, witness_ref=WITNESS) == (
        False,
        ("governance.policy_package_unpinned",),
    )


def test_structural_join_is_checked_even_on_an_accepted_document(accepted):
    tampered = copy.deepcopy(accepted)
    tampered["witness"]["mutationInput"]["joinClosed"] = False
    assert mutation_ready(tampered, ACTIVE_POLICY, witness_ref=WITNESS) == (
        False,
        ("tool.join_incomplete",),
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"missingRenderCallIds": ["tc-1"]}, ("context.injection_point_missing",)),
        ({"stateViewPresent": False}, ("context.injection_point_missing",)),
        ({"queueReductionPresent": False}, ("context.queue_policy_violation",)),
        ({"stateViewPolicyValid": False}, ("context.queue_policy_violation",)),
        ({}, ("context.queue_policy_violation",)),
    ],
)
def test_continuation_needs_ready_context(accepted, changes, expected):
    tampered = copy.deepcopy(accepted)
    tampered["witness"]["mutationInput"].update(continuationContextReady=False, **changes)
    assert mutation_ready(tampered, ACTIVE_POLICY, witness_ref=WITNESS) == (False, expected)


def test_context_is_not_needed_without_continuation(accepted):
    tampered = copy.deepcopy(accepted)
    tampered["witness"]["mutationInput"].update(
        continuationAllowed=False, continuationContextReady=False
    )
    assert mutation_ready(tampered, ACTIVE_POLICY, witness_ref=WITNESS) == (True, ())


@pytest.mark.parametrize("result", [{}, {"result": "accepted"}, {"witness": []}])
def test_malformed_results_are_refused_not_raised(result):
    ready, classes = mutation_ready(result, ACTIVE_POLICY, witness_ref=WITNESS)
    assert ready is False
    assert "mutation.use_evidence_missing" in classes


def test_several_failures_are_all_reported_sorted():
    document = baseline()
    evidence(document)["protocolState"]["stopReason"] = "refusal"
    result = evaluate_join_check(document)
    assert mutation_ready(result, "other", witness_ref=None) == (
        False,
        (
            "mutation.policy_digest_mismatch",
            "mutation.use_evidence_missing",
            "protocol.stop_reason_unhandled",
        ),
    )


def test_gate_fields_for_the_mutation_consumer(accepted):
    assert join_gate_fields(accepted, WITNESS) == {
        "joinClosed": True,
        "joinFailureClasses": [],
        "joinWitnessRef": WITNESS,
    }
    document = baseline()
    evidence(document)["toolResults"] = []
    rejected = evaluate_join_check(document)
    assert join_gate_fields(rejected, None) == {
        "joinClosed": False,
        "joinFailureClasses": [
            "tool.join_incomplete",
            "tool.result_missing",
            "tool.use_without_result",
        ],
    }
