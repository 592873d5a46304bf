"""Escalations go to people (issue 30, D30a-1): an issue the loop files as `[HarnessEscalation]`
is never taken by claim-next (CLI, fast path, transport, MCP over HTTP, a remote worker) unless
asked with `--include-escalations` / `includeEscalations`, and `issue ready` marks it."""

import anyio
import orjson
import pytest

from tests.cli.test_issue import row, seed, stored
from tests.harness.loop_support import ACCEPTABLE
from tests.instruction.host_support import (
    ALL_CLAIMS,
    CHANGE,
    accepted_instruction,
    evaluate,
    evidence,
    host_repo,
    program,
)
from tests.mcp.client import call, http_session
from tests.support.cli import run_premath
from tests.support.remote import (
    WRITE_OUT,
    fleet_tokens,
    issue_row,
    make_project,
    mcp_server,
    out_check,
    run_worker,
)

pytestmark = pytest.mark.timeout(300)

ESCALATION = "[HarnessEscalation] harness.loop retry exhausted (gate_timeout)"


def _escalation_first(workdir):
    """The escalation has the best priority, so only the rule keeps a worker off it."""
    seed(
        workdir,
        row("bd-1", title="real work", priority=2),
        row("bd-2", title=ESCALATION, priority=0),
    )


def test_claim_next_leaves_an_escalation_to_people_unless_asked(cli_run, workdir):
    _escalation_first(workdir)
    taken = cli_run("issue", "claim-next", "--assignee", "w1", "--json")
    assert taken.exit_code == 0, taken.stderr
    assert taken.json["issue"]["id"] == "bd-1"
    nothing = cli_run("issue", "claim-next", "--assignee", "w1", "--json")
    assert nothing.json["issue"] is None
    assert stored(workdir)["bd-2"]["status"] == "open"
    person = cli_run(
        "issue", "claim-next", "--assignee", "alice", "--include-escalations", "--json"
    )
    assert person.json["issue"]["id"] == "bd-2"
    assert stored(workdir)["bd-2"]["lease"]["owner"] == "alice"


def test_the_fast_path_takes_the_same_flag(workdir):
    _escalation_first(workdir)
    first = run_premath("issue", "claim-next", "--assignee", "w1", "--json", cwd=workdir)
    second = run_premath("issue", "claim-next", "--assignee", "w1", "--json", cwd=workdir)
    person = run_premath(
        "issue", "claim-next", "--assignee", "alice", "--include-escalations", "--json",
        cwd=workdir,
    )  # fmt: skip
    claimed = [orjson.loads(done.stdout)["issue"] for done in (first, second, person)]
    assert [issue and issue["id"] for issue in claimed] == ["bd-1", None, "bd-2"]


def test_issue_ready_marks_an_escalation(cli_run, workdir):
    _escalation_first(workdir)
    listed = cli_run("issue", "ready", "--json")
    assert [(item["id"], item.get("escalation")) for item in listed.json["items"]] == [
        ("bd-2", True),
        ("bd-1", None),
    ]
    text = cli_run("issue", "ready").stdout
    assert f"bd-2 [p0] {ESCALATION}  (escalation: for a person; claim-next skips it)" in text
    assert "bd-1 [p2] real work\n" in text


def test_transport_dispatch_skips_it_unless_the_payload_asks(cli_run, workdir):
    seed(workdir, row("bd-2", title=ESCALATION, priority=0))
    plain = cli_run(
        "transport-dispatch", "--action", "issue.claim_next",
        "--payload", '{"assignee": "w1"}', "--json",
    )  # fmt: skip
    assert (plain.json["result"], plain.json.get("changed")) == ("accepted", False)
    wrong = cli_run(
        "transport-dispatch", "--action", "issue.claim_next",
        "--payload", '{"assignee": "w1", "includeEscalations": "yes"}', "--json",
    )  # fmt: skip
    assert wrong.json["result"] == "rejected"
    assert "expected a boolean" in orjson.dumps(wrong.json).decode()
    asked = cli_run(
        "transport-dispatch", "--action", "issue.claim_next",
        "--payload", '{"assignee": "alice", "includeEscalations": true}', "--json",
    )  # fmt: skip
    assert asked.json["result"] == "accepted"
    assert stored(workdir)["bd-2"]["lease"]["owner"] == "alice"


