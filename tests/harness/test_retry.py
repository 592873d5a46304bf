"""Retry policy: the shipped file, the checks at load, decisions, classification and backoff.

Examples are the reference's (issue-memory-and-loops.md §B9 and its test inventory §C).
"""

import copy
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from premath.harness.retry import (
    BUILTIN_POLICY_PATH,
    RetryPolicyInvalid,
    backoff_delay_s,
    classify_failure_classes,
    failure_classes_from_output,
    failure_classes_from_witness_path,
    failure_classes_from_witness_payload,
    known_failure_classes,
    load_retry_policy,
    parse_retry_policy,
    policy_digest,
    resolve_retry_decision,
)

REPO_POLICY = Path(__file__).resolve().parents[2] / "policies/control/harness-retry-policy-v1.json"
DIGEST = "pol1_85f35a1dd21bbfd1bd8c0b1e999303dba5f905e75ffe7eb8be25d581296ec0c7"


@pytest.fixture(scope="module")
def policy():
    return load_retry_policy(str(REPO_POLICY))


@pytest.fixture
def payload():
    return orjson.loads(REPO_POLICY.read_bytes())


def test_repository_policy_loads_with_the_reference_digest(policy):
    assert (policy.policy_id, policy.policy_digest) == ("policy.harness.retry.v1", DIGEST)
    assert [rule.rule_id for rule in policy.rules] == [
        "transient_retry",
        "operational_retry",
        "governance_no_retry",
        "kcir_mapping_no_retry",
        "semantic_no_retry",
    ]
    assert policy.default_rule.rule_id == "default"


def test_shipped_copy_is_byte_identical_to_the_repository_policy():
    assert BUILTIN_POLICY_PATH.read_bytes() == REPO_POLICY.read_bytes()


def test_default_path_falls_back_to_the_shipped_policy(workdir):
    assert load_retry_policy().policy_path == str(BUILTIN_POLICY_PATH)


def test_semantic_class_does_not_retry_and_marks_blocked(policy):
    decision = resolve_retry_decision(policy, ["check_failed"], 1)
    assert (
        decision.retry,
        decision.max_attempts,
        decision.rule_id,
        decision.escalation_action,
    ) == (
        False,
        1,
        "semantic_no_retry",
        "mark_blocked",
    )


def test_operational_class_retries_then_escalates_with_issue_discover(policy):
    first = resolve_retry_decision(policy, ["pipeline_missing_witness"], 1)
    second = resolve_retry_decision(policy, ["pipeline_missing_witness"], 2)
    assert (first.retry, first.max_attempts, first.rule_id) == (True, 2, "operational_retry")
    assert (second.retry, second.escalation_action) == (False, "issue_discover")


def test_first_class_with_a_rule_wins_in_input_order(policy):
    decision = resolve_retry_decision(
        policy, ["proposal_binding_mismatch", "pipeline_missing_witness"], 1
    )
    assert (decision.rule_id, decision.retry, decision.escalation_action) == (
        "semantic_no_retry",
        False,
        "mark_blocked",
    )
    skipped = resolve_retry_decision(policy, ["zzz", "pipeline_missing_witness", "check_failed"], 1)
    assert (skipped.rule_id, skipped.matched_failure_class, skipped.retry) == (
        "operational_retry",
        "pipeline_missing_witness",
        True,
    )


def test_duplicate_classes_are_deduplicated(policy):
    klass = "kcir_mapping_legacy_encoding_authority_violation"
    decision = resolve_retry_decision(policy, [klass, klass], 1)
    assert (decision.rule_id, decision.failure_classes) == ("kcir_mapping_no_retry", (klass,))


def test_transient_class_retries_until_its_third_attempt(policy):
    assert resolve_retry_decision(policy, ["gate_timeout"], 1).retry is True
    last = resolve_retry_decision(policy, ["gate_timeout"], 3)
    assert (last.retry, last.escalation_action, last.max_attempts) == (False, "issue_discover", 3)


def test_unknown_class_takes_the_default_rule(policy):
    decision = resolve_retry_decision(policy, ["unknown_x"], 1)
    assert (decision.rule_id, decision.retry, decision.escalation_action) == (
        "default",
        False,
        "stop",
    )


def test_no_class_is_missing_failure_class_under_its_own_rule(policy):
    """D5-2: the reference named the class but applied the default rule."""
    decision = resolve_retry_decision(policy, [], 1)
    assert (decision.matched_failure_class, decision.rule_id) == (
        "pipeline_missing_failure_class",
        "operational_retry",
    )


