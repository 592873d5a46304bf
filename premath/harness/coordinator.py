"""The coordinator: rounds of worker processes, one per worktree, run in parallel.

specs/harness-loop.md "Coordinator"; the reference ran its workers one after another (D5-13).
Ours starts them together, at most `max_parallel` at once, each a real `premath harness-loop
worker` process (spawned through `premath.runner.process`) with its own session and ledger
(D5-11) and the shared trajectory; issue memory's lock keeps their claims apart. Each round
starts only while issues are ready and the active dependency graph has no cycle; a round runs
min(ready, worktrees) workers (D5-13).

Interrupts (divergence D16-5): SIGINT or SIGTERM sets one event that every running worker's
`run_bounded` watches, so all workers get SIGTERM at once (and SIGKILL after the grace); each
worker ends its command's process group and gives its lease back; then the coordinator releases
any lease its workers still hold, and reports `stoppedReason: "interrupted"` with exit 1.

Progress (D16-6): each worker's stderr lines are reported as they land in its log, prefixed by
the worker id; with `heartbeat_s` (a terminal) a quiet worker is reported alive with its elapsed
time. Logs go to a folder per run, so earlier runs' logs stay.
"""

from __future__ import annotations

import glob
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import orjson

from premath.errors import InvalidUsage, PremathError
from premath.harness.loop_config import WorkerSettings
from premath.harness.stop_reason import WorkerEnd, failure_stop
from premath.models.vocabulary import is_escalation_title
from premath.runner.interrupts import on_stop_signals
from premath.runner.process import (
    ProcessOutcome,
    allowlisted_env,
    reap_group_ticket,
    run_bounded,
    signal_group_ticket,
)
from premath.timefmt import session_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

COORDINATOR_REPORT_KIND = "premath.harness.coordinator_loop.v1"
Report = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """One worker process of a round: what its command line must say."""

    worker_id: str
    worktree: str
    max_steps: int
    continue_on_failure: bool
    settings: WorkerSettings
    """The loop's settings with this worker's own session and ledger."""


WorkerCommand = Callable[[WorkerSpec], list[str]]
"""Builds a worker's argv; the face that parsed the options owns their spelling."""


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    settings: WorkerSettings
    worktrees: tuple[str, ...]
    worker_command: WorkerCommand
    rounds: int = 1
    worker_prefix: str = "worker"
    max_steps_per_worker: int = 1
    max_parallel: int | None = None
    continue_on_failure: bool = False
    worker_timeout_s: float | None = None
    heartbeat_s: float | None = None
    """Report a quiet worker alive every this many seconds (on a terminal); None: never."""

    def __post_init__(self) -> None:
        prefix = self.worker_prefix.strip()
        if not prefix or "/" in prefix:
            raise InvalidUsage("--worker-prefix must be non-empty and contain no '/'")
        object.__setattr__(self, "worker_prefix", prefix)

    @property
    def log_root(self) -> str:
        return os.path.join(self.settings.paths.steps_dir, "coordinator")


@dataclass(frozen=True, slots=True)
class WorkerRun:
    worker_id: str
    worktree: str
    exit_code: int
    document: dict[str, Any] | None

    def to_document(self) -> dict[str, Any]:
        document = self.document or {}
        return {
            "workerId": self.worker_id,
            "worktree": self.worktree,
            "exitCode": self.exit_code,
            "closedIssueIds": document.get("closedIssueIds", []),
            "failedIssueIds": document.get("failedIssueIds", []),
            "error": document.get("error"),
        }


@dataclass(slots=True)
class CoordinatorReport:
    rounds: list[dict[str, Any]] = field(default_factory=list)
    exit_code: int = 0
    stopped_reason: str = ""
    log_dir: str = ""
    released_lease_issue_ids: list[str] = field(default_factory=list)

    def to_document(self) -> dict[str, Any]:
        runs = [run for round_ in self.rounds for run in round_["workers"]]
        return {
            "action": "harness-loop.coordinator",
            "reportKind": COORDINATOR_REPORT_KIND,
            "roundCount": len(self.rounds),
            "closedCount": sum(len(run["closedIssueIds"]) for run in runs),
            "failedCount": sum(len(run["failedIssueIds"]) for run in runs),
            "stoppedReason": self.stopped_reason,
            "exitCode": self.exit_code,
            "logDir": self.log_dir,
            "releasedLeaseIssueIds": self.released_lease_issue_ids,
            "rounds": self.rounds,
        }


def resolve_worktrees(given: Sequence[str], env_value: str | None) -> tuple[str, ...]:
    """Absolute, deduplicated, sorted by path string; none is a usage error (exit 2)."""
    raw = list(given) or [part for part in (env_value or "").split(",") if part.strip()]
    worktrees = tuple(sorted({os.path.abspath(part.strip()) for part in raw}))
    if not worktrees:
        raise InvalidUsage("provide at least one --worktree (or PREMATH_WORKTREES)")
    missing = [path for path in worktrees if not os.path.isdir(path)]
    if missing:
        raise InvalidUsage(f"worktree is not a directory: {', '.join(missing)}")
    return worktrees


