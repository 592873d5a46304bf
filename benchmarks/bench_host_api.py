"""Host-call overhead inside a worker step (`--work-program`), beside a spawned CLI call.

A worker's program makes its host calls in-process: each call goes through the per-call
pipeline (allowlist, evidence, dispatch), yields one `premath.host_effect.v0` envelope and
appends one trajectory row (locked; fsynced with the program's last row). Measured as the
worker step runs it (`ProgramWork.run`): a program of read calls (`issue.show`,
`issue.ready`, `issue.list`) over a store of issues, per call, wall and CPU time. The baseline
is what an agent pays without the host API: one spawned `premath issue show ID --json`.
Target: under 2 ms per read call.
"""

import json
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks._measure import PREMATH, Row, ms, run_once, summarise, verdict
from premath.clock import SystemClock
from premath.harness.work import WorkContext, load_work_program
from premath.issues.memory import add_issue

TARGET_S = 0.002
READS = ("issue.show", "issue.ready", "issue.list")
# (issues in the store, calls per program, programs run)
FULL = (100, 30, 15)
QUICK = (20, 9, 3)


def project(folder: Path, issues: int, calls: int) -> Path:
    path = str(folder / ".premath" / "issues.jsonl")
    now = datetime(2026, 3, 1, tzinfo=UTC)
    for n in range(1, issues + 1):
        add_issue(path, f"task {n}", issue_id=f"bd-{n}", description="Do it.", now=now, timeout_s=5)
    program = {"calls": [{"action": READS[n % len(READS)]} for n in range(calls)]}
    (folder / "reads.json").write_text(json.dumps(program))
    return folder / "reads.json"


def context(folder: Path, run: int) -> WorkContext:
    premath = folder / ".premath"
    return WorkContext(
        worker_id="w1",
        issue_id="bd-1",
        lease_id=None,
        step_id=f"w1.bd-1.{run}",
        attempt=1,
        lineage_refs=(),
        worktree=str(folder),
        repo_root=str(folder),
        issues_path=str(premath / "issues.jsonl"),
        session_path=str(premath / "harness_session.json"),
        ledger_path=str(premath / "harness_feature_ledger.json"),
        trajectory_path=str(premath / "harness_trajectory.jsonl"),
        log_dir=str(premath / "harness_steps" / f"run-{run}"),
        env={},
        timeout_s=60.0,
        output_cap=1 << 20,
        lock_timeout_s=5.0,
        now=SystemClock().now,
    )


def rows(quick: bool) -> list[Row]:
    issues, calls, runs = QUICK if quick else FULL
    folder = Path(tempfile.mkdtemp(prefix="premath-bench-host-"))
    try:
        work = load_work_program(
            str(project(folder, issues, calls)), repo_root=str(folder), max_calls=calls
        )
        wall, cpu = [], []
        for run in range(runs + 1):  # the first is a warm-up
            started, cpu_started = time.perf_counter(), time.process_time()
            result = work.run(context(folder, run))
            elapsed, cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
            assert result.ok, result.document["failureClasses"]
            if run:
                wall.append(elapsed / calls)
                cpu.append(cpu_s / calls)
        spawned = [
            run_once([*PREMATH, "issue", "show", "bd-1", "--json"], folder) for _ in range(runs)
        ]
    finally:
        shutil.rmtree(folder)
    ours, base = summarise(wall, [0.0]), summarise([t for t, _ in spawned], [m for _, m in spawned])
    return [
        Row(
            measure="host read call in a worker step (in-process: 1 envelope, 1 trajectory row)",
            size=f"{calls} calls, {issues} issues",
            ours=f"{ms(ours.median_s)} wall (p90 {ms(ours.p90_s)}), "
            f"{ms(statistics.median(cpu))} CPU per call",
            baseline=f"spawned `issue show`: {ms(base.median_s)}",
            ratio=f"{ours.median_s / base.median_s:.3f}x",
            target=f"< {TARGET_S * 1000:g} ms per call",
            verdict=verdict(ours.median_s < TARGET_S),
        )
    ]
