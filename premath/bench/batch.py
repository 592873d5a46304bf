"""`premath bench batch`: many benchmark tasks under a variant matrix, as one experiment run.

A batch is an experiment (specs/experiment.md) whose harness is one `premath bench run` per
trial (`premath.bench.batch_trial`), so it gets everything experiments have: the local, docker
and ray executors, resume and `--rerun-errors`, interrupts, and the experiment report, whose
document is the batch's comparison summary (specs/bench-batch.md).

Inputs are checked before anything is written; then `<runs dir>/<batch id>.inputs/` receives the
generated experiment.yaml and tasks.jsonl, and the run folder `<runs dir>/<batch id>/` follows.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import yaml

from premath.bench.inputs import load_policy, load_task
from premath.errors import Conflict, InputInvalid, InvalidUsage
from premath.runner.paths import safe_token
from premath.store.atomic import write_atomic
from premath.store.canonical import document_bytes
from premath.timefmt import session_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.clock import Clock
    from premath.models.trial import ExecutorName

DEFAULT_BATCH_RUNS_DIR = ".premath/bench/batches"
HARBOR_INSTRUCTION = "instruction.md"
_GRACE_S = 60


@dataclass(frozen=True, slots=True)
class BatchVariant:
    variant_id: str
    command: str


def parse_variant(text: str) -> BatchVariant:
    """`ID=COMMAND` (the command line of the harness for this arm)."""
    variant_id, sep, command = text.partition("=")
    if not sep or not variant_id.strip() or not command.strip():
        raise InvalidUsage(f"--variant {text!r}: write ID=COMMAND, e.g. fast='python agent.py'")
    return BatchVariant(variant_id.strip(), command)


def _harbor_task(folder: Path) -> dict[str, Any]:
    """A Harbor task folder: its instruction.md, the folder name as id, the folder's path."""
    instruction = (folder / HARBOR_INSTRUCTION).read_text(encoding="utf-8")
    if not instruction.strip():
        raise InputInvalid(f"{folder / HARBOR_INSTRUCTION} is empty")
    return {"task_id": folder.name, "instruction": instruction, "task_dir": os.fspath(folder)}


def _json_task(path: Path) -> dict[str, Any]:
    task = load_task(os.fspath(path), None).model_dump(mode="json", exclude_none=True)
    task.setdefault("task_id", path.stem)
    return task


def collect_tasks(sources: list[str]) -> list[dict[str, Any]]:
    """Task files, folders of task files, Harbor task folders, or a Harbor dataset's folder."""
    tasks: list[dict[str, Any]] = []
    for source in sources:
        path = Path(source).absolute()
        if path.is_file():
            tasks.append(_json_task(path))
        elif (path / HARBOR_INSTRUCTION).is_file():
            tasks.append(_harbor_task(path))
        elif path.is_dir():
            found = []
            for entry in sorted(path.iterdir()):
                if entry.is_file() and entry.suffix == ".json":
                    found.append(_json_task(entry))
                elif (entry / HARBOR_INSTRUCTION).is_file():
                    found.append(_harbor_task(entry))
            if not found:
                raise InputInvalid(
                    f"{source} holds no task: expected *.json task files or Harbor task folders "
                    f"(each with {HARBOR_INSTRUCTION})"
                )
            tasks.extend(found)
        else:
            raise InputInvalid(f"task source {source} does not exist")
    ids = [task["task_id"] for task in tasks]
    repeated = sorted({task_id for task_id in ids if ids.count(task_id) > 1})
    if repeated:
        raise InputInvalid(f"task ids repeat across the sources: {', '.join(repeated)}")
    return [{"id": task["task_id"], **task} for task in tasks]


