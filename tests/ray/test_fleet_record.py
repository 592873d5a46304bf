"""The fleet's record (specs/remote-workers.md "The fleet's record"), issue 30's "Must show" in one
run: a real two-node Ray cluster on loopback, a remote worker in its own clone and one
`mcp-serve --transport streamable-http --observe --live` (the dashboard served by the same
process) under the default policy. Every step done on any worker is one row of the authority's
trajectory, and `harness-kpi` counts them all; a failing verification and a timeout show in
`query --mode failed`, in the surface's live attention reasons (`/needs-attention`) and on the
dashboard (Playwright on Debian's Chromium), their step records resolve at the authority; the
authority SIGKILLed mid-run and started again on its port loses no row, doubles none, and every
worker registers with it again; an `[HarnessEscalation]` issue there from the start is never
claimed and waits in the "needs a person" lane. Screenshot:
`<pytest base temp>/screenshots/fleet-record-1280.png`."""

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx2
import orjson
import pytest

from premath.harness.retry import policy_digest
from premath.observe.attention import KPI_ATTENTION
from tests.e2e.test_escalations_for_people import ESCALATION
from tests.mcp.client import REPO_ROOT, http_server
from tests.ray.conftest import RayCluster
from tests.ray.test_fleet import coordinator, finished
from tests.support.browser import column_of, open_page, screenshot_folder
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
from tests.web.test_one_process import bearer, login_url

pytestmark = pytest.mark.timeout(600)
TIMEOUT_S = "10"
"""Every command's bound: bd-10 (`sleep 30`) outlives it; the others (`sleep 1` and a write)
finish well inside it on a loaded machine."""
HEARTBEAT_S = "1"
"""Short beats: a worker registers again within a beat of the restarted authority."""
WORKERS = ["fleet.1", "fleet.2", "remote.1"]
SERVE = ("--observe", "--live")


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


def authority_rows(project: Project) -> list[dict]:
    return project.trajectory_rows()  # polled while the server appends: whole rows only


def registry(project: Project) -> dict[str, dict]:
    """The authority's worker registry by worker id ({} before the first registration)."""
    path = project.root / ".premath" / "harness_workers.json"
    return orjson.loads(path.read_bytes())["workers"] if path.exists() else {}


def premath_json(project: Project, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "premath", *args, "--json"],
        cwd=project.root, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    return orjson.loads(done.stdout)


