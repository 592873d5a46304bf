"""Experiment runs: create the run folder, run pending trials on a bounded pool, resume.

specs/experiment.md "Run folder" and "Resume". A run folder holds everything a resume needs
(the resolved experiment, the tasks, the schedule), so a resume never re-reads the YAML or the
dataset and works from any working directory. Facts are append-only: `trials.jsonl` gets one
row per attempt; the latest row of a (variant, task, replication) slot is its result.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from premath.errors import (
    ArtifactInvalid,
    Conflict,
    InputInvalid,
    Interrupted,
    InvalidUsage,
    IoFailure,
    NotFound,
)
from premath.models.trial import RUN_MANIFEST_KIND
from premath.runner.dataset import Task, load_tasks, parse_tasks
from premath.runner.executor_choice import make_executor
from premath.runner.executors import DockerExecutor, Executor, Invocation
from premath.runner.experiment import (
    VariantPlan,
    check_executor,
    chosen_executor,
    experiment_digest,
    experiment_images,
    is_text,
    load_experiment,
    resolved_document,
    spec_from_resolved,
    uses_containers,
    variant_plans,
)
from premath.runner.interrupts import stop_signals_raise
from premath.runner.paths import DEFAULT_RUNS_DIR, RunPaths, safe_token, stale_tickets
from premath.runner.progress import Progress
from premath.runner.schedule import Slot, build_schedule
from premath.runner.trial import RunContext, run_slot
from premath.store.atomic import write_atomic
from premath.store.canonical import document_bytes
from premath.store.git_checkout import checkout_commit
from premath.store.jsonl import iter_lines, report_torn_tail
from premath.store.locks import hold_marker
from premath.terminal import counted
from premath.text import id_token
from premath.timefmt import format_seconds_z, session_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.clock import Clock
    from premath.models.experiment import ExperimentSpec
    from premath.models.trial import ExecutorName, TrialRecord

_RUN_LOCK_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class RunState:
    """An existing run folder, loaded."""

    paths: RunPaths
    manifest: dict[str, Any]
    resolved: dict[str, Any]
    spec: ExperimentSpec
    tasks: list[Task]
    schedule: list[Slot]

    @property
    def run_id(self) -> str:
        return self.paths.run_id

    @property
    def executor_name(self) -> ExecutorName:
        name: ExecutorName = self.manifest["executor"]
        return name

    @property
    def plans(self) -> dict[str, VariantPlan]:
        return {plan.variant_id: plan for plan in variant_plans(self.spec)}


def schedule_for(spec: ExperimentSpec, tasks: list[Task]) -> list[Slot]:
    return build_schedule(
        [plan.variant_id for plan in variant_plans(spec)],
        [task.id for task in tasks],
        spec.design.replications,
        spec.design.scheduling,
        spec.design.seed,
    )


def _schedule_document(schedule: list[Slot]) -> list[dict[str, Any]]:
    return [
        {
            "schedule_index": slot.schedule_index,
            "trial_id": slot.trial_id,
            "variant_id": slot.variant_id,
            "task_id": slot.task_id,
            "task_index": slot.task_index,
            "replication": slot.replication,
        }
        for slot in schedule
    ]


def _new_run_folder(runs_dir: Path, run_id: str | None, experiment_id: str, now: datetime) -> Path:
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or exc
        raise IoFailure(f"cannot create the runs folder {runs_dir}: {reason}") from None
    if run_id is not None:
        if id_token(run_id, "") != run_id.lower() or run_id in ("", ".", ".."):
            raise InputInvalid(
                f"run id {run_id!r} may only hold letters, digits, '-' and '_' (it names a folder)"
            )
        folder = runs_dir / run_id
        try:
            folder.mkdir()
        except FileExistsError:
            raise Conflict(
                f"run {run_id} already exists in {runs_dir}; resume it with "
                f"`premath experiment resume {run_id}` or choose another --run-id"
            ) from None
        return folder
    stem = f"{safe_token(experiment_id, 'experiment')}-{session_stamp(now)}"
    for suffix in range(1, 10_000):
        folder = runs_dir / (stem if suffix == 1 else f"{stem}-{suffix}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise Conflict(f"too many runs named {stem} in {runs_dir}")


def create_run(
    experiment_path: str,
    *,
    runs_dir: str = DEFAULT_RUNS_DIR,
    run_id: str | None = None,
    executor: ExecutorName | None = None,
    issue_id: str | None = None,
    trajectory_path: str | None = None,
    concurrency: int | None = None,
    now: datetime,
) -> RunState:
    """Validate everything, then write the run folder; nothing is written if a check fails.

    `executor` None: the experiment file's `executor`, else local. `concurrency` (the run's
    `--concurrency`) is recorded, so a resume runs as many trials at once."""
    loaded = load_experiment(experiment_path)
    executor = chosen_executor(loaded.spec, executor)
    check_executor(loaded, executor)
    tasks = load_tasks(loaded.dataset_path, loaded.spec.dataset.limit)
    if executor == "docker":
        DockerExecutor().require(loaded.base_dir, experiment_images(loaded.spec))
    if executor == "ray":
        import premath.runner.ray_executor  # noqa: F401  (fails with what to install)
    for what, value in (
        ("--issue-id", issue_id),
        ("--trajectory", trajectory_path),
        ("--run-id", run_id),
        ("--runs-dir", runs_dir),
    ):
        if value is not None and not is_text(value):
            raise InvalidUsage(f"{what} is not valid UTF-8")
    resolved = resolved_document(loaded, executor)
    digest = experiment_digest(resolved)
    schedule = schedule_for(loaded.spec, tasks)
    resolved_bytes = document_bytes({**resolved, "digest": digest})
    schedule_bytes = document_bytes(_schedule_document(schedule))
    folder = _new_run_folder(Path(runs_dir), run_id, loaded.spec.experiment.id, now)
    paths = RunPaths(folder)
    write_atomic(paths.resolved_experiment, resolved_bytes)
    write_atomic(paths.tasks, b"".join(task.payload + b"\n" for task in tasks))
    write_atomic(paths.schedule, schedule_bytes)
    network = loaded.spec.runtime.network
    manifest = {
        "record_kind": RUN_MANIFEST_KIND,
        "run_id": paths.run_id,
        "experiment_id": loaded.spec.experiment.id,
        "experiment_name": loaded.spec.experiment.name,
        "experiment_digest": digest,
        "created_at": format_seconds_z(now),
        "executor": executor,
        "network": {"requested": network, "enforced": uses_containers(loaded.spec, executor)},
        "issue_id": issue_id,
        # None: the run folder's own file, wherever the folder is moved
        "trajectory_path": os.fspath(Path(trajectory_path).absolute()) if trajectory_path else None,
        "task_count": len(tasks),
        "trial_count": len(schedule),
        "concurrency": concurrency,
        "commit": enclosing_commit(loaded.base_dir),
    }
    write_atomic(paths.manifest, document_bytes(manifest))  # last: its presence marks a whole run
    return RunState(paths, manifest, resolved, loaded.spec, tasks, schedule)


def enclosing_commit(folder: Path) -> str | None:
    """The commit of the git checkout holding the experiment (the harness under test), if any."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return checkout_commit(candidate)
    return None


