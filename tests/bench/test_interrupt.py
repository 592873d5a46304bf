"""A stopped premath stops its harness and still leaves its artifacts (real processes)."""

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from tests.support.processes import wait_dead

HARNESS = """
import os, sys, time
open(os.path.join(os.path.dirname(sys.argv[2]), "pid"), "w").write(str(os.getpid()))
time.sleep(60)
"""


def wait_for(path, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return path.read_text()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_the_harness_and_writes_the_summary(tmp_path, signum):
    script = tmp_path / "sleeper.py"
    script.write_text(HARNESS)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "premath",
            "bench",
            "run",
            "--instruction",
            "x",
            "--command",
            f"{sys.executable} {script}",
            "--run-dir",
            "run",
            "--json",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        harness_pid = int(wait_for(tmp_path / "run" / "raw" / "out" / "pid"))
        proc.send_signal(signum)
        stdout, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    assert orjson.loads(stdout)["failure_class"] == "interrupted"
    summary = orjson.loads((tmp_path / "run" / "summary.json").read_bytes())
    assert summary["harness"]["status"] == "interrupted"
    assert summary["failure_message"] == (
        f"premath received {signal.Signals(signum).name}; the harness was stopped"
    )
    assert (tmp_path / "run" / "atif" / "trajectory.json").exists()
    assert wait_dead(harness_pid)


RECORDING_HARNESS = """
import json, subprocess, sys, time
task = json.load(open(sys.argv[1]))
row = {"source": "agent", "message": "first turn", "metrics": {"prompt_tokens": 7}}
subprocess.run([*task["premath"]["record"], "--row", json.dumps(row)], check=True)
time.sleep(60)
"""


def test_a_killed_run_leaves_a_valid_live_trajectory(tmp_path):
    """SIGKILL (a container torn down at Harbor's timeout) gives premath no chance to finish:
    the trajectory exported while the harness ran is what remains, and it is valid ATIF."""
    from premath.atif.validate import validate_file

    script = tmp_path / "recorder.py"
    script.write_text(RECORDING_HARNESS)
    live = tmp_path / "logs" / "trajectory.json"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "premath", "bench", "run", "--instruction", "x"),
            *("--command", f"{sys.executable} {script}", "--run-dir", "run"),
            *("--session-id", "trial-7__agent", "--live-trajectory", str(live)),
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while b"first turn" not in (live.read_bytes() if live.exists() else b""):
            assert time.monotonic() < deadline, "the live trajectory never showed the turn"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (tmp_path / "run" / "summary.json").exists()
    assert validate_file(live).document()["valid"] is True
    document = orjson.loads(live.read_bytes())
    assert document["session_id"] == "trial-7__agent"
    assert [step["message"] for step in document["steps"]] == ["x", "first turn"]
    assert document["final_metrics"]["total_prompt_tokens"] == 7
    assert (tmp_path / "run" / "atif" / "trajectory.json").read_bytes() == live.read_bytes()
