"""The authority at fleet scale: 16 workers' clients (`McpAuthority`, the client a fleet's
workers claim through) of one `mcp-serve --transport streamable-http` process, whose mutations
commit in groups (specs/issue-memory.md "Group commit").

- 16 clients drain 1,000 open issues (claim-next until none) vs 16 reference CLI processes
  draining a copy of the same store in the same run (target: at least 3x faster);
- 16 clients claim 64 issues on the 100k-issue store (a third open, some leased, half with
  `blocks` edges): wall time per claim amortized (target: at most 50 ms), the reference's 16
  CLI processes claiming 64 on a copy beside it.

Both run the reference only when `PREMATH_REFERENCE_BIN` is given (ours alone otherwise, no
verdict on the ratio). Server start-up is never timed; the authority's first claim (which
loads the store) runs before the clock starts, as a fleet's server is warm.
"""

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._measure import Row, verdict
from benchmarks.bench_issues import open_store, store_path
from benchmarks.bench_lock_soak import drain
from benchmarks.bench_mcp_http import http_server

REFERENCE = os.environ.get("PREMATH_REFERENCE_BIN")
CLIENTS = 16
DRAIN_FACTOR = 3.0
BIG_CLAIM_BUDGET_S = 0.050


def _claims(url: str, token: str, per_client: int | None) -> tuple[float, int]:
    """(wall seconds, claims) of CLIENTS workers' authorities (`McpAuthority`, as a fleet's
    workers claim) claiming `per_client` each (None: until nothing is left), timed from the
    moment all are connected and one warm-up claim is in."""
    from premath.clock import SystemClock
    from premath.mcp.remote import McpAuthority

    clock = SystemClock()
    ready = threading.Barrier(CLIENTS + 1)
    claimed = [0] * CLIENTS
    failures: list[Exception] = []

    def client(index: int) -> None:
        try:
            with McpAuthority(url, token) as memory:
                memory.connect()
                ready.wait()
                while per_client is None or claimed[index] < per_client:
                    if memory.claim_next(f"c{index}", ttl_s=3600, now=clock.now()) is None:
                        return
                    claimed[index] += 1
        except Exception as exc:  # noqa: BLE001 - the main thread reports it
            failures.append(exc)
            ready.abort()

    with McpAuthority(url, token) as warm:
        warm.claim_next("warm-up", ttl_s=3600, now=clock.now())
    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):
        ready.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"a client failed: {failures[0]!r}")
    return time.perf_counter() - start, sum(claimed)


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
            return _claims(url, token, per_client)


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
    measure = f"{CLIENTS} workers' clients of one HTTP authority drain the store"
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
    measure = f"{CLIENTS} workers' clients of one HTTP authority claim on a big store (amortized)"
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