def ready_count(issues_path: str, now: datetime) -> int:
    """Ready issues a worker may claim: escalations are left to people (D30a-1)."""
    from premath.issues.memory import ready

    return sum(1 for row in ready(issues_path, now=now) if not is_escalation_title(row["title"]))


def active_cycle(issues_path: str, now: datetime) -> list[str] | None:
    """The preflight the reference's runbook promises (its B6): `dep diagnostics`, active scope."""
    from premath.issues.memory import dep_diagnostics

    return dep_diagnostics(issues_path, now=now, scope="active").cycle_path


def _worker_env(pass_env: Sequence[str]) -> dict[str, str]:
    """Our own processes: the allowlist, our PREMATH_* settings, the user's named variables."""
    env = allowlisted_env()
    for name, value in os.environ.items():
        if name.startswith("PREMATH_") or name in ("PYTHONPATH", *pass_env):
            env[name] = value
    return env


class _LogFollower:
    """Reports a worker's stderr lines as they land in its log file, prefixed by its id."""

    def __init__(self, worker_id: str, path: Path, report: Report) -> None:
        self.worker_id, self.path, self.report = worker_id, path, report
        self.offset, self.pending = 0, b""
        self.started = self.last_line = time.monotonic()

    def poll(self, heartbeat_s: float | None) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            data = b""
        self.offset += len(data)
        *lines, self.pending = (self.pending + data).split(b"\n")
        for line in lines:
            self._emit(line)
        now = time.monotonic()
        if heartbeat_s is not None and now - self.last_line >= heartbeat_s:
            self.report(f"[{self.worker_id}] still running ({now - self.started:.0f}s elapsed)")
            self.last_line = now

    def finish(self) -> None:
        self.poll(None)
        if self.pending:
            self._emit(self.pending)
            self.pending = b""

    def _emit(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        self.last_line = time.monotonic()
        tagged = line.startswith(f"[worker:{self.worker_id}]")
        self.report(line if tagged else f"[{self.worker_id}] {line}")


def _run_worker(
    cfg: CoordinatorConfig, spec: WorkerSpec, log_dir: Path, stop: threading.Event
) -> WorkerRun:
    stdout_path, stderr_path = (
        log_dir / f"{spec.worker_id}.stdout",
        log_dir / f"{spec.worker_id}.stderr",
    )
    outcome: ProcessOutcome = run_bounded(
        cfg.worker_command(spec),
        cwd=cfg.settings.paths.repo_root,
        env=_worker_env(cfg.settings.pass_env),
        timeout_s=cfg.worker_timeout_s,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        output_cap=64 * 1024 * 1024,
        cancel=stop,
        group_ticket=log_dir / f"{spec.worker_id}.group",
    )
    document: dict[str, Any] | None = None
    try:
        parsed = orjson.loads(stdout_path.read_bytes())
        document = parsed if isinstance(parsed, dict) else None
    except (OSError, orjson.JSONDecodeError):
        document = None
    if outcome.status == "ok":
        exit_code = 0
    elif outcome.exit_code in (1, 2):
        exit_code = outcome.exit_code
    else:
        exit_code = 1
        reason = outcome.spawn_error or f"worker process ended with {outcome.status}"
        document = {**(document or {}), "error": {"code": "internal_error", "message": reason}}
    return WorkerRun(spec.worker_id, spec.worktree, exit_code, document)


def _run_dir(log_root: str, now: datetime) -> Path:
    """A new folder per coordinator run: earlier runs' logs are kept."""
    base = Path(log_root) / session_stamp(now)
    candidate, n = base, 1
    while True:
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            n += 1
            candidate = base.with_name(f"{base.name}-{n}")


def _run_round(
    cfg: CoordinatorConfig,
    specs: list[WorkerSpec],
    log_dir: Path,
    stop: threading.Event,
    report: Report,
) -> list[WorkerRun]:
    log_dir.mkdir(parents=True, exist_ok=True)
    followers = [
        _LogFollower(spec.worker_id, log_dir / f"{spec.worker_id}.stderr", report) for spec in specs
    ]
    limit = cfg.max_parallel or len(cfg.worktrees)
    with ThreadPoolExecutor(max_workers=max(1, min(limit, len(specs)))) as pool:
        futures: list[Future[WorkerRun]] = [
            pool.submit(_run_worker, cfg, spec, log_dir, stop) for spec in specs
        ]
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=0.1)
            for follower in followers:
                follower.poll(cfg.heartbeat_s)
    for follower in followers:
        follower.finish()
    return [future.result() for future in futures]


