"""SIGKILL the runner at random moments, resume, and lose or duplicate no trial."""

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from tests.runner.conftest import make_experiment
from tests.support.cli import run_premath
from tests.support.processes import HANG_GUARD_S, processes_under, read_pid, wait_dead
from tests.support.remote import wait_for

pytestmark = pytest.mark.slow

PREMATH = [sys.executable, "-m", "premath"]


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _start_run(
    experiment: Path, cwd: Path, *extra: str, output: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """`premath experiment run EXPERIMENT --run-id r1` as a background process."""
    argv = [*PREMATH, "experiment", "run", os.fspath(experiment), "--run-id", "r1", *extra]
    return subprocess.Popen(argv, cwd=cwd, stdout=output, stderr=output)


def _kill_when_some_rows_exist(argv: list[str], cwd: Path, trials: Path, rng: random.Random):
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + HANG_GUARD_S
    wanted = len(_rows(trials)) + rng.randint(1, 4)
    while time.monotonic() < deadline and proc.poll() is None:
        if len(_rows(trials)) >= wanted:
            break
        time.sleep(0.01)
    time.sleep(rng.uniform(0, 0.15))
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_resume_after_sigkill_loses_and_duplicates_nothing(tmp_path):
    tasks = [{"id": f"t{i:02d}", "mode": "slow", "seconds": 0.05} for i in range(12)]
    experiment = make_experiment(
        tmp_path / "exp",
        tasks,
        variants=[{"variant_id": "treat", "args": ["--variant", "treat"]}],
        concurrency=3,
    )
    trials = tmp_path / ".premath/runs/r1/trials.jsonl"
    rng = random.Random(1234)
    _kill_when_some_rows_exist(
        [*PREMATH, "experiment", "run", os.fspath(experiment), "--run-id", "r1"],
        tmp_path,
        trials,
        rng,
    )
    for _ in range(2):
        _kill_when_some_rows_exist([*PREMATH, "experiment", "resume", "r1"], tmp_path, trials, rng)
    interrupted = len(_rows(trials))
    assert 0 < interrupted < 24
    # harnesses orphaned by the kills finish their 50 ms of work
    wait_for(lambda: not processes_under(tmp_path), HANG_GUARD_S, "orphaned harnesses to end")
    done = run_premath("experiment", "resume", "r1", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = orjson.loads(done.stdout)
    assert summary["trials"]["pending"] == 0
    assert summary["trials"]["success"] == 24
    records = _rows(trials)
    slots = Counter((r["variant_id"], r["task_id"], r["replication"]) for r in records)
    assert len(slots) == 24
    assert set(slots.values()) == {1}
    assert all(r["final"] and r["outcome"] == "success" for r in records)
    assert not (tmp_path / ".premath/runs/r1/run.lock").exists()


def test_two_processes_cannot_run_one_folder(tmp_path):
    release = tmp_path / "release"  # the trials run until the second process was refused
    tasks = [{"id": f"t{i}", "mode": "until", "release": os.fspath(release)} for i in range(4)]
    experiment = make_experiment(tmp_path / "exp", tasks, runtime={"timeout_ms": 600_000})
    first = _start_run(experiment, tmp_path)
    try:
        lock = tmp_path / ".premath/runs/r1/run.lock"
        deadline = time.monotonic() + HANG_GUARD_S
        while not lock.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        second = run_premath("experiment", "resume", "r1", "--json", cwd=tmp_path)
        assert second.returncode == 1
        assert orjson.loads(second.stdout)["error"]["code"] == "lock_busy"
        assert b"is being run by another process" in second.stderr
    finally:
        release.touch()
        first.wait(timeout=HANG_GUARD_S)
    assert first.returncode == 0
    assert len(_rows(tmp_path / ".premath/runs/r1/trials.jsonl")) == 4


def test_sigterm_stops_the_run_cleanly_and_resume_finishes_it(tmp_path):
    tasks = [{"id": f"t{i}", "mode": "slow", "seconds": 300} for i in range(3)]
    # A deadline far beyond the wait below: on a loaded machine no trial may end by itself.
    experiment = make_experiment(
        tmp_path / "exp", tasks, concurrency=3, runtime={"timeout_ms": 600_000}
    )
    proc = _start_run(experiment, tmp_path, "--json", output=subprocess.PIPE)
    trajectory = tmp_path / ".premath/runs/r1/harness_trajectory.jsonl"
    deadline = time.monotonic() + 120
    while len(_rows(trajectory)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(_rows(trajectory)) == 3, "the three trials never started"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert orjson.loads(stdout)["error"]["code"] == "interrupted"
    assert b"premath experiment resume r1" in stderr
    assert _rows(tmp_path / ".premath/runs/r1/trials.jsonl") == []
    ends = [r for r in _rows(trajectory) if r["action"] == "experiment.trial.end"]
    assert {r["resultClass"] for r in ends} == {"cancelled"}
    assert not (tmp_path / ".premath/runs/r1/run.lock").exists()


def test_resume_ends_harnesses_a_killed_runner_left_running(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    experiment = make_experiment(
        tmp_path / "exp",
        [
            {
                "id": "t",
                "mode": "hang_once",
                "marker": os.fspath(tmp_path / "m"),
                "pid_file": os.fspath(pid_file),
            }
        ],
        runtime={"timeout_ms": 120_000},
    )
    runner = _start_run(experiment, tmp_path)
    grandchild = read_pid(pid_file, within_s=20)
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    time.sleep(0.2)
    assert not wait_dead(grandchild, within_s=0.3)  # orphaned: nobody enforces its deadline
    ticket = tmp_path / ".premath/runs/r1/trials/000000-control-t-r0/attempt-1/harness.pid"
    assert ticket.exists()
    done = run_premath("experiment", "resume", "r1", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert wait_dead(grandchild)
    assert not ticket.exists()
    assert orjson.loads(done.stdout)["trials"]["success"] == 1
