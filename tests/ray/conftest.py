"""A real local Ray cluster: a head and one extra worker node, loopback only, token auth.

Both nodes are small (one CPU each, 100 MB object stores, no dashboard) and live in a temp
folder; each node is our child (`ray start --block`) in its own process group, so a test can
kill the worker like a lost machine. Teardown kills exactly this cluster, whatever happened:
both groups, every process below them, and any Ray process that names this cluster's temp
folder; never `ray stop`, which would stop every Ray cluster on the machine (other people's).
"""

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import optional_tools
from tests.support.processes import descendants

RAY = os.fspath(Path(sys.executable).parent / "ray")
NODE_FLAGS = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1"]
NODE_FLAGS += ["--object-store-memory", str(100 * 1024 * 1024)]
HEAD_FLAGS = ["--include-dashboard", "false", "--disable-usage-stats"]


@dataclass
class RayCluster:
    address: str
    env: dict[str, str]
    """What a driver needs: RAY_ADDRESS and the cluster's token."""
    worker: subprocess.Popen[bytes]
    scratch: Path

    def wait_for_harness_on_worker(self, script: str, timeout_s: float = 120) -> None:
        """Until a process running `script` lives below the extra node: a trial in flight there."""
        deadline = time.monotonic() + timeout_s
        while not any(script in _command_line(pid) for pid in descendants(self.worker.pid)):
            assert time.monotonic() < deadline, f"no {script} ever ran on the extra node"
            time.sleep(0.05)

    def kill_worker(self) -> None:
        """The extra node dies like a lost machine: every process it started (raylet, its
        workers, the harnesses they run), SIGKILL at once."""
        for pid in [self.worker.pid, *descendants(self.worker.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.worker.wait()


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _alive_nodes(address: str, env: dict[str, str]) -> int:
    status = subprocess.run(
        [RAY, "status", "--address", address],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    active = status.stdout.split("Active:", 1)[-1].split("Pending:", 1)[0]
    return len(re.findall(r"^\s*1 node_", active, re.MULTILINE))


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    optional_tools.require(optional_tools.ray())
    # Short paths: Ray's unix sockets live under its temp folder (sun_path is 107 bytes).
    scratch = Path(tempfile.mkdtemp(prefix="prt"))
    token = scratch / "token"
    token.write_text(secrets.token_hex(32))
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": os.fspath(token),
        "RAY_USAGE_STATS_ENABLED": "0",
        "TMPDIR": os.fspath(scratch),  # attempt folders on the nodes land here too
    }
    env.pop("RAY_ADDRESS", None)
    address = f"127.0.0.1:{_free_port()}"
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        head = [RAY, "start", "--head", "--port", address.split(":")[1], *NODE_FLAGS]
        head += [*HEAD_FLAGS, "--temp-dir", os.fspath(scratch / "r"), "--block"]
        with (scratch / "head.log").open("wb") as log:
            nodes.append(
                subprocess.Popen(
                    head,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                )
            )
        with (scratch / "worker.log").open("wb") as log:
            nodes.append(
                subprocess.Popen(
                    [RAY, "start", "--address", address, *NODE_FLAGS, "--block"],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                )
            )
        deadline = time.monotonic() + 180
        while _alive_nodes(address, env) < 2:
            for node, name in zip(nodes, ("head", "worker"), strict=True):
                assert node.poll() is None, (scratch / f"{name}.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the cluster never had its two nodes"
            time.sleep(1)
        yield RayCluster(address, {**env, "RAY_ADDRESS": address}, nodes[1], scratch)
    finally:
        _kill_cluster(nodes, scratch)
        shutil.rmtree(scratch, ignore_errors=True)


def _kill_cluster(nodes: list[subprocess.Popen[bytes]], scratch: Path) -> None:
    """SIGKILL this cluster's processes only: the nodes' groups, what runs below them, and any
    process whose command line names the cluster's own temp folder (Ray's daemons do)."""
    doomed = {pid for node in nodes for pid in (node.pid, *descendants(node.pid))}
    for node in nodes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(node.pid, signal.SIGKILL)
    for _ in range(3):
        doomed |= {pid for pid in _all_pids() if os.fspath(scratch) in _command_line(pid)}
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    for node in nodes:
        node.wait()


def _all_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
