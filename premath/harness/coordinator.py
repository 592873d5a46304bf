"""The coordinator: rounds of worker processes, one per worktree, run in parallel.

specs/harness-loop.md "Coordinator"; the reference ran its workers one after another (D5-13).
Ours starts them together, at most `max_parallel` at once, each a real `premath harness-loop
worker` process (spawned through `premath.runner.process`) with its own session and ledger
(D5-11) and the shared trajectory; issue memory's lock keeps their claims apart. Each round
starts only while issues are ready and the active dependency graph has no cycle; a round runs
min(ready, worktrees) workers (D5-13).
"""

import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from premath.errors import InvalidUsage
from premath.harness.loop_config import per_worker_path
from premath.runner.process import ProcessOutcome, allowlisted_env, run_bounded

COORDINATOR_REPORT_KIND = "premath.harness.coordinator_loop.v1"
Report = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    repo_root: str
    issues_path: str
    session_path: str
    ledger_path: str
    trajectory_path: str
    worktrees: tuple[str, ...]
    rounds: int = 1
    worker_prefix: str = "worker"
    max_steps_per_worker: int = 1
    max_parallel: int | None = None
    continue_on_failure: bool = False
    worker_options: tuple[str, ...] = ()
    """Options passed through to every worker (commands, TTL, mode, policy...)."""
    pass_env: tuple[str, ...] = ()
    worker_timeout_s: float | None = None

    @property
    def log_dir(self) -> str:
        return os.path.join(os.path.dirname(self.trajectory_path), "harness_steps", "coordinator")


@dataclass(frozen=True, slots=True)
class WorkerRun:
    worker_id: str
    worktree: str
    exit_code: int
    document: dict[str, Any] | None
    stderr_lines: tuple[str, ...]

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
    from premath.issues.memory import ready

    return len(ready(issues_path, now=now))


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


def worker_argv(cfg: CoordinatorConfig, worker_id: str, worktree: str) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "premath",
        "harness-loop",
        "worker",
        "--repo-root",
        cfg.repo_root,
        "--worktree-root",
        worktree,
        "--issues-path",
        cfg.issues_path,
        "--session-path",
        per_worker_path(cfg.session_path, worker_id),
        "--feature-ledger-path",
        per_worker_path(cfg.ledger_path, worker_id),
        "--trajectory-path",
        cfg.trajectory_path,
        "--worker-id",
        worker_id,
        "--max-steps",
        str(cfg.max_steps_per_worker),
        *cfg.worker_options,
    ]
    for name in cfg.pass_env:
        argv += ["--pass-env", name]
    if cfg.continue_on_failure:
        argv.append("--continue-on-failure")
    return [*argv, "--json"]


