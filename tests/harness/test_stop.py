"""`premath harness stop`: the handoff by lease state; the agent-as-worker cycle."""

from tests.harness.loop_support import issue_rows, make_issues, session, trajectory


def test_stop_mid_step_renews_the_lease_and_logs_the_interrupted_step(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    claimed = cli_run("harness", "claim", "--worker-id", "me", "--json").json
    result = cli_run("harness", "stop", "--worker-id", "me", "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    document = result.json
    assert (document["issueId"], document["leaseState"], document["leaseOutcome"]) == (
        "bd-1",
        "active",
        "renewed",
    )
    assert document["nextStep"].startswith("resume bd-1")
    (row,) = trajectory(workdir)
    assert (row["action"], row["resultClass"]) == ("harness.stop", "retry_needed_lease_active")
    assert row["lineageRefs"] == claimed["lineageRefs"]
    assert session(workdir)["state"] == "stopped"
    assert issue_rows(workdir)["bd-1"]["lease"]["renewed_at"]


def test_stop_with_release_gives_the_issue_back(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    cli_run("harness", "claim", "--worker-id", "me")
    result = cli_run("harness", "stop", "--worker-id", "me", "--release", "--json")
    assert result.json["leaseOutcome"] == "released"
    row = issue_rows(workdir)["bd-1"]
    assert (row["status"], "lease" in row) == ("open", False)
    assert session(workdir)["nextStep"] == "claim next ready issue"


def test_agent_cycle_claim_complete_stop_logs_one_row_per_step(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    assert cli_run("harness", "boot").exit_code == 0
    cli_run("harness", "claim", "--worker-id", "me")
    done = cli_run("harness", "complete", "--worker-id", "me", "--verify-cmd", "true", "--json")
    assert (done.exit_code, done.json["outcome"], done.json["issueId"]) == (0, "completed", "bd-1")
    stop = cli_run("harness", "stop", "--worker-id", "me", "--json")
    assert (stop.json["leaseState"], stop.json["trajectoryRow"]) == ("released", None)
    assert [row["resultClass"] for row in trajectory(workdir)] == ["completed"]
    kpi = cli_run("harness-kpi", "--min-sample-rows", "1", "--json").json
    assert (kpi["counts"]["completedRows"], kpi["decision"]["state"]) == (1, "pass")


def test_complete_by_a_worker_that_holds_nothing_is_refused(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    cli_run("harness", "claim", "--worker-id", "me")
    result = cli_run(
        "harness",
        "complete",
        "--worker-id",
        "ghost",
        "--issue-id",
        "bd-1",
        "--verify-cmd",
        "true",
        "--json",
    )
    assert result.exit_code == 1
    assert result.json["error"]["code"] == "lease_refused"
    assert "worker ghost does not hold bd-1: lease is held by me" in result.stderr
    assert issue_rows(workdir)["bd-1"]["lease"]["owner"] == "me"


def test_stop_by_an_unknown_worker_is_refused_and_changes_nothing(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    cli_run("harness", "claim", "--worker-id", "me")
    before = (workdir / ".premath" / "issues.jsonl").read_bytes()
    result = cli_run("harness", "stop", "--worker-id", "ghost", "--issue-id", "bd-1", "--json")
    assert result.exit_code == 1
    assert "worker ghost does not hold bd-1" in result.stderr
    assert (workdir / ".premath" / "issues.jsonl").read_bytes() == before


def test_step_command_with_nothing_ready(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    cli_run("harness", "claim", "--worker-id", "other")
    result = cli_run("harness", "step", "--worker-id", "me", "--verify-cmd", "true", "--json")
    assert (result.exit_code, result.json["claimed"]) == (0, False)


def test_step_command_on_a_missing_issues_file_is_a_clear_error(cli_run, workdir):
    result = cli_run("harness", "step", "--worker-id", "me", "--verify-cmd", "true", "--json")
    assert result.exit_code == 1
    assert result.json["error"]["code"] == "not_found"
    assert "issues file not found" in result.stderr
    assert not (workdir / ".premath").exists()  # refused: no trajectory row, no .gitignore


def test_complete_records_the_agents_own_witness(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    cli_run("harness", "claim", "--worker-id", "me")
    witness = workdir / "ci.json"
    witness.write_text('{"verdictClass": "rejected", "failureClasses": ["check_failed"]}')
    result = cli_run(
        "harness",
        "complete",
        "--worker-id",
        "me",
        "--verify-cmd",
        "true",
        "--verify-witness",
        str(witness),
        "--json",
    )
    assert result.exit_code == 1
    assert (result.json["failureClasses"], result.json["resultClass"]) == (
        ["check_failed"],
        "escalated_mark_blocked",
    )
    assert issue_rows(workdir)["bd-1"]["status"] == "blocked"
