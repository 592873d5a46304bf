"""`issue ready` and `issue list` list issues in the order `claim-next` takes them (priority,
then the id in natural order), and `issue list --json` shows each lease as the MCP tool does
(divergence D25-1; the reference lists by id in byte order, without leases)."""

import orjson

from premath.clock import FrozenClock
from premath.mcp.server import call_tool
from premath.mcp.tools import ServerConfig, ToolService
from tests.cli.test_issue import ISSUES, lease, row, seed

FAR = "2099-01-01T00:00:00Z"
ROWS = (
    row("bd-1"),
    row("bd-2", priority=1),
    row("bd-9"),
    row("bd-10"),
    row("bd-11", priority=0),
    row("bd-3", status="closed", priority=0),
    row("bd-4", status="in_progress", assignee="w9", lease=lease("bd-4", "w9", FAR)),
)


def test_ready_lists_issues_in_the_order_claim_next_takes_them(cli_run, workdir):
    seed(workdir, *ROWS)
    ready = cli_run("issue", "ready", "--json").json
    listed = [item["id"] for item in ready["items"]]
    assert listed == ["bd-11", "bd-2", "bd-1", "bd-9", "bd-10"]
    text = cli_run("issue", "ready").stdout.splitlines()
    assert text[3:] == [
        "  - bd-11 [p0] bd-11",
        "  - bd-2 [p1] bd-2",
        "  - bd-1 [p2] bd-1",
        "  - bd-9 [p2] bd-9",
        "  - bd-10 [p2] bd-10",
    ]
    taken = []
    while (claimed := cli_run("issue", "claim-next", "--assignee", "w1", "--json")).json["issue"]:
        taken.append(claimed.json["issue"]["id"])
    assert taken == listed


def test_list_uses_the_same_order_and_shows_leases_as_the_mcp_tool(cli_run, workdir, clock):
    seed(workdir, *ROWS)
    listed = cli_run("issue", "list", "--json").json
    ids = [item["id"] for item in listed["items"]]
    assert ids == ["bd-3", "bd-11", "bd-2", "bd-1", "bd-4", "bd-9", "bd-10"]
    held = listed["items"][ids.index("bd-4")]["lease"]
    assert (held["owner"], held["state"], held["leaseId"]) == ("w9", "active", "lease1_bd-4_w9")
    assert listed["items"][0]["lease"] is None
    service = ToolService(ServerConfig(issues_path=str(workdir / ISSUES)), FrozenClock(clock.now()))
    answer = call_tool(service, "issue_list", {})
    assert not answer.is_error
    assert orjson.loads(answer.content[0].text)["items"] == listed["items"]


def test_harness_boot_names_the_issue_claim_next_takes(cli_run, workdir):
    seed(workdir, *ROWS)
    boot = cli_run("harness", "boot", "--json").json
    assert boot["nextTarget"]["issueId"] == "bd-11"
    assert boot["readyIssueIds"] == ["bd-11", "bd-2", "bd-1", "bd-9", "bd-10"]
