"""One schedule slot, run to a final verdict: attempt folders, the harness, retries, records.

Each attempt gets a fresh `trials/<trial id>/attempt-<n>/` (never reused, so a resume after a
crash never mixes two attempts' files), a read-only `in/task.json` and an empty `out/`. Every
attempt appends one `trials.jsonl` row; `final` is false when the retry policy asks for
another attempt. An attempt ended by a cancel (Ctrl-C) appends no row: its slot stays pending.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from premath.errors import PremathError
from premath.models.experiment import RetryOn
from premath.models.trial import TrialRecord
from premath.runner.executors import Executor, Invocation
from premath.runner.paths import AttemptPaths, RunPaths
from premath.runner.process import ProcessOutcome, spawn_failed
from premath.runner.results import DEFAULT_RESULT_CAP, Verdict, judge
from premath.runner.schedule import Slot
from premath.runner.trial_steps import END_ACTION, START_ACTION, STARTED_CLASS, trial_step_line
from premath.store.canonical import row_bytes
from premath.store.files import write_all
from premath.store.jsonl import append_line
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.clock import Clock


@dataclass(frozen=True, slots=True)
class RunContext:
    """What every trial of one run shares."""

    run_id: str
    paths: RunPaths
    executor: Executor
    clock: Clock
    experiment_ref: str
    trajectory_path: Path
    issue_id: str | None
    lock_timeout: float
    max_attempts: int
    retry_on: tuple[RetryOn, ...]
    result_cap: int = DEFAULT_RESULT_CAP


_APPEND_LOCKS: dict[Path, threading.Lock] = {}
_APPEND_LOCKS_GUARD = threading.Lock()


def _append(path: Path, line: bytes, lock_timeout: float) -> None:
    """append_line, serialised per file inside this process first: the pool's threads queue on
    a mutex instead of polling the `<path>.lock` marker, which stays for other processes."""
    with _APPEND_LOCKS_GUARD:
        mutex = _APPEND_LOCKS.setdefault(path, threading.Lock())
    with mutex:
        append_line(path, line, timeout_s=lock_timeout)


def wants_retry(verdict: Verdict, retry_on: tuple[RetryOn, ...]) -> bool:
    """`timeout` covers timeouts, `error` every other error, `failure` failures."""
    if verdict.outcome == "failure":
        return "failure" in retry_on
    if verdict.outcome == "error":
        return ("timeout" if verdict.error_class == "timeout" else "error") in retry_on
    return False


def write_task_file(path: Path, payload: bytes) -> None:
    """Create the read-only task file. A fresh file in a fresh folder that nobody reads before
    the harness starts, so no temp-file rename; and no fsync: after a crash the attempt folder
    is abandoned and the next attempt writes a new one from the run's tasks.jsonl."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        write_all(fd, payload + b"\n")
    finally:
        os.close(fd)


def _prepare(paths: AttemptPaths, task_payload: bytes) -> None:
    paths.root.mkdir(parents=True, exist_ok=False)
    paths.in_dir.mkdir()
    write_task_file(paths.task_file, task_payload)
    paths.out_dir.mkdir()


def run_slot(
    context: RunContext,
    slot: Slot,
    task_payload: bytes,
    invocation: Invocation,
    first_attempt: int,
    on_record: Callable[[TrialRecord], None],
) -> TrialRecord | None:
    """Run attempts until one is final; None when cancelled before a final verdict."""
    attempt = first_attempt
    while True:
        if context.executor.cancel.is_set():
            return None
        paths = context.paths.attempt(slot.trial_id, attempt)
        if paths.root.exists():  # left by a crashed run: never reuse an attempt folder
            attempt += 1
            continue
        _prepare(paths, task_payload)
        may_retry = attempt - first_attempt + 1 < context.max_attempts
        record = _run_attempt(context, slot, invocation, paths, attempt, may_retry)
        if record is None:
            return None
        on_record(record)
        if record.final:
            return record
        attempt += 1


def _run_attempt(
    context: RunContext,
    slot: Slot,
    invocation: Invocation,
    paths: AttemptPaths,
    attempt: int,
    may_retry: bool,
) -> TrialRecord | None:
    """One attempt in its prepared folder, its start and end on the trajectory and its record
    in trials.jsonl; None when it was cancelled (its end row says so, no record)."""
    executor = context.executor
    started = format_seconds_z(context.clock.now())
    step = {
        "run_id": context.run_id,
        "trial_id": slot.trial_id,
        "attempt": attempt,
        "experiment_ref": context.experiment_ref,
        "issue_id": context.issue_id,
    }
    _append(
        context.trajectory_path,
        trial_step_line(
            **step,
            action=START_ACTION,
            result_class=STARTED_CLASS,
            started_at=None,
            finished_at=started,
        ),
        context.lock_timeout,
    )
    executor_error: Verdict | None = None
    try:
        process = executor.execute(invocation, paths)
    except PremathError as exc:  # e.g. a path docker cannot mount: this attempt only
        process = spawn_failed(exc.message)  # nothing ran
        executor_error = Verdict("error", "executor_failed", exc.message)
    finished = format_seconds_z(context.clock.now())
    if process.status == "cancelled":
        _append(
            context.trajectory_path,
            trial_step_line(
                **step,
                action=END_ACTION,
                result_class="cancelled",
                started_at=started,
                finished_at=finished,
            ),
            context.lock_timeout,
        )
        return None
    verdict = executor_error or judge(
        process, paths.result_file, context.result_cap, paths.stderr_file
    )
    final = not (may_retry and wants_retry(verdict, context.retry_on))
    record = _trial_record(context, slot, attempt, final, verdict, process, (started, finished))
    _append(
        context.paths.trials_log,
        row_bytes(record.model_dump(mode="json")),
        context.lock_timeout,
    )
    _append(
        context.trajectory_path,
        trial_step_line(
            **step,
            action=END_ACTION,
            result_class=verdict.error_class or verdict.outcome,
            witness_refs=(f"trial://{context.run_id}/{slot.trial_id}/attempt-{attempt}",),
            started_at=started,
            finished_at=finished,
        ),
        context.lock_timeout,
    )
    return record


def _trial_record(
    context: RunContext,
    slot: Slot,
    attempt: int,
    final: bool,
    verdict: Verdict,
    process: ProcessOutcome,
    span: tuple[str, str],
) -> TrialRecord:
    """The attempt's row of trials.jsonl: the slot, the verdict and what the process did."""
    started, finished = span
    return TrialRecord(
        run_id=context.run_id,
        trial_id=slot.trial_id,
        schedule_index=slot.schedule_index,
        variant_id=slot.variant_id,
        task_id=slot.task_id,
        task_index=slot.task_index,
        replication=slot.replication,
        attempt=attempt,
        final=final,
        outcome=verdict.outcome,
        error_class=verdict.error_class,
        message=verdict.message,
        objective=verdict.objective,
        metrics=verdict.metrics,
        exit_code=process.exit_code,
        signal=process.signal,
        duration_ms=round(process.duration_s * 1000),
        executor=context.executor.name,
        started_at=started,
        finished_at=finished,
        stdout_truncated=process.stdout_truncated,
        stderr_truncated=process.stderr_truncated,
        leftover_descendants=process.leftover_descendants,
    )
