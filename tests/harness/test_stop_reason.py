"""A coordinator's stop on failure says which (D35-3): workers failed, or only issues did."""

import pytest

from premath.harness.stop_reason import WorkerEnd, failure_stop

DRAINED = {"stoppedReason": "drained", "failedIssueIds": ["bd-10"], "closedIssueIds": ["bd-1"]}
STEP_FAILED = {"stoppedReason": "step_failed", "failedIssueIds": ["bd-9"], "closedIssueIds": []}


def test_every_worker_ending_zero_is_no_failure():
    assert failure_stop([WorkerEnd("w.1", 0, {"failedIssueIds": []})]) is None


def test_workers_that_ran_to_their_end_with_failed_issues_are_issues_failed():
    stop = failure_stop(
        [WorkerEnd("w.1", 1, DRAINED), WorkerEnd("w.2", 1, STEP_FAILED), WorkerEnd("w.3", 0, {})]
    )
    assert stop is not None
    assert (stop.reason, stop.exit_code) == ("issues_failed", 1)
    assert stop.summary == (
        "2 issues failed or escalated (bd-9, bd-10); every worker ran to its end"
    )


@pytest.mark.parametrize(
    ("end", "why", "code"),
    [
        (WorkerEnd("w.2", 1, None), "exit 1 without a report", 1),
        (
            WorkerEnd("w.2", 1, None, {"code": "io_error", "message": "clone failed"}),
            "clone failed",
            1,
        ),
        (
            WorkerEnd("w.2", 1, {"error": {"code": "internal_error", "message": "killed"}}),
            "killed",
            1,
        ),
        (WorkerEnd("w.2", 2, {"error": {"code": "usage_error", "message": "bad"}}), "bad", 2),
        (WorkerEnd("w.2", 1, {"failedIssueIds": []}), "exit 1", 1),
    ],
)
def test_a_worker_process_that_failed_wins_over_failed_issues(end, why, code):
    stop = failure_stop([WorkerEnd("w.1", 1, DRAINED), end])
    assert stop is not None
    assert (stop.reason, stop.exit_code, stop.summary) == (
        "worker_failed",
        code,
        f"1 worker failed (w.2: {why})",
    )