def test_attempt_below_one_is_refused(policy):
    with pytest.raises(Exception, match="attempt must be >= 1"):
        resolve_retry_decision(policy, ["check_failed"], 0)


def test_witness_payload_classes_are_the_sorted_union():
    payload = {
        "verdictClass": "rejected",
        "failureClasses": ["check_failed"],
        "operationalFailureClasses": ["check_failed", "pipeline_missing_witness"],
        "semanticFailureClasses": ["proposal_unbound_policy"],
    }
    assert failure_classes_from_witness_payload(payload) == (
        "check_failed",
        "pipeline_missing_witness",
        "proposal_unbound_policy",
    )
    assert failure_classes_from_witness_payload({"verdictClass": "accepted"}) == ()
    assert failure_classes_from_witness_payload([]) == ("pipeline_invalid_witness_shape",)


def test_witness_path_missing_invalid_and_unlabelled(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    unlabelled = tmp_path / "rejected.json"
    unlabelled.write_text('{"verdictClass":"rejected"}')
    assert failure_classes_from_witness_path(tmp_path / "none.json") == (
        "pipeline_missing_witness",
    )
    assert failure_classes_from_witness_path(bad) == ("pipeline_invalid_witness_json",)
    assert failure_classes_from_witness_path(unlabelled) == ("pipeline_missing_failure_class",)


def test_process_output_classes_stderr_first():
    stderr = '{"failureClasses":["z_y","a_b"],"failureClass":"q_r"}'
    stdout = "plain text check_failed: x\nfoo_bar:baz"
    assert failure_classes_from_output(stdout, stderr) == (
        "q_r",
        "z_y",
        "a_b",
        "check_failed",
        "foo_bar",
    )
    assert failure_classes_from_output(
        '{"reasonClass":"required_witness_decide_invalid"}',
        "required_decision_verify_invalid: msg",
    ) == ("required_decision_verify_invalid", "required_witness_decide_invalid")


def test_process_classes_come_before_witness_classes():
    assert classify_failure_classes(
        ["proposal_binding_mismatch"], ["pipeline_missing_witness", "proposal_binding_mismatch"]
    ) == ("proposal_binding_mismatch", "pipeline_missing_witness")
    assert classify_failure_classes([], []) == ("pipeline_missing_failure_class",)


def test_only_policy_classes_count_from_free_text(policy):
    """D5-3: `issue_id: bd-1` in a log is not a failure class."""
    found = failure_classes_from_output("issue_id: bd-1\ngate_timeout: upstream slow", "")
    assert found == ("issue_id", "gate_timeout")
    assert known_failure_classes(policy, found) == ("gate_timeout",)


@pytest.mark.parametrize(
    ("backoff", "attempt", "seconds"),
    [
        ("none", 1, 0.0),
        ("fixed_short", 1, 1.0),
        ("fixed_short", 4, 1.0),
        ("exponential_short", 1, 0.5),
        ("exponential_short", 2, 1.0),
        ("exponential_short", 3, 2.0),
        ("exponential_short", 10, 8.0),
    ],
)
def test_backoff_delays(backoff, attempt, seconds):
    assert backoff_delay_s(backoff, attempt) == seconds
    assert backoff_delay_s(backoff, attempt, scale=0.5) == seconds / 2


def _load(payload, tmp_path):
    path = tmp_path / "policy.json"
    path.write_bytes(orjson.dumps(payload))
    return load_retry_policy(str(path))


def _redigest(payload):
    payload["policyDigest"] = policy_digest(payload)
    return payload


@pytest.mark.parametrize(
    ("mutate", "failure_class", "reason"),
    [
        (lambda p: p.update(schema=2), "retry_policy_invalid_shape", "schema must be 1"),
        (lambda p: p.update(policyKind="x"), "retry_policy_invalid_shape", "policyKind"),
        (
            lambda p: p.update(rules=[]),
            "retry_policy_invalid_shape",
            "rules must be a non-empty list",
        ),
        (
            lambda p: p["rules"][0].update(maxAttempts=True),
            "retry_policy_invalid_shape",
            "rules[0].maxAttempts must be an integer >= 1",
        ),
        (
            lambda p: p["rules"][1].update(escalationAction="page_someone"),
            "retry_policy_invalid_shape",
            "rules[1].escalationAction must be one of issue_discover, mark_blocked, stop",
        ),
        (
            lambda p: p["rules"][1].update(backoffClass="forever"),
            "retry_policy_invalid_shape",
            "rules[1].backoffClass",
        ),
        (
            lambda p: p["rules"][1].update(ruleId="transient_retry"),
            "retry_policy_invalid_shape",
            "duplicate ruleId: transient_retry",
        ),
        (
            lambda p: p["rules"][1]["failureClasses"].append("gate_timeout"),
            "retry_policy_invalid_shape",
            "failure class gate_timeout is bound by both",
        ),
        (
            lambda p: p["rules"][0].update(failureClasses=[" ", 3]),
            "retry_policy_invalid_shape",
            "rules[0].failureClasses must be a non-empty list",
        ),
    ],
)
def test_shape_errors_name_the_field(payload, tmp_path, mutate, failure_class, reason):
    broken = copy.deepcopy(payload)
    mutate(broken)
    with pytest.raises(RetryPolicyInvalid) as caught:
        _load(_redigest(broken), tmp_path)
    assert caught.value.failure_class == failure_class
    assert reason in caught.value.message


def test_digest_mismatch_and_prefix(payload, tmp_path):
    payload["policyId"] = "policy.harness.retry.v2"
    with pytest.raises(RetryPolicyInvalid, match=r"policyDigest mismatch \(expected pol1_"):
        _load(payload, tmp_path)
    payload["policyDigest"] = "sha256:abc"
    with pytest.raises(RetryPolicyInvalid, match="retry_policy_invalid_digest"):
        _load(payload, tmp_path)


def test_missing_and_invalid_json(tmp_path):
    with pytest.raises(RetryPolicyInvalid, match="retry_policy_missing"):
        load_retry_policy(str(tmp_path / "none.json"))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RetryPolicyInvalid, match="retry_policy_invalid_json"):
        load_retry_policy(str(tmp_path / "bad.json"))


