"""Docker executor: overhead per trial over a bare hardened `docker run --rm ... true`.

Both sides start one container per trial from the same offline base image (`mise run
docker-setup`); ours adds the run folder, the task file, result validation, the OOM check when
needed, the removal and the trial rows. Target: at most 50 ms per trial on top. Without an engine
or the base image the row says so instead of a number.
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

BASE_IMAGE = os.environ.get("PREMATH_BASE_IMAGE", "premath-base:bookworm")
WRITE_RESULT = ["sh", "-c", 'printf \'{"outcome":"success"}\' > "$2"', "sh"]
HARDENED = [
    "--network=none",
    "--read-only",
    "--security-opt",
    "no-new-privileges",
    "--cap-drop",
    "ALL",
]


def _engine_ready() -> bool:
    probe = subprocess.run(
        ["docker", "image", "inspect", BASE_IMAGE], capture_output=True, check=False, timeout=20
    )
    return probe.returncode == 0


def _bare(trials: int) -> float:
    started = time.perf_counter()
    for _ in range(trials):
        subprocess.run(
            ["docker", "run", "--rm", *HARDENED, BASE_IMAGE, "true"],
            check=True,
            capture_output=True,
        )
    return (time.perf_counter() - started) / trials


def _ours(root: Path, trials: int) -> float:
    experiment = write_experiment(root, trials, {"image": BASE_IMAGE, "command": WRITE_RESULT})
    state = create_run(
        os.fspath(experiment),
        runs_dir=os.fspath(root / "runs"),
        executor="docker",
        now=SystemClock().now(),
    )
    started = time.perf_counter()
    execute_run(state, clock=SystemClock(), lock_timeout=10.0)
    elapsed = time.perf_counter() - started
    logs = list((root / "runs").glob("*/trials.jsonl"))
    lines = [line for log in logs for line in log.read_bytes().splitlines()]
    if sum(b'"outcome":"success"' in line for line in lines) != trials:
        raise RuntimeError(f"docker benchmark trials did not all succeed (see {root})")
    return elapsed / trials


def rows(quick: bool) -> list[Row]:
    measure = "docker executor overhead per trial (vs bare docker run --rm true)"
    if not _engine_ready():
        return [Row(measure, "-", "-", "-", "-", "<= +50 ms", "skipped: no engine or base image")]
    trials, rounds = (5, 2) if quick else (20, 3)
    ours, bare = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(rounds):
            bare.append(_bare(trials))
            folder = Path(scratch) / str(round_)
            folder.mkdir()
            ours.append(_ours(folder, trials))
    per_trial, baseline = statistics.median(ours), statistics.median(bare)
    overhead = per_trial - baseline
    return [
        Row(
            measure,
            f"{trials} trials x {rounds}",
            ms(per_trial),
            ms(baseline),
            f"+{ms(overhead)}",
            "<= +50 ms",
            verdict(overhead <= 0.050),
        )
    ]