def _read_json(path: Path, what: str) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise ArtifactInvalid(f"{path} is missing: the run folder is incomplete") from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ArtifactInvalid(f"cannot read the run's {what} {path}: {exc}") from None


def find_run(run_ref: str, runs_dir: str = DEFAULT_RUNS_DIR) -> RunPaths:
    """A run by folder path, or by id under `runs_dir`."""
    direct = Path(run_ref)
    if (direct / "run.json").is_file():
        return RunPaths(direct)
    if id_token(run_ref, "") == run_ref.lower():
        under = Path(runs_dir) / run_ref
        if (under / "run.json").is_file():
            return RunPaths(under)
    raise NotFound(
        f"run {run_ref} not found (looked for {direct}/run.json and {runs_dir}/{run_ref}/run.json)"
    )


def open_run(run_ref: str, runs_dir: str = DEFAULT_RUNS_DIR) -> RunState:
    paths = find_run(run_ref, runs_dir)
    manifest = _read_json(paths.manifest, "manifest")
    resolved = _read_json(paths.resolved_experiment, "resolved experiment")
    if not isinstance(manifest, dict) or manifest.get("record_kind") != RUN_MANIFEST_KIND:
        raise ArtifactInvalid(
            f"{paths.manifest} is not a premath run manifest ({RUN_MANIFEST_KIND})"
        )
    if not isinstance(resolved, dict):
        raise ArtifactInvalid(f"{paths.resolved_experiment} is not a JSON object")
    stored_digest = resolved.pop("digest", None)
    if stored_digest != experiment_digest(resolved):
        raise ArtifactInvalid(
            f"{paths.resolved_experiment} does not match its digest: the file was edited"
        )
    spec = spec_from_resolved(resolved)
    try:
        tasks = parse_tasks(paths.tasks.read_bytes().split(b"\n"), paths.tasks, None)
    except FileNotFoundError:
        raise ArtifactInvalid(f"{paths.tasks} is missing: the run folder is incomplete") from None
    schedule = schedule_for(spec, tasks)
    stored = _read_json(paths.schedule, "schedule")
    if stored != _schedule_document(schedule):
        raise ArtifactInvalid(f"{paths.schedule} does not match the run's experiment and tasks")
    return RunState(paths, manifest, resolved, spec, tasks, schedule)


