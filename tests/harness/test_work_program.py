"""`--work-program`: a worker step whose work is a host-action program (harness/work.py).

Real worker and coordinator processes drain a store through host calls only; a program that
cannot run is refused before any claim; a refused host call fails the step with the effect's
class and goes through the retry and escalation policy; verification still runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from premath.clock import SystemClock
from premath.harness.retry import policy_digest
from premath.harness.worker import run_worker
from tests.harness.loop_support import (
    issue_rows,
    ledger,
    make_issues,
    session,
    trajectory,
    worker_config,
)
from tests.instruction.host_support import (
    CHANGE,
    accepted_instruction,
    claim,
    evidence,
    host_repo,
    program,
)

REPO = Path(__file__).resolve().parents[2]
WRITES = ("harness.feature.write", "harness.trajectory.append")
CALLS = [
    {"callId": "read", "action": "issue.show"},
    {
        "callId": "progress",
        "action": "harness.feature.write",
        "args": {"status": "in_progress", "summary": "notes drafted"},
    },
    {
        "callId": "note",
        "action": "harness.trajectory.append",
        "args": {"action": "work.note", "resultClass": "completed", "witnessRefs": ["note://1"]},
    },
]


def work_repo(root: Path, issues: int = 6) -> str:
    """A store of `issues` issues, an accepted instruction for the program's writes, and the
    program (`work.json`)."""
    host_repo(root)
    make_issues(root, [f"bd-{n}" for n in range(1, issues + 1)])
    ref = accepted_instruction(root, "20260301T000000Z-work", [CHANGE, *map(claim, WRITES)])
    return program(root, *CALLS, name="work.json", **evidence(ref, *map(claim, WRITES)))


def premath(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "premath", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def host_refs(refs: list[str]) -> set[str]:
    return {ref for ref in refs if ref.startswith("host-effect://")}


def assert_every_effect_joins_its_step(root: Path, calls_per_step: int) -> list[dict]:
    """Each step row lists the host-effect refs of exactly the effect rows under its step id,
    and those rows name its issue; one row per host call (and one envelope per call)."""
    rows = trajectory(root)
    steps = [row for row in rows if row["action"] == "worker.loop"]
    for step in steps:
        under = [r for r in rows if r["stepId"].startswith(f"{step['stepId']}.work-")]
        effects = [r for r in under if r["action"].startswith("scheme_eval.")]
        assert len(effects) == calls_per_step
        assert {r["issueId"] for r in effects} == {step["issueId"]}
        assert host_refs(step["witnessRefs"]) == {
            ref for r in effects for ref in host_refs(r["witnessRefs"])
        }
        assert all(set(step["lineageRefs"]) <= set(r["lineageRefs"]) for r in under)
        log = root / ".premath" / "harness_steps" / step["stepId"] / "attempt-1"
        recorded = orjson.loads((log / "work.effects.json").read_bytes())
        assert len(recorded["effects"]) == recorded["executedCallCount"] == calls_per_step
        assert not (log / "work.stdout").exists()  # no work command ran: host calls only
        assert (log / "verify.stdout").exists()  # verification ran unchanged
    return steps


def test_a_worker_drains_six_issues_through_host_calls_only(tmp_path):
    work = work_repo(tmp_path)
    result = premath(
        tmp_path,
        *("harness-loop", "worker", "--worker-id", "w1", "--max-steps", "10"),
        *("--work-program", work, "--verify-cmd", "true", "--json"),
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["closedIssueIds"] == [f"bd-{n}" for n in range(1, 7)]
    assert {row["status"] for row in issue_rows(tmp_path).values()} == {"closed"}
    steps = assert_every_effect_joins_its_step(tmp_path, calls_per_step=len(CALLS))
    assert [step["resultClass"] for step in steps] == ["completed"] * 6
    notes = [row for row in trajectory(tmp_path) if row["action"] == "work.note"]
    assert [row["stepId"] for row in notes] == [f"{s['stepId']}.work-1.note" for s in steps]
    features = {row["featureId"]: row for row in ledger(tmp_path)["features"]}
    assert {row["status"] for row in features.values()} == {"completed"}
    assert all(row["instructionRefs"] == ["instructions/20260301T000000Z-work.json"]
               for row in features.values())  # fmt: skip


def test_a_coordinator_passes_the_program_to_its_workers(tmp_path):
    work = work_repo(tmp_path, issues=4)
    for name in ("w1", "w2"):
        (tmp_path / name).mkdir()
    result = premath(
        tmp_path,
        *("harness-loop", "coordinator", "--worktree", "w1", "--worktree", "w2"),
        *("--rounds", "4", "--max-steps-per-worker", "2"),
        *("--work-program", work, "--verify-cmd", "true", "--json"),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["closedCount"] == 4
    assert {row["status"] for row in issue_rows(tmp_path).values()} == {"closed"}
    assert_every_effect_joins_its_step(tmp_path, calls_per_step=len(CALLS))


@pytest.mark.parametrize(
    ("setup", "extra", "message"),
    [
        (
            lambda root: None,
            ["--work-program", "missing.json"],
            "failed to read scheme-eval program",
        ),
        (
            lambda root: (root / "p.json").write_text("{"),
            ["--work-program", "p.json"],
            "failed to parse",
        ),
        (
            lambda root: (root / "p.json").write_text('{"calls": {}}'),
            ["--work-program", "p.json"],
            "invalid evaluator program shape",
        ),
        (
            lambda root: program(root, *CALLS, name="p.json"),
            ["--work-program", "p.json", "--work-program-max-calls", "2"],
            "scheme_eval.call_budget_exceeded",
        ),
        (
            lambda root: program(root, {"action": "shell.exec"}, name="p.json"),
            ["--work-program", "p.json"],
            "scheme_eval.effect_denied",
        ),
        (
            lambda root: program(root, {"action": "foo.bar"}, name="p.json"),
            ["--work-program", "p.json"],
            "scheme_eval.host_action_unallowlisted",
        ),
        (
            lambda root: program(
                root, {"action": "issue.update", "args": {"notes": "x"}}, name="p.json"
            ),
            ["--work-program", "p.json"],
            "mutation.use_evidence_missing",
        ),
        (
            lambda root: program(
                root, {"action": "issue.list", "args": {"status": 3}}, name="p.json"
            ),
            ["--work-program", "p.json"],
            "scheme_eval.invalid_program",
        ),
        (
            lambda root: program(root, {"action": "issue.ready"}, name="p.json"),
            ["--work-program", "p.json", "--work-cmd", "true"],
            "not both",
        ),
    ],
)
def test_a_program_that_cannot_run_is_refused_before_any_claim(
    cli_run, workdir, setup, extra, message
):
    make_issues(workdir, ["bd-1"])
    setup(workdir)
    before = sorted(path.name for path in (workdir / ".premath").iterdir())
    issues = (workdir / ".premath" / "issues.jsonl").read_bytes()
    for command in (("harness-loop", "worker"), ("harness", "step")):
        result = cli_run(*command, "--worker-id", "w1", *extra, "--json")
        assert result.exit_code == 2, result.stdout
        assert result.json["error"]["code"] == "usage_error"
        assert message in result.stderr
    assert sorted(path.name for path in (workdir / ".premath").iterdir()) == before
    assert (workdir / ".premath" / "issues.jsonl").read_bytes() == issues


def witnessless_program(root: Path) -> str:
    """Statically fine (evidence declared), but the cited witness was never run."""
    calls = [
        {"callId": "read", "action": "issue.show"},
        {"callId": "write", "action": "harness.feature.write", "args": {"status": "in_progress"}},
        {"callId": "never", "action": "issue.show"},
    ]
    ref = "instructions/20260301T000000Z-never-run.json"
    return program(root, *calls, name="work.json", **evidence(ref, claim(WRITES[0])))


def test_a_refused_host_call_fails_the_step_through_the_policy(tmp_path):
    host_repo(tmp_path)
    make_issues(tmp_path, ["bd-1"])
    work = witnessless_program(tmp_path)
    cfg = worker_config(tmp_path, work_cmd=None, work_program=str(tmp_path / work))
    report = run_worker(cfg, max_steps=1, continue_on_failure=False, clock=SystemClock())
    (step,) = report.steps
    klass = "mutation.instruction_witness_rejected"
    assert (step.outcome, step.failure_classes[0]) == ("failed", klass)
    assert step.escalation is not None
    assert (step.escalation.action, step.escalation.outcome) == ("stop", "applied")
    assert issue_rows(tmp_path)["bd-1"]["status"] == "open"  # lease released, reclaimable
    rows = trajectory(tmp_path)
    effects = [row for row in rows if row["action"].startswith("scheme_eval.")]
    assert [row["resultClass"] for row in effects] == ["accepted", klass]  # stopped there
    (step_row,) = [row for row in rows if row["action"] == "worker.loop"]
    assert f"failure://{klass}" in step_row["witnessRefs"]
    assert len(host_refs(step_row["witnessRefs"])) == 2
    witness = orjson.loads((tmp_path / step.step_witness_ref).read_bytes())
    work_run = witness["attempts"][0]["commands"][0]
    assert (work_run["name"], work_run["failureClasses"]) == ("work", [klass])
    assert witness["attempts"][0]["commands"][1]["name"] == "verify"


def test_a_retryable_host_failure_is_retried_then_escalated(tmp_path):
    host_repo(tmp_path)
    make_issues(tmp_path, ["bd-1"])
    work = witnessless_program(tmp_path)
    policy = json.loads((REPO / "policies/control/harness-retry-policy-v1.json").read_text())
    rule = next(r for r in policy["rules"] if r["ruleId"] == "operational_retry")
    rule["failureClasses"].append("mutation.instruction_witness_rejected")
    policy["policyDigest"] = policy_digest(policy)
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    cfg = worker_config(
        tmp_path,
        work_cmd=None,
        work_program=str(tmp_path / work),
        policy_path=str(tmp_path / "policy.json"),
    )
    report = run_worker(cfg, max_steps=1, continue_on_failure=False, clock=SystemClock())
    (step,) = report.steps
    assert [a.decision.retry for a in step.attempts if a.decision] == [True, False]
    assert step.escalation is not None
    assert step.escalation.action == "issue_discover"
    assert issue_rows(tmp_path)["bd-1"]["status"] == "blocked"
    effects = [row for row in trajectory(tmp_path) if row["action"].startswith("scheme_eval.")]
    assert [row["stepId"].split(".work-")[1][0] for row in effects] == ["1", "1", "2", "2"]


def test_harness_step_runs_one_program_step(cli_run, workdir):
    work = work_repo(workdir, issues=1)
    result = cli_run(
        "harness", "step", "--worker-id", "me", "--work-program", work, "--verify-cmd", "true",
        "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (result.json["issueId"], result.json["outcome"]) == ("bd-1", "completed")
    (step,) = assert_every_effect_joins_its_step(workdir, calls_per_step=len(CALLS))
    handoff = session(workdir)
    assert host_refs(handoff["witnessRefs"]) == host_refs(step["witnessRefs"])
    assert len(host_refs(step["witnessRefs"])) == len(CALLS)
