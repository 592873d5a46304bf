"""The harness loop: coordinator throughput for 1, 2 and 4 workers, and per-step overhead.

Throughput: a coordinator (real worker processes, one per worktree) drains N independent issues;
issues closed per second, and the speed-up over one worker in the same run. With a trivial work
command (`true`) a step is bound by its durable writes (about nine fsyncs: claim, session and
ledger twice, join witness, close, trajectory), which serialise on the disk, so more workers
help little; with work that takes time (`sleep 0.2`) the workers overlap it.

Per-step overhead: one in-process step (claim, session, ledger, two commands, join check,
witness, close, trajectory) against the two bare `sh -c true` runs it contains; the difference
is what the loop itself costs. No number fails the build.
"""

import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._measure import Row, ms, verdict
from premath.cli.harness_loop import worker_command
from premath.clock import SystemClock
from premath.harness.coordinator import CoordinatorConfig, run_coordinator
from premath.harness.loop_config import WorkerSettings, make_worker_config
from premath.harness.loop_paths import LoopPaths
from premath.harness.step import run_step
from premath.issues.memory import add_issue
from premath.runner.process import allowlisted_env, run_bounded

CLOCK = SystemClock()


def _issues(root: Path, count: int) -> str:
    path = str(root / ".premath" / "issues.jsonl")
    for n in range(1, count + 1):
        add_issue(path, f"task {n}", issue_id=f"bd-{n}", now=CLOCK.now(), timeout_s=10)
    return path


def _drain(workers: int, issues: int, work_cmd: str) -> float:
    """Seconds for `workers` parallel workers to close `issues` independent issues."""
    with tempfile.TemporaryDirectory(prefix="premath-bench-loop-") as folder:
        root = Path(folder)
        issues_path = _issues(root, issues)
        worktrees = []
        for k in range(1, workers + 1):
            (root / f"w{k}").mkdir()
            worktrees.append(str(root / f"w{k}"))
        settings = WorkerSettings(
            paths=LoopPaths.resolve(folder, issues=issues_path),
            work_cmd=work_cmd,
            verify_cmd="true",
        )
        cfg = CoordinatorConfig(
            settings=settings,
            worktrees=tuple(worktrees),
            worker_command=worker_command,
            rounds=issues,
            max_steps_per_worker=issues,
        )
        start = time.perf_counter()
        report = run_coordinator(cfg, now=CLOCK.now)
        elapsed = time.perf_counter() - start
        if report.to_document()["closedCount"] != issues:
            raise RuntimeError(
                f"benchmark run closed {report.to_document()['closedCount']}/{issues}"
            )
    return elapsed


def _step_overhead(steps: int) -> tuple[float, float]:
    """Median seconds of one in-process step, and of its two bare commands."""
    with tempfile.TemporaryDirectory(prefix="premath-bench-step-") as folder:
        root = Path(folder)
        _issues(root, steps)
        cfg = make_worker_config(
            worker_id="bench", repo_root=folder, worktree=folder, work_cmd="true", verify_cmd="true"
        )
        step_times, bare_times = [], []
        for index in range(1, steps + 1):
            start = time.perf_counter()
            run_step(cfg, index, CLOCK)
            step_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            for _ in range(2):
                run_bounded(
                    ["sh", "-c", "true"],
                    cwd=folder,
                    env=allowlisted_env(),
                    timeout_s=10,
                    stdout_path=None,
                    stderr_path=None,
                    output_cap=1024,
                )
            bare_times.append(time.perf_counter() - start)
    return statistics.median(step_times), statistics.median(bare_times)


# (work command, label, speed-up target for 2 and 4 workers or None to report only)
WORKLOADS = (("true", "trivial work", None), ("sleep 0.2", "0.2 s work", 1.5))


def rows(quick: bool) -> list[Row]:
    issues, runs = (12, 1) if quick else (40, 3)
    results: list[Row] = []
    for work_cmd, label, target in WORKLOADS:
        base_rate = 0.0
        for workers in (1, 2, 4):
            elapsed = statistics.median(_drain(workers, issues, work_cmd) for _ in range(runs))
            rate = issues / elapsed
            if workers == 1:
                base_rate = rate
            speedup = rate / base_rate
            checked = workers > 1 and target is not None
            results.append(
                Row(
                    measure=f"coordinator throughput, {label}, {workers} worker(s)",
                    size=f"{issues} issues",
                    ours=f"{rate:.1f} issues/s",
                    baseline=f"{base_rate:.1f} issues/s (1 worker)",
                    ratio=f"{speedup:.2f}x",
                    target=f">= {target}x" if checked else "report",
                    verdict=verdict(speedup >= (target or 0)) if checked else "-",
                )
            )
    step, bare = _step_overhead(10 if quick else 40)
    overhead = step - bare
    results.append(
        Row(
            measure="loop overhead per step (in-process)",
            size="true/true",
            ours=ms(step),
            baseline=f"{ms(bare)} (2 bare commands)",
            ratio=f"{step / bare:.2f}x",
            target="overhead < 50 ms",
            verdict=verdict(overhead < 0.05),
        )
    )
    return results
