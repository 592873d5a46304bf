"""The live dashboard under load: `premath observe-serve --live` on the 10,000-issue store with
16 pages connected (server-sent event streams), the store rewritten once a second.

- **update to every page**: from the moment a write lands (the store renamed into place) to the
  moment the last of the 16 pages has received the delta carrying the changed issue; target
  under 1 s for every write;
- **server CPU between writes**: the server process's own CPU time (user + system, read from
  `/proc/<pid>/stat`, never the benchmark's) while no write is being processed (from the
  moment every page has its delta to the next write), as a share of one core; target under
  10%. The row also gives the share over the whole write-a-second phase, rebuilds included.

The machine is shared with other work, so the latency is the worst of each write's 16 pages
(median and maximum over the writes are both shown) and the CPU figure is CPU time, not wall.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from benchmarks._measure import Row, verdict
from benchmarks.bench_issues import store_path

REPO_ROOT = Path(__file__).resolve().parents[1]
PAGES = 16
TICK_S = os.sysconf("SC_CLK_TCK")


def _server_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK_S  # utime, stime


@dataclass
class Page:
    """One dashboard's event stream on a raw socket (HTTP/1.0: no chunk framing)."""

    port: int
    received: dict[str, float] = field(default_factory=dict)
    """Issue id -> when a delta upserting it arrived (perf_counter)."""
    ready: threading.Event = field(default_factory=threading.Event)

    def run(self, stop: threading.Event) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as sock:
            sock.sendall(b"GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            buffer = b""
            sock.settimeout(0.5)
            while not stop.is_set():
                try:
                    chunk = sock.recv(1 << 20)
                except TimeoutError:
                    continue
                if not chunk:
                    return
                buffer += chunk
                *events, buffer = buffer.split(b"\r\n\r\n")
                arrived = time.perf_counter()
                for event in events:
                    self._note(event, arrived)

    def _note(self, event: bytes, arrived: float) -> None:
        lines = event.split(b"\r\n")
        if b"event: snapshot" in lines:
            self.ready.set()
        if b"event: delta" not in lines:
            return
        data = b"\n".join(line[6:] for line in lines if line.startswith(b"data: "))
        update = orjson.loads(data)
        for row in update.get("issues", {}).get("upsert", []):
            self.received.setdefault(row["id"], arrived)


def _project(folder: Path) -> Path:
    (folder / ".premath").mkdir()
    shutil.copyfile(store_path("10k"), folder / ".premath" / "issues.jsonl")
    witnesses = folder / "artifacts" / "ciwitness"
    witnesses.mkdir(parents=True)
    (witnesses / "latest-required.json").write_bytes(
        orjson.dumps({"witnessKind": "ci.required.v1", "verdictClass": "accepted"})
    )
    return folder / ".premath" / "issues.jsonl"


def _rewrite(store: Path, lines: list[bytes], index: int, title: str) -> str:
    """Rewrite the store with one issue's title changed, atomically; the issue's id."""
    row = orjson.loads(lines[index])
    row["title"] = title
    lines[index] = orjson.dumps(row)
    temp = store.with_name(".issues.jsonl.bench")
    temp.write_bytes(b"\n".join(lines) + b"\n")
    os.replace(temp, store)
    return str(row["id"])


def _start(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "premath", "observe-serve", "--live", "--bind", "127.0.0.1:0"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    for raw in process.stdout:
        line = raw.decode()
        if line.startswith("  bind: "):
            return process, int(line.rsplit(":", 1)[1])
    raise RuntimeError("observe-serve did not start")


def _measure(folder: Path, writes: int) -> tuple[list[float], float, float]:
    store = _project(folder)
    lines = store.read_bytes().splitlines()
    process, port = _start(folder)
    stop = threading.Event()
    pages = [Page(port) for _ in range(PAGES)]
    threads = [threading.Thread(target=page.run, args=(stop,), daemon=True) for page in pages]
    try:
        for thread in threads:
            thread.start()
        for page in pages:
            if not page.ready.wait(60):
                raise RuntimeError("a page got no snapshot")
        time.sleep(1.0)  # every page settled on its snapshot
        latencies: list[float] = []
        idle_cpu_s = idle_wall_s = 0.0
        phase_cpu = _server_cpu_s(process.pid)
        phase_start = time.perf_counter()
        for number in range(writes):
            tick = time.perf_counter()
            written = _rewrite(store, lines, (number * 997) % len(lines), f"bench write {number}")
            landed = time.perf_counter()
            deadline = landed + 5.0
            while time.perf_counter() < deadline and not all(
                written in page.received for page in pages
            ):
                time.sleep(0.002)
            latencies.append(max(page.received.get(written, deadline) for page in pages) - landed)
            settled = time.perf_counter()
            cpu_before = _server_cpu_s(process.pid)
            time.sleep(max(0.0, tick + 1.0 - time.perf_counter()))
            idle_cpu_s += _server_cpu_s(process.pid) - cpu_before
            idle_wall_s += time.perf_counter() - settled
        phase_share = (_server_cpu_s(process.pid) - phase_cpu) / (time.perf_counter() - phase_start)
        return latencies, idle_cpu_s / max(idle_wall_s, 1e-9), phase_share
    finally:
        stop.set()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for thread in threads:
            thread.join(timeout=5)


def rows(quick: bool) -> list[Row]:
    writes = 5 if quick else 30
    with tempfile.TemporaryDirectory() as folder:
        latencies, idle_share, phase_share = _measure(Path(folder), writes)
    ordered = sorted(latencies)
    median, worst = ordered[len(ordered) // 2], ordered[-1]
    size = f"10k issues, {PAGES} pages, {writes} writes at 1/s"
    return [
        Row(
            "observe-serve --live: a write reaches every page",
            size,
            f"median {1000 * median:.0f} ms, max {1000 * worst:.0f} ms",
            "-",
            "-",
            "< 1000 ms for every write",
            verdict(worst < 1.0),
        ),
        Row(
            "observe-serve --live: server CPU between writes",
            size,
            f"{100 * idle_share:.1f}% of a core ({100 * phase_share:.1f}% with the rebuilds)",
            "-",
            "-",
            "< 10% of one core",
            verdict(idle_share < 0.10),
        ),
    ]
