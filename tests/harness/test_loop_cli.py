"""The loop commands' surface: usage errors, text output, the demo."""

import pytest

from tests.harness.loop_support import issue_rows, make_issues


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--worker-id", "  "), "--worker-id is required"),
        (("--worker-id", "a/b"), "--worker-id must not contain path separators"),
        (("--worker-id", "w1", "--max-steps", "0"), "Invalid value for '--max-steps'"),
        (("--worker-id", "w1", "--lease-ttl-seconds", "10"), "must be in range [30, 86400]"),
        (("--worker-id", "w1", "--worktree-root", "nowhere"), "worktree is not a directory"),
        (("--worker-id", "w1", "--mutation-mode", "auto"), "mutation mode 'auto' is not allowed"),
        (("--worker-id", "w1", "--worker-id", "w2"), "cannot be used multiple times"),
    ],
)
def test_worker_usage_errors_exit_2(cli_run, workdir, args, message):
    result = cli_run("harness-loop", "worker", *args, "--json")
    assert result.exit_code == 2
    assert result.json["error"]["code"] == "usage_error"
    assert message in result.stderr


@pytest.mark.parametrize(
    "command",
    [("harness-loop", "worker"), ("harness-loop", "coordinator"), ("harness", "step")],
)
def test_the_lease_ttl_help_shows_its_bounds(cli_run, command):
    """Issue 35: the 30 s minimum is in --help, not only in the refusal."""
    from premath.issues.leases import MAX_TTL_SECONDS, MIN_TTL_SECONDS

    shown = " ".join(cli_run(*command, "--help").stdout.split())
    assert f"Lease TTL of each claim in seconds, {MIN_TTL_SECONDS}..{MAX_TTL_SECONDS}" in shown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--worktree", "w", "--rounds", "0"), "Invalid value for '--rounds'"),
        (("--worktree", "missing"), "worktree is not a directory"),
        (("--worktree", "w", "--worker-prefix", ""), "--worker-prefix must be non-empty"),
        (("--worktree", "w", "--mutation-mode", "human-override"), "requires a non-empty"),
    ],
)
def test_coordinator_usage_errors_exit_2_before_any_worker(cli_run, workdir, args, message):
    (workdir / "w").mkdir()
    result = cli_run("harness-loop", "coordinator", *args, "--json")
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (workdir / ".premath").exists()


