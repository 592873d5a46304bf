"""The fleet's workers at the authority (specs/remote-workers.md "Workers"): a Ray fleet on a
real two-node local cluster, every claim through a real `mcp-serve` over loopback HTTP; each
worker registers with its node, heartbeats while it works and deregisters when the fleet drains,
and `harness-loop status --mcp-url` shows them."""

import subprocess
import sys

import orjson
import pytest

from tests.ray.conftest import RayCluster
from tests.ray.test_fleet import coordinator, finished, project_of
from tests.support.remote import WRITE_OUT, mcp_server

pytestmark = pytest.mark.timeout(600)


def test_fleet_workers_register_with_their_nodes_and_are_gone_when_drained(
    ray_cluster: RayCluster, tmp_path
):
    project = project_of(tmp_path, 4, "fleet.1", "fleet.2")
    env = {**ray_cluster.env, "PREMATH_WORKER_HEARTBEAT_SECONDS": "1"}
    with mcp_server(project, "--mutation-policy", "open") as server:
        cluster = RayCluster(ray_cluster.address, env, ray_cluster.worker, ray_cluster.scratch)
        process = coordinator(
            cluster, project, server.url,
            "--concurrency", "2", "--worker-cpus", "0.5", "--worker-prefix", "fleet",
            "--work-cmd", f"sleep 1 && {WRITE_OUT}",
        )  # fmt: skip
        code, document, stderr = finished(process)
        status = subprocess.run(
            [sys.executable, "-m", "premath", "harness-loop", "status", "--mcp-url", server.url,
             "--token-file", str(project.tokens), "--json"],
            cwd=project.root, capture_output=True, check=False, timeout=120,
        )  # fmt: skip
        beats = [
            line["caller"]
            for line in server.access_lines()
            if line["event"] == "tool" and line["tool"] == "harness_worker_heartbeat"
        ]
    assert code == 0, stderr
    assert document["closedCount"] == 4
    assert status.returncode == 0, status.stderr
    view = orjson.loads(status.stdout)
    nodes = {worker["workerId"]: worker["node"] for worker in document["workers"]}
    seen = {
        worker["workerId"]: (worker["status"], worker["goneReason"], worker["node"])
        for worker in view["workers"]
    }
    assert seen == {
        "fleet.1": ("gone", "drained", nodes["fleet.1"]),
        "fleet.2": ("gone", "drained", nodes["fleet.2"]),
    }
    assert set(beats) <= {"fleet.1", "fleet.2"}  # each worker beats with its own token
    assert beats
    assert view["counts"] == {"running": 0, "silent": 0, "gone": 2}
