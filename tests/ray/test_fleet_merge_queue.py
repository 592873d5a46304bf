"""The merge queue on a real two-node local Ray cluster (specs/remote-workers.md "Merge queue"):
a fleet closes a 4-deep dependency chain in order, each branch holding its blockers' work, and
with `--land` main follows the integration head; two coordinators on one remote share one queue,
every issue landing exactly once and none lost."""

from pathlib import Path

import pytest

from tests.e2e.test_merge_queue import APPEND_CHAIN, CHAIN, chain_project, contains
from tests.ray.conftest import RayCluster
from tests.ray.test_fleet import coordinator, finished, project_of
from tests.support.remote import WRITE_OUT, Project, git, mcp_server

pytestmark = pytest.mark.timeout(600)


def first_parents(project: Project, head: str) -> list[str]:
    """The integration branch's own commits, newest first (each one merge of the queue)."""
    listed = git("rev-list", "--first-parent", "--merges", head, cwd=project.remote)
    return listed.stdout.split()


def test_a_fleet_closes_a_chain_in_order_and_land_moves_main(ray_cluster: RayCluster, tmp_path):
    project = chain_project(tmp_path)
    with mcp_server(project, "--mutation-policy", "open") as server:
        process = coordinator(
            ray_cluster, project, server.url,
            "--concurrency", "2", "--worker-cpus", "0.5", "--work-cmd", APPEND_CHAIN, "--land",
            "--worker-prefix", "w1",  # w1.1, w1.2: ids the first token (`w1`) may act as
        )  # fmt: skip
        code, document, stderr = finished(process)
    assert code == 0, stderr
    closed = [issue for worker in document["workers"] for issue in worker["closedIssueIds"]]
    assert sorted(closed) == sorted(CHAIN)
    branches = project.branches()
    landed = [project.landed_witness(issue_id)[0] for issue_id in CHAIN]
    for at, issue_id in enumerate(CHAIN):
        for blocker in CHAIN[:at]:
            assert contains(
                project, branches[f"premath/{blocker}"], branches[f"premath/{issue_id}"]
            )
    head = project.integration()
    assert head is not None
    assert first_parents(project, head) == landed[::-1]  # closed in order, one merge each
    assert project.refs()["main"] == head  # --land


def test_two_coordinators_on_one_remote_share_one_queue(ray_cluster: RayCluster, tmp_path: Path):
    project = project_of(tmp_path, 6)
    main_before = project.refs()["main"]
    with mcp_server(project, "--mutation-policy", "open") as server:
        work = ("--work-cmd", WRITE_OUT)
        first = coordinator(
            ray_cluster, project, server.url, "--concurrency", "2", "--worker-cpus", "0.25", *work
        )
        second = coordinator(
            ray_cluster, project, server.url, "--concurrency", "2", "--worker-cpus", "0.25", *work
        )
        outcomes = [finished(first), finished(second)]
    for code, _, stderr in outcomes:
        assert code == 0, stderr
    issue_ids = [f"bd-{n}" for n in range(1, 7)]
    head = project.integration()
    assert head is not None
    merges = first_parents(project, head)
    landed = sorted(project.landed_witness(issue_id)[0] for issue_id in issue_ids)
    assert sorted(merges) == landed  # each issue landed exactly once, none lost
    tree = git("ls-tree", "--name-only", f"{head}:out", cwd=project.remote).stdout.split()
    assert sorted(tree) == sorted(issue_ids)
    assert project.refs()["main"] == main_before
