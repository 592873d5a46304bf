"""MCP warm path: many tool calls over one `premath mcp-serve` session, against one reference
process per call (`PREMATH_REFERENCE_BIN`, when given; our figures alone otherwise).

- `issue_ready` x N over one session on the 10k-issue store vs N reference `issue ready`
  processes (target: at least 5x the call rate);
- `issue_claim_next` x N over one session vs N reference `issue claim-next` processes on the same
  store of N open issues (target: at least 3x);
- 16 MCP clients (a server each) draining 1,000 issues vs 16 reference CLI claimers (target:
  less wall time; the reference takes about 5.8 s on these machines).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import orjson
from mcp import ClientSession, StdioServerParameters, stdio_client

from benchmarks._measure import Row, verdict
from benchmarks.bench_issues import store_path

REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE = os.environ.get("PREMATH_REFERENCE_BIN")


def open_store(count: int) -> bytes:
    rows = [
        {
            "id": f"bd-{n:05d}",
            "title": f"Issue {n}",
            "status": "open",
            "priority": 2,
            "issue_type": "task",
            "created_at": "2026-02-22T00:00:00Z",
            "updated_at": "2026-02-22T00:00:00Z",
            "ephemeral": False,
        }
        for n in range(1, count + 1)
    ]
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)


def _params(cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "premath", "mcp-serve", "--mutation-policy", "open"],
        cwd=str(cwd),
        env={"PYTHONPATH": str(REPO_ROOT)},
    )


async def _calls(cwd: Path, tool: str, arguments: dict[str, str], count: int) -> float:
    """Seconds for `count` calls over one initialised session (start-up not timed)."""
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(_params(cwd), errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            await client.call_tool("issue_lease_projection", {})
            start = time.perf_counter()
            for _ in range(count):
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    raise RuntimeError(result.content[0].text)
            return time.perf_counter() - start


def _reference_runs(argv: list[str], count: int, cwd: Path, reset: bytes | None = None) -> float:
    start = time.perf_counter()
    for _ in range(count):
        subprocess.run(
            argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )
    return time.perf_counter() - start


async def _drain(cwd: Path, clients: int) -> float:
    async def claimer(name: str) -> None:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(_params(cwd), errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                await ready.wait()
                while True:
                    result = await client.call_tool("issue_claim_next", {"assignee": name})
                    if result.is_error:
                        raise RuntimeError(result.content[0].text)
                    if "issue" not in orjson.loads(result.content[0].text):
                        return

    ready = anyio.Event()
    start = 0.0

    async def starter() -> None:
        nonlocal start
        await anyio.sleep(3.0)  # servers up and initialised
        start = time.perf_counter()
        ready.set()

    async with anyio.create_task_group() as group:
        group.start_soon(starter)
        for n in range(clients):
            group.start_soon(claimer, f"mcp-{n}")
    return time.perf_counter() - start


def _reference_drain(cwd: Path, clients: int) -> float:
    assert REFERENCE is not None
    script = (
        f"while {REFERENCE} issue claim-next --assignee $1 --json | grep -q '\"claimed\": true';"
        " do :; done"
    )
    start = time.perf_counter()
    procs = [
        subprocess.Popen(["sh", "-c", script, "sh", f"ref-{n}"], cwd=cwd) for n in range(clients)
    ]
    for proc in procs:
        proc.wait()
    return time.perf_counter() - start


def _rate_row(
    measure: str, size: str, count: int, ours_s: float, base_s: float | None, factor: float
) -> Row:
    ours_rate = count / ours_s
    if base_s is None:
        return Row(
            measure, size, f"{ours_rate:.0f} calls/s", "-", "-", f">= {factor:.0f}x reference", "-"
        )
    base_rate = count / base_s
    ratio = ours_rate / base_rate
    return Row(
        measure,
        size,
        f"{ours_rate:.0f} calls/s",
        f"{base_rate:.0f} processes/s (reference)",
        f"{ratio:.1f}x",
        f">= {factor:.0f}x reference",
        verdict(ratio >= factor),
    )


def rows(quick: bool) -> list[Row]:
    count = 50 if quick else 1000
    result = []
    ready_store = store_path("10k")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / ".premath").mkdir()
        shutil.copyfile(ready_store, work / ".premath" / "issues.jsonl")
        ours = anyio.run(_calls, work, "issue_ready", {}, count)
        base = None
        if REFERENCE:
            base = _reference_runs([REFERENCE, "issue", "ready", "--json"], count, work)
        result.append(
            _rate_row(
                "mcp issue_ready (one session)", f"{count} calls, 10k issues", count, ours, base, 5
            )
        )

        target = work / ".premath" / "issues.jsonl"
        target.write_bytes(open_store(count))
        ours = anyio.run(_calls, work, "issue_claim_next", {"assignee": "bench"}, count)
        base = None
        if REFERENCE:
            target.write_bytes(open_store(count))
            argv = [REFERENCE, "issue", "claim-next", "--assignee", "bench", "--json"]
            base = _reference_runs(argv, count, work)
        result.append(
            _rate_row("mcp issue_claim_next (one session)", f"{count} calls", count, ours, base, 3)
        )

        drained = 200 if quick else 1000
        target.write_bytes(open_store(drained))
        ours_s = anyio.run(_drain, work, 16)
        base_text, ratio, ok = "~5.8 s (reference, recorded)", "-", ours_s < 5.8
        if REFERENCE:
            target.write_bytes(open_store(drained))
            base_s = _reference_drain(work, 16)
            base_text, ratio, ok = (
                f"{base_s:.2f} s (reference)",
                f"{ours_s / base_s:.2f}x",
                ours_s < base_s,
            )
        result.append(
            Row(
                "16 MCP clients drain the store",
                f"{drained} issues",
                f"{ours_s:.2f} s",
                base_text,
                ratio,
                "< reference wall time",
                verdict(ok) if not quick else "-",
            )
        )
    return result
