"""16 MCP clients (each its own server process) and 4 CLI processes drain one 1,000-issue store:
every issue claimed exactly once, no failed call, the file canonical at the end."""

import subprocess
import sys

import anyio
import orjson
import pytest

from premath.store.issues_file import encode_store
from tests.cli.test_issue import ISSUES, row, seed
from tests.mcp.client import REPO_ROOT, call, session

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


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_mcp_and_cli_claimers_drain_one_store_exactly_once(workdir):
    seed(workdir, *(row(f"bd-{n}") for n in range(1, ISSUE_COUNT + 1)))
    claims: dict[str, list[str]] = {}
    failures: list[str] = []

    async def mcp_claimer(name: str) -> None:
        async with session(workdir, "--mutation-policy", "open") as client:
            mine = claims.setdefault(name, [])
            while True:
                error, document = await call(client, "issue_claim_next", {"assignee": name})
                if error:
                    failures.append(document)
                    return
                if "issue" not in document:
                    return
                mine.append(document["issue"]["id"])

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