def release_held_leases(
    settings: WorkerSettings, worker_ids: Sequence[str], now: datetime, timeout_s: float
) -> list[str]:
    """Give back every lease these workers still hold (after an interrupt); issue ids released."""
    from premath.issues.memory import read_store, release_lease

    try:
        rows = read_store(settings.paths.issues, now)
    except PremathError:
        return []
    released = []
    for issue_id, row in sorted(rows.items()):
        lease = row.get("lease")
        owner = lease["owner"] if lease is not None else None
        if owner is None or owner not in worker_ids:
            continue
        try:
            release_lease(settings.paths.issues, issue_id, owner, now=now, timeout_s=timeout_s)
        except PremathError:
            continue
        released.append(issue_id)
    return released


def _reap_orphaned_commands(steps_dir: str, worker_ids: Sequence[str]) -> None:
    """Kill the command groups of workers that were killed before they could (their group
    tickets outlive them; a finished command's ticket is already gone)."""
    for worker_id in worker_ids:
        for ticket in Path(steps_dir).glob(f"{glob.escape(worker_id)}.*/attempt-*/*.group"):
            reap_group_ticket(ticket)


def run_coordinator(
    cfg: CoordinatorConfig,
    *,
    now: Callable[[], datetime],
    report: Report = lambda _line: None,
    lock_timeout_s: float = 10.0,
) -> CoordinatorReport:
    """Rounds until nothing is ready, a worker fails, the rounds run out, or an interrupt."""
    cfg.settings.paths.require_issues()  # refused before its log folder is made
    stop = threading.Event()
    result = CoordinatorReport()
    run_dir = _run_dir(cfg.log_root, now())
    result.log_dir = str(run_dir)
    shown = os.path.relpath(run_dir)  # a person reads it: short when under the working folder
    report(f"[coordinator] worker logs: {run_dir if shown.startswith('..') else shown}")
    started: list[str] = []

    def interrupted() -> None:
        """At once, from the signal handler: every running worker gets SIGTERM now, before it
        can close another issue; `stop` then keeps new rounds from starting."""
        stop.set()
        for ticket in run_dir.glob("round-*/*.group"):
            signal_group_ticket(ticket, signal.SIGTERM)

    with on_stop_signals(interrupted):
        _rounds(cfg, result, run_dir, stop, started, now, report)
        if stop.is_set():
            result.exit_code, result.stopped_reason = 1, "interrupted"
            _reap_orphaned_commands(cfg.settings.paths.steps_dir, started)
            result.released_lease_issue_ids = release_held_leases(
                cfg.settings, started, now(), lock_timeout_s
            )
            report(
                "[coordinator] interrupted: workers stopped, leases given back "
                f"({', '.join(result.released_lease_issue_ids) or 'none left held'})"
            )
    return result


def _rounds(
    cfg: CoordinatorConfig,
    result: CoordinatorReport,
    run_dir: Path,
    stop: threading.Event,
    started: list[str],
    now: Callable[[], datetime],
    report: Report,
) -> None:
    for round_no in range(1, cfg.rounds + 1):
        if stop.is_set():
            return
        cycle = active_cycle(cfg.settings.paths.issues, now())
        if cycle is not None:
            report(f"[coordinator] dependency cycle in the active scope: {' -> '.join(cycle)}")
            result.exit_code, result.stopped_reason = 1, "dependency_cycle"
            return
        ready = ready_count(cfg.settings.paths.issues, now())
        report(f"[coordinator] round={round_no} ready={ready}")
        if ready == 0:
            result.stopped_reason = "no_ready_issue"
            return
        slots = list(enumerate(cfg.worktrees, start=1))[: max(1, min(ready, len(cfg.worktrees)))]
        specs = []
        for k, worktree in slots:
            worker_id = f"{cfg.worker_prefix}.{k}"
            specs.append(
                WorkerSpec(
                    worker_id=worker_id,
                    worktree=worktree,
                    max_steps=cfg.max_steps_per_worker,
                    continue_on_failure=cfg.continue_on_failure,
                    settings=cfg.settings.for_worker(worker_id),
                )
            )
            started.append(worker_id)
        runs = _run_round(cfg, specs, run_dir / f"round-{round_no}", stop, report)
        result.rounds.append(
            {"round": round_no, "ready": ready, "workers": [run.to_document() for run in runs]}
        )
        if stop.is_set():
            return
        stop_on = failure_stop(
            [WorkerEnd(run.worker_id, run.exit_code, run.document) for run in runs]
        )
        if stop_on is not None:
            result.exit_code = max(result.exit_code, stop_on.exit_code)
            if not cfg.continue_on_failure:
                result.stopped_reason = stop_on.reason
                report(f"[coordinator] stopped: {stop_on.summary}")
                return
    result.stopped_reason = "rounds_exhausted"
