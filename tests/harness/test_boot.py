"""`premath harness boot`: memory roots, integrity preflight, handoff, next target, startup."""

import orjson

from tests.harness.loop_support import ACCEPTABLE, make_issues


def test_boot_on_a_fresh_store_targets_the_first_ready_issue(cli_run, workdir):
    make_issues(workdir, ["bd-1", "bd-2"], blocks={"bd-1": ["bd-2"]})
    result = cli_run("harness", "boot", "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    report = result.json
    assert (report["result"], report["bootKind"]) == ("accepted", "premath.harness.boot.v1")
    assert report["memoryRoots"]["issuesExists"] is True
    assert report["memoryRoots"]["sessionExists"] is False
    assert report["integrity"] == {"graphScope": "active", "hasCycle": False, "cyclePath": None}
    assert (report["readyCount"], report["readyIssueIds"]) == (1, ["bd-2"])
    issue = report["nextTarget"].pop("issue")
    assert report["nextTarget"] == {"issueId": "bd-2", "source": "ready", "featureId": None}
    assert (issue["id"], issue["description"], issue["notes"]) == ("bd-2", ACCEPTABLE, "")
    assert report["handoff"] is None
    assert report["issuesSnapshotRef"].startswith("iss1_")


def test_boot_resumes_the_claimed_issue_from_the_handoff(cli_run, workdir):
    make_issues(workdir, ["bd-1", "bd-2"])
    claimed = cli_run("harness", "claim", "--worker-id", "me", "--json")
    assert (claimed.exit_code, claimed.json["issueId"]) == (0, "bd-1")
    report = cli_run("harness", "boot", "--json").json
    assert report["nextTarget"].pop("issue")["lease"]["owner"] == "me"
    assert report["nextTarget"] == {"issueId": "bd-1", "source": "resume", "featureId": "bd-1"}
    assert report["handoff"]["mode"] == "attach"


def test_boot_rejects_a_dependency_cycle_in_the_active_scope(cli_run, workdir):
    make_issues(workdir, ["bd-1", "bd-2"], blocks={"bd-1": ["bd-2"]})
    # Written by hand: `dep add` refuses cycles (through every edge type, B17).
    path = workdir / ".premath" / "issues.jsonl"
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    rows[1]["dependencies"] = [{"issue_id": "bd-2", "depends_on_id": "bd-1", "type": "related"}]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    result = cli_run("harness", "boot", "--json")
    assert result.exit_code == 1
    assert result.json["failureClasses"] == ["boot.dependency_cycle"]
    assert result.json["integrity"]["cyclePath"] == ["bd-1", "bd-2", "bd-1"]


def test_boot_reports_missing_issues_and_a_corrupt_session(cli_run, workdir):
    (workdir / ".premath").mkdir()
    (workdir / ".premath" / "harness_session.json").write_text("{bad")
    result = cli_run("harness", "boot", "--json")
    assert result.exit_code == 1
    assert result.json["failureClasses"] == ["boot.issues_missing", "boot.session_invalid"]
    text = cli_run("harness", "boot")
    assert "Result: rejected" in text.stdout


def test_boot_runs_the_startup_verification_command(cli_run, workdir):
    make_issues(workdir, ["bd-1"])
    ok = cli_run("harness", "boot", "--startup-cmd", "true", "--json")
    assert (ok.exit_code, ok.json["startup"]["status"]) == (0, "ok")
    failed = cli_run("harness", "boot", "--startup-cmd", "exit 3", "--json")
    assert failed.exit_code == 1
    assert failed.json["startup"]["exitCode"] == 3
    assert failed.json["failureClasses"] == ["boot.startup_verification_failed"]
