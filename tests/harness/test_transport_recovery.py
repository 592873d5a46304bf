"""`--host-action-transport mcp`: a failed step recovers its lease through the transport
dispatch and records `transport://dispatch/<action>/<digest>` refs, as the reference does."""

from premath.clock import SystemClock
from premath.harness.step import begin_step, claim_next_issue, finish_step, run_attempts
from tests.harness.loop_support import (
    issue_rows,
    make_issues,
    py,
    session,
    trajectory,
    worker_config,
)

CLOCK = SystemClock()
RENEW_REF = (
    "transport://dispatch/issue.lease_renew/"
    "ts1_600bd17cab2fa723f590da173041757ccea9299516d81db48baa99fb5754e1bf"
)


def failed_step(tmp_path, **overrides):
    """A step refused by the join gate (no escalation): the worker's lease is still active."""
    make_issues(tmp_path, ["bd-1"])
    cfg = worker_config(tmp_path, work_cmd=py("print('x' * 5000)"), output_cap=100, **overrides)
    claim = claim_next_issue(cfg, 1, CLOCK)
    assert claim is not None
    begin_step(cfg, claim, CLOCK.now())
    return finish_step(cfg, claim, run_attempts(cfg, claim, CLOCK), CLOCK)


def test_active_lease_is_renewed_through_the_transport(tmp_path):
    report = failed_step(tmp_path, host_action_transport="mcp")
    assert report.result_class == "retry_needed_lease_active_transport_dispatched"
    assert report.transport_refs == (RENEW_REF,)
    (step,) = trajectory(tmp_path)
    assert step["resultClass"] == "retry_needed_lease_active_transport_dispatched"
    assert RENEW_REF in step["witnessRefs"]
    assert RENEW_REF in session(tmp_path)["witnessRefs"]
    lease = issue_rows(tmp_path)["bd-1"]["lease"]
    assert (lease["owner"], "renewed_at" in lease) == ("w1", True)


def test_without_the_flag_recovery_stays_in_process(tmp_path):
    """D5-12: no transport hop, no transport ref."""
    report = failed_step(tmp_path)
    assert report.result_class == "retry_needed_lease_active"
    (step,) = trajectory(tmp_path)
    assert not [ref for ref in step["witnessRefs"] if ref.startswith("transport://")]
    assert "renewed_at" not in issue_rows(tmp_path)["bd-1"]["lease"]
