"""MCP over streamable HTTP (`mcp-serve --transport streamable-http`, bearer token, access log
on): the warm rates beside stdio's, and a mixed load of many clients.

- `issue_ready` x N over one HTTP client on the 10k-issue store, and `issue_claim_next` x N on
  a store of N open issues, in calls per second: beside the same calls over stdio in the same
  run (target: the server's CPU per call over HTTP at most twice stdio's, the transport's cost
  bounded; CPU, not wall time, since the machine is shared and the client runs on it too) and
  beside one reference CLI process per call when `PREMATH_REFERENCE_BIN` is given (targets as
  stdio's: 5x and 3x);
- 32 clients for 5 minutes (20 s with --quick), each looping claim-next, lease projection,
  renew, ready, release on a 2,000-issue store: calls per second, p50 and p99 latency as the
  clients see them (target: no failed call, p99 under 1 s).

Server start-up is never timed. The machine is shared, so rate rows also give the server's CPU
time per call (its process's CPU less that of an idle run).
"""

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import orjson
from mcp import ClientSession

from benchmarks._measure import Row, verdict
from benchmarks.bench_issues import store_path
from benchmarks.bench_mcp import (
    REFERENCE,
    Timed,
    _reference_runs,
    _session,
    open_store,
    timed_calls,
)
from premath.mcp.http_client import open_session

REPO_ROOT = Path(__file__).resolve().parents[1]
MIX_CLIENTS = 32


