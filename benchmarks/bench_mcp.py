"""MCP warm path: many tool calls over one `premath mcp-serve` session, against one reference
process per call (`PREMATH_REFERENCE_BIN`, when given; our figures alone otherwise).

- `issue_ready` x N over one session on the 10k-issue store vs N reference `issue ready`
  processes (target: at least 5x the call rate);
- `issue_claim_next` x N over one session vs N reference `issue claim-next` processes on the same
  store of N open issues (target: at least 3x);
- 16 MCP clients (a server each) draining 1,000 issues vs 16 reference CLI claimers (target:
  less wall time).

Without `PREMATH_REFERENCE_BIN` the rows give our figures alone: no ratio, no verdict.

Server start-up is never timed: rates run from the first call after `initialize`, the drain from
the moment every client is initialised. The machine is shared, so each rate row also gives the
children's CPU time per call (servers: a session's CPU less that of an idle session).
"""

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import orjson
from mcp import ClientSession, StdioServerParameters, stdio_client

from benchmarks._measure import Row, verdict
from benchmarks.bench_issues import open_store, store_path

REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE = os.environ.get("PREMATH_REFERENCE_BIN")


def _params(cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "premath", "mcp-serve", "--mutation-policy", "open"],
        cwd=str(cwd),
        env={"PYTHONPATH": str(REPO_ROOT)},
    )


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _calls(cwd: Path, tool: str, arguments: dict[str, str], count: int) -> float:
    """Seconds for `count` calls over one initialised session (start-up not timed)."""
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(_params(cwd), errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            return await timed_calls(client, tool, arguments, count)


async def timed_calls(client: ClientSession, tool: str, arguments: dict, count: int) -> float:
    """Seconds for `count` calls on an initialised client, after one warm-up call."""
    await client.call_tool("issue_lease_projection", {})
    start = time.perf_counter()
    for _ in range(count):
        result = await client.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(result.content[0].text)
    return time.perf_counter() - start


@dataclass(frozen=True)
class Timed:
    """Wall seconds of `count` calls and the CPU seconds they cost the children."""

    count: int
    wall_s: float
    cpu_s: float

    def text(self, unit: str) -> str:
        return (
            f"{self.count / self.wall_s:.0f} {unit}/s, {1000 * self.wall_s / self.count:.1f}"
            f" ms/call (CPU {1000 * self.cpu_s / self.count:.1f} ms/call)"
        )


def _session(cwd: Path, tool: str, arguments: dict[str, str], count: int) -> Timed:
    """`count` calls over one session; its server's CPU less that of an idle session."""
    before = _children_cpu_s()
    anyio.run(_calls, cwd, tool, arguments, 0)
    idle_cpu_s = _children_cpu_s() - before
    before = _children_cpu_s()
    wall_s = anyio.run(_calls, cwd, tool, arguments, count)
    return Timed(count, wall_s, max(_children_cpu_s() - before - idle_cpu_s, 0.0))


def _reference_runs(argv: list[str], count: int, cwd: Path) -> Timed:
    before = _children_cpu_s()
    start = time.perf_counter()
    for _ in range(count):
        subprocess.run(
            argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )
    return Timed(count, time.perf_counter() - start, _children_cpu_s() - before)


async def _drain(cwd: Path, clients: int) -> float:
    async def claimer(name: str) -> None:
        nonlocal start
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(_params(cwd), errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                initialised.append(name)
                if len(initialised) == clients:
                    start = time.perf_counter()
                    ready.set()
                await ready.wait()
                while True:
                    result = await client.call_tool("issue_claim_next", {"assignee": name})
                    if result.is_error:
                        raise RuntimeError(result.content[0].text)
                    if "issue" not in orjson.loads(result.content[0].text):
                        return

    ready = anyio.Event()
    initialised: list[str] = []
    start = 0.0

    async with anyio.create_task_group() as group:
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


def _rate_row(measure: str, size: str, ours: Timed, base: Timed | None, factor: float) -> Row:
    target = f">= {factor:.0f}x reference"
    if base is None:
        return Row(measure, size, ours.text("calls"), "reference not run", "-", target, "-")
    ratio = base.wall_s / ours.wall_s
    return Row(
        measure,
        size,
        ours.text("calls"),
        f"reference ran: {base.text('processes')}",
        f"{ratio:.1f}x",
        target,
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
        ours = _session(work, "issue_ready", {}, count)
        base = None
        if REFERENCE:
            base = _reference_runs([REFERENCE, "issue", "ready", "--json"], count, work)
        result.append(
            _rate_row(
                "mcp issue_ready (one session)",
                f"{count} calls, 10k issues",
                ours,
                base,
                5,
            )
        )

        target = work / ".premath" / "issues.jsonl"
        target.write_bytes(open_store(count))
        ours = _session(work, "issue_claim_next", {"assignee": "bench"}, count)
        base = None
        if REFERENCE:
            target.write_bytes(open_store(count))
            argv = [REFERENCE, "issue", "claim-next", "--assignee", "bench", "--json"]
            base = _reference_runs(argv, count, work)
        result.append(
            _rate_row(
                "mcp issue_claim_next (one session)",
                f"{count} calls",
                ours,
                base,
                3,
            )
        )

        drained = 200 if quick else 1000
        target.write_bytes(open_store(drained))
        ours_s = anyio.run(_drain, work, 16)
        base_text, ratio, ok = "reference not run", "-", None
        if REFERENCE:
            target.write_bytes(open_store(drained))
            base_s = _reference_drain(work, 16)
            base_text, ratio, ok = (
                f"reference ran: {base_s:.2f} s",
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
                "-" if ok is None or quick else verdict(ok),
            )
        )
    return result
