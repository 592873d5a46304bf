"""`mise run test-loaded`'s busy loops load every core while the command runs, and none
outlives the run: not when the command ends, nor when the script is killed, nor past the bound."""

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.processes import HANG_GUARD_S, wait_dead
from tests.support.remote import wait_for

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "loaded_run.py"


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the command name: state, ppid, ..., utime at [11]."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()


@contextmanager
def loaded_run(release: Path, *options: str) -> Iterator[tuple[subprocess.Popen[str], list[int]]]:
    """The script running a command that waits for `release` to exist, then exits 7; the
    script's process and its busy loops' pids."""
    waiter = (
        "import os, sys, time\n"
        "while not os.path.exists(sys.argv[1]):\n"
        "    time.sleep(0.05)\n"
        "sys.exit(7)\n"
    )
    argv = [sys.executable, str(SCRIPT), *options, sys.executable, "-c", waiter, str(release)]
    script = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        assert script.stderr is not None
        first = script.stderr.readline()
        assert first.startswith("loaded_run: "), first
        pids = [int(pid) for pid in first.split("(pids ", 1)[1].split(")", 1)[0].split()]
        yield script, pids
    finally:
        release.touch()
        script.wait(HANG_GUARD_S)
        script.stderr.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_the_loops_burn_a_core_each_while_the_command_runs_and_end_with_it(tmp_path):
    release = tmp_path / "release"
    with loaded_run(release, "--hogs", "2") as (script, pids):
        assert len(pids) == 2
        for pid in pids:
            assert int(_stat(pid)[1]) == script.pid
            # busy: it gains CPU time (utime, in clock ticks) while the command only waits
            wait_for(lambda pid=pid: int(_stat(pid)[11]) > 0, HANG_GUARD_S, f"loop {pid} to run")
        release.touch()
        assert script.wait(HANG_GUARD_S) == 7  # the command's exit code
        rest = script.stderr.read()
    assert "loaded_run: exit 7 after" in rest
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists()  # killed and reaped by the script


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_loops_whose_script_was_killed_stop_by_themselves(tmp_path):
    with loaded_run(tmp_path / "release", "--hogs", "1") as (script, pids):
        script.send_signal(signal.SIGKILL)
        script.wait(HANG_GUARD_S)
        assert wait_dead(pids[0], HANG_GUARD_S)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_loops_stop_at_the_bound_while_the_command_runs_on(tmp_path):
    with loaded_run(tmp_path / "release", "--hogs", "1", "--max-seconds", "0.5") as (script, pids):
        assert wait_dead(pids[0], HANG_GUARD_S)
        assert script.poll() is None


def test_a_command_that_cannot_start_exits_127():
    outcome = subprocess.run(
        [sys.executable, str(SCRIPT), "--hogs", "1", "no-such-command-35b"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert outcome.returncode == 127
    assert "loaded_run: cannot run no-such-command-35b" in outcome.stderr
