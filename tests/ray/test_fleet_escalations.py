"""Escalations go to people on a Ray fleet too (issue 30, D30a-1): on a real two-node local Ray
cluster, every claim through a real `mcp-serve` over loopback HTTP, the fleet drains the real
work and never claims the `[HarnessEscalation]` issue, though it has the best priority; with
only the escalation left, the coordinator's preflight finds nothing for a worker."""

import pytest

from tests.e2e.test_escalations_for_people import ESCALATION
from tests.ray.conftest import RayCluster
from tests.ray.test_fleet import coordinator, finished
from tests.support.remote import (
    WRITE_OUT,
    fleet_tokens,
    issue_row,
    make_project,
    mcp_server,
    mint_fleet_witness,
    out_check,
)

pytestmark = pytest.mark.timeout(600)


def test_a_ray_fleet_never_claims_an_escalation(ray_cluster: RayCluster, tmp_path):
    rows = [issue_row(f"bd-{n}", out_check(f"bd-{n}")) for n in (1, 2, 3)]
    rows.append(issue_row("bd-4", out_check("bd-4"), title=ESCALATION, priority=0))
    project = make_project(tmp_path, rows, tokens=fleet_tokens("coordinator", "fleet"))
    fleet = mint_fleet_witness(project)
    options = (
        "--instruction-id", fleet, "--concurrency", "2", "--worker-cpus", "0.5",
        "--worker-prefix", "fleet", "--worker-memory-mb", "64", "--work-cmd", WRITE_OUT,
    )  # fmt: skip
    with mcp_server(project) as server:
        code, document, stderr = finished(coordinator(ray_cluster, project, server.url, *options))
        assert code == 0, stderr
        assert (document["stoppedReason"], document["closedCount"]) == ("drained", 3)
        assert "ready=3 held=0" in stderr  # the escalation is no worker's work
        assert sorted(claim["issueId"] for claim in document["claims"]) == ["bd-1", "bd-2", "bd-3"]
        escalation = project.issues["bd-4"]
        assert (escalation["status"], "lease" in escalation) == ("open", False)
        code, document, stderr = finished(coordinator(ray_cluster, project, server.url, *options))
    assert code == 0, stderr
    assert document["stoppedReason"] == "no_ready_issue"
    assert "ready=0 held=0" in stderr
    assert project.issues["bd-4"]["status"] == "open"