def _run_worker(cfg: CoordinatorConfig, round_no: int, worker_id: str, worktree: str) -> WorkerRun:
    log_dir = Path(cfg.log_dir) / f"round-{round_no}"
    log_dir.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = log_dir / f"{worker_id}.stdout", log_dir / f"{worker_id}.stderr"
    outcome: ProcessOutcome = run_bounded(
        worker_argv(cfg, worker_id, worktree),
        cwd=cfg.repo_root,
        env=_worker_env(cfg.pass_env),
        timeout_s=cfg.worker_timeout_s,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        output_cap=64 * 1024 * 1024,
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
    try:
        stderr_lines = tuple(stderr_path.read_text(errors="replace").splitlines())
    except OSError:
        stderr_lines = ()
    return WorkerRun(worker_id, worktree, exit_code, document, stderr_lines)


def run_coordinator(
    cfg: CoordinatorConfig,
    *,
    now: Callable[[], datetime],
    report: Report = lambda _line: None,
) -> CoordinatorReport:
    result = CoordinatorReport()
    limit = cfg.max_parallel or len(cfg.worktrees)
    for round_no in range(1, cfg.rounds + 1):
        cycle = active_cycle(cfg.issues_path, now())
        if cycle is not None:
            report(f"[coordinator] dependency cycle in the active scope: {' -> '.join(cycle)}")
            result.exit_code, result.stopped_reason = 1, "dependency_cycle"
            return result
        ready = ready_count(cfg.issues_path, now())
        report(f"[coordinator] round={round_no} ready={ready}")
        if ready == 0:
            result.stopped_reason = "no_ready_issue"
            return result
        slots = list(enumerate(cfg.worktrees, start=1))[: max(1, min(ready, len(cfg.worktrees)))]
        with ThreadPoolExecutor(max_workers=max(1, min(limit, len(slots)))) as pool:
            futures = [
                pool.submit(_run_worker, cfg, round_no, f"{cfg.worker_prefix}.{k}", worktree)
                for k, worktree in slots
            ]
            runs = [future.result() for future in futures]
        for run in runs:
            for line in run.stderr_lines:
                report(line)
        result.rounds.append(
            {"round": round_no, "ready": ready, "workers": [run.to_document() for run in runs]}
        )
        failing = [run.exit_code for run in runs if run.exit_code != 0]
        if failing:
            result.exit_code = max(failing)
            if not cfg.continue_on_failure:
                result.stopped_reason = "worker_failed"
                return result
    result.stopped_reason = "rounds_exhausted"
    return result


_PASSED_THROUGH = (
    ("lease_ttl_seconds", "--lease-ttl-seconds"),
    ("work_cmd", "--work-cmd"),
    ("verify_cmd", "--verify-cmd"),
    ("verify_witness", "--verify-witness"),
    ("witness_ref_prefix", "--witness-ref-prefix"),
    ("mutation_mode", "--mutation-mode"),
    ("override_reason", "--override-reason"),
    ("policy_path", "--policy"),
    ("command_timeout_seconds", "--command-timeout-seconds"),
    ("output_cap_bytes", "--output-cap-bytes"),
    ("backoff_scale", "--backoff-scale"),
)


def build_coordinator_config(
    options: dict[str, Any], env_worktrees: str | None
) -> CoordinatorConfig:
    """Check everything a worker would refuse (exit 2) once, before any process starts."""
    from premath.harness.loop_config import (
        DEFAULT_VERIFY_CMD,
        DEFAULT_WITNESS_PREFIX,
        DEFAULT_WORK_CMD,
        VERIFY_CMD_ENV,
        WITNESS_PREFIX_ENV,
        WORK_CMD_ENV,
        LoopPaths,
        env_or,
        make_worker_config,
    )

    worktrees = resolve_worktrees(options["worktrees"], env_worktrees)
    prefix = options["worker_prefix"].strip()
    if not prefix or "/" in prefix:
        raise InvalidUsage("--worker-prefix must be non-empty and contain no '/'")
    resolved = dict(options)
    resolved["work_cmd"] = env_or(options["work_cmd"], WORK_CMD_ENV, DEFAULT_WORK_CMD)
    resolved["verify_cmd"] = env_or(options["verify_cmd"], VERIFY_CMD_ENV, DEFAULT_VERIFY_CMD)
    resolved["witness_ref_prefix"] = env_or(
        options["witness_ref_prefix"], WITNESS_PREFIX_ENV, DEFAULT_WITNESS_PREFIX
    )
    if options["policy_path"]:
        resolved["policy_path"] = os.path.abspath(options["policy_path"])
    paths = LoopPaths.from_options(options)
    make_worker_config(
        worker_id=f"{prefix}.1",
        repo_root=paths.repo_root,
        worktree=worktrees[0],
        work_cmd=resolved["work_cmd"],
        verify_cmd=resolved["verify_cmd"],
        mutation_mode=options["mutation_mode"],
        override_reason=options["override_reason"],
        policy_path=options["policy_path"],
        lease_ttl_s=options["lease_ttl_seconds"],
        command_timeout_s=options["command_timeout_seconds"],
    )
    passed: list[str] = []
    for key, flag in _PASSED_THROUGH:
        value = resolved.get(key)
        if value is not None and value != "":
            passed += [flag, str(value)]
    return CoordinatorConfig(
        repo_root=paths.repo_root,
        issues_path=paths.issues,
        session_path=paths.session,
        ledger_path=paths.ledger,
        trajectory_path=paths.trajectory,
        worktrees=worktrees,
        rounds=options["rounds"],
        worker_prefix=prefix,
        max_steps_per_worker=options["max_steps_per_worker"],
        max_parallel=options["max_parallel"],
        continue_on_failure=options["continue_on_failure"],
        worker_options=tuple(passed),
        pass_env=tuple(options["pass_env"]),
        worker_timeout_s=options.get("worker_timeout_seconds"),
    )
