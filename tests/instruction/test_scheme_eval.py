"""`premath scheme-eval` beyond the corpus: shipped contract, refused starts, vector wrappers."""

import json

import pytest

from premath.harness.host.contract import BUILTIN_CONTRACT_PATH
from tests.support.cli import SHARED
from tests.support.corpus import require_shared

ISSUES = (
    '{"id":"bd-1","title":"One","status":"open","priority":1,"issue_type":"task",'
    '"created_at":"2026-02-22T00:00:00Z","updated_at":"2026-02-22T00:00:00Z","ephemeral":false}\n'
)
TRAJECTORY = ".premath/harness_trajectory.jsonl"


@pytest.fixture
def repo(workdir):
    (workdir / ".premath").mkdir()
    (workdir / ".premath" / "issues.jsonl").write_text(ISSUES)
    return workdir


def program(root, *calls, name="prog.json", **fields):
    (root / name).write_text(json.dumps({**fields, "calls": list(calls)}))
    return name


def test_without_a_repository_contract_the_shipped_one_is_used(cli_run, repo):
    result = cli_run("scheme-eval", "--program", program(repo, {"action": "issue.ready"}), "--json")
    assert (result.exit_code, result.json["result"]) == (0, "accepted")
    assert result.json["controlPlaneContract"] == str(BUILTIN_CONTRACT_PATH)
    # the reference's 15, plus the 15 premath's contract extension binds (D24-1)
    assert len(result.json["allowlistedActions"]) == 30
    assert result.json["contractExtension"]["policyId"] == "premath.host_actions.v1"
    assert (repo / TRAJECTORY).read_text().count("\n") == 1


@pytest.mark.parametrize(
    ("contract", "message"),
    [
        (None, "failed to read control-plane contract at missing.json"),
        ("{", "failed to parse control-plane contract JSON at contract.json"),
        ('{"hostActionSurface": {}}', "missing hostActionSurface.requiredActions"),
    ],
)
def test_a_missing_or_malformed_contract_refuses_the_program(cli_run, repo, contract, message):
    path = "missing.json"
    if contract is not None:
        path = "contract.json"
        (repo / path).write_text(contract)
    prog = program(repo, {"action": "issue.ready"})
    result = cli_run("scheme-eval", "--program", prog, "--control-plane-contract", path)
    assert (result.exit_code, result.stdout) == (1, "")
    assert message in result.stderr
    assert not (repo / TRAJECTORY).exists()


def test_a_program_over_budget_runs_no_call(cli_run, repo):
    prog = program(repo, *[{"action": "issue.ready"}] * 3)
    result = cli_run("scheme-eval", "--program", prog, "--max-calls", "2")
    assert result.exit_code == 1
    assert "scheme_eval.call_budget_exceeded" in result.stderr
    assert not (repo / TRAJECTORY).exists()


def test_a_failed_trajectory_append_stops_with_the_execution_class(cli_run, repo):
    (repo / "traj").mkdir()
    prog = program(repo, {"action": "issue.ready"}, {"action": "issue.list"})
    result = cli_run("scheme-eval", "--program", prog, "--trajectory-path", "traj", "--json")
    assert result.exit_code == 1
    assert "(scheme_eval.host_action_execution_error)" in result.stderr
    assert "error" in result.json


def test_denied_actions_leave_the_store_untouched(cli_run, repo):
    calls = [{"action": "exec.run", "args": {"cmd": "touch pwned"}}, {"action": "issue.ready"}]
    result = cli_run("scheme-eval", "--program", program(repo, *calls), "--json")
    assert (result.exit_code, result.json["executedCallCount"]) == (1, 1)
    assert (repo / ".premath" / "issues.jsonl").read_text() == ISSUES
    assert not (repo / "pwned").exists()


def test_the_vector_wrappers_run_our_suites(cli_run, repo):
    typestate = require_shared(SHARED / "conformance" / "typestate")
    calls = [
        {"action": "conformance.world_core_vectors.run", "args": {"fixtures": str(typestate)}},
        {"action": "conformance.runtime_orchestration_vectors.run", "args": {"fixtures": "nope"}},
    ]
    result = cli_run("scheme-eval", "--program", program(repo, *calls), "--json")
    first, second = result.json["effects"]
    assert first["resultClass"] == "accepted"
    assert first["payload"]["stdoutTail"][-1] == "20 passed, 0 failed"
    assert second["resultClass"] == "scheme_eval.host_action_execution_error"
    assert "failed (exit=2)" in second["payload"]["diagnostic"]
    assert result.exit_code == 1
