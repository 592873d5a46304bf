"""`observe-serve --live` as a real process: the surface follows its inputs, and pages get each
change pushed within 2 s (the issue's bound), while bad inputs never stop the server."""

import os
import shutil
import time
from pathlib import Path

import orjson
import pytest

from tests.support.observation import issue, lease, sample_issues, seed_project, write_issues
from tests.support.serve import PUSH_BOUND_S, EventStream, observe_serve

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path) -> Path:
    seed_project(tmp_path)
    return tmp_path


def _delta_with(stream: EventStream, key: str, within_s: float = PUSH_BOUND_S):
    return stream.delta_with(key, within_s)


def test_live_builds_at_start_and_follows_the_issue_memory(project):
    with observe_serve(project, "--live") as running:
        surface = project / "artifacts" / "observation" / "latest.json"
        assert surface.is_file()  # built before the first request
        stream = EventStream(running.port)
        name, snapshot = stream.next_event()
        assert name == "snapshot"
        assert sorted(row["id"] for row in snapshot["issues"]) == ["bd-1", "bd-2", "bd-3", "bd-4"]
        assert snapshot["bottleneck"] == "bd-3"
        assert snapshot["live"] == {"ok": True}
        columns = {row["id"]: row["column"] for row in snapshot["issues"]}
        assert columns == {
            "bd-1": "ready",
            "bd-2": "blocked",
            "bd-3": "in_progress",
            "bd-4": "closed",
        }

        rows = sample_issues()
        rows.append(issue("bd-5", "A new issue <b>bold</b>"))
        rows[2]["lease"] = lease("bd-3", "alice", "2099-06-01T00:00:00Z")
        written = time.monotonic()
        write_issues(project, rows)
        delta = _delta_with(stream, "issues")
        assert time.monotonic() - written < PUSH_BOUND_S
        changed = {row["id"]: row for row in delta["issues"]["upsert"]}
        assert set(changed) == {"bd-3", "bd-5"}  # only what changed is sent
        assert changed["bd-5"]["title"] == "A new issue <b>bold</b>"
        assert changed["bd-3"]["lease"]["expiresAt"] == "2099-06-01T00:00:00Z"
        partition = running.request("/latest").json["summary"]["coherence"]["issuePartition"]
        assert partition["readyIssueIds"] == ["bd-1", "bd-5"]
        stream.close()


def test_a_bad_witness_is_reported_and_the_last_good_surface_served(project):
    env = {"PREMATH_MAX_DOCUMENT_BYTES": "100000"}
    with observe_serve(project, "--live", env=env) as running:
        stream = EventStream(running.port)
        assert stream.next_event()[0] == "snapshot"
        good = running.request("/latest").body
        torn = project / "artifacts" / "ciwitness" / "20260222T090000Z-torn.json"
        torn.write_text('{"witnessKind": ')
        live = _delta_with(stream, "live")["live"]
        assert live["ok"] is False
        assert "20260222T090000Z-torn.json as JSON" in live["error"]
        assert running.request("/latest").body == good
        torn.unlink()
        os.mkfifo(torn)
        live = _delta_with(stream, "live")["live"]
        assert "is not a regular file (a FIFO)" in live["error"]
        assert running.request("/healthz").status == 200
        torn.unlink()
        assert _delta_with(stream, "live")["live"] == {"ok": True}
        good = running.request("/latest").body  # rebuilt: summary.live has a new checkedAt
        torn.write_bytes(b'{"pad": "' + b"x" * 200_000 + b'"}')  # over the server's cap
        live = _delta_with(stream, "live")["live"]
        assert "is larger than 100000 bytes" in live["error"]
        assert running.request("/latest").body == good
        stream.close()


def test_a_changed_trajectory_pushes_its_tail_and_kpi(project):
    from tests.support.cli import run_premath

    with observe_serve(project, "--live") as running:
        stream = EventStream(running.port)
        _, snapshot = stream.next_event()
        assert snapshot["trajectory"]["totalCount"] == 0
        result = run_premath(
            "harness-trajectory",
            "append",
            "--step-id",
            "w1.bd-1.1",
            "--issue-id",
            "bd-1",
            "--action",
            "harness.step",
            "--result-class",
            "failed_verify",
            cwd=project,
        )
        assert result.returncode == 0, result.stderr
        delta = _delta_with(stream, "trajectory")
        assert [row["stepId"] for row in delta["trajectory"]["failed"]] == ["w1.bd-1.1"]
        assert delta["kpi"]["counts"]["windowRows"] == 1
        stream.close()


def test_pages_without_live_see_the_surface_change(project):
    from tests.support.cli import run_premath

    assert run_premath("observe-build", cwd=project).returncode == 0
    with observe_serve(project) as running:
        stream = EventStream(running.port)
        _, snapshot = stream.next_event()
        assert snapshot["surface"]["summary"]["state"] == "accepted"
        assert snapshot["issues"] == []
        assert snapshot["sources"]["live"] is False
        (project / "artifacts" / "ciwitness" / "latest-decision.json").write_bytes(
            orjson.dumps({"decision": "reject", "reasonClass": "check_failed"})
        )
        assert run_premath("observe-build", cwd=project).returncode == 0
        delta = _delta_with(stream, "surface")
        assert delta["surface"]["summary"]["state"] == "rejected"
        stream.close()


def test_experiment_runs_are_listed_with_progress_and_their_report_served(project):
    from tests.support.cli import run_premath

    example = Path(__file__).resolve().parents[2] / "examples" / "clean_harness"
    shutil.copytree(example, project / "clean_harness")
    experiment = "clean_harness/experiment.yaml"
    ran = run_premath("experiment", "run", experiment, "--run-id", "demo", cwd=project)
    assert ran.returncode == 0, ran.stderr
    with observe_serve(project, "--live") as running:
        stream = EventStream(running.port)
        _, snapshot = stream.next_event()
        (run,) = snapshot["runs"]
        assert (run["runId"], run["running"], run["done"], run["total"]) == ("demo", False, 72, 72)
        assert run["successCount"] + run["failureCount"] + run["errorCount"] == 72
        report = running.request("/runs/demo/report")
        assert report.status == 200
        assert report.headers["content-type"] == "text/html; charset=utf-8"
        assert b'id="task-grid"' in report.body
        assert b'href="trials/000000-control-' in report.body  # trial links stay in the run
        listing = running.request("/runs/demo/trials/")
        trial = listing.body.split(b'href="', 2)[1].split(b'"')[0].decode()
        stdout = running.request(f"/runs/demo/trials/{trial}attempt-1/stdout.txt")
        assert (stdout.status, stdout.headers["content-type"]) == (200, "text/plain; charset=utf-8")
        assert stdout.headers["content-security-policy"] == "default-src 'none'; sandbox"
        missing = running.request("/runs/nope/report")
        assert missing.status == 404
        stream.close()
