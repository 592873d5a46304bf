"""Group commit in a real HTTP authority, with the MCP SDK's own clients: the server SIGKILLed
while 8 clients claim and add (every acknowledged mutation is on disk, no issue acknowledged
twice, the file parses for us and for the reference); and the reference CLI writing the same
store while the authority is busy (nothing lost, nothing claimed twice)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import orjson
import pytest

from premath.store.issues_file import load_issues
from tests.conftest import T0
from tests.mcp.client import HttpServer, call, http_server, http_session, new_token, token_file
from tests.support.stores import write_open_store

REFERENCE_ENV = "PREMATH_REFERENCE_BIN"
ISSUES = ".premath/issues.jsonl"
CALL_TIMEOUT_S = 30
KILLED_ROUNDS = 4
ADDS_PER_WORKER = 3
"""Each worker adds a few issues (claimable too) between its first claims, then only claims."""


def reference_bin() -> str | None:
    found = os.environ.get(REFERENCE_ENV)
    return found if found and os.access(found, os.X_OK) else None


def reference_list(workdir: Path, binary: str) -> dict[str, dict]:
    """`issue list --json` of the reference on the store: its items by id (it must parse)."""
    done = subprocess.run(
        [binary, "issue", "list", "--json", "--issues", ISSUES],
        cwd=workdir,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return {item["id"]: item for item in orjson.loads(done.stdout)["items"]}


class Ledger:
    """What the authority acknowledged: claims (issue -> claimers) and added issue ids."""

    def __init__(self) -> None:
        self.claims: dict[str, list[str]] = {}
        self.added: set[str] = set()
        self.count = 0
        self.drained = False


async def worker(url: str, token: str, name: str, ledger: Ledger, start: anyio.Event) -> None:
    """Claim-next (and issue_add after each of the first claims) until the server dies or
    nothing is left; only a successful reply is recorded."""
    try:
        async with http_session(url, token) as client:
            await start.wait()
            n = 0
            while True:
                n += 1
                with anyio.fail_after(CALL_TIMEOUT_S):
                    error, document = await call(client, "issue_claim_next", {"assignee": name})
                if error:
                    return
                if "issue" not in document:
                    ledger.drained = True
                    return
                ledger.claims.setdefault(document["issue"]["id"], []).append(name)
                ledger.count += 1
                if n > ADDS_PER_WORKER:
                    continue
                added = f"add-{name}-{n}-{os.getpid()}"
                with anyio.fail_after(CALL_TIMEOUT_S):
                    error, document = await call(
                        client, "issue_add", {"id": added, "title": added, "priority": 4}
                    )
                if error:
                    return
                ledger.added.add(document["issue"]["id"])
                ledger.count += 1
    except Exception:  # noqa: BLE001 - the server was killed under this client
        return


def check_store(workdir: Path, ledger: Ledger) -> dict:
    """Every acknowledged mutation is in the file, which both tools parse; none acknowledged
    twice."""
    issues = load_issues(str(workdir / ISSUES), T0, tolerate_torn_tail=False)
    twice = {issue_id: names for issue_id, names in ledger.claims.items() if len(names) > 1}
    assert twice == {}
    for issue_id, (name,) in ledger.claims.items():
        assert (issues[issue_id]["status"], issues[issue_id].get("assignee")) == (
            "in_progress",
            name,
        )
    assert ledger.added <= set(issues)
    binary = reference_bin()
    if binary is not None:
        assert set(reference_list(workdir, binary)) == set(issues)
    return issues


async def fleet_until_killed(
    server: HttpServer, token: str, prefix: str, ledger: Ledger, target: int
) -> None:
    """8 workers; the server is SIGKILLed mid-flight once `target` mutations were acknowledged
    (unless the store drained first)."""
    start = anyio.Event()
    async with anyio.create_task_group() as group:
        for n in range(8):
            group.start_soon(worker, server.url, token, f"{prefix}-{n}", ledger, start)
        start.set()
        while ledger.count < target and not ledger.drained:
            await anyio.sleep(0.01)
        if not ledger.drained:
            server.process.send_signal(signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sigkilled_authority_loses_no_acknowledged_mutation(workdir):
    write_open_store(workdir, 300)
    token = new_token()
    tokens = token_file(workdir.parent, fleet=token)
    ledger = Ledger()
    rounds = 0
    while not ledger.drained and rounds <= KILLED_ROUNDS:
        rounds += 1
        # The last round runs to the end: the drain shows what the killed rounds left.
        target = ledger.count + 50 if rounds <= KILLED_ROUNDS else sys.maxsize
        with http_server(
            workdir, "--token-file", str(tokens), "--mutation-policy", "open"
        ) as server:
            anyio.run(fleet_until_killed, server, token, f"w{rounds}", ledger, target)
        server.process.wait(30)
        check_store(workdir, ledger)
    assert ledger.drained, f"never drained in {rounds} rounds"
    issues = check_store(workdir, ledger)
    # Drained: every original issue claimed once (acknowledged, or applied as the kill came).
    originals = {f"bd-{n}" for n in range(1, 301)}
    assert {i for i in originals if issues[i]["status"] == "in_progress"} == originals
    assert originals <= set(ledger.claims) | {i for i in originals if issues[i].get("assignee")}
    assert rounds == KILLED_ROUNDS + 1


def reference_run(workdir: Path, binary: str, *argv: str) -> subprocess.CompletedProcess:
    """One reference command on the store, retried while our lock keeps it out."""
    while True:
        done = subprocess.run(
            [binary, "issue", *argv, "--issues", ISSUES, "--json"],
            cwd=workdir,
            capture_output=True,
            timeout=60,
            check=False,
        )
        if b"lock busy" not in done.stderr:
            return done


def reference_writer(workdir: Path, binary: str, count: int) -> tuple[list[str], list[str]]:
    """The reference adds `ref-N` issues and claims open `bd-` issues from the far end while
    the authority drains from the near end: the ids it added and claimed (exit 0). A claim
    that lost the race to the authority is refused as the reference refuses it."""
    added, claimed = [], []
    for n in range(count):
        done = reference_run(workdir, binary, "add", f"ref issue {n}", "--id", f"ref-{n}")
        assert done.returncode == 0, done.stderr.decode()
        added.append(f"ref-{n}")
        issue_id = f"bd-{200 - 3 * n}"
        done = reference_run(workdir, binary, "claim", issue_id, "--assignee", "reference")
        if done.returncode == 0:
            claimed.append(issue_id)
        else:
            assert b"issue already leased" in done.stderr, done.stderr.decode()
    return added, claimed


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_reference_writer_interleaved_with_a_busy_authority(workdir):
    binary = reference_bin()
    if binary is None:
        pytest.skip(f"{REFERENCE_ENV} is not set: the reference binary is needed")
    write_open_store(workdir, 200)
    token = new_token()
    tokens = token_file(workdir.parent, fleet=token)
    ledger = Ledger()
    found: list[tuple[list[str], list[str]]] = []
    with http_server(workdir, "--token-file", str(tokens), "--mutation-policy", "open") as server:

        async def everyone(url: str) -> None:
            start = anyio.Event()
            async with anyio.create_task_group() as group:
                for n in range(8):
                    group.start_soon(worker, url, token, f"mcp-{n}", ledger, start)
                start.set()
                found.append(await anyio.to_thread.run_sync(reference_writer, workdir, binary, 20))

        anyio.run(everyone, server.url)
    assert ledger.drained
    issues = check_store(workdir, ledger)
    (added, claimed) = found[0]
    assert added == [f"ref-{n}" for n in range(20)]
    assert set(added) <= set(issues)
    assert set(claimed).isdisjoint(ledger.claims)  # no issue acknowledged to two claimers
    for issue_id in claimed:
        assert (issues[issue_id]["status"], issues[issue_id]["assignee"]) == (
            "in_progress",
            "reference",
        )
    originals = {f"bd-{n}" for n in range(1, 201)}
    assert originals <= set(ledger.claims) | set(claimed)
    assert not list(workdir.glob(".premath/*.lock"))
