"""The authority at fleet scale: 16 SDK clients of one `mcp-serve --transport streamable-http`
process, whose mutations commit in groups (specs/issue-memory.md "Group commit").

- 16 clients drain 1,000 open issues (claim-next until none) vs 16 reference CLI processes
  draining a copy of the same store in the same run (target: at least 3x faster);
- 16 clients claim 64 issues on the 100k-issue store (a third open, some leased, half with
  `blocks` edges): wall time per claim amortized (target: at most 50 ms), the reference's 16
  CLI processes claiming 64 on a copy beside it.

Both run the reference only when `PREMATH_REFERENCE_BIN` is given (ours alone otherwise, no
verdict on the ratio). Server start-up is never timed; the authority's first claim (which
loads the store) runs before the clock starts, as a fleet's server is warm.
"""

import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import anyio
import orjson

from benchmarks._measure import Row, verdict
from benchmarks.bench_issues import open_store, store_path
from benchmarks.bench_lock_soak import drain
from benchmarks.bench_mcp_http import http_server
from premath.mcp.http_client import open_session

REFERENCE = os.environ.get("PREMATH_REFERENCE_BIN")
CLIENTS = 16
DRAIN_FACTOR = 3.0
BIG_CLAIM_BUDGET_S = 0.050


async def _claims(url: str, token: str, per_client: int | None) -> tuple[float, int]:
    """(wall seconds, claims) of CLIENTS sessions claiming `per_client` each (None: until
    nothing is left), timed from the moment all are initialised and one warm-up claim is in."""
    ready = anyio.Event()
    initialised = 0
    claimed = 0

    async def client(name: str) -> None:
        nonlocal initialised, claimed
        async with open_session(url, token) as session:
            initialised += 1
            if initialised == CLIENTS:
                ready.set()
            await ready.wait()
            n = 0
            while per_client is None or n < per_client:
                result = await session.call_tool("issue_claim_next", {"assignee": name})
                if result.is_error:
                    raise RuntimeError(result.content[0].text)
                if "issue" not in orjson.loads(result.content[0].text):
                    return
                n += 1
                claimed += 1

    async with open_session(url, token) as warm:
        result = await warm.call_tool("issue_claim_next", {"assignee": "warm-up"})
        if result.is_error:
            raise RuntimeError(result.content[0].text)
    start = 0.0

    async def clock() -> None:
        nonlocal start
        await ready.wait()
        start = time.perf_counter()

    async with anyio.create_task_group() as group:
        group.start_soon(clock)
        for n in range(CLIENTS):
            group.start_soon(client, f"c{n}")
    return time.perf_counter() - start, claimed


def _authority(store: bytes | Path, per_client: int | None) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder) / "repo"
        target = work / ".premath" / "issues.jsonl"
        target.parent.mkdir(parents=True)
        if isinstance(store, Path):
            shutil.copyfile(store, target)
        else:
            target.write_bytes(store)
        with http_server(work) as (url, token, _):
            return anyio.run(_claims, url, token, per_client)


def _reference_claims(store: Path, claims_each: int) -> tuple[float, int]:
    """(wall seconds, claims) of CLIENTS reference processes, `claims_each` claim-next each."""
    assert REFERENCE is not None
    barrier = threading.Barrier(CLIENTS + 1)
    failures: list[str] = []

    def claimer(name: str) -> None:
        argv = [REFERENCE, "issue", "claim-next", "--assignee", name, "--json",
                "--issues", str(store)]  # fmt: skip
        barrier.wait()
        for _ in range(claims_each):
            done = subprocess.run(argv, capture_output=True, check=False)
            if done.returncode != 0 or b'"claimed": true' not in done.stdout:
                failures.append(done.stderr.decode()[-300:])

    threads = [threading.Thread(target=claimer, args=(f"r{n}",)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    return wall, CLIENTS * claims_each - len(failures)


def _drain_row(issues: int) -> Row:
    ours_s, claimed = _authority(open_store(issues), None)
    if claimed != issues - 1:  # the warm-up took one
        raise RuntimeError(f"{claimed} claims for {issues - 1} issues")
    measure = f"{CLIENTS} SDK clients of one HTTP authority drain the store"
    size = f"{issues:,} open issues"
    ours = f"{ours_s:.2f} s ({claimed / ours_s:.0f} claims/s)"
    target = f">= {DRAIN_FACTOR:g}x faster than {CLIENTS} reference CLI processes"
    if REFERENCE is None:
        return Row(measure, size, ours, "reference not run", "-", target, "-")
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "issues.jsonl"
        store.write_bytes(open_store(issues))
        ref_s, _, ref_claimed = drain([REFERENCE], store, CLIENTS)
    ratio = ref_s / ours_s
    return Row(
        measure,
        size,
        ours,
        f"reference ran: {ref_s:.2f} s ({ref_claimed / ref_s:.0f} claims/s)",
        f"{ratio:.1f}x faster",
        target,
        verdict(ratio >= DRAIN_FACTOR),
    )


def _big_store_row(label: str, claims_each: int) -> Row:
    source = store_path(label)
    ours_s, claimed = _authority(source, claims_each)
    per_claim = ours_s / claimed
    measure = f"{CLIENTS} SDK clients of one HTTP authority claim on a big store (amortized)"
    size = f"{claimed} claims, {label} issues"
    ours = f"{1000 * per_claim:.1f} ms per claim ({ours_s:.2f} s)"
    target = f"<= {1000 * BIG_CLAIM_BUDGET_S:.0f} ms per claim"
    baseline = "reference not run"
    ratio = "-"
    if REFERENCE is not None:
        with tempfile.TemporaryDirectory() as folder:
            store = Path(folder) / "issues.jsonl"
            shutil.copyfile(source, store)
            ref_s, ref_claimed = _reference_claims(store, claims_each)
        ref_per_claim = ref_s / max(ref_claimed, 1)
        baseline = (
            f"reference ran: {CLIENTS} CLI processes, {1000 * ref_per_claim:.0f} ms per claim"
        )
        ratio = f"{ref_per_claim / per_claim:.1f}x faster"
    return Row(
        measure, size, ours, baseline, ratio, target, verdict(per_claim <= BIG_CLAIM_BUDGET_S)
    )


def rows(quick: bool) -> list[Row]:
    return [
        _drain_row(200 if quick else 1000),
        _big_store_row("10k" if quick else "100k", 1 if quick else 4),
    ]
