"""The fleet's record (specs/remote-workers.md "The fleet's record") on a real two-node Ray
cluster on loopback, a remote worker in its own clone and one `mcp-serve` over HTTP under the
default policy: every step done on any worker is one row of the authority's trajectory, and
`harness-kpi` counts them all; a failing verification and a timeout show in `query --mode
failed`, their step records resolve at the authority; the authority SIGKILLed mid-run and
started again on its port loses no row and doubles none."""

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

from premath.harness.retry import policy_digest
from tests.mcp.client import REPO_ROOT, server_env
from tests.ray.conftest import RayCluster
from tests.ray.test_fleet import coordinator, finished
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
    worker_argv,
)

pytestmark = pytest.mark.timeout(600)
TIMEOUT_S = "3"


def blocking_policy(folder: Path) -> Path:
    """The default retry policy, but a timeout is tried twice then blocks its issue (no
    follow-up issue to claim), so the fleet drains."""
    payload = orjson.loads((REPO_ROOT / "premath/data/harness-retry-policy-v1.json").read_bytes())
    for rule in payload["rules"]:
        if rule["ruleId"] == "transient_retry":
            rule.update(maxAttempts=2, escalationAction="mark_blocked")
    payload["policyDigest"] = policy_digest(payload)
    path = folder / "policy.json"
    path.write_bytes(orjson.dumps(payload))
    return path


def restart_on(project: Project, port: int) -> subprocess.Popen[bytes]:
    with (project.root.parent / f"restarted-{port}.stderr").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "premath", "mcp-serve", "--transport", "streamable-http",
             "--bind", f"127.0.0.1:{port}", "--token-file", str(project.tokens)],
            cwd=project.root, env=server_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip


def authority_rows(project: Project) -> list[dict]:
    return project.trajectory_rows()  # polled while the server appends: whole rows only


def premath_json(project: Project, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "premath", *args, "--json"],
        cwd=project.root, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    return orjson.loads(done.stdout)


def test_every_workers_steps_are_the_authoritys_rows_through_a_sigkilled_authority(
    ray_cluster: RayCluster, tmp_path
):
    rows = [issue_row(f"bd-{n}", out_check(f"bd-{n}")) for n in range(1, 9)]
    rows += [issue_row("bd-9", "sh -c 'exit 3'"), issue_row("bd-10", "sh -c 'sleep 30'")]
    project = make_project(
        tmp_path, rows, tokens=fleet_tokens("coordinator", "fleet.1", "fleet.2", "remote.1")
    )
    fleet = mint_fleet_witness(project)
    policy = blocking_policy(tmp_path)
    loop = ("--instruction-id", fleet, "--policy", str(policy), "--backoff-scale", "0",
            "--command-timeout-seconds", TIMEOUT_S, "--continue-on-failure",
            "--work-cmd", f"sleep 1 && {WRITE_OUT}")  # fmt: skip
    with mcp_server(project) as server:  # instruction-linked, the default
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        fleet_process = coordinator(
            ray_cluster, project, server.url, *loop, "--concurrency", "2",
            "--worker-cpus", "0.5", "--worker-prefix", "fleet", "--worker-memory-mb", "64",
        )  # fmt: skip
        with (
            (tmp_path / "remote.stdout").open("wb") as out,
            (tmp_path / "remote.stderr").open("wb") as err,
        ):
            remote = subprocess.Popen(
                worker_argv(server.url, project, "remote.1", *loop, "--drain",
                            "--max-steps", "50", "--repo", str(project.remote),
                            "--checkout-dir", str(tmp_path / "co")),
                cwd=tmp_path, stdout=out, stderr=err, env={**os.environ, "TMPDIR": str(tmp_path)},
            )  # fmt: skip
        # Mid-run: the authority dies at once, with steps landed and steps in flight.
        wait_for(lambda: len(authority_rows(project)) >= 3, 300, "three rows at the authority")
        server.process.kill()
        server.process.wait()
        before_kill = len(authority_rows(project))
    restarted = restart_on(project, port)
    try:
        code, fleet_document, fleet_stderr = finished(fleet_process)
        remote_code = remote.wait(timeout=300)
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.wait(timeout=60)
    remote_document = orjson.loads((tmp_path / "remote.stdout").read_bytes() or b"{}")
    remote_stderr = (tmp_path / "remote.stderr").read_text()
    assert code in (0, 1), fleet_stderr  # 1: one of its workers had a failed step
    assert remote_code in (0, 1), remote_stderr
    assert "not delivered" not in fleet_stderr + remote_stderr

    # Steps done on the workers = rows in the authority's trajectory, none lost, none doubled.
    # (The coordinator lists every claim of its workers: one claim, one step.)
    workers = fleet_document["workers"]
    assert [worker["stoppedReason"] for worker in workers] == ["drained", "drained"]
    assert remote_document["stoppedReason"] == "drained"
    fleet_steps = sum(len(w["closedIssueIds"]) + len(w["failedIssueIds"]) for w in workers)
    assert fleet_steps == len(fleet_document["claims"])
    done = Counter((claim["workerId"], claim["issueId"]) for claim in fleet_document["claims"])
    done.update(("remote.1", step["issueId"]) for step in remote_document["steps"])
    landed = authority_rows(project)
    assert len({row["stepId"] for row in landed}) == len(landed)  # none doubled
    assert before_kill < len(landed)  # the kill came mid-run
    worker_of = {row["stepId"]: row["stepId"].rsplit(f".{row['issueId']}.", 1)[0] for row in landed}
    assert Counter((worker_of[row["stepId"]], row["issueId"]) for row in landed) == done
    assert set(worker_of.values()) <= {"fleet.1", "fleet.2", "remote.1"}
    closed = sorted(row["issueId"] for row in landed if row["resultClass"] == "completed")
    assert closed == sorted(f"bd-{n}" for n in range(1, 9))  # each issue closed once

    # ... = rows harness-kpi counts; the injected failures are the failed rows.
    kpi = premath_json(project, "harness-kpi")
    assert kpi["counts"]["windowRows"] == len(landed) == sum(done.values())
    assert kpi["counts"]["failedRows"] == 2
    assert kpi["counts"]["workerIds"] == sorted(set(worker_of.values()))
    assert "remote.1" in worker_of.values()
    assert {"fleet.1", "fleet.2"} & set(worker_of.values())
    failed = premath_json(project, "harness-trajectory", "query", "--mode", "failed")
    assert sorted(item["issueId"] for item in failed["items"]) == ["bd-10", "bd-9"]
    by_issue = {item["issueId"]: item for item in failed["items"]}
    assert "failure://gate_timeout" in by_issue["bd-10"]["witnessRefs"]
    assert "failure://check_failed" in by_issue["bd-9"]["witnessRefs"]
    # The step witness each failed row (and its escalation note) names resolves here.
    for item in failed["items"]:
        (witness,) = [ref for ref in item["witnessRefs"] if ref.endswith("/step.json")]
        document = orjson.loads((project.root / witness).read_bytes())
        assert document["issueId"] == item["issueId"]
        assert witness in project.issues[item["issueId"]]["notes"]
        tail = project.root / Path(witness).parent / "attempt-1" / "verify.stdout"
        assert tail.is_file()
    assert project.issues["bd-9"]["status"] == "blocked"
    assert project.issues["bd-10"]["status"] == "blocked"
