"""Ctrl-C and SIGTERM to a real coordinator with two real workers, at random moments.

Each run: twenty issues, slow work, the signal at a random moment once the workers started.
After it: no issue closed later than the signal, no lease left held, no command process left,
the report printed (one JSON document, `stoppedReason: "interrupted"`), exit 1. No duration is
asserted (a loaded machine stretches them all): a coordinator that ignored the signal would
close issues after it, and a hung one trips the hang guard.
"""

import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from premath.timefmt import epoch_nanos
from tests.harness.loop_support import issue_rows, make_issues
from tests.support.processes import HANG_GUARD_S, processes_under

pytestmark = pytest.mark.slow

RUNS = 20
WORK = "sleep 0.3"


def _stored_nanos(text: str) -> int:
    from premath.issues.leases import stored_nanos

    return stored_nanos(text)


def _wait_for_first_round(root: Path, proc: subprocess.Popen[bytes]) -> None:
    """Until the coordinator has started its workers (its round folder exists)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not list(root.glob(".premath/harness_steps/coordinator/*/round-1")):
        assert proc.poll() is None, "coordinator ended before its first round"
        assert time.monotonic() < deadline, "coordinator did not start its first round"
        time.sleep(0.02)


def _one_interrupted_run(root: Path, signum: int, delay_s: float) -> None:
    make_issues(root, [f"bd-{n}" for n in range(1, 21)])
    for name in ("w1", "w2"):
        (root / name).mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "premath",
            "harness-loop",
            "coordinator",
            "--worktree",
            "w1",
            "--worktree",
            "w2",
            "--rounds",
            "20",
            "--max-steps-per-worker",
            "20",
            "--work-cmd",
            WORK,
            "--verify-cmd",
            "true",
            "--json",
        ],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for_first_round(root, proc)
    time.sleep(delay_s)
    proc.send_signal(signum)
    # Read after sending: had this process been descheduled between reading the clock and
    # sending, a worker's close in that gap would look later than the signal.
    signalled_ns = epoch_nanos(datetime.now(UTC))
    try:
        stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(
            f"coordinator still running {HANG_GUARD_S} s after {signal.Signals(signum).name}"
        )
    report = orjson.loads(stdout)
    assert (proc.returncode, report["stoppedReason"], report["exitCode"]) == (
        1,
        "interrupted",
        1,
    ), stderr.decode()
    rows = issue_rows(root)
    closed_late = [
        issue_id
        for issue_id, row in rows.items()
        if "closed_at" in row and _stored_nanos(row["closed_at"]) > signalled_ns
    ]
    assert closed_late == [], stderr.decode()
    held = [issue_id for issue_id, row in rows.items() if "lease" in row]
    assert held == [], stderr.decode()
    left = processes_under(root)
    assert left == [], [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left] + [stderr]
    assert b"[coordinator] interrupted: workers stopped, leases given back" in stderr, stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_stops_every_worker_and_gives_every_lease_back(tmp_path, signum):
    rng = random.Random(signum)
    for run in range(RUNS):
        _one_interrupted_run(tmp_path / f"run-{run}", signum, rng.uniform(0.0, 1.0))