def test_worker_text_output_and_progress_on_stderr(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    result = cli_run("harness-loop", "worker", "--worker-id", "w1", "--verify-cmd", "true")
    assert result.exit_code == 0
    assert result.stdout == "[worker:w1] steps=1 closed=1 failed=0 stopped=max_steps\n"
    assert "[worker:w1] closed issue bd-1" in result.stderr
    assert issue_rows(workdir)["bd-1"]["status"] == "closed"


def test_human_override_is_recorded_in_the_policy_ref(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    result = cli_run(
        "harness-loop",
        "worker",
        "--worker-id",
        "w1",
        "--verify-cmd",
        "true",
        "--mutation-mode",
        "human-override",
        "--override-reason",
        "ok",
        "--json",
    )
    assert result.exit_code == 0
    assert (
        "mode=human-override;reason=ok;active_epoch=2026-02;support_until=2026-06" in result.stderr
    )


def test_demo_drains_the_sample_issues_and_passes_the_kpi(cli_run):
    result = cli_run("demo", "--json")
    assert result.exit_code == 0, result.stderr
    document = result.json
    assert document["coordinator"]["closedCount"] == document["sampleIssueCount"] == 6
    assert (document["workerCount"], document["issueCheck"]) == (2, "accepted")
    assert document["kpi"]["decision"]["state"] == "pass"
    counts = document["kpi"]["counts"]
    assert set(counts["workerIds"]) <= {"worker.1", "worker.2"}
    assert counts["activeWorkers"] == len(counts["workerIds"]) >= 1
    text = cli_run("demo")
    assert text.stdout.splitlines()[0].startswith("premath demo: 6 sample issues")
    assert "[harness-kpi] deterministic throughput benchmark" in text.stdout
    assert "What the KPI numbers mean:" in text.stdout
    assert "override policy" not in text.stdout
    assert text.stdout.rstrip().splitlines()[-5:-1] == [
        '  premath issue add "Fix the parser" \\',
        "    --description $'Acceptance:\\n- parses\\nVerification: `pytest -q`'",
        "  premath harness step --worker-id me --work-cmd 'your fix command' --json",
        "  premath harness-loop coordinator --worktree . --rounds 5 --work-cmd '...'",
    ]
    assert max(map(len, text.stdout.splitlines())) <= 80  # piped: fitted to 80 columns
    assert "in 1 round (stopped" in text.stdout  # not "in 1 rounds"
    assert "override policy" in cli_run("demo", "-v").stdout


def test_demo_keeps_its_folder(cli_run, tmp_path):
    kept = tmp_path / "demo"
    result = cli_run("demo", "--keep", str(kept))
    assert result.exit_code == 0, result.stderr
    assert (kept / ".premath" / "issues.jsonl").is_file()
    assert f"The demo's files are in {kept}" in " ".join(result.stdout.split())  # wrapped
    refused = cli_run("demo", "--keep", str(kept), "--json")
    assert (refused.exit_code, refused.json["error"]["code"]) == (2, "usage_error")


def test_harness_step_json_describes_the_issue_after_the_step(cli_run, workdir):
    """The step closed the issue and released the lease: so must the document's `issue` say."""
    make_issues(workdir, ["bd-1", "bd-2"])
    closed = cli_run("harness", "step", "--worker-id", "me", "--verify-cmd", "true", "--json")
    assert closed.exit_code == 0, closed.stderr
    assert (closed.json["outcome"], closed.json["leaseState"]) == ("completed", "released")
    issue = closed.json["issue"]
    assert (issue["id"], issue["status"], issue["lease"]) == ("bd-1", "closed", None)
    assert issue["closedAt"] is not None
    failed = cli_run("harness", "step", "--worker-id", "me", "--verify-cmd", "false", "--json")
    assert failed.exit_code == 1
    stored = issue_rows(workdir)["bd-2"]
    issue = failed.json["issue"]
    assert (issue["status"], issue["lease"]) == (stored["status"], None)
    assert issue["notes"] == stored.get("notes", "")


@pytest.mark.parametrize(
    "argv",
    [
        ("harness", "step", "--worker-id", "me"),
        ("harness", "claim", "--worker-id", "me"),
        ("harness-loop", "worker", "--worker-id", "w1"),
        ("harness-loop", "coordinator", "--worktree", "."),
        ("issue", "claim-next", "--assignee", "w1"),
        ("issue", "claim", "bd-1", "--assignee", "w1"),
    ],
)
def test_a_command_refused_outside_any_project_leaves_nothing_behind(cli_run, workdir, argv):
    result = cli_run(*argv, "--json")
    assert result.exit_code == 1
    assert "issues file not found" in result.json["error"]["message"]
    assert sorted(path.name for path in workdir.iterdir()) == []


def test_the_loop_says_how_to_start_a_project(cli_run, workdir):
    result = cli_run("harness", "step", "--worker-id", "me")
    assert result.exit_code == 1
    assert "no premath project here" in result.stderr
    assert "premath issue add TITLE" in result.stderr


def test_the_policy_line_shows_only_with_verbose_or_an_override(cli_run, workdir):
    make_issues(workdir, ["bd-1", "bd-2", "bd-3"])
    plain = cli_run("harness-loop", "worker", "--worker-id", "w1", "--verify-cmd", "true")
    assert plain.exit_code == 0
    assert "override policy" not in plain.stderr
    verbose = cli_run("harness-loop", "worker", "--worker-id", "w1", "--verify-cmd", "true", "-v")
    assert "[worker:w1] override policy mode=instruction-linked;" in verbose.stderr
    coordinated = cli_run(
        "harness-loop", "coordinator", "--worktree", ".", "--verify-cmd", "true", "-v"
    )
    assert coordinated.exit_code == 0, coordinated.stderr
    assert "[worker:worker.1] override policy mode=instruction-linked;" in coordinated.stderr
    assert "[coordinator] worker logs: .premath/harness_steps/coordinator/" in coordinated.stderr