@contextmanager
def http_server(cwd: Path) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    """(url, token, process) of a server on an ephemeral loopback port."""
    token = secrets.token_urlsafe(32)
    tokens = cwd.parent / f"{cwd.name}.tokens"
    tokens.write_text(f"bench {token}\n")
    tokens.chmod(0o600)
    log = cwd.parent / f"{cwd.name}.server.log"
    with open(log, "w") as errlog:
        process = subprocess.Popen(
            [sys.executable, "-m", "premath", "mcp-serve", "--transport", "streamable-http",
             "--bind", "127.0.0.1:0", "--token-file", str(tokens), "--mutation-policy", "open"],
            cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while (found := re.search(r"listening: (\S+/mcp)", log.read_text())) is None:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {log.read_text()}")
            time.sleep(0.05)
        yield found.group(1), token, process
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _http_calls(url: str, token: str, tool: str, arguments: dict, count: int) -> float:
    async with open_session(url, token) as client:
        return await timed_calls(client, tool, arguments, count)


def _http_rate(cwd: Path, tool: str, arguments: dict, count: int) -> Timed:
    with http_server(cwd) as (url, token, process):
        cpu = _cpu_s(process.pid)
        anyio.run(_http_calls, url, token, "issue_lease_projection", {}, 0)
        idle = _cpu_s(process.pid) - cpu
        cpu = _cpu_s(process.pid)
        wall_s = anyio.run(_http_calls, url, token, tool, arguments, count)
        return Timed(count, wall_s, max(_cpu_s(process.pid) - cpu - idle, 0.0))


def _pair_rows(
    measure: str, size: str, http: Timed, stdio: Timed, ref: Timed | None, factor: float
) -> list[Row]:
    rate = stdio.wall_s / http.wall_s
    cpu = (http.cpu_s / http.count) / max(stdio.cpu_s / stdio.count, 1e-9)
    rows = [
        Row(
            f"{measure} vs stdio",
            size,
            http.text("calls"),
            f"{stdio.text('calls')} (stdio)",
            f"{rate:.2f}x rate, {cpu:.1f}x server CPU",
            "server CPU/call <= 2x stdio's",
            verdict(cpu <= 2.0),
        )
    ]
    if ref is None:
        rows.append(
            Row(
                measure,
                size,
                http.text("calls"),
                "reference not run",
                "-",
                f">= {factor:.0f}x reference",
                "-",
            )
        )
    else:
        vs_ref = ref.wall_s / http.wall_s
        rows.append(
            Row(
                measure,
                size,
                http.text("calls"),
                f"reference ran: {ref.text('processes')}",
                f"{vs_ref:.1f}x",
                f">= {factor:.0f}x reference",
                verdict(vs_ref >= factor),
            )
        )
    return rows


async def _mixed(url: str, token: str, seconds: float) -> tuple[list[float], int, int]:
    """Latencies (s) of every call, the failed calls, and the clients' cycle count."""
    latencies: list[float] = []
    failed = 0
    cycles = 0
    stop_at = 0.0

    async def timed(client: ClientSession, tool: str, arguments: dict) -> dict | None:
        nonlocal failed
        start = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        latencies.append(time.perf_counter() - start)
        if result.is_error:
            failed += 1
            return None
        return orjson.loads(result.content[0].text)

    async def worker(name: str, start: anyio.Event) -> None:
        nonlocal cycles
        async with open_session(url, token) as client:
            await start.wait()
            while time.perf_counter() < stop_at:
                claimed = await timed(client, "issue_claim_next", {"assignee": name})
                await timed(client, "issue_lease_projection", {})
                if claimed is None or "issue" not in claimed:
                    continue
                issue = claimed["issue"]
                lease = {"id": issue["id"], "assignee": name, "leaseId": issue["lease"]["leaseId"]}
                await timed(client, "issue_lease_renew", lease)
                await timed(client, "issue_ready", {})
                await timed(client, "issue_lease_release", {"id": issue["id"], "assignee": name})
                cycles += 1

    start = anyio.Event()
    async with anyio.create_task_group() as group:
        for n in range(MIX_CLIENTS):
            group.start_soon(worker, f"mix-{n}", start)
        await anyio.sleep(2)
        stop_at = time.perf_counter() + seconds
        start.set()
    return latencies, failed, cycles


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def rows(quick: bool) -> list[Row]:
    count = 50 if quick else 1000
    result: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder) / "repo"
        (work / ".premath").mkdir(parents=True)
        target = work / ".premath" / "issues.jsonl"
        shutil.copyfile(store_path("10k"), target)
        http = _http_rate(work, "issue_ready", {}, count)
        stdio = _session(work, "issue_ready", {}, count)
        ref = None
        if REFERENCE:
            ref = _reference_runs([REFERENCE, "issue", "ready", "--json"], count, work)
        size = f"{count} calls, 10k issues"
        result += _pair_rows("mcp http issue_ready (one client)", size, http, stdio, ref, 5)

        target.write_bytes(open_store(count))
        http = _http_rate(work, "issue_claim_next", {"assignee": "bench"}, count)
        target.write_bytes(open_store(count))
        stdio = _session(work, "issue_claim_next", {"assignee": "bench"}, count)
        ref = None
        if REFERENCE:
            target.write_bytes(open_store(count))
            argv = [REFERENCE, "issue", "claim-next", "--assignee", "bench", "--json"]
            ref = _reference_runs(argv, count, work)
        result += _pair_rows("mcp http issue_claim_next", f"{count} calls", http, stdio, ref, 3)

        seconds = 20.0 if quick else 300.0
        target.write_bytes(open_store(2000))
        with http_server(work) as (url, token, _):
            latencies, failed, cycles = anyio.run(_mixed, url, token, seconds)
        p50, p99 = _percentile(latencies, 0.5), _percentile(latencies, 0.99)
        result.append(
            Row(
                f"mcp http mixed load ({MIX_CLIENTS} clients: claim, projection, renew, ready, "
                "release)",
                f"{seconds:.0f} s, 2000 issues",
                f"{len(latencies) / seconds:.0f} calls/s, p50 {p50 * 1000:.0f} ms, "
                f"p99 {p99 * 1000:.0f} ms, {failed} failed, {cycles} cycles",
                "-",
                "-",
                "0 failed, p99 < 1000 ms",
                verdict(failed == 0 and p99 < 1.0),
            )
        )
    return result
