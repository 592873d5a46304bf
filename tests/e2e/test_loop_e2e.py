"""The loops with real processes: parallel workers, escalation, a worker killed mid-step."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from premath.clock import FrozenClock, SystemClock
from premath.harness.worker import run_worker
from tests.harness.loop_support import issue_rows, make_issues, trajectory, worker_config
from tests.support.cli import run_premath
from tests.support.processes import wait_dead

pytestmark = pytest.mark.slow


def _forty_issues_with_dependencies(root: Path) -> dict[str, list[str]]:
    ids = [f"bd-{n}" for n in range(1, 41)]
    blocks = {f"bd-{n}": [f"bd-{n - 4}"] for n in range(5, 41)}
    blocks["bd-40"].append("bd-13")
    make_issues(root, ids, blocks)
    return blocks


def test_four_parallel_workers_drain_forty_issues_once_each(tmp_path):
    blocks = _forty_issues_with_dependencies(tmp_path)
    for k in range(1, 5):
        (tmp_path / f"w{k}").mkdir()
    worktrees = [arg for k in range(1, 5) for arg in ("--worktree", f"w{k}")]
    result = run_premath(
        "harness-loop",
        "coordinator",
        *worktrees,
        "--rounds",
        "40",
        "--max-steps-per-worker",
        "40",
        "--work-cmd",
        "true",
        "--verify-cmd",
        "true",
        "--json",
        cwd=tmp_path,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr.decode()
    report = orjson.loads(result.stdout)
    assert (report["closedCount"], report["failedCount"], report["exitCode"]) == (40, 0, 0)
    closed = [i for r in report["rounds"] for w in r["workers"] for i in w["closedIssueIds"]]
    assert sorted(closed) == sorted(f"bd-{n}" for n in range(1, 41))
    rows = issue_rows(tmp_path)
    assert {row["status"] for row in rows.values()} == {"closed"}
    assert not any("lease" in row for row in rows.values())
    steps = trajectory(tmp_path)
    assert Counter(step["issueId"] for step in steps) == Counter(closed)
    assert {step["resultClass"] for step in steps} == {"completed"}
    assert len({step["stepId"] for step in steps}) == 40
    # A dependent is claimed only after its blockers closed (compared at whole seconds).
    started = {step["issueId"]: step["startedAt"][:19] for step in steps}
    closed_at = {issue_id: row["closed_at"][:19] for issue_id, row in rows.items()}
    for issue_id, blockers in blocks.items():
        assert all(started[issue_id] >= closed_at[b] for b in blockers), issue_id
    kpi = run_premath("harness-kpi", "--json", cwd=tmp_path)
    document = orjson.loads(kpi.stdout)
    assert document["decision"]["state"] == "pass"
    assert document["counts"]["completedRows"] == 40
    workers = {step["stepId"].rsplit(".", 2)[0] for step in steps}
    assert document["counts"]["workerIds"] == sorted(workers)
    assert set(workers) <= {f"worker.{k}" for k in range(1, 5)}


def test_worker_process_with_failing_verify_escalates_per_policy(tmp_path):
    make_issues(tmp_path, ["bd-1", "bd-2"])
    result = run_premath(
        "harness-loop",
        "worker",
        "--worker-id",
        "w1",
        "--max-steps",
        "5",
        "--verify-cmd",
        "echo 'check_failed: 2 tests failed' >&2; exit 1",
        "--json",
        cwd=tmp_path,
    )
    assert result.returncode == 1
    report = orjson.loads(result.stdout)
    assert (report["failedIssueIds"], report["stoppedReason"]) == (["bd-1"], "step_failed")
    (step,) = report["steps"]
    assert step["escalation"]["action"] == "mark_blocked"
    rows = issue_rows(tmp_path)
    assert (rows["bd-1"]["status"], rows["bd-2"]["status"]) == ("blocked", "open")
    assert [row["resultClass"] for row in trajectory(tmp_path)] == ["escalated_mark_blocked"]
    assert b"work/verify failed for bd-1" in result.stderr


def _wait_for(path: Path, timeout_s: float = 30.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def test_worker_killed_mid_step_leaves_a_stale_lease_that_a_later_worker_reclaims(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    (tmp_path / "wt").mkdir()
    pid_file = tmp_path / "work.pid"
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "premath",
            "harness-loop",
            "worker",
            "--worker-id",
            "w1",
            "--worktree-root",
            "wt",
            "--lease-ttl-seconds",
            "30",
            "--work-cmd",
            f"echo $$ > {pid_file}; exec sleep 60",
            "--verify-cmd",
            "true",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    work_pid = int(_wait_for(pid_file))
    try:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        os.kill(work_pid, signal.SIGKILL)
    row = issue_rows(tmp_path)["bd-1"]
    assert (row["status"], row["lease"]["owner"]) == ("in_progress", "w1")
    assert trajectory(tmp_path) == []
    later = FrozenClock(SystemClock().now() + timedelta(minutes=5))
    outcome = run_worker(
        worker_config(tmp_path, "w2"), max_steps=2, continue_on_failure=False, clock=later
    )
    assert [(s.claim.issue_id, s.outcome) for s in outcome.steps] == [("bd-1", "completed")]
    row = issue_rows(tmp_path)["bd-1"]
    assert (row["status"], row["assignee"], "lease" in row) == ("closed", "w2", False)
    (step,) = trajectory(tmp_path)
    assert (step["stepId"], step["resultClass"]) == ("w2.bd-1.1", "completed")


def _one_worker_coordinator(root: Path) -> subprocess.CompletedProcess[bytes]:
    return run_premath(
        "harness-loop",
        "coordinator",
        "--worktree",
        "w1",
        "--verify-cmd",
        "true",
        "--json",
        cwd=root,
    )


def test_coordinator_without_worktrees_is_a_usage_error(tmp_path):
    result = run_premath(
        "harness-loop", "coordinator", "--json", cwd=tmp_path, env={"PREMATH_WORKTREES": ""}
    )
    assert result.returncode == 2
    assert orjson.loads(result.stdout)["error"]["code"] == "usage_error"
    assert b"provide at least one --worktree (or PREMATH_WORKTREES)" in result.stderr


def test_coordinator_reports_a_worker_runtime_error_without_a_traceback(tmp_path):
    (tmp_path / "w1").mkdir()
    result = _one_worker_coordinator(tmp_path)
    assert result.returncode == 1
    assert b"error: issues file not found" in result.stderr
    make_issues(tmp_path, ["bd-1"])
    (tmp_path / ".premath" / "harness_session.worker.1.json").write_text("{corrupt")
    failed = _one_worker_coordinator(tmp_path)
    assert failed.returncode == 1
    (worker,) = orjson.loads(failed.stdout)["rounds"][0]["workers"]
    assert worker["error"]["code"] == "artifact_invalid"
    assert b"Traceback" not in failed.stderr
    assert issue_rows(tmp_path)["bd-1"]["status"] == "open"


def test_worker_past_its_deadline_stops_its_command_and_gives_the_lease_back(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    (tmp_path / "w1").mkdir()
    pid_file = tmp_path / "work.pid"
    result = run_premath(
        "harness-loop",
        "coordinator",
        "--worktree",
        "w1",
        "--worker-timeout-seconds",
        "2",
        "--work-cmd",
        f"sleep 60 & echo $! > {pid_file}; wait",
        "--verify-cmd",
        "true",
        "--json",
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 1
    (worker,) = orjson.loads(result.stdout)["rounds"][0]["workers"]
    assert (
        worker["error"]["message"] == "worker stopped by SIGTERM; its claimed lease was given back"
    )
    assert wait_dead(int(pid_file.read_text()))
    row = issue_rows(tmp_path)["bd-1"]
    assert (row["status"], "lease" in row) == ("open", False)
    (step,) = trajectory(tmp_path)
    assert (step["resultClass"], step["witnessRefs"]) == (
        "failed_runtime_error",
        ["error://interrupted"],
    )
    (run_dir,) = (tmp_path / ".premath/harness_steps/coordinator").iterdir()
    log = (run_dir / "round-1" / "worker.1.stderr").read_text()
    assert "error: worker stopped by SIGTERM; its claimed lease was given back" in log


def test_coordinator_refuses_a_dependency_cycle_before_any_worker(tmp_path):
    make_issues(tmp_path, ["bd-1", "bd-2"], {"bd-1": ["bd-2"]})
    path = tmp_path / ".premath" / "issues.jsonl"
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    rows[1]["dependencies"] = [{"issue_id": "bd-2", "depends_on_id": "bd-1", "type": "related"}]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    (tmp_path / "w1").mkdir()
    result = _one_worker_coordinator(tmp_path)
    assert result.returncode == 1
    report = orjson.loads(result.stdout)
    assert (report["stoppedReason"], report["rounds"]) == ("dependency_cycle", [])
    assert b"dependency cycle in the active scope: bd-1 -> bd-2 -> bd-1" in result.stderr


def test_a_coordinator_whose_issues_fail_says_so_not_that_a_worker_failed(tmp_path):
    """D35-3: both workers ran their steps; only the issues failed (escalated, blocked)."""
    make_issues(tmp_path, ["bd-1", "bd-2", "bd-3"])
    for name in ("w1", "w2"):
        (tmp_path / name).mkdir()
    result = run_premath(
        "harness-loop", "coordinator", "--worktree", "w1", "--worktree", "w2", "--rounds", "3",
        "--verify-cmd", "echo 'check_failed: 2 tests failed' >&2; exit 1", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    report = orjson.loads(result.stdout)
    assert (report["stoppedReason"], report["exitCode"]) == ("issues_failed", 1)
    assert (report["roundCount"], report["failedCount"]) == (1, 2)
    failed = sorted(i for w in report["rounds"][0]["workers"] for i in w["failedIssueIds"])
    assert failed == ["bd-1", "bd-2"]
    stopped = "[coordinator] stopped: 2 issues failed or escalated (bd-1, bd-2); every worker"
    assert stopped.encode() in result.stderr
    assert issue_rows(tmp_path)["bd-3"]["status"] == "open"


def test_a_coordinator_whose_worker_cannot_run_says_a_worker_failed(tmp_path):
    make_issues(tmp_path, ["bd-1"])
    (tmp_path / "w1").mkdir()
    (tmp_path / ".premath" / "harness_session.worker.1.json").write_text("{corrupt")
    result = _one_worker_coordinator(tmp_path)
    assert result.returncode == 1
    report = orjson.loads(result.stdout)
    assert (report["stoppedReason"], report["exitCode"]) == ("worker_failed", 1)
    assert b"[coordinator] stopped: 1 worker failed (worker.1: " in result.stderr
