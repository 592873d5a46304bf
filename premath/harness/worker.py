"""The worker loop: up to `max_steps` steps, until nothing is ready or a step fails.

specs/harness-loop.md "Worker". A failed step stops the loop unless `continue_on_failure`; either
way the report's exit code is 1 when any step failed (D5-10: the reference said 0 with
`--continue-on-failure`). A runtime error (a corrupt session, a store that vanished) is recorded
as a trajectory row of class `failed_runtime_error` and then raised, so the CLI prints it; where
the issues file is the authority and there is none (no project) the worker is refused before it
writes anything.

A draining worker (`drain_poll_s`, a fleet's, specs/remote-workers.md) does not stop while other
workers hold leases: it waits and claims again, so the issue of a worker that died is reclaimed
once its lease goes stale, and it stops (`drained`) when no issue is ready or held.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from premath.errors import Interrupted, PremathError
from premath.harness.authority import require_store
from premath.harness.interrupts import interrupts_as_errors
from premath.harness.loop_config import WorkerConfig
from premath.harness.presence import presence_of
from premath.harness.step import STEP_ACTION, Report, StepReport, claimed_issue, run_step
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.clock import Clock

WORKER_REPORT_KIND = "premath.harness.worker_loop.v1"
RUNTIME_ERROR_CLASS = "failed_runtime_error"


@dataclass(slots=True)
class WorkerReport:
    worker_id: str
    steps: list[StepReport] = field(default_factory=list)
    stopped_reason: str = ""

    @property
    def failed(self) -> int:
        return sum(1 for step in self.steps if step.outcome != "completed")

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def to_document(self) -> dict[str, Any]:
        return {
            "action": "harness-loop.worker",
            "reportKind": WORKER_REPORT_KIND,
            "workerId": self.worker_id,
            "stepCount": len(self.steps),
            "closedCount": len(self.steps) - self.failed,
            "failedCount": self.failed,
            "closedIssueIds": [s.claim.issue_id for s in self.steps if s.outcome == "completed"],
            "failedIssueIds": [s.claim.issue_id for s in self.steps if s.outcome != "completed"],
            "stoppedReason": self.stopped_reason,
            "steps": [step.to_document() for step in self.steps],
        }


def record_runtime_error(
    cfg: WorkerConfig, step_index: int, error: PremathError, clock: Clock
) -> None:
    """A trajectory row for a step that could not run; best effort (the error is raised anyway)."""
    from premath.harness.outbox import record_step

    now = clock.now()
    try:
        record_step(
            cfg,
            lease_id=None,
            step_folder=None,
            step_id=f"{cfg.worker_id}.runtime.{step_index}",
            action=STEP_ACTION,
            result_class=RUNTIME_ERROR_CLASS,
            witness_refs=[f"error://{error.code}"],
            finished_at=format_seconds_z(now),
            now=now,
        )
    except PremathError:
        return


def run_worker(
    cfg: WorkerConfig,
    *,
    max_steps: int,
    continue_on_failure: bool,
    clock: Clock,
    sleep: Callable[[float], None] = time.sleep,
    report: Report = lambda _line: None,
    first_step_index: int = 1,
    drain_poll_s: float | None = None,
) -> WorkerReport:
    from premath.harness.outbox import delivering
    from premath.store.gitignore import ensure_gitignore

    require_store(cfg.authority.memory, cfg.where.paths)  # refused before anything is written
    ensure_gitignore(os.path.dirname(cfg.where.paths.steps_dir))
    presence = presence_of(cfg.authority.presence)
    # A remote worker's rows go to the authority through its outbox (harness/outbox.py).
    with interrupts_as_errors(), delivering(cfg, report) as shipped_up_to:
        presence.start()
        reason = "interrupted"
        try:
            outcome = _steps(
                cfg,
                max_steps,
                continue_on_failure,
                clock,
                sleep,
                report,
                max(first_step_index, shipped_up_to),
                drain_poll_s,
            )
            reason = outcome.stopped_reason
            return outcome
        except PremathError as error:
            reason = "interrupted" if isinstance(error, Interrupted) else f"error: {error.code}"
            raise
        finally:
            presence.stop(reason)


def run_one_step(
    cfg: WorkerConfig, step_index: int, clock: Clock, *, report: Report = lambda _line: None
) -> tuple[dict[str, Any], int]:
    """`harness step`: one step of the worker loop, stopping on failure; (document, exit code)."""
    outcome = run_worker(
        cfg,
        max_steps=1,
        continue_on_failure=False,
        clock=clock,
        report=report,
        first_step_index=step_index,
    )
    if not outcome.steps:
        return {"action": "harness.step", "stepId": None, "claimed": False}, outcome.exit_code
    (step,) = outcome.steps
    document = {"action": "harness.step", "claimed": True, **step.to_document()}
    # The issue as the step left it (closed, blocked, released), not as it was claimed.
    after = claimed_issue(cfg, step.claim.issue_id, clock.now())
    return {**document, "issue": after}, outcome.exit_code


def _steps(
    cfg: WorkerConfig,
    max_steps: int,
    continue_on_failure: bool,
    clock: Clock,
    sleep: Callable[[float], None],
    report: Report,
    first_step_index: int,
    drain_poll_s: float | None = None,
) -> WorkerReport:
    outcome = WorkerReport(cfg.worker_id)
    step_index = first_step_index
    waiting = False
    while step_index < first_step_index + max_steps:
        try:
            step = run_step(cfg, step_index, clock, sleep=sleep, report=report)
            held = [] if step is not None or drain_poll_s is None else _held(cfg, clock)
        except PremathError as error:
            record_runtime_error(cfg, step_index, error, clock)
            raise
        if step is None and held and drain_poll_s is not None:
            presence_of(cfg.authority.presence).phase("idle")
            if not waiting:
                report(
                    f"[worker:{cfg.worker_id}] nothing ready; waiting while {len(held)} issue(s) "
                    f"are held ({', '.join(held[:5])})"
                )
            waiting = True
            sleep(drain_poll_s)
            continue
        waiting = False
        if step is None:
            report(f"[worker:{cfg.worker_id}] no ready issue to claim (step={step_index})")
            outcome.stopped_reason = "drained" if drain_poll_s is not None else "no_ready_issue"
            return outcome
        step_index += 1
        outcome.steps.append(step)
        presence_of(cfg.authority.presence).phase("idle")
        if step.outcome == "completed":
            report(f"[worker:{cfg.worker_id}] closed issue {step.claim.issue_id}")
            continue
        classes = ",".join(step.failure_classes) or "none"
        report(
            f"[worker:{cfg.worker_id}] work/verify failed for {step.claim.issue_id} "
            f"(failureClasses={classes}, lease_state={step.handoff.lease_state}, "
            f"action={step.handoff.lease_action})"
        )
        if not continue_on_failure:
            outcome.stopped_reason = "step_failed"
            return outcome
    outcome.stopped_reason = "max_steps"
    return outcome


def _held(cfg: WorkerConfig, clock: Clock) -> list[str]:
    """Issues other workers hold under active leases (which may still go stale and come back
    to us); a stale lease nobody could reclaim just now is not worth waiting for."""
    return [
        held.issue_id
        for held in cfg.authority.memory.held_leases(clock.now())
        if held.state == "active"
    ]
