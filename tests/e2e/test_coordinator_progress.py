"""Live progress of a real coordinator: lines as they happen, alive on a terminal (D16-6)."""

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.loop_support import make_issues

pytestmark = pytest.mark.slow


def _coordinator(root: Path) -> list[str]:
    return [
        sys.executable, "-m", "premath", "harness-loop", "coordinator", "--worktree", "w1",
        "--rounds", "2", "--max-steps-per-worker", "2", "--work-cmd", "sleep 0.8",
        "--verify-cmd", "true",
    ]  # fmt: skip


def _project(root: Path) -> Path:
    make_issues(root, ["bd-1", "bd-2"])
    (root / "w1").mkdir()
    return root


def test_on_a_terminal_lines_stream_and_quiet_workers_show_elapsed_time(tmp_path):
    root = _project(tmp_path)
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        _coordinator(root),
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=terminal,
        env={**os.environ, "PREMATH_PROGRESS_SECONDS": "0.3"},
    )
    os.close(terminal)
    seen: list[tuple[float, str]] = []
    buffer = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 10)
        if not ready:
            break
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed: the coordinator is gone
            break
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        seen += [(time.monotonic(), line.decode().rstrip("\r")) for line in lines]
    os.close(controller)
    assert proc.wait(timeout=10) == 0
    ended = time.monotonic()
    text = [line for _, line in seen]
    assert text[0].startswith("[coordinator] worker logs: ")
    assert any(line.startswith("[worker.1] still running (") for line in text), text
    assert any(line.endswith("s elapsed)") for line in text)
    first_close = next(at for at, line in seen if line == "[worker:worker.1] closed issue bd-1")
    assert ended - first_close > 0.5  # reported while the second issue was still being worked


def test_piped_output_is_plain_lines_and_every_run_keeps_its_logs(tmp_path):
    root = _project(tmp_path)
    for run in range(2):
        if run:
            make_issues(root, ["bd-3"])
        done = subprocess.run(_coordinator(root), cwd=root, capture_output=True, check=False)
        assert done.returncode == 0, done.stderr.decode()
        lines = done.stderr.decode().splitlines()
        assert "\r" not in done.stderr.decode()
        assert not any("still running" in line for line in lines)
        assert all(line.startswith(("[coordinator]", "[worker")) for line in lines), lines
    runs = sorted((root / ".premath" / "harness_steps" / "coordinator").iterdir())
    assert len(runs) == 2
    assert all((run / "round-1" / "worker.1.stderr").is_file() for run in runs)
