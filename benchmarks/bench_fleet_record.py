"""The fleet's record (issue 30): what a remote worker pays per step to ship its trajectory row
and step record to the authority (target < 20 ms on loopback), and how long after a remote
step's end its row is on the authority's dashboard (target < 2 s).

One real `mcp-serve --transport streamable-http --observe --live` on loopback holds the issues;
an in-process `McpAuthority` claims each issue first (outside the measure), then for each step
the worker's own path runs as after a real step: the row is appended (fsynced) to the worker's
outbox and delivered with `harness_trajectory_append`, carrying the step record (a step
document and the tails of four output files, ~20 KB). The baseline is what a local loop pays:
the row appended to its own trajectory; an MCP read (`issue_show`) shows what one round trip
costs on this machine. As in bench_remote.py, the verdict is taken on CPU time (this process and
the server, from /proc): on a shared, loaded machine wall time mostly measures the queue for a
core (and each fsync of a virtual disk, ~8 ms here), so the wall time is shown beside it. The
worker's outbox fsync runs while the call waits for the authority; the authority fsyncs the row
only (the record's files are written before it, without fsyncs of their own). The dashboard is
followed on its event stream (bearer
token, a raw socket): the time is from the step's end (just before shipping) to the first delta
that carries the step's id.
"""

import contextlib
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._measure import Row, ms, verdict
from benchmarks.bench_remote import _cpu_s
from premath.clock import SystemClock
from premath.harness.outbox import Outbox, ship_kept
from premath.issues.memory import add_issue
from premath.record.trajectory import append_step, step_row

CLOCK = SystemClock()
SHIP_TARGET_S = 0.020
DASHBOARD_TARGET_S = 2.0


@contextlib.contextmanager
def _server(root: Path, tokens: Path) -> Iterator[tuple[str, int, int]]:
    """The authority with its dashboard; its MCP URL, port and pid."""
    log = root.parent / "server.stderr"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "premath", "mcp-serve", "--transport", "streamable-http",
             "--bind", "127.0.0.1:0", "--token-file", str(tokens), "--mutation-policy", "open",
             "--observe", "--live", "--access-log", str(root.parent / "access.log")],
            cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "listening: " not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mcp-serve did not start: {log.read_text()}")
            time.sleep(0.05)
        url = log.read_text().split("listening: ", 1)[1].split()[0]
        yield url, int(url.rsplit(":", 1)[1].split("/")[0]), process.pid
    finally:
        process.terminate()
        process.wait(timeout=60)


@dataclass
class Dashboard:
    """The dashboard's event stream: when a delta naming each step id first arrived."""

    port: int
    token: str
    arrived: dict[str, float] = field(default_factory=dict)
    ready: threading.Event = field(default_factory=threading.Event)
    watched: set[bytes] = field(default_factory=set)

    def run(self, stop: threading.Event) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as sock:
            sock.sendall(
                b"GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                + f"Authorization: Bearer {self.token}\r\n\r\n".encode()
            )
            buffer = b""
            sock.settimeout(0.2)
            while not stop.is_set():
                try:
                    chunk = sock.recv(1 << 20)
                except TimeoutError:
                    continue
                if not chunk:
                    return
                buffer += chunk
                *events, buffer = buffer.split(b"\r\n\r\n")
                now = time.perf_counter()
                for event in events:
                    if b"event: snapshot" in event:
                        self.ready.set()
                    if b"event: delta" in event:
                        for step_id in list(self.watched):
                            if step_id in event:
                                self.arrived.setdefault(step_id.decode(), now)


def _step_folder(home: Path, step_id: str) -> str:
    folder = home / ".premath" / "harness_steps" / step_id
    (folder / "attempt-1").mkdir(parents=True)
    (folder / "step.json").write_text('{"schema": 1, "failureClasses": []}\n' + " " * 2000)
    for name in ("work.stdout", "work.stderr", "verify.stdout", "verify.stderr"):
        (folder / "attempt-1" / name).write_text("line of output\n" * 300)
    return f".premath/harness_steps/{step_id}"