def _arm(
    variant: BatchVariant, cwd: Path, timeout_s: float, policy: str | None, dataset_id: str | None
) -> dict[str, Any]:
    args = ["--command", variant.command, "--cwd", os.fspath(cwd), "--timeout", f"{timeout_s:g}"]
    if policy is not None:
        args += ["--policy", os.fspath(Path(policy).absolute())]
    if dataset_id is not None:
        args += ["--dataset-id", dataset_id]
    return {"variant_id": variant.variant_id, "args": args}


def batch_experiment(
    batch_id: str,
    variants: list[BatchVariant],
    *,
    replications: int,
    concurrency: int,
    cwd: Path,
    timeout_s: float,
    policy: str | None,
    dataset_id: str | None,
) -> dict[str, Any]:
    """The experiment a batch runs: the first variant is the baseline."""
    arms = [_arm(v, cwd, timeout_s, policy, dataset_id) for v in variants]
    return {
        "version": "1.0",
        "experiment": {"id": batch_id, "name": f"bench batch {batch_id}"},
        "dataset": {"path": "tasks.jsonl"},
        "design": {"comparison": "paired", "replications": replications},
        "baseline": arms[0],
        "variant_plan": arms[1:],
        "runtime": {
            "command": [sys.executable, "-m", "premath.bench.batch_trial"],
            "timeout_ms": round((timeout_s + _GRACE_S) * 1000),
        },
        "concurrency": concurrency,
    }


def run_batch(
    sources: list[str],
    variants: list[BatchVariant],
    *,
    clock: Clock,
    lock_timeout: float,
    runs_dir: str = DEFAULT_BATCH_RUNS_DIR,
    run_id: str | None = None,
    executor: ExecutorName = "local",
    ray_address: str | None = None,
    replications: int = 1,
    concurrency: int = 1,
    cwd: Path | None = None,
    timeout_s: float = 1800.0,
    policy: str | None = None,
    dataset_id: str | None = None,
    html_path: str | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Run every (task, variant, replication) as a bench run; the batch document."""
    from premath.runner.report.analysis import report_run
    from premath.runner.runs import run_experiment

    if not variants:
        raise InvalidUsage("give at least one --variant ID=COMMAND (the first is the baseline)")
    tasks = collect_tasks(sources)
    load_policy(policy)  # a bad policy fails now, not in every trial
    workdir = (cwd or Path.cwd()).absolute()
    if not workdir.is_dir():
        raise InputInvalid(f"--cwd {workdir} is not a folder")
    batch_id = run_id or f"batch-{session_stamp(clock.now())}"
    document = batch_experiment(
        safe_token(batch_id, "batch"),
        variants,
        replications=replications,
        concurrency=concurrency,
        cwd=workdir,
        timeout_s=timeout_s,
        policy=policy,
        dataset_id=dataset_id,
    )
    inputs = Path(runs_dir) / f"{batch_id}.inputs"
    try:
        inputs.mkdir(parents=True)
    except FileExistsError:
        raise Conflict(
            f"batch {batch_id} already exists in {runs_dir}; resume it with `premath experiment "
            f"resume {batch_id} --runs-dir {runs_dir}` or choose another --run-id"
        ) from None
    write_atomic(inputs / "tasks.jsonl", b"".join(orjson.dumps(t) + b"\n" for t in tasks))
    experiment_file = inputs / "experiment.yaml"
    write_atomic(experiment_file, yaml.safe_dump(document, sort_keys=False).encode("utf-8"))
    summary = run_experiment(
        os.fspath(experiment_file),
        clock=clock,
        lock_timeout=lock_timeout,
        runs_dir=runs_dir,
        run_id=batch_id,
        executor=executor,
        ray_address=ray_address,
        show_progress=show_progress,
    )
    report = report_run(summary["run_dir"], runs_dir=runs_dir, html_path=html_path)
    report_path = Path(summary["run_dir"]) / "report.json"
    write_atomic(report_path, document_bytes(report))
    return {
        **summary,
        "action": "bench.batch",
        "report_path": os.fspath(report_path),
        "report": report,
    }
