"""The experiment file the runner benchmarks time: N one-line tasks, one control variant."""

from pathlib import Path
from typing import Any

import yaml


def write_experiment(
    folder: Path, tasks: int, runtime: dict[str, Any], concurrency: int | None = None
) -> Path:
    """`folder/experiment.yaml` over `tasks` tasks (`t0`, `t1`, ...), no retries, 60 s timeout
    unless `runtime` says otherwise."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tasks.jsonl").write_text("".join(f'{{"id": "t{i}"}}\n' for i in range(tasks)))
    document: dict[str, Any] = {
        "version": "1.0",
        "experiment": {"id": "bench", "name": "bench"},
        "dataset": {"path": "tasks.jsonl"},
        "design": {"replications": 1},
        "baseline": {"variant_id": "control"},
        "runtime": {"timeout_ms": 60_000, **runtime},
    }
    if concurrency is not None:
        document["concurrency"] = concurrency
    path = folder / "experiment.yaml"
    path.write_text(yaml.safe_dump(document))
    return path
