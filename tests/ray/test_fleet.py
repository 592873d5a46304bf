"""`harness-loop coordinator --executor ray` on a real two-node local Ray cluster, every claim
through a real `mcp-serve` over loopback HTTP, the work delivered to a bare git repository:
12 issues drained by 4 workers under the server's default policy, a node killed mid-work and its
issue completed by another worker, Ctrl-C leaving no worker and no lease, two coordinators on
one authority sharing the work."""

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.ray.conftest import RayCluster
from tests.support.processes import descendants
from tests.support.remote import (
    WRITE_OUT,
    Project,
    fleet_tokens,
    issue_row,
    make_project,
    mcp_server,
    mint_fleet_witness,
    out_check,
    wait_for,
)

pytestmark = pytest.mark.timeout(600)


def project_of(tmp_path: Path, count: int, *workers: str) -> Project:
    rows = [issue_row(f"bd-{n}", out_check(f"bd-{n}")) for n in range(1, count + 1)]
    return make_project(tmp_path, rows, tokens=fleet_tokens("coordinator", *workers))


def coordinator(
    cluster: RayCluster, project: Project, url: str, *extra: str
) -> subprocess.Popen[bytes]:
    folder = project.root.parent
    name = f"coordinator-{time.monotonic_ns()}"
    with (
        (folder / f"{name}.stdout").open("wb") as out,
        (folder / f"{name}.stderr").open("wb") as err,
    ):
        process = subprocess.Popen(
            [sys.executable, "-m", "premath", "harness-loop", "coordinator", "--executor", "ray",
             "--mcp-url", url, "--token-file", str(project.tokens), "--repo", str(project.remote),
             *extra, "--json"],
            cwd=folder, env=cluster.env, stdout=out, stderr=err,
        )  # fmt: skip
    process.stdout_path = folder / f"{name}.stdout"  # type: ignore[attr-defined]
    process.stderr_path = folder / f"{name}.stderr"  # type: ignore[attr-defined]
    return process


def finished(process: subprocess.Popen[bytes], timeout: float = 420) -> tuple[int, Any, str]:
    code = process.wait(timeout=timeout)
    stderr = process.stderr_path.read_text()  # type: ignore[attr-defined]
    stdout = process.stdout_path.read_bytes()  # type: ignore[attr-defined]
    return code, orjson.loads(stdout or b"{}"), stderr


def finishes_ok(server: Any) -> Counter[str]:
    """How many `issue_lease_finish` calls the server accepted, per caller."""
    return Counter(
        line["caller"]
        for line in server.access_lines()
        if line["event"] == "tool"
        and line["tool"] == "issue_lease_finish"
        and line["outcome"] == "ok"
    )


def assert_delivered(project: Project, tmp_path: Path, issue_ids: list[str]) -> None:
    branches = project.branches()
    assert sorted(branches) == sorted(f"premath/{issue_id}" for issue_id in issue_ids)
    for issue_id in issue_ids:
        issue = project.issues[issue_id]
        commit = branches[f"premath/{issue_id}"]
        assert issue["status"] == "closed", issue
        assert project.landed_witness(issue_id)[1] == [f"git://premath/{issue_id}@{commit}"]
        checked = project.verify_branch(issue_id, tmp_path / "checks" / issue_id)
        assert checked.returncode == 0, (issue_id, checked.stderr)


def test_twelve_issues_drained_by_four_workers_on_two_nodes_under_the_default_policy(
    ray_cluster: RayCluster, tmp_path
):
    workers = [f"fleet.{k}" for k in range(1, 5)]
    project = project_of(tmp_path, 12, *workers)
    fleet = mint_fleet_witness(project)
    with mcp_server(project) as server:  # instruction-linked: the server's default
        process = coordinator(
            ray_cluster, project, server.url,
            "--instruction-id", fleet, "--concurrency", "4", "--worker-cpus", "0.5",
            "--worker-prefix", "fleet", "--worker-memory-mb", "64",
            "--work-cmd", f"sleep 0.3 && {WRITE_OUT}",
        )  # fmt: skip
        code, document, stderr = finished(process)
        accepted = finishes_ok(server)
    assert code == 0, stderr
    assert (document["executor"], document["stoppedReason"]) == ("ray", "drained")
    assert (document["workerCount"], document["closedCount"], document["failedCount"]) == (4, 12, 0)
    closed = [issue for worker in document["workers"] for issue in worker["closedIssueIds"]]
    assert sorted(closed) == sorted(f"bd-{n}" for n in range(1, 13))  # each exactly once
    assert sum(accepted.values()) == 12
    assert set(accepted) <= set(workers)  # every worker presented its own token
    assert_delivered(project, tmp_path, [f"bd-{n}" for n in range(1, 13)])
    nodes = {claim["node"] for claim in document["claims"]}
    assert len(nodes) == 2, document["claims"]  # placed over both nodes
    for claim in document["claims"]:
        line = f"[coordinator] {claim['workerId']} -> {claim['issueId']} on node {claim['node']}"
        assert line in stderr


def _held(project: Project) -> dict[str, str]:
    return {
        issue_id: row["lease"]["owner"]
        for issue_id, row in project.issues.items()
        if "lease" in row
    }


def _pids_with(text: str) -> set[int]:
    return {int(found.split(":", 1)[0]) for found in _processes_with(text)}


