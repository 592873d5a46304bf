"""A harness that follows the clean contract: `harness.py [flags] <task.json> <result.json>`.

It knows nothing about the runner: configuration comes as flags, the task from the input path,
and the verdict goes to the output path. Standard library only, deterministic.
"""
# A user's standalone program, not premath code: stdlib json and print are the point.
# ruff: noqa: T201, TID251

import argparse
import hashlib
import json
import os
import sys
import time


def solve(task: dict, strategy: str) -> int:
    a, b, op = task["a"], task["b"], task["op"]
    exact = {"+": a + b, "-": a - b, "*": a * b}[op]
    # "fast" cuts corners on about a third of the tasks; "careful" never does. The choice is a
    # digest of the task, so every replication of a task behaves the same way.
    bucket = int(hashlib.sha256(json.dumps(task, sort_keys=True).encode()).hexdigest(), 16) % 3
    if strategy == "fast" and bucket == 0:
        return exact + 1
    if strategy == "baseline" and bucket == 0 and op == "*":
        return exact - 1
    return exact


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", choices=["baseline", "careful", "fast"], default="baseline")
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("task_path")
    parser.add_argument("result_path")
    args = parser.parse_args()

    with open(args.task_path, encoding="utf-8") as handle:
        task = json.load(handle)
    if os.environ.get("HARNESS_DEBUG") == "1":
        print(f"solving {task['id']} with {args.strategy}", file=sys.stderr)
    time.sleep(args.delay_ms / 1000)
    started = time.monotonic()
    answer = solve(task, args.strategy)
    correct = answer == task["expected"]
    result = {
        "outcome": "success" if correct else "failure",
        "objective": {"name": "accuracy", "value": 1.0 if correct else 0.0},
        "metrics": {"latency_ms": round((time.monotonic() - started) * 1000, 3)},
        "answer": answer,
    }
    with open(args.result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