def test_default_rule_id_can_be_named(payload):
    payload["defaultRule"]["ruleId"] = "fallback"
    assert parse_retry_policy(_redigest(payload), "p").default_rule.rule_id == "fallback"


def test_cli_show_decide_and_classify(cli_run, tmp_path):
    shown = cli_run("harness-policy", "show", "--json")
    assert shown.exit_code == 0
    assert shown.json["policyDigest"] == DIGEST
    assert shown.json["rulesByFailureClass"]["gate_timeout"] == "transient_retry"
    decided = cli_run(
        "harness-policy", "decide", "--failure-class", "gate_timeout", "--attempt", "2", "--json"
    )
    assert decided.json["decision"]["retry"] is True
    assert decided.json["backoffSeconds"] == 1.0
    (tmp_path / "err.txt").write_text("check_failed: verify rejected\n")
    classified = cli_run(
        "harness-policy", "classify", "--stderr-file", str(tmp_path / "err.txt"), "--json"
    )
    assert classified.json["failureClasses"] == ["check_failed"]
    assert classified.json["decision"]["escalationAction"] == "mark_blocked"


def test_cli_bad_policy_is_an_error_not_a_traceback(cli_run, tmp_path):
    (tmp_path / "p.json").write_text("[]")
    result = cli_run("harness-policy", "show", "--policy", str(tmp_path / "p.json"), "--json")
    assert result.exit_code == 1
    assert result.json["error"]["code"] == "artifact_invalid"
    assert "retry_policy_invalid_shape: policy root must be an object" in result.stderr


_CLASSES = st.sampled_from(
    ["gate_timeout", "check_failed", "pipeline_missing_witness", "unknown_x", "flaky_io", " ", ""]
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(classes=st.lists(_CLASSES, max_size=6), attempt=st.integers(min_value=1, max_value=5))
def test_decision_follows_the_first_bound_class(policy, classes, attempt):
    decision = resolve_retry_decision(policy, classes, attempt)
    cleaned = [c.strip() for c in classes if c.strip()] or ["pipeline_missing_failure_class"]
    bound = [c for c in cleaned if policy.rule_for(c) is not None]
    rule = policy.rule_for(bound[0]) if bound else policy.default_rule
    assert decision.rule_id == rule.rule_id
    assert decision.matched_failure_class == (bound[0] if bound else cleaned[0])
    assert decision.retry is (attempt < rule.max_attempts)
    assert decision.failure_classes == tuple(sorted(set(cleaned)))
