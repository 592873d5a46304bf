"""One loop step end to end in-process, with real work/verify processes.

Each test reads what a user would: the issues file, the trajectory, the session and the ledger.
"""

from datetime import timedelta

import pytest

from premath.clock import FrozenClock, SystemClock
from premath.errors import ArtifactInvalid, InputInvalid, NotFound
from premath.harness.capabilities import lease_witness_classes, lineage_classes
from premath.harness.step import begin_step, claim_next_issue, finish_step, run_attempts, run_step
from premath.harness.worker import run_worker
from premath.issues.memory import check
from tests.harness.loop_support import (
    issue_rows,
    ledger,
    make_issues,
    py,
    session,
    trajectory,
    worker_config,
)
from tests.support.processes import wait_dead

CLOCK = SystemClock()


def test_success_closes_the_issue_and_records_every_artifact(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    cfg = worker_config(tmp_path, work_cmd=py("open('out.txt','w').write('x')"))
    report = run_step(cfg, 1, CLOCK)
    assert report is not None
    assert (report.outcome, report.result_class, report.failure_classes) == (
        "completed",
        "completed",
        (),
    )
    row = issue_rows(tmp_path)["bd-1"]
    assert (row["status"], "lease" in row) == ("closed", False)
    assert (tmp_path / "wt-w1" / "out.txt").read_text() == "x"
    (step,) = trajectory(tmp_path)
    assert (step["stepId"], step["issueId"], step["action"], step["resultClass"]) == (
        "w1.bd-1.1",
        "bd-1",
        "worker.loop",
        "completed",
    )
    refs = step["witnessRefs"]
    assert "worker://loop/w1/bd-1/completed" in refs
    assert lease_witness_classes("bd-1", "released", refs) == []
    assert any(ref.startswith("policy://worker-lane/instruction-linked/") for ref in refs)
    assert [ref.split("://")[0] for ref in step["lineageRefs"]] == ["cover", "ctx", "refinement"]
    state = session(tmp_path)
    assert (state["state"], state["issueId"], state["nextStep"]) == (
        "stopped",
        "bd-1",
        "claim next ready issue",
    )
    assert lineage_classes("bd-1", state["lineageRefs"], step["lineageRefs"]) == []
    (feature,) = ledger(tmp_path)["features"]
    assert (feature["featureId"], feature["status"]) == ("bd-1", "completed")


def test_commands_see_the_step_context_and_not_our_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PREMATH_SECRET_TEST", "leak")
    monkeypatch.setenv("PASSED_ON", "yes")
    make_issues(tmp_path, ["bd-1"])
    dump = py(
        "import os; open('env.txt','w').write(' '.join(f'{k}={os.environ.get(k)}' for k in "
        "['PREMATH_ISSUE_ID','PREMATH_WORKER_ID','PREMATH_LEASE_ID','PREMATH_SECRET_TEST','PASSED_ON']))"
    )
    cfg = worker_config(tmp_path, work_cmd=dump, pass_env=("PASSED_ON",))
    run_step(cfg, 1, CLOCK)
    assert (tmp_path / "wt-w1" / "env.txt").read_text() == (
        "PREMATH_ISSUE_ID=bd-1 PREMATH_WORKER_ID=w1 PREMATH_LEASE_ID=lease1_bd-1_w1 "
        "PREMATH_SECRET_TEST=None PASSED_ON=yes"
    )


def test_failing_verify_marks_the_issue_blocked_per_policy(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    cfg = worker_config(tmp_path, verify_cmd="echo 'tests failed' >&2; exit 1")
    report = run_step(cfg, 1, CLOCK)
    assert report is not None
    assert (report.outcome, report.result_class, report.failure_classes) == (
        "failed",
        "escalated_mark_blocked",
        ("check_failed",),
    )
    assert len(report.attempts) == 1  # semantic_no_retry: one attempt
    row = issue_rows(tmp_path)["bd-1"]
    assert (row["status"], "lease" in row) == ("blocked", False)
    assert "[harness-escalation]" in row["notes"]
    assert "ruleId: semantic_no_retry" in row["notes"]
    (step,) = trajectory(tmp_path)
    assert "failure://check_failed" in step["witnessRefs"]
    assert "escalation://mark_blocked/applied/bd-1" in step["witnessRefs"]
    assert session(tmp_path)["summary"].endswith("failureClasses=check_failed")
    assert ledger(tmp_path)["features"][0]["status"] == "blocked"


def test_hanging_work_is_killed_retried_then_escalated_with_a_checkable_issue(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    marker = tmp_path / "grandchild.pid"
    hang = f"sleep 60 & echo $! > {marker}; wait"
    cfg = worker_config(tmp_path, work_cmd=hang, command_timeout_s=0.3)
    report = run_step(cfg, 1, CLOCK)
    assert report is not None
    assert [a.failure_classes for a in report.attempts] == [("gate_timeout",)] * 3
    assert [a.decision.retry for a in report.attempts] == [True, True, False]
    assert report.result_class == "escalated_issue_discover"
    assert wait_dead(int(marker.read_text()))
    rows = issue_rows(tmp_path)
    assert rows["bd-1"]["status"] == "blocked"
    (created,) = [row for issue_id, row in rows.items() if issue_id != "bd-1"]
    assert created["title"] == "[HarnessEscalation] worker-loop retry exhausted (gate_timeout)"
    assert created["dependencies"] == [
        {"issue_id": created["id"], "depends_on_id": "bd-1", "type": "discovered-from"}
    ]
    graph = check(
        str(tmp_path / ".premath/issues.jsonl"), now=CLOCK.now(), note_warn_threshold=2000
    )
    assert (graph.accepted, graph.errors) == (True, [])


def test_the_loop_leaves_the_escalation_it_filed_to_people(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    cfg = worker_config(tmp_path, work_cmd="sleep 5", command_timeout_s=0.2)
    first = run_step(cfg, 1, CLOCK)
    assert first is not None
    assert first.escalation is not None
    filed = first.escalation.created_issue_id
    assert run_step(cfg, 2, CLOCK) is None  # never claimed by a worker (D30a-1)
    rows = issue_rows(tmp_path)
    assert len(rows) == 2
    assert (rows[filed]["status"], "lease" in rows[filed]) == ("open", False)


def test_escalating_an_escalation_issue_blocks_instead_of_discovering(tmp_path):
    from premath.harness.escalation import escalate
    from premath.harness.retry import decide

    make_issues(tmp_path, ["bd-1"])
    cfg = worker_config(tmp_path, work_cmd="sleep 5", command_timeout_s=0.2)
    first = run_step(cfg, 1, CLOCK)
    assert first is not None
    assert first.escalation is not None
    filed = first.escalation.created_issue_id
    decided = decide(None, ["gate_timeout"], 3)
    assert decided.decision.escalation_action == "issue_discover"
    result = escalate(
        issues_path=str(tmp_path / ".premath" / "issues.jsonl"),
        issue_id=filed,
        scope="harness.loop",
        policy=decided.policy,
        decision=decided.decision,
        witness_ref="w",
        now=CLOCK.now(),
        timeout_s=5,
    )
    assert (result.action, result.created_issue_id) == ("mark_blocked", None)
    rows = issue_rows(tmp_path)
    assert len(rows) == 2
    assert rows[filed]["status"] == "blocked"


def test_rejected_join_check_mutates_nothing_and_records_the_classes(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    cfg = worker_config(tmp_path, work_cmd=py("print('x' * 5000)"), output_cap=100)
    claim = claim_next_issue(cfg, 1, CLOCK)
    assert claim is not None
    begin_step(cfg, claim, CLOCK.now())
    issues_file = tmp_path / ".premath" / "issues.jsonl"
    claimed_bytes = issues_file.read_bytes()
    attempts = run_attempts(cfg, claim, CLOCK)
    report = finish_step(cfg, claim, attempts, CLOCK)
    assert issues_file.read_bytes() == claimed_bytes
    assert len(attempts) == 1
    assert attempts[0].join_result == "rejected"
    assert attempts[0].mutation_ready is False
    assert report.failure_classes == ("tool.response_truncation_policy_violation",)
    assert report.escalation is None
    assert report.result_class == "retry_needed_lease_active"
    (step,) = trajectory(tmp_path)
    assert "failure://tool.response_truncation_policy_violation" in step["witnessRefs"]
    state = session(tmp_path)
    assert "failure://tool.response_truncation_policy_violation" in state["witnessRefs"]
    assert "failureClasses=tool.response_truncation_policy_violation" in state["summary"]
    assert state["nextStep"].startswith("mutation refused by the join gate")


def test_lease_lost_mid_step_is_not_closed_by_the_loser(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    issues = tmp_path / ".premath" / "issues.jsonl"
    # The work command is another worker reclaiming after the lease expired (a clock 2 h on).
    steal = py(
        "from datetime import timedelta; from premath.clock import SystemClock; "
        "from premath.issues.memory import claim; "
        f"claim({str(issues)!r}, 'bd-1', 'thief', now=SystemClock().now() + timedelta(hours=2), "
        "timeout_s=5)"
    )
    cfg = worker_config(tmp_path, work_cmd=steal, pass_env=("PYTHONPATH",))
    report = run_step(cfg, 1, CLOCK)
    assert report is not None
    assert (report.outcome, report.failure_classes) == ("failed", ("lease_lost",))
    assert report.result_class == "retry_needed_lease_contended"
    row = issue_rows(tmp_path)["bd-1"]
    assert (row["status"], row["assignee"], row["lease"]["owner"]) == (
        "in_progress",
        "thief",
        "thief",
    )


def test_corrupt_session_gives_the_lease_back_and_records_the_error(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    (tmp_path / ".premath" / "harness_session.json").write_text("{bad json")
    cfg = worker_config(tmp_path)
    with pytest.raises(ArtifactInvalid, match="failed to parse harness session artifact"):
        run_worker(cfg, max_steps=1, continue_on_failure=False, clock=CLOCK)
    row = issue_rows(tmp_path)["bd-1"]
    assert (row["status"], "lease" in row, "assignee" in row) == ("open", False, False)
    (step,) = trajectory(tmp_path)
    assert (step["stepId"], step["resultClass"], step["witnessRefs"]) == (
        "w1.runtime.1",
        "failed_runtime_error",
        ["error://artifact_invalid"],
    )


def test_corrupt_ledger_gives_the_lease_back(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    (tmp_path / ".premath" / "harness_feature_ledger.json").write_text("[]")
    with pytest.raises(ArtifactInvalid):
        run_step(worker_config(tmp_path), 1, CLOCK)
    assert issue_rows(tmp_path)["bd-1"]["status"] == "open"


def test_missing_issues_file_is_refused_before_anything_is_written(tmp_path):
    cfg = worker_config(tmp_path)
    with pytest.raises(NotFound, match="issues file not found"):
        run_worker(cfg, max_steps=1, continue_on_failure=False, clock=CLOCK)
    assert not (tmp_path / ".premath").exists()


def test_interrupted_step_is_superseded_then_its_stale_lease_reclaimed(tmp_path):
    make_issues(tmp_path, ["bd-1", "bd-2"])
    cfg = worker_config(tmp_path)
    first = claim_next_issue(cfg, 1, CLOCK)
    assert first is not None
    assert first.issue_id == "bd-1"
    begin_step(cfg, first, CLOCK.now())  # ... and the worker died here
    second = run_step(cfg, 2, CLOCK)
    assert second is not None
    assert second.claim.issue_id == "bd-2"
    statuses = {f["featureId"]: f["status"] for f in ledger(tmp_path)["features"]}
    assert statuses == {"bd-1": "blocked", "bd-2": "completed"}
    assert issue_rows(tmp_path)["bd-1"]["status"] == "in_progress"
    later = FrozenClock(CLOCK.now() + timedelta(hours=2))
    third = run_step(worker_config(tmp_path, "w2"), 1, later)
    assert third is not None
    assert (third.claim.issue_id, third.outcome) == ("bd-1", "completed")
    assert issue_rows(tmp_path)["bd-1"]["status"] == "closed"


def test_worker_stops_at_first_failure_unless_told_to_continue(tmp_path):
    make_issues(tmp_path, ["bd-1", "bd-2", "bd-3"])
    fail_first = 'test "$PREMATH_ISSUE_ID" != bd-1'
    cfg = worker_config(tmp_path, verify_cmd=fail_first)
    stopped = run_worker(cfg, max_steps=5, continue_on_failure=False, clock=CLOCK)
    assert (stopped.exit_code, stopped.stopped_reason, len(stopped.steps)) == (1, "step_failed", 1)
    kept = run_worker(cfg, max_steps=5, continue_on_failure=True, clock=CLOCK)
    assert [s.claim.issue_id for s in kept.steps] == ["bd-2", "bd-3"]
    assert (kept.exit_code, kept.stopped_reason) == (0, "no_ready_issue")


def test_another_workers_feature_in_progress_is_a_clear_error_not_a_clobber(tmp_path):
    make_issues(tmp_path, ["bd-1", "bd-2"])
    other = worker_config(tmp_path, "w-other")
    first = claim_next_issue(other, 1, CLOCK)
    assert first is not None
    begin_step(other, first, CLOCK.now())
    with pytest.raises(InputInvalid, match="already has feature bd-1 in progress"):
        run_step(worker_config(tmp_path, "w1"), 1, CLOCK)
    rows = issue_rows(tmp_path)
    assert (rows["bd-2"]["status"], "lease" in rows["bd-2"]) == ("open", False)
    assert ledger(tmp_path)["features"][0]["status"] == "in_progress"


def test_backoff_is_waited_between_attempts_then_retries_escalate(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    cfg = worker_config(
        tmp_path, verify_cmd="echo 'flaky_io: disk hiccup' >&2; exit 1", backoff_scale=1.0
    )
    waits: list[float] = []
    report = run_step(cfg, 1, CLOCK, sleep=waits.append)
    assert report is not None
    assert waits == [0.5, 1.0]  # exponential_short, attempts 1 and 2 of 3
    assert [a.failure_classes for a in report.attempts] == [("flaky_io", "check_failed")] * 3
    assert report.result_class == "escalated_issue_discover"
    notes = issue_rows(tmp_path)["bd-1"]["notes"]
    assert "ruleId: transient_retry" in notes
    assert "attempt: 3/3" in notes


@pytest.mark.parametrize(
    ("verify", "classes", "result_class"),
    [
        (
            py("import json; json.dump({'verdictClass': 'accepted'}, open('w.json', 'w'))"),
            [()],
            "completed",
        ),
        ("true", [("pipeline_missing_witness",)] * 2, "escalated_issue_discover"),
        (
            py(
                "import json,sys; json.dump({'verdictClass': 'rejected', 'failureClasses': "
                "['proposal_unbound_policy']}, open('w.json', 'w')); sys.exit(1)"
            ),
            [("proposal_unbound_policy", "check_failed")],
            "escalated_mark_blocked",
        ),
    ],
    ids=["accepted", "missing-operational", "semantic"],
)
def test_verify_witness_classes_are_the_verify_outcome(tmp_path, verify, classes, result_class):
    make_issues(tmp_path, ["bd-1"])
    cfg = worker_config(tmp_path, verify_cmd=verify, verify_witness="w.json")
    report = run_step(cfg, 1, CLOCK)
    assert report is not None
    assert [a.failure_classes for a in report.attempts] == classes
    assert report.result_class == result_class


def test_a_stale_verify_witness_from_an_earlier_step_counts_as_missing(tmp_path):
    make_issues(tmp_path, ["bd-1", "bd-2"])
    writes = py("import json; json.dump({'verdictClass': 'accepted'}, open('w.json', 'w'))")
    first = run_step(worker_config(tmp_path, verify_cmd=writes, verify_witness="w.json"), 1, CLOCK)
    assert first is not None
    assert first.outcome == "completed"
    lazy = worker_config(tmp_path, verify_cmd="true", verify_witness="w.json")
    second = run_step(lazy, 2, CLOCK)
    assert second is not None
    assert second.attempts[0].failure_classes == ("pipeline_missing_witness",)


def test_issue_ids_cannot_steer_log_paths_out_of_the_steps_folder(tmp_path):
    make_issues(tmp_path, ["../../escape"])
    report = run_step(worker_config(tmp_path, verify_cmd="exit 1"), 1, CLOCK)
    assert report is not None
    assert report.step_witness_ref == ".premath/harness_steps/w1..._.._escape.1/step.json"
    assert not (tmp_path.parent / "escape.1").exists()
