"""One trial of a benchmark batch: a normal `premath bench run` behind the clean contract.

`python -m premath.bench.batch_trial --command CMD [--cwd DIR] [--timeout S] [--policy FILE]
TASK.json RESULT.json` runs the task (one line of the batch's tasks.jsonl) with `bench run`'s
library call into the folder `bench-run/` beside RESULT.json, then writes RESULT.json for the
experiment runner: the harness's own outcome when the bench run succeeded, else `error` with
the run's failure class in `metrics` (specs/bench-batch.md "Trials").
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import orjson

from premath.bench.inputs import load_policy, load_task
from premath.bench.run import BenchRequest, run_benchmark
from premath.clock import SystemClock
from premath.store.atomic import write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BENCH_RUN_FOLDER = "bench-run"
_LOCK_TIMEOUT_S = 30.0


def trial_result(summary: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """What the experiment runner reads: outcome, and the bench run's facts as metrics."""
    failure = summary["failure_class"]
    outcome = summary["outcome"] if failure is None else "error"
    return {
        "outcome": outcome,
        "metrics": {
            "bench_status": summary["status"],
            "failure_class": failure,
            "failure_message": summary["failure_message"],
            "duration_s": summary["duration_s"],
            "tool_calls": summary["tools"]["calls"],
            "trajectory_steps": summary["trajectory"]["steps"],
            "bench_run": BENCH_RUN_FOLDER,
            **{f"usage_{k}": v for k, v in summary["usage"].items() if v is not None},
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m premath.bench.batch_trial")
    parser.add_argument("--command", required=True)
    parser.add_argument("--cwd", default=".")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--policy")
    parser.add_argument("--dataset-id")
    parser.add_argument("task_path")
    parser.add_argument("result_path")
    args = parser.parse_args(argv)
    task = load_task(args.task_path, None)
    result_path = Path(args.result_path)
    run_dir = result_path.parent / BENCH_RUN_FOLDER
    request = BenchRequest(
        task=task,
        command=shlex.split(args.command),
        policy=load_policy(args.policy),
        premath_argv=[sys.executable, "-m", "premath"],
        run_dir=run_dir,
        cwd=Path(args.cwd),
        timeout_s=args.timeout,
        dataset_id=args.dataset_id or task.dataset_id,
        task_id=task.task_id,
    )
    run_benchmark(request, clock=SystemClock(), lock_timeout_s=_LOCK_TIMEOUT_S)
    summary = orjson.loads((run_dir / "summary.json").read_bytes())
    write_atomic(result_path, orjson.dumps(trial_result(summary, run_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
