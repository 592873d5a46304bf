"""Ray executor: overhead per trial over the local executor, on a local Ray cluster.

A head node with 2 CPUs (2 worker processes, 100 MB object store, no dashboard, loopback, token
auth) runs N trials of a harness that sleeps 1 s, 2 at a time; the local executor runs the same
trials 2 at a time. Each lane runs N/2 trials in a row, so the overhead per trial is the
difference in wall time divided by N/2. Both runs are warmed up (Ray's worker processes exist).
Target: at most 50 ms per trial. Without the ray extra the row says so.
"""

import contextlib
import importlib.util
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks._experiments import write_experiment
from benchmarks._measure import Row, ms, verdict
from premath.clock import SystemClock
from premath.runner.executor_choice import make_executor
from premath.runner.executors import Executor
from premath.runner.runs import create_run, execute_run

SLEEP_HARNESS = [
    sys.executable,
    "-c",
    "import sys, time; time.sleep(1); open(sys.argv[-1], 'w').write('{\"outcome\": \"success\"}')",
]
LANES = 2
MEASURE = "ray executor overhead per trial (harness sleeps 1 s, 2 lanes, vs local executor)"
TARGET = "<= +50 ms"


@contextlib.contextmanager
def _local_cluster(scratch: Path) -> Iterator[str]:
    ray = os.fspath(Path(sys.executable).parent / "ray")
    token = scratch / "token"
    token.write_text(secrets.token_hex(32))
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=os.fspath(token))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    flags = ["--head", "--port", str(port), "--node-ip-address", "127.0.0.1"]
    flags += ["--num-cpus", str(LANES), "--object-store-memory", str(100 * 1024 * 1024)]
    flags += ["--include-dashboard", "false", "--disable-usage-stats"]
    flags += ["--temp-dir", os.fspath(scratch / "r")]
    try:
        subprocess.run([ray, "start", *flags], check=True, capture_output=True, timeout=300)
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, check=False, timeout=120)


def _run(root: Path, trials: int, executor: str, runner: Executor | None = None) -> float:
    experiment = write_experiment(root, trials, {"command": SLEEP_HARNESS}, LANES)
    state = create_run(
        os.fspath(experiment),
        runs_dir=os.fspath(root / "runs"),
        executor=executor,  # type: ignore[arg-type]
        now=SystemClock().now(),
    )
    started = time.perf_counter()
    execute_run(state, clock=SystemClock(), lock_timeout=10.0, executor=runner)
    elapsed = time.perf_counter() - started
    rows = state.paths.trials_log.read_bytes().splitlines()
    if sum(b'"outcome":"success"' in row for row in rows) != trials:
        raise RuntimeError(f"ray benchmark trials did not all succeed (see {root})")
    return elapsed


def rows(quick: bool) -> list[Row]:
    if importlib.util.find_spec("ray") is None:
        return [Row(MEASURE, "-", "-", "-", "-", TARGET, "skipped: pip install 'premath[ray]'")]
    trials = 8 if quick else 64
    with tempfile.TemporaryDirectory(prefix="prb") as name:
        scratch = Path(name)
        _run(scratch / "warm-local", LANES, "local")
        local = _run(scratch / "local", trials, "local")
        with _local_cluster(scratch) as address:
            started = time.perf_counter()
            runner = make_executor("ray", address)  # joins the cluster: once per command
            connect = time.perf_counter() - started
            try:
                _run(scratch / "warm-ray", LANES, "ray", runner)
                on_ray = _run(scratch / "ray", trials, "ray", runner)
            finally:
                runner.close()
    per_lane = trials / LANES
    overhead = (on_ray - local) / per_lane
    return [
        Row(
            MEASURE,
            f"{trials} trials (+{connect:.1f} s to join the cluster, once per command)",
            ms(on_ray / per_lane),
            ms(local / per_lane),
            f"{'+' if overhead >= 0 else ''}{ms(overhead)}",
            TARGET,
            verdict(overhead <= 0.050),
        )
    ]