def _processes_with(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def test_ctrl_c_stops_every_worker_on_every_node_and_gives_every_lease_back(
    ray_cluster: RayCluster, tmp_path
):
    project = project_of(tmp_path, 6)
    marker = f"premath-fleet-ctrl-c-{os.getpid()}"
    work = f"sh -c 'while true; do sleep 0.2; done' {marker}"
    with mcp_server(project, "--mutation-policy", "open") as server:
        # A whole node's CPU each: one worker on each node (SPREAD alone is a preference).
        process = coordinator(
            ray_cluster, project, server.url,
            "--concurrency", "2", "--worker-cpus", "1", "--work-cmd", work,
        )  # fmt: skip
        wait_for(lambda: len(_held(project)) == 2, 240, "both workers to hold an issue")

        def on_the_extra_node() -> set[int]:
            below = descendants(ray_cluster.worker.pid)
            return {pid for pid in below if marker in _command_line(pid)}

        # Each work is two processes (`sh -c` runs the work's own `sh -c`): count nodes, not
        # processes, and wait for each node's work, however late a loaded node starts it.
        wait_for(on_the_extra_node, 120, "a work to run on the extra node")
        wait_for(lambda: _pids_with(marker) - on_the_extra_node(), 120, "a work to run on the head")
        process.send_signal(signal.SIGINT)
        code, document, stderr = finished(process, timeout=180)
        left = _held(project)
    assert code == 1, stderr
    assert document["stoppedReason"] == "interrupted"
    assert left == {}  # no held lease
    assert _processes_with(marker) == []  # no work left on any node
    assert [p for p in _processes_with("ray::fleet_worker") if "IDLE" not in p] == []
    assert {row["status"] for row in project.issues.values()} == {"open"}
    assert "interrupted: workers stopped, leases given back" in stderr


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_two_coordinators_on_one_authority_share_the_work_and_claim_nothing_twice(
    ray_cluster: RayCluster, tmp_path
):
    project = project_of(tmp_path, 8)
    with mcp_server(project, "--mutation-policy", "open") as server:
        work = ("--work-cmd", f"sleep 0.5 && {WRITE_OUT}")
        first = coordinator(
            ray_cluster, project, server.url, "--concurrency", "2", "--worker-cpus", "0.25", *work
        )
        second = coordinator(
            ray_cluster, project, server.url, "--concurrency", "2", "--worker-cpus", "0.25", *work
        )
        outcomes = [finished(first), finished(second)]
        accepted = finishes_ok(server)
    for code, _, stderr in outcomes:
        assert code == 0, stderr
    closed = [
        [issue for worker in document["workers"] for issue in worker["closedIssueIds"]]
        for _, document, _ in outcomes
    ]
    assert sorted(closed[0] + closed[1]) == sorted(f"bd-{n}" for n in range(1, 9))
    assert closed[0]
    assert closed[1]
    prefixes = {re.sub(r"\.\d+$", "", w["workerId"]) for _, d, _ in outcomes for w in d["workers"]}
    assert len(prefixes) == 2  # each coordinator names its own workers
    claims = Counter(c["issueId"] for _, d, _ in outcomes for c in d["claims"])
    assert set(claims.values()) == {1}  # nothing claimed twice
    assert sum(accepted.values()) == 8
    assert_delivered(project, tmp_path, [f"bd-{n}" for n in range(1, 9)])


def test_a_node_killed_mid_work_and_its_issue_completed_by_another_worker(
    ray_cluster: RayCluster, tmp_path
):
    # Last in the module: the cluster keeps one node from here on.
    project = project_of(tmp_path, 4)
    with mcp_server(project, "--mutation-policy", "open") as server:
        process = coordinator(  # a whole node's CPU each: one worker per node, as above
            ray_cluster, project, server.url,
            "--concurrency", "2", "--worker-cpus", "1", "--lease-ttl-seconds", "30",
            "--work-cmd", f"sleep 4 && {WRITE_OUT}",
        )  # fmt: skip
        ray_cluster.wait_for_harness_on_worker("sleep 4", timeout_s=240)
        on_the_node = set(_held(project))
        ray_cluster.kill_worker()
        code, document, stderr = finished(process)
        accepted = finishes_ok(server)
    assert code == 0, stderr
    assert document["closedCount"] == 4, document
    assert sum(accepted.values()) == 4  # no issue closed twice
    assert_delivered(project, tmp_path, ["bd-1", "bd-2", "bd-3", "bd-4"])
    claimed = Counter(claim["issueId"] for claim in document["claims"])
    again = [issue_id for issue_id, times in claimed.items() if times > 1]
    assert again, document["claims"]  # the lost worker's issue was claimed again...
    assert set(again) <= on_the_node
    for issue_id in again:
        first, *later = [c for c in document["claims"] if c["issueId"] == issue_id]
        # ...by a worker on the node that survived, once its lease went stale.
        assert all(claim["node"] != first["node"] for claim in later)


def test_issues_that_fail_while_every_worker_drains_stop_the_fleet_as_issues_failed(
    ray_cluster: RayCluster, tmp_path
):
    """Issue 35 (D35-3): the workers worked as designed; only the issues failed (escalated)."""
    project = project_of(tmp_path, 2, "fail.1", "fail.2")
    with mcp_server(project, "--mutation-policy", "open") as server:
        process = coordinator(
            ray_cluster, project, server.url,
            "--concurrency", "2", "--worker-cpus", "0.5", "--worker-prefix", "fail",
            "--continue-on-failure", "--verify-cmd", "echo 'check_failed: nope' >&2; exit 1",
        )  # fmt: skip
        code, document, stderr = finished(process)
    assert (code, document.get("stoppedReason")) == (1, "issues_failed"), stderr
    assert [worker["stoppedReason"] for worker in document["workers"]] == ["drained", "drained"]
    failed = sorted(issue for worker in document["workers"] for issue in worker["failedIssueIds"])
    assert failed == ["bd-1", "bd-2"]
    assert (
        "[coordinator] stopped: 2 issues failed or escalated (bd-1, bd-2); every worker ran to "
        "its end"
    ) in stderr.splitlines()