def read_records(paths: RunPaths) -> Iterator[TrialRecord]:
    """Rows of trials.jsonl in file order; a line that does not parse is reported and skipped
    (its slot counts as not done, so a resume runs it again)."""
    import sys

    from pydantic import ValidationError

    from premath.models.trial import TrialRecord

    if not paths.trials_log.exists():
        return
    for line in iter_lines(paths.trials_log):
        try:
            yield TrialRecord.model_validate_json(line.text)
        except ValidationError:
            if not line.terminated:
                report_torn_tail(paths.trials_log, line)
            else:
                sys.stderr.write(
                    f"warning: {paths.trials_log}:{line.number}: skipped a row that is not a "
                    "trial record; its trial counts as not done\n"
                )


def latest_records(paths: RunPaths) -> dict[tuple[str, str, int], TrialRecord]:
    """The last row of each (variant, task, replication) slot."""
    latest: dict[tuple[str, str, int], TrialRecord] = {}
    for record in read_records(paths):
        latest[record.slot] = record
    return latest


def _invocation(state: RunState, plan: VariantPlan, label: str) -> Invocation:
    runtime = state.spec.runtime
    return Invocation(
        command=tuple(state.resolved["runtime"]["command"]),
        args=plan.args,
        env=plan.env,
        image=plan.image or runtime.image,
        timeout_s=runtime.timeout_ms / 1000,
        network=runtime.network,
        cpus=runtime.resources.cpus,
        memory_mb=runtime.resources.memory_mb,
        workdir=Path(state.resolved["source"]["base_dir"]),
        user=runtime.user,
        label=label,
    )


def _as_keyboard_interrupt(_signal_name: str) -> BaseException:
    """SIGTERM (CI cancel, `timeout`) stops a run like Ctrl-C: children end, none are orphaned."""
    return KeyboardInterrupt()


ERROR_MESSAGES_SHOWN = 5


def error_messages(
    records: Iterable[TrialRecord], limit: int = ERROR_MESSAGES_SHOWN
) -> list[dict[str, Any]]:
    """Why trials ended in error, most common first: each distinct (class, message) once with
    how many trials gave it and in which variants (a harness that cannot start says so in
    every trial's message: its first line on stderr, `results.stderr_headline`)."""
    counts: Counter[tuple[str, str]] = Counter()
    variants: dict[tuple[str, str], set[str]] = {}
    for record in records:
        if record.outcome == "error":
            key = (record.error_class or "error", record.message or record.error_class or "error")
            counts[key] += 1
            variants.setdefault(key, set()).add(record.variant_id)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        {
            "error_class": error_class,
            "message": message,
            "count": count,
            "variants": sorted(variants[(error_class, message)]),
        }
        for (error_class, message), count in ranked[:limit]
    ]


def summarise(state: RunState, ran: int, action: str) -> dict[str, Any]:
    latest = latest_records(state.paths)
    counts = {"success": 0, "failure": 0, "error": 0}
    done = 0
    final: list[TrialRecord] = []
    for slot in state.schedule:
        record = latest.get(slot.key)
        if record is not None and record.final:
            counts[record.outcome] += 1
            done += 1
            final.append(record)
    return {
        "action": action,
        "run_id": state.run_id,
        "run_dir": os.fspath(state.paths.root),
        "experiment_id": state.manifest["experiment_id"],
        "experiment_digest": state.manifest["experiment_digest"],
        "executor": state.executor_name,
        "trials": {
            "scheduled": len(state.schedule),
            "ran": ran,
            **counts,
            "pending": len(state.schedule) - done,
        },
        "error_messages": error_messages(final),
        "trials_path": os.fspath(state.paths.trials_log),
        "trajectory_path": os.fspath(trajectory_of(state)),
    }