def _measure(count: int) -> dict[str, list[float]]:
    from premath.mcp.remote import McpAuthority

    times: dict[str, list[float]] = {
        name: [] for name in ("ship", "ship_cpu", "read", "read_cpu", "local", "dashboard")
    }
    with tempfile.TemporaryDirectory(prefix="premath-bench-record-") as folder:
        base = Path(folder)
        root, home, local = base / "project", base / "home", base / "local"
        for n in range(1, count + 1):
            add_issue(
                str(root / ".premath" / "issues.jsonl"),
                f"task {n}",
                issue_id=f"bd-{n}",
                now=CLOCK.now(),
                timeout_s=10,
            )
        token = secrets.token_urlsafe(32)
        tokens = base / "tokens"
        tokens.write_text(f"bench {token}\n")
        tokens.chmod(0o600)
        outbox = Outbox(str(home / ".premath" / "harness_outbox.bench.jsonl"), str(home))
        stop = threading.Event()
        with _server(root, tokens) as (url, port, pid), McpAuthority(url, token) as memory:
            memory.connect()
            page = Dashboard(port, token)
            reader = threading.Thread(target=page.run, args=(stop,), daemon=True)
            reader.start()
            page.ready.wait(60)
            try:
                for n in range(1, count + 1):
                    claimed = memory.claim_next("bench", ttl_s=3600, now=CLOCK.now())
                    assert claimed is not None
                    step_id = f"bench.{claimed.issue_id}.{n}"
                    record = _step_folder(home, step_id)
                    fields = {
                        "step_id": step_id,
                        "issue_id": claimed.issue_id,
                        "action": "worker.loop",
                        "result_class": "completed",
                        "witness_refs": [f"worker://loop/bench/{claimed.issue_id}/completed"],
                    }
                    page.watched.add(step_id.encode())
                    cpu, start = _cpu_s(pid), time.perf_counter()
                    row = step_row(str(home / "trajectory"), now=CLOCK.now(), **fields)
                    left = ship_kept(outbox, memory, "bench", claimed.lease_id, row, record)
                    times["ship"].append(time.perf_counter() - start)
                    times["ship_cpu"].append(_cpu_s(pid) - cpu)
                    if left:
                        raise RuntimeError("the authority did not take a row")
                    local_start = time.perf_counter()
                    append_step(
                        local / "trajectory.jsonl", now=CLOCK.now(), lock_timeout=10, **fields
                    )
                    times["local"].append(time.perf_counter() - local_start)
                    deadline = time.monotonic() + 30
                    while step_id not in page.arrived and time.monotonic() < deadline:
                        time.sleep(0.01)
                    if step_id not in page.arrived:
                        raise RuntimeError(f"{step_id} never reached the dashboard")
                    times["dashboard"].append(page.arrived[step_id] - start)
                    cpu, read_start = _cpu_s(pid), time.perf_counter()
                    memory.issue(claimed.issue_id, CLOCK.now())
                    times["read"].append(time.perf_counter() - read_start)
                    times["read_cpu"].append(_cpu_s(pid) - cpu)
            finally:
                stop.set()
                reader.join(timeout=5)
    return times


def rows(quick: bool) -> list[Row]:
    count = 6 if quick else 30
    times = _measure(count)
    median = {name: statistics.median(values[1:]) for name, values in times.items()}
    worst_dashboard = max(times["dashboard"])
    return [
        Row(
            measure="remote worker: ship a step (outbox append + harness_trajectory_append "
            "with its ~20 KB record), CPU (worker + authority)",
            size=f"{count} steps",
            ours=f"{ms(median['ship_cpu'])} (wall {ms(median['ship'])})",
            baseline=f"{ms(median['read_cpu'])} (wall {ms(median['read'])}): one MCP read "
            f"(issue_show); local trajectory append {ms(median['local'])}",
            ratio=f"{median['ship_cpu'] / median['read_cpu']:.1f}x",
            target=f"< {ms(SHIP_TARGET_S)}",
            verdict=verdict(median["ship_cpu"] < SHIP_TARGET_S),
        ),
        Row(
            measure="remote step's end -> its row on the authority's dashboard (--live)",
            size=f"{count} steps",
            ours=f"{ms(median['dashboard'])} (max {ms(worst_dashboard)})",
            baseline="-",
            ratio="-",
            target=f"< {ms(DASHBOARD_TARGET_S)}",
            verdict=verdict(worst_dashboard < DASHBOARD_TARGET_S),
        ),
    ]
