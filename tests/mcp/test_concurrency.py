"""16 MCP clients (each its own server process) and 4 CLI processes drain one 1,000-issue store,
and 64 streamable HTTP clients of one server drain 2,000 issues: every issue claimed exactly
once, no failed call, the file canonical at the end."""

import subprocess
import sys

import anyio
import orjson
import pytest

from premath.store.issues_file import encode_store
from tests.cli.test_issue import ISSUES, row, seed
from tests.mcp.client import (
    REPO_ROOT,
    call,
    http_server,
    http_session,
    new_token,
    session,
    token_file,
)

ISSUE_COUNT = 1000


def cli_claimer(workdir, name: str) -> list[str]:
    claimed = []
    while True:
        done = subprocess.run(
            [sys.executable, "-m", "premath", "issue", "claim-next", "--assignee", name, "--json"],
            capture_output=True,
            cwd=workdir,
            env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
            timeout=120,
            check=True,
        )
        document = orjson.loads(done.stdout)
        if not document["claimed"]:
            return claimed
        claimed.append(document["issue"]["id"])


async def drain(client, name: str, mine: list[str], failures: list[str]) -> None:
    """Claim-next until nothing is left; a failed call (tool error or transport) is counted."""
    while True:
        try:
            error, document = await call(client, "issue_claim_next", {"assignee": name})
        except Exception as exc:  # noqa: BLE001 - a failed call is counted, not raised
            failures.append(repr(exc))
            return
        if error:
            failures.append(document)
            return
        if "issue" not in document:
            return
        mine.append(document["issue"]["id"])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_mcp_and_cli_claimers_drain_one_store_exactly_once(workdir):
    seed(workdir, *(row(f"bd-{n}") for n in range(1, ISSUE_COUNT + 1)))
    claims: dict[str, list[str]] = {}
    failures: list[str] = []

    async def mcp_claimer(name: str) -> None:
        async with session(workdir, "--mutation-policy", "open") as client:
            await drain(client, name, claims.setdefault(name, []), failures)

    async def cli_runner(name: str) -> None:
        claims[name] = await anyio.to_thread.run_sync(cli_claimer, workdir, name)

    async def everyone() -> None:
        async with anyio.create_task_group() as group:
            for n in range(16):
                group.start_soon(mcp_claimer, f"mcp-{n}")
            for n in range(4):
                group.start_soon(cli_runner, f"cli-{n}")

    anyio.run(everyone)
    assert failures == []
    every = [issue_id for ids in claims.values() for issue_id in ids]
    assert sorted(every) == sorted(f"bd-{n}" for n in range(1, ISSUE_COUNT + 1))
    assert len(set(every)) == ISSUE_COUNT
    data = (workdir / ISSUES).read_bytes()
    rows = {r["id"]: r for r in map(orjson.loads, data.splitlines())}
    assert encode_store(rows) == data
    owners = {issue_id: name for name, ids in claims.items() for issue_id in ids}
    assert all(
        rows[i]["assignee"] == owners[i] and rows[i]["status"] == "in_progress" for i in rows
    )
    assert not list(workdir.glob(".premath/*.lock"))


HTTP_CLIENTS = 64
HTTP_ISSUES = 2000


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_64_http_clients_drain_2000_issues_each_claimed_exactly_once(workdir):
    seed(workdir, *(row(f"bd-{n}") for n in range(1, HTTP_ISSUES + 1)))
    token = new_token()
    path = token_file(workdir.parent, drain=token)
    claims: dict[str, list[str]] = {}
    failures: list[str] = []

    async def http_claimer(url: str, name: str, start: anyio.Event) -> None:
        async with http_session(url, token) as client:
            mine = claims.setdefault(name, [])
            await start.wait()
            await drain(client, name, mine, failures)

    async def everyone(url: str) -> None:
        start = anyio.Event()
        async with anyio.create_task_group() as group:
            for n in range(HTTP_CLIENTS):
                group.start_soon(http_claimer, url, f"http-{n}", start)
            await anyio.sleep(2)
            start.set()

    with http_server(workdir, "--token-file", str(path), "--mutation-policy", "open") as server:
        anyio.run(everyone, server.url)
        tool_lines = [line for line in server.access_lines() if line["event"] == "tool"]
    assert failures == []
    every = [issue_id for ids in claims.values() for issue_id in ids]
    assert len(every) == HTTP_ISSUES
    assert sorted(every) == sorted(f"bd-{n}" for n in range(1, HTTP_ISSUES + 1))
    assert len(claims) == HTTP_CLIENTS
    data = (workdir / ISSUES).read_bytes()
    rows = {r["id"]: r for r in map(orjson.loads, data.splitlines())}
    assert encode_store(rows) == data
    owners = {issue_id: name for name, ids in claims.items() for issue_id in ids}
    assert all(rows[i]["assignee"] == owners[i] for i in rows)
    assert {line["outcome"] for line in tool_lines} == {"ok"}
    assert len(tool_lines) == HTTP_ISSUES + HTTP_CLIENTS
    assert not list(workdir.glob(".premath/*.lock"))
