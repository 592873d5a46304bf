"""MCP tool arguments: the blank (empty or white space) values the reference treats as absent
(agent-surface.md §1.3: `id` of add/discover, `status`, `issueType`, the dep types, `issuesPath`,
`surfacePath`, `rootPath`, `instructionId`, the `issue_list` filters, the release expectations,
and the lease fields the transport reads) answer as the call without them, on twin stores;
the verbatim texts keep a blank."""

import shutil
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from premath.clock import FrozenClock
from premath.harness.host.replay import masked
from premath.mcp.server import call_tool
from premath.mcp.tools import ServerConfig, ToolService
from tests.harness.loop_support import make_issues

NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
LEASED = {"id": "bd-3", "assignee": "ann", "leaseId": "lease-3", "leaseTtlSeconds": 600}
CASES = [
    ("issue_ready", {}, ("issuesPath",)),
    ("issue_list", {}, ("status", "assignee", "issuesPath")),
    ("issue_check", {}, ("issuesPath",)),
    ("issue_blocked", {}, ("issuesPath",)),
    ("issue_lease_projection", {}, ("issuesPath",)),
    ("dep_diagnostics", {}, ("issuesPath",)),
    ("issue_add", {"title": "New"}, ("id", "status", "issueType", "issuesPath", "instructionId")),
    (
        "issue_discover",
        {"parentIssueId": "bd-1", "title": "Found"},
        ("id", "issueType", "issuesPath", "instructionId"),
    ),
    ("issue_update", {"id": "bd-1", "notes": "n"}, ("status", "issuesPath", "instructionId")),
    ("dep_add", {"issueId": "bd-1", "dependsOnId": "bd-3"}, ("depType", "issuesPath")),
    ("dep_remove", {"issueId": "bd-2", "dependsOnId": "bd-1"}, ("depType", "instructionId")),
    (
        "dep_replace",
        {"issueId": "bd-2", "dependsOnId": "bd-1", "toDepType": "related"},
        ("fromDepType", "issuesPath", "instructionId"),
    ),
    (
        "issue_claim",
        {"id": "bd-1", "assignee": "ann", "leaseTtlSeconds": 300},
        ("leaseId", "leaseExpiresAt", "issuesPath", "instructionId"),
    ),
    ("issue_claim_next", {"assignee": "ann"}, ("leaseId", "issuesPath", "instructionId")),
    ("issue_lease_renew", LEASED, ("leaseExpiresAt", "issuesPath", "instructionId")),
    ("issue_lease_release", {"id": "bd-3"}, ("assignee", "leaseId", "issuesPath")),
    ("observe_latest", {}, ("surfacePath",)),
    ("observe_needs_attention", {}, ("surfacePath",)),
    ("init_tool", {}, ("rootPath",)),
]
EXPANDED = [(tool, base, field) for tool, base, fields in CASES for field in fields]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = tmp_path_factory.mktemp("template")
    make_issues(root, ["bd-1", "bd-2", "bd-3"], blocks={"bd-2": ["bd-1"]})
    return root


def answer(template: Path, target: Path, tool: str, args: dict, monkeypatch) -> tuple:
    shutil.copytree(template, target)
    monkeypatch.chdir(target)
    service = ToolService(ServerConfig(mutation_policy="open"), FrozenClock(NOW))
    call_tool(service, "issue_claim", LEASED)  # a held lease for renew and release
    result = call_tool(service, tool, args)
    text = result.content[0].text
    return bool(result.is_error), text if result.is_error else masked(orjson.loads(text))


@pytest.mark.parametrize(
    ("tool", "base", "field"), EXPANDED, ids=[f"{tool}.{field}" for tool, _, field in EXPANDED]
)
@pytest.mark.parametrize("blank", ["  ", ""], ids=["spaces", "empty"])
def test_a_blank_argument_is_the_argument_left_out(
    template, tmp_path, monkeypatch, tool, base, field, blank
):
    absent = answer(template, tmp_path / "absent", tool, base, monkeypatch)
    given = answer(template, tmp_path / "blank", tool, {**base, field: blank}, monkeypatch)
    assert given == absent
    assert tool.startswith("observe_") or not absent[0], absent


def test_verbatim_texts_keep_a_blank(template, tmp_path, monkeypatch):
    is_error, _ = answer(
        template, tmp_path / "repo", "issue_update", {"id": "bd-1", "notes": "  "}, monkeypatch
    )
    assert not is_error
    lines = (tmp_path / "repo" / ".premath" / "issues.jsonl").read_bytes().splitlines()
    assert {row["id"]: row for row in map(orjson.loads, lines)}["bd-1"]["notes"] == "  "