def error_gate_failure(summary: dict[str, Any], max_error_rate: float | None) -> str | None:
    """Why a run fails `--fail-on-error[-rate]`: its final trials' error share is above the
    limit (0 for any error); None when it passes or no limit is set."""
    trials = summary["trials"]
    final = trials["success"] + trials["failure"] + trials["error"]
    if max_error_rate is None or final == 0 or trials["error"] / final <= max_error_rate:
        return None
    limit = "none allowed" if max_error_rate == 0 else f"limit {max_error_rate:g}"
    return (
        f"{trials['error']} of {final} final trials ended in error ({limit}); see the error "
        f"classes with `premath experiment report {summary['run_id']}`, fix the cause, then "
        f"`premath experiment resume {summary['run_id']} --rerun-errors`"
    )


def every_trial_errored(summary: dict[str, Any]) -> str | None:
    """Why a run that produced no verdict at all fails: every final trial ended in error (the
    harness never ran as meant: a typo in `runtime.command`, a missing program). None when
    some trial was judged, or none is final yet."""
    trials = summary["trials"]
    final = trials["success"] + trials["failure"] + trials["error"]
    if final == 0 or trials["error"] != final:
        return None
    top = summary["error_messages"][0]
    # A batch's run lives under its own runs folder: name it by its folder.
    run = summary["run_id"] if summary["action"].startswith("experiment.") else summary["run_dir"]
    return (
        f"every trial ended in error ({final} of {final}); most common, "
        f"{counted(top['count'], 'trial')}: {top['message']}; fix the cause, then "
        f"`premath experiment resume {run} --rerun-errors`"
    )


def trajectory_of(state: RunState) -> Path:
    given = state.manifest.get("trajectory_path")
    return Path(given) if given else state.paths.trajectory


def experiment_ref(state: RunState) -> str:
    return f"experiment://{state.spec.experiment.id}/{state.manifest['experiment_digest']}"


def pending_slots(state: RunState, rerun_errors: bool) -> list[tuple[Slot, int]]:
    """Slots to run, each with its first attempt number (after every recorded or begun one)."""
    latest = latest_records(state.paths)
    pending = []
    for slot in state.schedule:
        record = latest.get(slot.key)
        done = record is not None and record.final
        if done and not (rerun_errors and record is not None and record.outcome == "error"):
            continue
        recorded = record.attempt if record is not None else 0
        on_disk = state.paths.highest_attempt_on_disk(slot.trial_id)
        pending.append((slot, max(recorded, on_disk) + 1))
    return pending


_SIGNAL_POLL_S = 0.2


def _wait_interruptibly(futures: list[Future[TrialRecord | None]]) -> set[Any]:
    """`wait(FIRST_EXCEPTION)` in short slices: Linux may deliver SIGINT or SIGTERM to a worker
    thread, and a main thread blocked on a lock with no timeout would never run its handler."""
    while True:
        done, pending = wait(futures, timeout=_SIGNAL_POLL_S, return_when=FIRST_EXCEPTION)
        if not pending or any(future.exception() is not None for future in done):
            return done


def execute_run(
    state: RunState,
    *,
    clock: Clock,
    lock_timeout: float,
    concurrency: int | None = None,
    rerun_errors: bool = False,
    show_progress: bool = False,
    executor: Executor | None = None,
    ray_address: str | None = None,
) -> int:
    """Run every pending slot; returns how many slots reached a final verdict now.

    Holds `run.lock` throughout, so two processes never run one folder. Ctrl-C or SIGTERM end
    the in-flight harnesses, keep every recorded trial and raise Interrupted (resume later).
    """
    busy = (
        f"run {state.run_id} is being run by another process ({state.paths.lock}); wait for it "
        "to finish"
    )
    with hold_marker(state.paths.lock, timeout_s=_RUN_LOCK_TIMEOUT_S, busy_message=busy):
        runner = executor or make_executor(state.executor_name, ray_address)
        try:
            return _execute_pending(
                state, runner, clock, lock_timeout, concurrency, rerun_errors, show_progress
            )
        finally:
            if executor is None:  # a caller's executor is the caller's to close
                runner.close()


