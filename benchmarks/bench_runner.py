"""Experiment runner: overhead per trial over the harness's own time, and concurrency speed-up.

- overhead: a trivial shell harness run N times directly (`subprocess.run`, the baseline: the
  harness's own cost including fork/exec) against the same N trials through `create_run` +
  `execute_run` at concurrency 1 (folders, task file, result validation, two JSONL appends and
  two trajectory rows per trial). Target: under 20 ms per trial above the baseline.
- speed-up: trials of a harness that sleeps 50 ms, serial against 8-way. Target: at least 6x.
"""

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks._experiments import write_experiment
from benchmarks._measure import Row, ms, verdict
from premath.clock import SystemClock
from premath.runner.runs import create_run, execute_run

TRIVIAL = 'printf \'{"outcome":"success"}\' > "$2"\n'
SLEEPY = 'sleep 0.05\nprintf \'{"outcome":"success"}\' > "$2"\n'


def _experiment(folder: Path, script: str, tasks: int, concurrency: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "harness.sh").write_text(script)
    return write_experiment(folder, tasks, {"command": ["sh", "harness.sh"]}, concurrency)


def _run_experiment(root: Path, script: str, tasks: int, concurrency: int) -> float:
    """Seconds for create_run + execute_run (everything but interpreter start-up)."""
    experiment = _experiment(root / "exp", script, tasks, concurrency)
    started = time.perf_counter()
    state = create_run(
        os.fspath(experiment), runs_dir=os.fspath(root / "runs"), now=SystemClock().now()
    )
    execute_run(state, clock=SystemClock(), lock_timeout=10.0)
    return time.perf_counter() - started


def _direct(root: Path, script: str, tasks: int) -> float:
    harness = root / "direct.sh"
    harness.write_text(script)
    task = root / "task.json"
    task.write_text('{"id": "t"}\n')
    started = time.perf_counter()
    for i in range(tasks):
        subprocess.run(
            ["sh", os.fspath(harness), os.fspath(task), os.fspath(root / f"r{i}.json")],
            check=True,
        )
    return time.perf_counter() - started


def _overhead_row(quick: bool) -> Row:
    tasks, rounds = (40, 3) if quick else (200, 5)
    ours, base = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(rounds):
            folder = Path(scratch) / str(round_)
            folder.mkdir()
            base.append(_direct(folder, TRIVIAL, tasks) / tasks)
            ours.append(_run_experiment(folder, TRIVIAL, tasks, 1) / tasks)
    per_trial, harness = statistics.median(ours), statistics.median(base)
    overhead = per_trial - harness
    return Row(
        "runner overhead per trial (trivial harness, serial)",
        f"{tasks} trials",
        ms(per_trial),
        ms(harness),
        f"+{ms(overhead)}",
        "< +20 ms",
        verdict(overhead < 0.020),
    )


def _speedup_row(quick: bool) -> Row:
    tasks = 48 if quick else 200
    with tempfile.TemporaryDirectory() as scratch:
        serial = _run_experiment(Path(scratch) / "serial", SLEEPY, tasks, 1)
        parallel = _run_experiment(Path(scratch) / "parallel", SLEEPY, tasks, 8)
    speedup = serial / parallel
    return Row(
        "8-way concurrency vs serial (harness sleeps 50 ms)",
        f"{tasks} trials",
        f"{parallel:.2f} s",
        f"{serial:.2f} s",
        f"{speedup:.1f}x",
        ">= 6x",
        verdict(speedup >= 6),
    )


def rows(quick: bool) -> list[Row]:
    return [_overhead_row(quick), _speedup_row(quick)]
