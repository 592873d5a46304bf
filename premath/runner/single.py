"""`premath run`: one task through one harness, outside any experiment (for harness authors).

Same contract, executors and verdicts as an experiment's trials, in one attempt folder.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import orjson

from premath.errors import Conflict, InputInvalid
from premath.models.experiment import ENV_NAME, RUNNER_ENV_PREFIXES
from premath.models.trial import ExecutorName
from premath.runner.dataset import TASK_CAP
from premath.runner.executors import DockerExecutor, Executor, Invocation, LocalExecutor
from premath.runner.paths import DEFAULT_RUNS_DIR, AttemptPaths
from premath.runner.results import judge
from premath.runner.trial import write_task_file
from premath.store.files import read_input_file
from premath.store.root import rebase
from premath.timefmt import session_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def parse_env(pairs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    env = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not ENV_NAME.fullmatch(name):
            raise InputInvalid(f"--env {pair!r}: expected NAME=VALUE")
        if name.upper().startswith(RUNNER_ENV_PREFIXES):
            raise InputInvalid(f"--env {name}: PREMATH_* and AGENTLAB_* are never passed on")
        env.append((name, value))
    return tuple(env)


def _read_task(task_path: str) -> bytes:
    data = read_input_file(
        task_path, TASK_CAP, named=task_path, what="task file", expected="the task's JSON file"
    )
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputInvalid(f"{task_path} is not JSON: {exc.msg}") from None
    return data.rstrip(b"\n")


def _trial_folder(out_dir: str | None, now: datetime) -> Path:
    if out_dir is not None:
        folder = Path(out_dir)
        if folder.exists() and any(folder.iterdir()):
            raise Conflict(f"{out_dir} is not empty; choose an empty or new --out folder")
        folder.parent.mkdir(parents=True, exist_ok=True)
        return folder
    base = Path(rebase(DEFAULT_RUNS_DIR))  # the project's runs folder (premath.store.root)
    base.mkdir(parents=True, exist_ok=True)
    stem = f"single-{session_stamp(now)}"
    for suffix in range(1, 10_000):
        folder = base / (stem if suffix == 1 else f"{stem}-{suffix}")
        if not folder.exists():
            return folder
    raise Conflict(f"too many single runs named {stem} in {base}")


def run_single(
    task_path: str,
    *,
    command: str,
    args: Sequence[str],
    env: Sequence[str],
    timeout_ms: int,
    executor: ExecutorName,
    image: str | None,
    memory_mb: int | None,
    out_dir: str | None,
    now: datetime,
) -> dict[str, Any]:
    """Run one attempt; the document carries the verdict and where every file is."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InputInvalid(f"--command: cannot split {command!r}: {exc}") from None
    if not argv:
        raise InputInvalid("--command must name a program")
    if executor == "local" and image is not None:
        raise InputInvalid("--image needs --executor docker: the local executor has no images")
    if executor == "docker" and image is None:
        raise InputInvalid("--executor docker needs --image")
    images = [] if image is None else [image]
    payload = _read_task(task_path)
    variables = parse_env(env)
    paths = AttemptPaths(_trial_folder(out_dir, now))
    runner: Executor = LocalExecutor()
    if executor == "docker":
        docker = DockerExecutor()
        docker.require(Path.cwd(), images)
        runner = docker
    paths.in_dir.mkdir(parents=True)
    write_task_file(paths.task_file, payload)
    paths.out_dir.mkdir()
    invocation = Invocation(
        command=tuple(argv),
        args=tuple(args),
        env=variables,
        image=image,
        timeout_s=timeout_ms / 1000,
        network="none",
        cpus=None,
        memory_mb=memory_mb,
        workdir=Path.cwd(),
        user=None,
        label=paths.root.name,
    )
    process = runner.execute(invocation, paths)
    verdict = judge(process, paths.result_file, stderr_file=paths.stderr_file)
    return {
        "action": "run",
        "outcome": verdict.outcome,
        "error_class": verdict.error_class,
        "message": verdict.message,
        "objective": None if verdict.objective is None else verdict.objective.model_dump(),
        "metrics": verdict.metrics,
        "exit_code": process.exit_code,
        "signal": process.signal,
        "duration_ms": round(process.duration_s * 1000),
        "executor": executor,
        "trial_dir": os.fspath(paths.root),
        "result_path": os.fspath(paths.result_file),
        "stdout_path": os.fspath(paths.stdout_file),
        "stderr_path": os.fspath(paths.stderr_file),
        "stderr_tail": process.stderr_tail[-1000:],
        **_leftovers(process.leftover_descendants),
    }


def _leftovers(count: int) -> dict[str, int]:
    """Said only when the harness left processes running (we ended them)."""
    return {"leftover_descendants": count} if count else {}