def _execute_pending(
    state: RunState,
    runner: Executor,
    clock: Clock,
    lock_timeout: float,
    concurrency: int | None,
    rerun_errors: bool,
    show_progress: bool,
) -> int:
    for attempt in stale_tickets(state.paths):  # harnesses a killed runner left behind
        runner.reap(attempt)
    pending = pending_slots(state, rerun_errors)
    # This command's --concurrency, else the one `run` was given, else the experiment's.
    workers = max(1, concurrency or state.manifest.get("concurrency") or state.spec.concurrency)
    runner.cancel.clear()
    context = RunContext(
        run_id=state.run_id,
        paths=state.paths,
        executor=runner,
        clock=clock,
        experiment_ref=experiment_ref(state),
        trajectory_path=trajectory_of(state),
        issue_id=state.manifest.get("issue_id"),
        lock_timeout=lock_timeout,
        max_attempts=state.spec.retry.max_attempts,
        retry_on=tuple(state.spec.retry.retry_on),
    )
    progress = Progress(
        len(state.schedule), len(state.schedule) - len(pending), enabled=show_progress
    )
    payloads = {task.id: task.payload for task in state.tasks}
    plans = state.plans
    progress.start()
    futures: list[Future[TrialRecord | None]] = []
    with (
        stop_signals_raise(_as_keyboard_interrupt),
        ThreadPoolExecutor(max_workers=workers) as pool,
    ):
        try:
            for slot, first_attempt in pending:
                invocation = _invocation(
                    state, plans[slot.variant_id], f"{state.run_id}-{slot.trial_id}"
                )
                futures.append(
                    pool.submit(
                        run_slot,
                        context,
                        slot,
                        payloads[slot.task_id],
                        invocation,
                        first_attempt,
                        progress.record,
                    )
                )
            for future in _wait_interruptibly(futures):
                future.result()  # our own failure (disk full, lock timeout) stops the run
        except BaseException as exc:
            runner.cancel.set()
            for future in futures:
                future.cancel()
            wait(futures)
            runner.cleanup()
            progress.finish()
            if isinstance(exc, KeyboardInterrupt):
                raise Interrupted(
                    f"interrupted: {progress.done} of {counted(progress.total, 'trial')} recorded "
                    f"and kept; continue with `premath experiment resume {state.run_id}`"
                ) from None
            if isinstance(exc, OSError):
                raise IoFailure(
                    f"run {state.run_id} stopped: {exc}; recorded trials are kept; fix the "
                    f"cause, then `premath experiment resume {state.run_id}`"
                ) from None
            raise
    progress.finish()
    return sum(1 for future in futures if future.result() is not None)


def run_experiment(
    experiment_path: str,
    *,
    clock: Clock,
    lock_timeout: float,
    runs_dir: str = DEFAULT_RUNS_DIR,
    run_id: str | None = None,
    executor: ExecutorName | None = None,
    ray_address: str | None = None,
    concurrency: int | None = None,
    issue_id: str | None = None,
    trajectory_path: str | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """`experiment run`: create the run folder, run every trial, return the run summary."""
    state = create_run(
        experiment_path,
        runs_dir=runs_dir,
        run_id=run_id,
        executor=executor,
        issue_id=issue_id,
        trajectory_path=trajectory_path,
        concurrency=concurrency,
        now=clock.now(),
    )
    ran = execute_run(
        state,
        clock=clock,
        lock_timeout=lock_timeout,
        concurrency=concurrency,
        show_progress=show_progress,
        ray_address=ray_address,
    )
    return summarise(state, ran, "experiment.run")


def resume_experiment(
    run_ref: str,
    *,
    clock: Clock,
    lock_timeout: float,
    runs_dir: str = DEFAULT_RUNS_DIR,
    rerun_errors: bool = False,
    concurrency: int | None = None,
    show_progress: bool = False,
    ray_address: str | None = None,
) -> dict[str, Any]:
    """`experiment resume`: run what is not final yet (and error trials with rerun_errors)."""
    state = open_run(run_ref, runs_dir)
    ran = execute_run(
        state,
        clock=clock,
        lock_timeout=lock_timeout,
        concurrency=concurrency,
        rerun_errors=rerun_errors,
        show_progress=show_progress,
        ray_address=ray_address,
    )
    return summarise(state, ran, "experiment.resume")
