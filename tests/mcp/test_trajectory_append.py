"""`harness_trajectory_append` on a real `mcp-serve` over loopback HTTP, driven by the SDK's
client with one bearer token per worker: the row lands in the authority's trajectory with its
step record under the step's folder, a retried call writes nothing, a conflicting one is refused
and logged, a worker cannot report as another or for an issue it never held, records over the
cap or outside the step folder are refused, and a restarted server still knows what it holds."""

import subprocess
import sys
import time

import anyio
import orjson

from tests.cli.test_issue import row, seed
from tests.mcp.client import http_server, http_session, new_token, token_file
from tests.support.serve import EventStream

TRAJECTORY = ".premath/harness_trajectory.jsonl"


def step(step_id: str, result: str = "completed", issue: str | None = "bd-1") -> dict:
    fields = {
        "stepId": step_id,
        "action": "worker.loop",
        "resultClass": result,
        "witnessRefs": ["failure://verify_failed"] if result != "completed" else [],
        "finishedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return {**fields, "issueId": issue} if issue else fields


def calls(url: str, token: str, *requests: tuple[str, dict]) -> list[tuple[bool, object]]:
    async def scenario() -> list[tuple[bool, object]]:
        answers = []
        async with http_session(url, token) as client:
            for name, arguments in requests:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text
                answers.append(
                    (bool(result.is_error), text if result.is_error else orjson.loads(text))
                )
        return answers

    return anyio.run(scenario)


def rows(workdir) -> list[dict]:
    path = workdir / TRAJECTORY
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def test_rows_and_records_land_once_at_the_authority(workdir):
    seed(workdir, row("bd-1"), row("bd-2"))
    tokens = {"w1": new_token(), "w2": new_token()}
    path = token_file(workdir.parent, **tokens)
    options = ("--token-file", str(path), "--mutation-policy", "open")
    record = [
        {"path": "step.json", "text": '{"failureClasses": ["verify_failed"]}\n'},
        {"path": "attempt-1/verify.stderr", "text": "FAILED test_x\n"},
    ]
    append = {"workerId": "w1", "leaseId": "L1", "row": step("w1.bd-1.1"), "stepFiles": record}
    with http_server(workdir, *options) as server:
        claimed, first, again, conflict = calls(
            server.url,
            tokens["w1"],
            ("issue_claim_next", {"assignee": "w1", "leaseId": "L1"}),
            ("harness_trajectory_append", append),
            ("harness_trajectory_append", append),
            (
                "harness_trajectory_append",
                {**append, "row": step("w1.bd-1.1", "failed_verify")},
            ),
        )
        assert claimed[1]["issue"]["id"] == "bd-1"
        assert first[0] is False, first
        assert (first[1]["appended"], first[1]["stepRecordPath"]) == (
            True,
            ".premath/harness_steps/w1.bd-1.1",
        )
        assert again[1]["appended"] is False
        assert conflict[0] is True
        assert conflict[1].startswith("[failureClass=trajectory.step_conflict] step w1.bd-1.1")
        folder = workdir / ".premath" / "harness_steps" / "w1.bd-1.1"
        assert (folder / "attempt-1" / "verify.stderr").read_text() == "FAILED test_x\n"
        assert [r["stepId"] for r in rows(workdir)] == ["w1.bd-1.1"]

        forged, not_held, too_big, outside, other_worker = calls(
            server.url,
            tokens["w2"],
            ("harness_trajectory_append", {**append, "row": step("w1.bd-1.9")}),
            ("harness_trajectory_append", {"workerId": "w2", "leaseId": "L1",
                                           "row": step("w2.bd-1.1")}),
            ("issue_claim_next", {"assignee": "w2", "leaseId": "L2"}),
            ("harness_trajectory_append", {"workerId": "w2", "leaseId": "L2",
                                           "row": step("w2.bd-2.1", issue="bd-2"),
                                           "stepFiles": [{"path": "../x", "text": "x"}]}),
            ("harness_trajectory_append", {"workerId": "w2", "leaseId": "L2",
                                           "row": step("w1.bd-2.1", issue="bd-2")}),
        )  # fmt: skip
        assert forged[1].startswith("[failureClass=worker.identity_refused] the token `w2`")
        assert not_held[1].startswith("[failureClass=trajectory.issue_not_held] worker w2")
        assert too_big[1]["issue"]["id"] == "bd-2"
        assert outside[1].startswith("[failureClass=trajectory.step_record_invalid]")
        assert other_worker[1].startswith("[failureClass=trajectory.worker_mismatch]")

        huge = [{"path": "attempt-1/verify.stdout", "text": "x" * (1024 * 1024 + 1)}]
        ((oversized, message),) = calls(
            server.url,
            tokens["w2"],
            ("harness_trajectory_append", {"workerId": "w2", "leaseId": "L2",
                                           "row": step("w2.bd-2.1", issue="bd-2"),
                                           "stepFiles": huge}),
        )  # fmt: skip
        assert oversized is True
        assert message.startswith("[failureClass=trajectory.step_record_too_large]")
        assert not (workdir / ".premath" / "harness_steps" / "w2.bd-2.1").exists()
        assert [r["stepId"] for r in rows(workdir)] == ["w1.bd-1.1"]
        logged = [
            line["failureClass"]
            for line in server.access_lines()
            if line.get("tool") == "harness_trajectory_append" and line["outcome"] == "tool_error"
        ]
        assert "trajectory.step_conflict" in logged

    # A restarted authority: the grant and the row are on disk, so a delivery sent again after
    # the issue was closed is neither refused nor doubled.
    with http_server(workdir, *options) as server:
        finished, repeated, later = calls(
            server.url,
            tokens["w1"],
            ("issue_lease_finish", {"id": "bd-1", "assignee": "w1", "leaseId": "L1",
                                    "status": "closed"}),
            ("harness_trajectory_append", append),
            ("harness_trajectory_append", {**append, "row": step("w1.bd-1.2", "failed_verify"),
                                           "stepFiles": []}),
        )  # fmt: skip
        assert finished[0] is False, finished
        assert repeated[1]["appended"] is False
        assert later[1]["appended"] is True
    assert [r["stepId"] for r in rows(workdir)] == ["w1.bd-1.1", "w1.bd-1.2"]
    kpi = subprocess.run(
        [sys.executable, "-m", "premath", "harness-kpi", "--json"],
        cwd=workdir, capture_output=True, check=False,
    )  # fmt: skip
    failed = subprocess.run(
        [sys.executable, "-m", "premath", "harness-trajectory", "query", "--mode", "failed",
         "--json"],
        cwd=workdir, capture_output=True, check=False,
    )  # fmt: skip
    assert orjson.loads(failed.stdout)["count"] == 1, failed.stderr
    counts = orjson.loads(kpi.stdout)["counts"]
    assert (counts["windowRows"], counts["completedRows"], counts["failedRows"]) == (2, 1, 1)


def test_one_token_is_one_trust_domain_and_rows_may_come_out_of_order(workdir):
    """With a single token the caller may act as any worker id (worker_identity.py); a later
    step delivered before an earlier one is taken as it comes (rows carry their own times)."""
    seed(workdir, row("bd-1"))
    token = new_token()
    path = token_file(workdir.parent, coordinator=token)
    options = ("--token-file", str(path), "--mutation-policy", "open")
    with http_server(workdir, *options) as server:
        _claimed, later, earlier = calls(
            server.url,
            token,
            ("issue_claim_next", {"assignee": "fleet.1", "leaseId": "L1"}),
            ("harness_trajectory_append", {"workerId": "fleet.1", "leaseId": "L1",
                                           "row": step("fleet.1.bd-1.2")}),
            ("harness_trajectory_append", {"workerId": "fleet.1", "leaseId": "L1",
                                           "row": step("fleet.1.bd-1.1", "failed_verify")}),
        )  # fmt: skip
        assert later[0] is False, later
        assert earlier[0] is False, earlier
    assert [r["stepId"] for r in rows(workdir)] == ["fleet.1.bd-1.2", "fleet.1.bd-1.1"]


def test_a_remote_row_reaches_the_authoritys_dashboard_tail_and_kpi(workdir):
    """`mcp-serve --observe --live`: the trajectory the dashboard watches is the one the tool
    writes, so a remote step shows in its tail and KPI (a delta on the event stream)."""
    seed(workdir, row("bd-1"))
    token = new_token()
    path = token_file(workdir.parent, fleet=token)
    options = ("--token-file", str(path), "--mutation-policy", "open", "--observe", "--live")
    with http_server(workdir, *options) as server:
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        stream = EventStream(port, timeout=60, headers={"Authorization": f"Bearer {token}"})
        try:
            name, snapshot = stream.next_event()
            assert name == "snapshot"
            assert b"fleet.1.bd-1.1" not in orjson.dumps(snapshot)
            calls(
                server.url,
                token,
                ("issue_claim_next", {"assignee": "fleet.1", "leaseId": "L1"}),
                ("harness_trajectory_append", {"workerId": "fleet.1", "leaseId": "L1",
                                               "row": step("fleet.1.bd-1.1", "failed_verify")}),
            )  # fmt: skip
            delta = stream.delta_with("trajectory", within_s=60)
        finally:
            stream.close()
    assert [item["stepId"] for item in delta["trajectory"]["latest"]] == ["fleet.1.bd-1.1"]
    assert delta["trajectory"]["failedCount"] == 1
    assert delta["kpi"]["counts"]["failedRows"] == 1


def test_the_same_step_sent_at_once_by_eight_clients_lands_once(workdir):
    """Retries racing each other (eight sessions at once, the server's calls on threads): one
    is written, the others see it there."""
    seed(workdir, row("bd-1"))
    token = new_token()
    path = token_file(workdir.parent, fleet=token)
    options = ("--token-file", str(path), "--mutation-policy", "open")
    append = {"workerId": "fleet.1", "leaseId": "L1", "row": step("fleet.1.bd-1.1"),
              "stepFiles": [{"path": "step.json", "text": "{}\n"}]}  # fmt: skip
    with http_server(workdir, *options) as server:
        calls(server.url, token, ("issue_claim_next", {"assignee": "fleet.1", "leaseId": "L1"}))
        answers: list[bool] = []

        async def one() -> None:
            async with http_session(server.url, token) as client:
                result = await client.call_tool("harness_trajectory_append", append)
                assert not result.is_error, result.content[0].text
                answers.append(orjson.loads(result.content[0].text)["appended"])

        async def race() -> None:
            async with anyio.create_task_group() as group:
                for _ in range(8):
                    group.start_soon(one)

        anyio.run(race)
    assert sorted(answers) == [False] * 7 + [True]
    assert [r["stepId"] for r in rows(workdir)] == ["fleet.1.bd-1.1"]
