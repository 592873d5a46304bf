"""A real local Ray cluster: a head and one extra worker node, loopback only, token auth.

Both nodes are small (one CPU each, 100 MB object stores, no dashboard) and live in a temp
folder; the worker node is our child in its own process group, so a test can kill it like a
lost machine. Teardown kills the worker's group and runs `ray stop --force` whatever happened.
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
    worker: subprocess.Popen[bytes] | None = None
    try:
        head = subprocess.run(
            [
                RAY,
                "start",
                "--head",
                "--port",
                address.split(":")[1],
                *NODE_FLAGS,
                *HEAD_FLAGS,
                "--temp-dir",
                os.fspath(scratch / "r"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert head.returncode == 0, head.stderr[-2000:]
        with (scratch / "worker.log").open("wb") as log:
            worker = subprocess.Popen(
                [RAY, "start", "--address", address, *NODE_FLAGS, "--block"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + 180
        while _alive_nodes(address, env) < 2:
            assert worker.poll() is None, (scratch / "worker.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the worker node never joined"
            time.sleep(1)
        yield RayCluster(address, {**env, "RAY_ADDRESS": address}, worker, scratch)
    finally:
        if worker is not None and worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        subprocess.run(
            [RAY, "stop", "--force"], env=env, capture_output=True, timeout=120, check=False
        )
        shutil.rmtree(scratch, ignore_errors=True)