def test_a_remote_worker_never_claims_an_escalation_and_a_person_can(tmp_path):
    tokens = fleet_tokens("w1", "alice")
    rows = [
        issue_row("bd-1", out_check("bd-1")),
        issue_row("bd-2", out_check("bd-2"), title=ESCALATION, priority=0),
    ]
    project = make_project(tmp_path, rows, tokens=tokens)
    with mcp_server(project, "--mutation-policy", "open") as server:
        code, document, stderr = run_worker(
            server.url, project, "w1",
            "--repo", str(project.remote), "--checkout-dir", str(tmp_path / "co"),
            "--work-cmd", WRITE_OUT, "--max-steps", "5",
        )  # fmt: skip
        assert code == 0, stderr
        assert document["closedIssueIds"] == ["bd-1"]
        assert document["stoppedReason"] == "no_ready_issue"
        assert "bd-2" not in stderr
        escalation = project.issues["bd-2"]
        assert (escalation["status"], "lease" in escalation) == ("open", False)

        async def by_hand():
            async with http_session(server.url, tokens["alice"]) as client:
                plain = await call(client, "issue_claim_next", {"assignee": "alice"})
                ready = await call(client, "issue_ready", {})
                wrong = await call(
                    client, "issue_claim_next", {"assignee": "alice", "includeEscalations": 1}
                )
                asked = await call(
                    client, "issue_claim_next", {"assignee": "alice", "includeEscalations": True}
                )
            return plain, wrong, asked, ready

        plain, wrong, asked, ready = anyio.run(by_hand)
    assert (plain[0], plain[1]["changed"]) == (False, False)
    assert wrong[0] is True
    assert "expected a boolean" in wrong[1]
    assert (asked[0], asked[1]["issue"]["id"]) == (False, "bd-2")
    assert project.issues["bd-2"]["lease"]["owner"] == "alice"
    assert [(i["id"], i.get("escalation")) for i in ready[1]["items"]] == [("bd-2", True)]


def test_a_host_program_claims_an_escalation_only_when_it_asks(tmp_path, monkeypatch):
    host_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    seed(tmp_path, row("bd-2", title=ESCALATION, priority=0))
    ref = accepted_instruction(tmp_path, "20260301T000000Z-work", ALL_CLAIMS)
    program(
        tmp_path,
        {"callId": "plain", "action": "issue.claim_next", "args": {"assignee": "w"}},
        {
            "callId": "asked",
            "action": "issue.claim_next",
            "args": {"assignee": "alice", "includeEscalations": True},
        },
        **evidence(ref, f"{CHANGE}.all"),
    )
    effects = evaluate(tmp_path)["effects"]
    assert [(e["callId"], e["payload"]["changed"]) for e in effects] == [
        ("plain", False),
        ("asked", True),
    ]
    assert stored(tmp_path)["bd-2"]["lease"]["owner"] == "alice"


def test_the_coordinator_stops_when_only_escalations_are_left(cli_run, workdir):
    seed(
        workdir,
        row("bd-1", title="real work", description=ACCEPTABLE),
        row("bd-2", title=ESCALATION, priority=0, description=ACCEPTABLE),
    )
    done = cli_run(
        "harness-loop", "coordinator", "--worktree", ".", "--verify-cmd", "true",
        "--rounds", "3", "--json",
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    assert "[coordinator] round=1 ready=1" in done.stderr
    assert "[coordinator] round=2 ready=0" in done.stderr
    assert "round=3" not in done.stderr
    assert done.json["stoppedReason"] == "no_ready_issue"
    assert (stored(workdir)["bd-1"]["status"], stored(workdir)["bd-2"]["status"]) == (
        "closed",
        "open",
    )
