"""The summary tells the truth (issue 30, D30a-2, D30a-3): a live build judges leases by the
clock, counts open escalations, the failure share of the latest steps and the KPI's decision,
while a build without `--live-attention` keeps the reference's bytes."""

from datetime import UTC, datetime, timedelta

import orjson

from premath.observe.attention import LiveInputs, read_trajectory_facts
from premath.observe.builder import BuildPaths, build_surface
from tests.support.observation import issue, lease, write_issues, write_witnesses

NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
ESCALATION = "[HarnessEscalation] harness.loop retry exhausted (gate_timeout)"
ESCALATION_NOTE = "earlier note\n\n[harness-escalation]\nscope: harness.loop\naction: mark_blocked"


def _row(step: int, result_class: str, issue_id: str = "bd-1") -> dict:
    finished = (NOW - timedelta(minutes=30 - step)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "schema": 1,
        "stepKind": "premath.harness.step.v1",
        "stepId": f"fleet.1.{issue_id}.{step}",
        "issueId": issue_id,
        "action": "harness.step",
        "resultClass": result_class,
        "instructionRefs": [],
        "witnessRefs": [],
        "lineageRefs": [],
        "finishedAt": finished,
    }


def _fleet(root, classes: list[str]) -> None:
    """A dead worker's lease (expired an hour before NOW, but after every issue time, so the
    reference's reference time calls it active), an open escalation, and a trajectory."""
    write_witnesses(root)
    write_issues(
        root,
        [
            issue("bd-1", "work", "in_progress", assignee="fleet.2",
                  lease=lease("bd-1", "fleet.2", "2026-03-01T09:00:00Z")),
            issue("bd-2", ESCALATION),
            issue("bd-3", "[HarnessEscalation] handled", "closed"),
            issue("bd-4", "blocked by an escalation", "blocked", notes=ESCALATION_NOTE),
            issue("bd-5", "blocked by a person", "blocked", notes="waiting on a vendor"),
        ],
    )  # fmt: skip
    trajectory = root / ".premath" / "harness_trajectory.jsonl"
    trajectory.write_bytes(
        b"".join(orjson.dumps(_row(n, c)) + b"\n" for n, c in enumerate(classes, start=1))
    )


def _build(root, live: bool, silent_workers: tuple[str, ...] = ()):
    paths = BuildPaths.resolve(str(root))
    inputs = None
    if live:
        facts = read_trajectory_facts(str(root / ".premath" / "harness_trajectory.jsonl"), NOW)
        inputs = LiveInputs(NOW, facts, silent_workers)
    return build_surface(paths, live=inputs).summary


def test_a_live_build_says_what_needs_a_person_now(tmp_path):
    classes = ["completed", "gate_timeout", "failed_verification", "gate_timeout", "gate_timeout"]
    _fleet(tmp_path, classes)
    reference = _build(tmp_path, live=False)
    assert "live" not in reference
    assert (reference["needsAttention"], reference["topFailureClass"]) == (False, "verified_accept")
    assert reference["coherence"]["leaseHealth"]["staleCount"] == 0  # quirk 21, kept
    summary = _build(tmp_path, live=True)
    assert summary["needsAttention"] is True
    assert summary["topFailureClass"] == "gate_timeout"
    assert summary["live"] == {
        "attentionReasons": [
            "stale_leases_now",
            "escalations_open",
            "recent_failure_share_high",
            "kpi_rollback",
        ],
        "checkedAt": "2026-03-01T10:00:00Z",
        "escalationIssueIds": ["bd-2", "bd-4"],
        "kpiDecision": "rollback",
        "recentWindow": {
            "failedSteps": 4,
            "failureShare": 0.8,
            "steps": 5,
            "topFailureClass": "gate_timeout",
        },
        "silentWorkerIds": [],
        "staleLeaseIssueIds": ["bd-1"],
    }
    assert summary["coherence"] == reference["coherence"]  # the reference's fields keep meaning


def test_a_healthy_fleet_needs_nobody(tmp_path):
    _fleet(tmp_path, ["completed"] * 6)
    write_issues(
        tmp_path, [issue("bd-1", "work"), issue("bd-3", "[HarnessEscalation] x", "closed")]
    )
    summary = _build(tmp_path, live=True)
    assert (summary["needsAttention"], summary["topFailureClass"]) == (False, "verified_accept")
    assert summary["live"]["attentionReasons"] == []
    assert summary["live"]["kpiDecision"] == "pass"


def test_a_silent_worker_needs_a_person(tmp_path):
    _fleet(tmp_path, ["completed"] * 6)
    write_issues(tmp_path, [issue("bd-1", "work")])
    summary = _build(tmp_path, live=True, silent_workers=("fleet.2",))
    assert summary["needsAttention"] is True
    assert summary["live"]["attentionReasons"] == ["workers_silent"]
    assert summary["live"]["silentWorkerIds"] == ["fleet.2"]


def test_observe_build_and_observe_on_the_command_line(cli_run, workdir):
    _fleet(workdir, ["gate_timeout"] * 4)
    plain = cli_run("observe-build", "--json")
    assert "live" not in plain.json["summary"]
    built = cli_run("observe-build", "--live-attention", "--json")
    assert built.exit_code == 0, built.stderr
    assert built.json["summary"]["live"]["attentionReasons"] == [
        "stale_leases_now",
        "escalations_open",
        "recent_failure_share_high",
        "kpi_rollback",
    ]
    view = cli_run("observe", "--mode", "needs_attention", "--json").json
    assert view["needsAttention"] is True
    assert view["live"]["staleLeaseIssueIds"] == ["bd-1"]
    text = cli_run("observe", "--mode", "needs_attention").stdout
    assert "  needs attention: yes\n  top failure: gate_timeout\n" in text
    assert "  live attention (2026-03-01T10:00:00Z): stale_leases_now, escalations_open," in text
    assert "  recent steps: 4/4 failed (top gate_timeout)\n" in text


def test_an_empty_kpi_window_ends_now_not_in_1970(cli_run, workdir):
    report = cli_run("harness-kpi", "--json").json
    assert (report["windowStart"], report["windowEnd"]) == (
        "2026-02-28T10:00:00Z",
        "2026-03-01T10:00:00Z",
    )
    assert report["counts"]["windowRows"] == 0