def needs_attention(base: str, token: str) -> dict:
    answer = httpx2.get(f"{base}/needs-attention", headers=bearer(token), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_every_workers_steps_are_the_authoritys_rows_through_a_sigkilled_authority(
    ray_cluster: RayCluster, tmp_path, browser, tmp_path_factory
):
    rows = [issue_row(f"bd-{n}", out_check(f"bd-{n}")) for n in range(1, 9)]
    rows += [issue_row("bd-9", "sh -c 'exit 3'"), issue_row("bd-10", "sh -c 'sleep 30'")]
    rows.append(issue_row("bd-11", out_check("bd-11"), title=ESCALATION, priority=0))
    tokens = fleet_tokens("coordinator", *WORKERS)
    project = make_project(tmp_path, rows, tokens=tokens)
    fleet = mint_fleet_witness(project)
    policy = blocking_policy(tmp_path)
    loop = ("--instruction-id", fleet, "--policy", str(policy), "--backoff-scale", "0",
            "--command-timeout-seconds", TIMEOUT_S, "--continue-on-failure",
            "--work-cmd", f"sleep 1 && {WRITE_OUT}")  # fmt: skip
    beats = {"PREMATH_WORKER_HEARTBEAT_SECONDS": HEARTBEAT_S}
    cluster = RayCluster(
        ray_cluster.address, {**ray_cluster.env, **beats}, ray_cluster.worker, ray_cluster.scratch
    )
    with mcp_server(project, *SERVE) as server:  # instruction-linked, the default
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        fleet_process = coordinator(
            cluster, project, server.url, *loop, "--concurrency", "2",
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
                cwd=tmp_path, stdout=out, stderr=err,
                env={**os.environ, **beats, "TMPDIR": str(tmp_path)},
            )  # fmt: skip
        # Mid-run: the authority dies at once, with steps landed and steps in flight, once
        # every worker has registered with it.
        wait_for(
            lambda: len(authority_rows(project)) >= 3 and set(registry(project)) == set(WORKERS),
            300,
            "three rows at the authority and every worker registered",
        )
        server.process.kill()
        server.process.wait()
        before_kill = len(authority_rows(project))
    serve = ("--bind", f"127.0.0.1:{port}", "--token-file", str(project.tokens), *SERVE)
    with http_server(project.root, *serve) as restarted:
        code, fleet_document, fleet_stderr = finished(fleet_process)
        remote_code = remote.wait(timeout=300)
        remote_document = orjson.loads((tmp_path / "remote.stdout").read_bytes() or b"{}")
        remote_stderr = (tmp_path / "remote.stderr").read_text()
        assert code in (0, 1), fleet_stderr  # 1: one of its workers had a failed step
        assert remote_code in (0, 1), remote_stderr
        assert "not delivered" not in fleet_stderr + remote_stderr

        # Steps done on the workers = rows in the authority's trajectory, none lost, none
        # doubled. (The coordinator lists every claim of its workers: one claim, one step.)
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
        worker_of = {
            row["stepId"]: row["stepId"].rsplit(f".{row['issueId']}.", 1)[0] for row in landed
        }
        assert Counter((worker_of[row["stepId"]], row["issueId"]) for row in landed) == done
        assert set(worker_of.values()) <= set(WORKERS)
        closed = sorted(row["issueId"] for row in landed if row["resultClass"] == "completed")
        assert closed == sorted(f"bd-{n}" for n in range(1, 9))  # each issue closed once

        # Every worker registered again with the restarted authority, then left drained.
        entries = registry(project)
        assert sorted(entries) == WORKERS
        for worker_id, entry in entries.items():
            assert entry["registrations"] >= 2, (worker_id, entry)
            assert (entry["state"], entry["goneReason"]) == ("gone", "drained"), worker_id

        # The escalation was never claimed: no claim, no step, no lease; it waits for a person.
        assert "bd-11" not in {issue_id for _, issue_id in done}
        escalation = project.issues["bd-11"]
        assert (escalation["status"], "lease" in escalation) == ("open", False)

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

        # The live surface says what needs a person: the escalation and the two issues the
        # failures blocked, and the KPI's decision on this window.
        decision = KPI_ATTENTION.get(kpi["decision"]["state"])
        reasons = ["escalations_open", *([decision] if decision else [])]
        token = tokens["coordinator"]
        view = wait_for(
            lambda: (seen := needs_attention(restarted.base, token)).get("live", {}).get(
                "escalationIssueIds") == ["bd-10", "bd-11", "bd-9"] and seen,
            60,
            "the live surface to hold the final state",
        )  # fmt: skip
        assert view["needsAttention"] is True
        assert view["live"]["attentionReasons"] == reasons
        assert view["live"]["staleLeaseIssueIds"] == []
        assert view["live"]["silentWorkerIds"] == []
        assert view["live"]["recentWindow"]["failedSteps"] == 2
        # Both failures ended in the policy's escalation: that is their rows' class.
        assert {item["resultClass"] for item in failed["items"]} == {"escalated_mark_blocked"}
        assert view["topFailureClass"] == "escalated_mark_blocked"

        # ... and so does the dashboard the same process serves.
        page, log = open_page(browser, login_url(restarted), 1280, '.issue[data-id="bd-11"]')
        note = f"{len(landed)} steps, 2 failed"
        page.locator("#trajectory-note", has_text=note).wait_for(timeout=10_000)
        assert page.inner_text("#card-attention .value") == "true"
        assert page.inner_text("#card-top-failure .value") == view["topFailureClass"]
        assert page.locator("#list-reasons li").all_inner_texts() == [
            *view["coherence"]["attentionReasons"],
            *reasons,
        ]
        for issue_id in ("bd-9", "bd-10", "bd-11"):
            assert column_of(page, issue_id) == "needs_person"
        assert page.inner_text('.issue[data-id="bd-11"] .tag.escalated') == (
            "escalated · needs a person"
        )
        tags = {
            issue_id: page.inner_text(f'.issue[data-id="{issue_id}"] .tag.retry')
            for issue_id in ("bd-9", "bd-10")
        }
        assert tags == {
            "bd-9": "attempt 1 of 1 · escalated_mark_blocked",
            "bd-10": "attempt 2 of 2 · escalated_mark_blocked",
        }
        for worker_id in WORKERS:
            page.wait_for_selector(f'#workers tr.worker-gone[data-worker="{worker_id}"]')
        folder = screenshot_folder(tmp_path_factory)
        (folder / "fleet-record-1280.png").write_bytes(page.screenshot(full_page=True))
        assert log.errors == []
        assert log.console == []
