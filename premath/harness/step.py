"""One worker step: claim an issue, work, verify, gate, then close or escalate; record it all.

The sequence follows the reference worker with the join-check gate (specs/join-check.md) in
front of every issue mutation (specs/harness-loop.md "Step"):

1. claim the next ready issue under a lease (claim-next also reclaims stale leases, D3-1);
2. session `active`, feature `in_progress`;
3. attempts: run work, then verify (even when work failed); build the step's join-check input,
   evaluate it, persist its witness, compute MutationReady; on failure classify and ask the
   retry policy; a retry waits its backoff (D5-6) and renews the lease first;
4. success: close the issue only if this worker still holds it (checked under the store lock);
   failure: read the lease state, take the handoff, and apply the escalation (release, block,
   discover) only when MutationReady; a refused gate mutates nothing and the lease is left to
   go stale, so another worker can reclaim it;
5. one trajectory row (witness, lease-handoff and lineage refs; failure classes as
   `failure://<class>` refs), the feature row, session `stopped` with the next step.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from premath.errors import InputInvalid, Interrupted, LeaseRefused, NotFound, PremathError
from premath.harness.authority import require_store
from premath.harness.commands import (
    COMMAND_NOT_EXECUTABLE,
    COMMAND_NOT_FOUND,
    CommandRun,
    command_env,
    missing_program,
    run_command,
)
from premath.harness.delivery import Delivered
from premath.harness.escalation import EscalationResult, escalate_held
from premath.harness.feature_ledger import load_ledger, read_prefix, write_feature
from premath.harness.handoff import (
    Handoff,
    LeaseSnapshot,
    classify_failed_handoff,
    escalated_handoff,
    success_handoff,
    undelivered_handoff,
    unlanded_handoff,
)
from premath.harness.heartbeat import lease_heartbeat
from premath.harness.join.check import evaluate_join_check
from premath.harness.join.mutation_ready import mutation_ready
from premath.harness.join.step_evidence import join_check_input
from premath.harness.join.witness import join_witness_path, write_join_witness
from premath.harness.loop_config import DEFAULT_VERIFY_CMD, StepCommands, WorkerConfig
from premath.harness.loop_paths import LoopPaths
from premath.harness.merge_queue import Landing
from premath.harness.outbox import record_step
from premath.harness.presence import presence_of
from premath.harness.refs import (
    lineage_refs,
    policy_ref,
    step_folder_name,
    step_id,
    witness_ref,
)
from premath.harness.retry import (
    backoff_delay_s,
    failure_classes_from_witness_path,
    resolve_retry_decision,
)
from premath.harness.session import load_session, write_session
from premath.harness.transport_recovery import recover_through_transport
from premath.harness.work import ProgramRun, StepRun, WorkContext, run_failure_classes
from premath.models.retry_policy import RetryDecision
from premath.store.atomic import write_atomic
from premath.store.canonical import stdout_bytes
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.clock import Clock
    from premath.issues.held import FinishStatus

STEP_ACTION = "worker.loop"
STEP_WITNESS_KIND = "premath.harness.loop_step.v1"
NEXT_STEP_ACTIVE = "work -> verify -> close_or_recover"
Report = Callable[[str], None]
StepOutcome = Literal["completed", "failed"]


@dataclass(frozen=True, slots=True)
class Claim:
    issue_id: str
    lease_id: str | None
    step_index: int
    step_id: str
    lineage_refs: tuple[str, ...]
    policy_ref: str
    started_at: str
    summary: str
    issue: dict[str, Any] = field(default_factory=dict)
    """The claimed issue whole (`issue show`'s item): the agent reads its work here."""
    verify_cmd: str = DEFAULT_VERIFY_CMD
    """`--verify-cmd`, else the issue's own verification commands, else the default."""


@dataclass(slots=True)
class Attempt:
    number: int
    runs: list[StepRun]
    failure_classes: tuple[str, ...]
    join_result: str
    join_failure_classes: tuple[str, ...]
    mutation_ready: bool
    mutation_classes: tuple[str, ...]
    join_witness_ref: str | None
    decision: RetryDecision | None = None
    backoff_s: float = 0.0

    @property
    def succeeded(self) -> bool:
        return self.mutation_ready and not self.failure_classes

    def to_document(self) -> dict[str, Any]:
        return {
            "attempt": self.number,
            "commands": [run.to_document() for run in self.runs],
            "failureClasses": list(self.failure_classes),
            "join": {
                "result": self.join_result,
                "failureClasses": list(self.join_failure_classes),
                "witnessRef": self.join_witness_ref,
            },
            "mutationReady": self.mutation_ready,
            "mutationFailureClasses": list(self.mutation_classes),
            "decision": self.decision.to_document() if self.decision else None,
            "backoffSeconds": self.backoff_s,
        }


@dataclass(slots=True)
class StepReport:
    worker_id: str
    claim: Claim
    outcome: StepOutcome
    result_class: str
    handoff: Handoff
    failure_classes: tuple[str, ...]
    attempts: list[Attempt]
    escalation: EscalationResult | None
    next_step: str
    step_witness_ref: str | None
    """The step witness file: written for failed steps only (a success is its join witness)."""
    trajectory_row: dict[str, Any] = field(default_factory=dict)
    transport_refs: tuple[str, ...] = ()
    """`transport://dispatch/...` refs of a lease recovery through the transport."""
    delivered: Delivered | None = None
    """A remote worker's delivery of the step's commit (None: no clone, or not reached)."""
    landing: Landing | None = None
    """The merge queue's verdict on the delivered branch (None: no queue, or not reached)."""

    @property
    def delivery_refs(self) -> tuple[str, ...]:
        landed = () if self.landing is None else self.landing.refs()
        return landed + (() if self.delivered is None else self.delivered.refs())

    @property
    def queue_refs(self) -> tuple[str, ...]:
        return () if self.landing is None else self.landing.state_refs()

    @property
    def exit_code(self) -> int:
        return 0 if self.outcome == "completed" else 1

    def to_document(self) -> dict[str, Any]:
        return {
            "stepId": self.claim.step_id,
            "issueId": self.claim.issue_id,
            "workerId": self.worker_id,
            "stepIndex": self.claim.step_index,
            "outcome": self.outcome,
            "resultClass": self.result_class,
            "leaseState": self.handoff.lease_state,
            "leaseAction": self.handoff.lease_action,
            "leaseRef": self.handoff.lease_ref,
            "failureClasses": list(self.failure_classes),
            "mutationReady": bool(self.attempts) and self.attempts[-1].mutation_ready,
            "attempts": len(self.attempts),
            "escalation": self.escalation.to_document() if self.escalation else None,
            "nextStep": self.next_step,
            "stepWitnessRef": self.step_witness_ref,
            "lineageRefs": list(self.claim.lineage_refs),
            "delivery": None if self.delivered is None else self.delivered.to_document(),
            "mergeQueue": None if self.landing is None else self.landing.to_document(),
        }


def claimed_issue(cfg: WorkerConfig, issue_id: str, now: datetime) -> dict[str, Any]:
    """The claimed issue as `issue show` prints it ({} if it vanished since the claim)."""
    return cfg.authority.memory.issue(issue_id, now)


def verify_command(commands: StepCommands, issue: dict[str, Any]) -> str:
    """`--verify-cmd`; else the issue's own `Verification:` commands, all of them (divergence
    D16-1: the reference always ran `mise run ci-check`); else that default."""
    from premath.issues.check import verification_commands

    if commands.verify_cmd is not None:
        return commands.verify_cmd
    own = verification_commands(issue.get("description", ""))
    return " && ".join(own) if own else DEFAULT_VERIFY_CMD


def _claim(
    cfg: WorkerConfig, issue_id: str, lease_id: str | None, index: int, now: datetime
) -> Claim:
    mutation = cfg.authority.mutation
    worktree = cfg.where.paths.relative(cfg.where.worktree)
    refs = lineage_refs(
        issue_id,
        cfg.worker_id,
        repo_root=".",
        issues_path=cfg.authority.memory.recorded_issues(cfg.where.paths)[1],
        worktree=worktree,
        mutation_mode=mutation.mode,
        active_epoch=mutation.active_epoch,
        support_until=mutation.support_until,
    )
    audit = policy_ref(
        mode=mutation.mode,
        reason=mutation.reason,
        active_epoch=mutation.active_epoch,
        support_until=mutation.support_until,
        worker_id=cfg.worker_id,
        issue_id=issue_id,
        step_index=index,
    )
    summary = f"worker={cfg.worker_id} claimed={issue_id} worktree={worktree} {mutation.describe()}"
    issue = claimed_issue(cfg, issue_id, now)
    return Claim(
        issue_id=issue_id,
        lease_id=lease_id,
        step_index=index,
        step_id=step_id(cfg.worker_id, issue_id, index),
        lineage_refs=tuple(refs),
        policy_ref=audit,
        started_at=format_seconds_z(now),
        summary=summary,
        issue=issue,
        verify_cmd=verify_command(cfg.commands, issue),
    )


def claim_next_issue(cfg: WorkerConfig, step_index: int, clock: Clock) -> Claim | None:
    """Claim the next ready issue for this worker, or None when nothing is ready.

    The step's start is read after the claim returns: while this worker waited for the issues
    lock, another may have closed a blocker, and a start stamped before that close would put the
    dependent's step before its blocker's end.
    """
    presence_of(cfg.authority.presence).phase("claiming")
    claimed = cfg.authority.memory.claim_next(
        cfg.worker_id, ttl_s=cfg.limits.lease_ttl_s, now=clock.now()
    )
    if claimed is None:
        return None
    return _claim(cfg, claimed.issue_id, claimed.lease_id, step_index, clock.now())


def claim_for_agent(cfg: WorkerConfig, step_index: int, clock: Clock) -> dict[str, Any]:
    """`harness claim`: claim the next ready issue and begin its step; the agent works next."""
    require_store(cfg.authority.memory, cfg.where.paths)
    claim = claim_next_issue(cfg, step_index, clock)
    document: dict[str, Any] = {"action": "harness.claim", "claimed": claim is not None}
    if claim is None:
        return document
    begin_step(cfg, claim, clock.now())
    document.update(
        issueId=claim.issue_id,
        leaseId=claim.lease_id,
        stepId=claim.step_id,
        lineageRefs=list(claim.lineage_refs),
        policyRef=claim.policy_ref,
        sessionPath=cfg.where.paths.session,
        issue=claim.issue,
        verifyCmd=claim.verify_cmd,
        nextStep=f"do the work on {claim.issue_id}, then: premath harness complete "
        f"--worker-id {cfg.worker_id} --issue-id {claim.issue_id}",
    )
    return document


def held_claim(cfg: WorkerConfig, issue_id: str, step_index: int, now: datetime) -> Claim:
    """The claim this worker already holds on `issue_id` (for `harness complete`)."""
    lease_id = cfg.authority.memory.holder_lease(issue_id, cfg.worker_id, now)
    return _claim(cfg, issue_id, lease_id, step_index, now)


def begin_step(cfg: WorkerConfig, claim: Claim, now: datetime) -> None:
    """Session `active` and feature `in_progress` for the claimed issue."""
    paths = cfg.where.paths
    if os.path.exists(paths.ledger):
        ledger = load_ledger(paths.ledger, read_prefix(paths.ledger))
        for row in ledger["features"]:
            if row["status"] != "in_progress" or row["featureId"] == claim.issue_id:
                continue
            if not (row.get("summary") or "").startswith(f"worker={cfg.worker_id} "):
                raise InputInvalid(
                    f"feature ledger {paths.ledger} already has feature {row['featureId']} "
                    "in progress (not this worker's) and allows only one: give each concurrent "
                    "worker its own --feature-ledger-path and --session-path (the coordinator "
                    "does), or finish that feature first"
                )
            # Left by an interrupted step of this worker: the ledger allows one in_progress.
            write_feature(
                paths.ledger,
                feature_id=row["featureId"],
                status="blocked",
                summary=f"interrupted step superseded by worker={cfg.worker_id} "
                f"claimed={claim.issue_id}",
                now=now,
                lock_timeout_s=cfg.limits.lock_timeout_s,
            )
    issues_path, recorded_issues_path = cfg.authority.memory.recorded_issues(paths)
    write_session(
        paths.session,
        now=now,
        lock_timeout_s=cfg.limits.lock_timeout_s,
        state="active",
        issue_id=claim.issue_id,
        summary=claim.summary,
        next_step=NEXT_STEP_ACTIVE,
        lineage_refs=claim.lineage_refs,
        issues_path=issues_path,
        recorded_issues_path=recorded_issues_path,
    )
    write_feature(
        paths.ledger,
        feature_id=claim.issue_id,
        status="in_progress",
        issue_id=claim.issue_id,
        summary=claim.summary,
        session_ref=paths.relative(paths.session),
        now=now,
        lock_timeout_s=cfg.limits.lock_timeout_s,
    )


def step_dir(paths: LoopPaths, claim: Claim) -> str:
    """`<steps dir>/<step id>`, the id made a safe single folder name (issue ids are free text)."""
    return os.path.join(paths.steps_dir, step_folder_name(claim.step_id))


def _run_commands(
    cfg: WorkerConfig, claim: Claim, attempt: int, clock: Clock, max_attempts: int | None = None
) -> list[StepRun]:
    """Work (a command or a program, harness/work.py) then verify, the lease kept alive
    meanwhile (a third of the TTL between renewals); each phase reported to the authority
    (`max_attempts`: the retry rule's, once a failure chose one)."""
    presence = presence_of(cfg.authority.presence)
    log_dir = os.path.join(step_dir(cfg.where.paths, claim), f"attempt-{attempt}")
    env = _command_env(cfg, claim, attempt)
    work = cfg.commands.work
    with lease_heartbeat(lambda: _renew(cfg, claim, clock.now()), cfg.limits.renew_every_s):
        runs: list[StepRun] = []
        if work is not None:
            presence.phase("working", claim.issue_id, attempt, max_attempts)
            runs.append(work.run(_work_context(cfg, claim, attempt, log_dir, env, clock)))
        presence.phase("verifying", claim.issue_id, attempt, max_attempts)
        runs.append(
            run_command(
                "verify",
                claim.verify_cmd,
                cwd=cfg.where.worktree,
                env=env,
                timeout_s=cfg.limits.command_timeout_s,
                output_cap=cfg.limits.output_cap,
                log_dir=log_dir,
            )
        )
        return runs


def _command_env(cfg: WorkerConfig, claim: Claim, attempt: int) -> dict[str, str]:
    """The step's commands' environment: the allowlist, `--pass-env`, and the step's ids."""
    context = {
        "PREMATH_WORKER_ID": cfg.worker_id,
        "PREMATH_ISSUE_ID": claim.issue_id,
        "PREMATH_ACTIVE_ISSUE_ID": claim.issue_id,
        "PREMATH_LEASE_ID": claim.lease_id or "",
        "PREMATH_STEP_ID": claim.step_id,
        "PREMATH_ATTEMPT": str(attempt),
        "PREMATH_ISSUES_PATH": cfg.where.paths.issues,
        "PREMATH_REPO_ROOT": cfg.where.paths.repo_root,
    }
    return command_env(context, cfg.commands.pass_env)


def _work_context(
    cfg: WorkerConfig,
    claim: Claim,
    attempt: int,
    log_dir: str,
    env: dict[str, str],
    clock: Clock,
) -> WorkContext:
    paths = cfg.where.paths
    return WorkContext(
        worker_id=cfg.worker_id,
        issue_id=claim.issue_id,
        lease_id=claim.lease_id,
        step_id=claim.step_id,
        attempt=attempt,
        lineage_refs=claim.lineage_refs,
        worktree=cfg.where.worktree,
        repo_root=paths.repo_root,
        issues_path=paths.issues,
        session_path=paths.session,
        ledger_path=paths.ledger,
        trajectory_path=paths.trajectory,
        log_dir=log_dir,
        env=env,
        timeout_s=cfg.limits.command_timeout_s,
        output_cap=cfg.limits.output_cap,
        lock_timeout_s=cfg.limits.lock_timeout_s,
        now=clock.now,
    )


def _witness_signature(witness: str | None) -> tuple[int, int, int] | None:
    """Identity of the verify witness file before an attempt (None when absent or unset)."""
    if witness is None:
        return None
    try:
        info = os.stat(witness)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def _verify_witness_classes(
    witness: str | None, before: tuple[int, int, int] | None
) -> tuple[str, ...]:
    """The witness's classes; one left over from an earlier attempt counts as missing."""
    if witness is None:
        return ()
    if before is not None and _witness_signature(witness) == before:
        return ("pipeline_missing_witness",)
    return failure_classes_from_witness_path(witness)


def _gate(
    cfg: WorkerConfig,
    claim: Claim,
    number: int,
    runs: list[StepRun],
    witness_before: tuple[int, int, int] | None = None,
) -> Attempt:
    """Evaluate the attempt's join check, persist its witness, decide MutationReady."""
    paths, policy = cfg.where.paths, cfg.authority.policy
    typed = []
    classes: list[str] = []
    for run in runs:
        witness_classes = (
            _verify_witness_classes(cfg.verify_witness_path, witness_before)
            if run.name == "verify"
            else ()
        )
        run_classes = run_failure_classes(run, policy, witness_classes)
        rule = policy.rule_for(run_classes[0]) if run_classes else None
        typed.append((run, run_classes, rule is not None and rule.max_attempts > 1))
        classes.extend(c for c in run_classes if c not in classes)
    join_input = join_check_input(
        step_id=claim.step_id,
        worker_id=cfg.worker_id,
        runs=typed,
        mutation_policy_digest=claim.policy_ref,
        governance_policy_digest=policy.policy_digest,
        session_refs=[paths.relative(paths.session)],
        trajectory_refs=[paths.relative(paths.trajectory)],
    )
    result = evaluate_join_check(join_input)
    witness_path = write_join_witness(join_witness_path(result, paths.join_witness_dir), result)
    ready, ready_classes = mutation_ready(result, claim.policy_ref, witness_ref=witness_path)
    witness_path = paths.relative(witness_path)
    return Attempt(
        number=number,
        runs=runs,
        failure_classes=tuple(classes),
        join_result=result["result"],
        join_failure_classes=tuple(result["failureClasses"]),
        mutation_ready=ready,
        mutation_classes=ready_classes,
        join_witness_ref=witness_path,
    )


def _renew(
    cfg: WorkerConfig, claim: Claim, now: datetime, queue_state: dict[str, str] | None = None
) -> bool:
    """Extend this claim's lease (recording the merge queue's transient state on the issue in
    the same write); False when it is no longer ours (or cannot be renewed now)."""
    if claim.lease_id is None:
        return False
    try:
        cfg.authority.memory.renew(
            claim.issue_id,
            cfg.worker_id,
            claim.lease_id,
            ttl_s=cfg.limits.lease_ttl_s,
            now=now,
            patience_s=cfg.limits.renew_every_s,
            queue_state=queue_state,
        )
    except Interrupted:
        raise
    except PremathError:
        return False
    return True


def unrecognised_verification(commands: StepCommands, claim: Claim) -> str | None:
    """The claimed issue wrote a verification line the loop does not recognise, so it runs
    without it (its other commands, or the default): which line, the words that are
    recognised, how to wrap it."""
    from premath.issues.check import unrecognised_advice, unrecognised_verification_lines

    if commands.verify_cmd is not None:
        return None
    lines = unrecognised_verification_lines(claim.issue.get("description", ""))
    if not lines:
        return None
    runs = "verifies it with" if claim.verify_cmd == DEFAULT_VERIFY_CMD else "runs only"
    return (
        f"{claim.issue_id}: {unrecognised_advice(lines[0])}, or pass --verify-cmd; until then "
        f"the loop {runs} `{claim.verify_cmd}`"
    )


def step_advice(commands: StepCommands, worktree: str, claim: Claim) -> list[str]:
    """What the user must fix before this step can pass, said before its first attempt."""
    advice = missing_programs(commands, worktree, claim)
    unrecognised = unrecognised_verification(commands, claim)
    if unrecognised is not None and not any(unrecognised in line for line in advice):
        advice.append(unrecognised)
    return advice


def missing_programs(commands: StepCommands, worktree: str, claim: Claim) -> list[str]:
    """What the user must do about step commands whose program is not installed (D25-5): said
    before the first attempt, and the failed step's next step. `mise` missing for an issue
    without a Verification command is the usual case."""
    path = command_env({}, commands.pass_env).get("PATH", "")
    advice = []
    for name, command in (("work", commands.work_cmd), ("verify", claim.verify_cmd)):
        program = None if command is None else missing_program(command, path, worktree)
        if program is None:
            continue
        if name == "work":
            fix = "fix --work-cmd"
        elif commands.verify_cmd is not None:
            fix = "fix --verify-cmd"
        elif command == DEFAULT_VERIFY_CMD:
            fix = unrecognised_verification(commands, claim) or (
                "add a Verification command to the issue or pass --verify-cmd"
            )
        else:
            fix = f"fix the Verification command of {claim.issue_id} or pass --verify-cmd"
        advice.append(f"{program} is not installed: {fix}")
    return advice


def run_attempts(
    cfg: WorkerConfig,
    claim: Claim,
    clock: Clock,
    *,
    sleep: Callable[[float], None] = time.sleep,
    report: Report = lambda _line: None,
) -> list[Attempt]:
    """Attempts until success, a refused gate, a lost lease, or the policy says escalate."""
    for advice in step_advice(cfg.commands, cfg.where.worktree, claim):
        report(f"[worker:{cfg.worker_id}] {advice}")
    attempts: list[Attempt] = []
    while True:
        number = len(attempts) + 1
        # With `complete` the agent wrote its witness before: only the loop's own runs must.
        before = (
            _witness_signature(cfg.verify_witness_path) if cfg.commands.work is not None else None
        )
        decided = attempts[-1].decision if attempts else None
        runs = _run_commands(
            cfg, claim, number, clock, None if decided is None else decided.max_attempts
        )
        attempt = _gate(cfg, claim, number, runs, before)
        attempts.append(attempt)
        if attempt.succeeded or not attempt.mutation_ready:
            return attempts
        attempt.decision = resolve_retry_decision(
            cfg.authority.policy, attempt.failure_classes, number
        )
        if not attempt.decision.retry:
            return attempts
        attempt.backoff_s = backoff_delay_s(
            attempt.decision.backoff_class, number, cfg.limits.backoff_scale
        )
        report(
            f"[worker:{cfg.worker_id}] retry {number}/{attempt.decision.max_attempts} for "
            f"{claim.issue_id} (rule={attempt.decision.rule_id}, "
            f"matched={attempt.decision.matched_failure_class}, "
            f"backoff={attempt.decision.backoff_class} {attempt.backoff_s:g}s)"
        )
        sleep(attempt.backoff_s)
        if not _renew(cfg, claim, clock.now()):
            return attempts


def _step_classes(attempt: Attempt | None) -> tuple[str, ...]:
    if attempt is None:
        return ()
    merged = [*attempt.failure_classes]
    merged.extend(c for c in attempt.mutation_classes if c not in merged)
    return tuple(merged)


def _failure_next_step(
    handoff: Handoff, escalation: EscalationResult | None, attempt: Attempt | None
) -> str:
    if attempt is not None and not attempt.mutation_ready:
        classes = ", ".join(attempt.mutation_classes)
        return (
            f"mutation refused by the join gate ({classes}); issue memory unchanged, the lease "
            "expires at its TTL and the issue is then reclaimable: inspect the join witness"
        )
    if escalation is None:
        return handoff.next_step
    if escalation.outcome == "skipped":
        return f"escalation skipped ({escalation.details}); {handoff.next_step}"
    if escalation.action == "stop":
        return "lease released after terminal failure; claim next ready issue"
    if escalation.created_issue_id:
        return (
            f"issue blocked by escalation; resolve discovered issue {escalation.created_issue_id}, "
            "then reopen"
        )
    return "issue blocked by escalation; read its notes, fix the cause, then reopen"


def _release(cfg: WorkerConfig, claim: Claim, now: datetime) -> None:
    cfg.authority.memory.release(claim.issue_id, cfg.worker_id, claim.lease_id, now=now)


def _release_after_stop(cfg: WorkerConfig, claim: Claim, now: datetime) -> EscalationResult:
    try:
        _release(cfg, claim, now)
    except (LeaseRefused, NotFound) as exc:
        return EscalationResult("stop", "skipped", claim.issue_id, details=exc.message)
    return EscalationResult(
        "stop", "applied", claim.issue_id, details="lease released; issue open again"
    )


def _escalate(
    cfg: WorkerConfig, claim: Claim, attempt: Attempt, witness: str, now: datetime
) -> EscalationResult | None:
    decision = attempt.decision
    if decision is None or decision.retry or not attempt.mutation_ready:
        # No decision, or retries cut short by a lost lease: nothing to escalate, no mutation.
        return None
    if decision.escalation_action == "stop":
        return _release_after_stop(cfg, claim, now)
    return escalate_held(
        cfg.authority.memory,
        issue_id=claim.issue_id,
        holder=(cfg.worker_id, claim.lease_id),
        scope="worker-loop",
        policy=cfg.authority.policy,
        decision=decision,
        witness_ref=witness,
        now=now,
        verify_command=claim.verify_cmd,
    )


def finish_step(
    cfg: WorkerConfig,
    claim: Claim,
    attempts: Sequence[Attempt],
    clock: Clock,
    report: Report = lambda _line: None,
) -> StepReport:
    """Close or escalate, then write the trajectory row, the feature row and the session."""
    last = attempts[-1] if attempts else None
    presence_of(cfg.authority.presence).phase("closing", claim.issue_id, len(attempts) or None)
    if last is not None and last.succeeded:
        delivered = _deliver(cfg, claim, last, clock)
        if delivered is not None and not delivered.ok:
            return _finish_undelivered(cfg, claim, attempts, clock, delivered)
        landing = _land(cfg, claim, len(attempts), delivered, clock, report)
        if delivered is not None and landing is not None and not landing.ok:
            return _finish_unlanded(cfg, claim, attempts, clock, delivered, landing)
        now = clock.now()
        closed = _close_held(cfg, claim, now, clock, delivered, landing)
        if isinstance(closed, Handoff):
            return _finish(
                cfg,
                claim,
                attempts,
                clock,
                "completed",
                closed,
                _step_classes(last),
                None,
                delivered=delivered,
                landing=landing,
            )
        return _finish_failed(cfg, claim, attempts, clock, now, (closed,), delivered, landing)
    return _finish_failed(cfg, claim, attempts, clock, clock.now(), _step_classes(last))


def _deliver(cfg: WorkerConfig, claim: Claim, last: Attempt, clock: Clock) -> Delivered | None:
    """A remote worker's commit on `premath/<issue>` (None without a clone); a runtime error
    (an interrupt mid-push) gives the lease back before it propagates."""
    if cfg.authority.delivery is None:
        return None
    title = str(claim.issue.get("title") or "")
    with _lease_given_back_on_error(cfg, claim, clock):
        return cfg.authority.delivery.deliver(
            claim.issue_id, title, claim.step_id, last.join_witness_ref
        )


def _land(
    cfg: WorkerConfig,
    claim: Claim,
    attempt: int,
    delivered: Delivered | None,
    clock: Clock,
    report: Report,
) -> Landing | None:
    """The delivered branch through the merge queue, the lease kept alive meanwhile (None
    without a queue); a runtime error gives the lease back before it propagates."""
    queue = None if cfg.authority.delivery is None else cfg.authority.delivery.queue
    if queue is None or delivered is None or delivered.commit is None:
        return None
    log_dir = os.path.join(step_dir(cfg.where.paths, claim), "merge-queue")
    env = _command_env(cfg, claim, attempt)

    def verify(cwd: str) -> CommandRun:
        return run_command(
            "integration-verify",
            claim.verify_cmd,
            cwd=cwd,
            env=env,
            timeout_s=cfg.limits.command_timeout_s,
            output_cap=cfg.limits.output_cap,
            log_dir=log_dir,
        )

    def say(line: str) -> None:
        report(f"[worker:{cfg.worker_id}] merge-queue {claim.issue_id}: {line}")

    def mark(state: str, fields: dict[str, str]) -> None:
        """One renewal per state entered: the authority shows it until the finish's verdict."""
        record = {"state": state, **fields, "step": claim.step_id}
        if not _renew(cfg, claim, clock.now(), record):
            say(f"{state} not recorded on the issue (its lease could not be renewed)")

    with (
        _lease_given_back_on_error(cfg, claim, clock),
        lease_heartbeat(lambda: _renew(cfg, claim, clock.now()), cfg.limits.renew_every_s),
    ):
        return queue.submit(delivered.branch, delivered.commit, verify, say, mark)


def _close_held(
    cfg: WorkerConfig,
    claim: Claim,
    now: datetime,
    clock: Clock,
    delivered: Delivered | None,
    landing: Landing | None = None,
) -> Handoff | str:
    """Close the issue while this worker holds it (a delivered commit, and its integration
    commit, as its witness refs and notes): the `completed` handoff, or the failure class when
    the close did not happen (`lease_lost`) or left the lease in place."""
    notes = [] if delivered is None else [delivered.note(cfg.worker_id, claim.step_id)]
    if landing is not None:
        notes.append(landing.note(cfg.worker_id, claim.step_id))
    finished = cfg.authority.memory.finish(
        claim.issue_id,
        cfg.worker_id,
        claim.lease_id,
        status="closed",
        now=now,
        note="\n\n".join(notes) or None,
        witness_refs=(() if landing is None else landing.refs())
        + (() if delivered is None else delivered.refs()),
    )
    if not finished.applied:
        return "lease_lost"
    snapshot = cfg.authority.memory.snapshot(claim.issue_id, clock.now())
    handoff = success_handoff(snapshot, cfg.worker_id, claim.lease_id)
    return "failed_lease_invariant" if handoff is None else handoff


def _finish_undelivered(
    cfg: WorkerConfig, claim: Claim, attempts: Sequence[Attempt], clock: Clock, delivered: Delivered
) -> StepReport:
    """The work passed but its commit could not be delivered: the issue is not closed. A
    refused push gives it back (open, for another try); a branch that exists with other
    content blocks it until someone looks (retrying would only meet the branch again)."""
    assert delivered.failure is not None
    status: FinishStatus = "blocked" if delivered.failure == "delivery_branch_exists" else "open"
    return _finish_not_closed(cfg, claim, attempts, clock, status, (delivered.failure,), delivered)


def _finish_unlanded(
    cfg: WorkerConfig,
    claim: Claim,
    attempts: Sequence[Attempt],
    clock: Clock,
    delivered: Delivered,
    landing: Landing,
) -> StepReport:
    """The merge queue refused the branch (a conflict, a verification red on the combined
    result, a push refused): the issue is not closed and its branch is kept. The retry policy's
    rule for the class decides: retry or `stop` gives the issue back (its next claim starts
    from the new integration head), another escalation blocks it with the note."""
    assert landing.failure is not None
    classes = (landing.failure,)
    decision = resolve_retry_decision(cfg.authority.policy, classes, 1)
    status: FinishStatus = (
        "open" if decision.retry or decision.escalation_action == "stop" else "blocked"
    )
    return _finish_not_closed(cfg, claim, attempts, clock, status, classes, delivered, landing)


def _finish_not_closed(
    cfg: WorkerConfig,
    claim: Claim,
    attempts: Sequence[Attempt],
    clock: Clock,
    status: FinishStatus,
    classes: tuple[str, ...],
    delivered: Delivered,
    landing: Landing | None = None,
) -> StepReport:
    """Give the issue back (`open`) or block it, noting why its work did not land (the
    delivery, and the merge queue's verdict when it got that far); a finish this worker can no
    longer make ends as any failed step does."""
    notes = [delivered.note(cfg.worker_id, claim.step_id)]
    if landing is not None:
        notes.append(landing.note(cfg.worker_id, claim.step_id))
    finished = cfg.authority.memory.finish(
        claim.issue_id,
        cfg.worker_id,
        claim.lease_id,
        status=status,
        now=clock.now(),
        note="\n\n".join(notes),
    )
    if not finished.applied:
        return _finish_failed(cfg, claim, attempts, clock, clock.now(), classes, delivered, landing)
    snapshot = cfg.authority.memory.snapshot(claim.issue_id, clock.now())
    handoff = (
        undelivered_handoff(snapshot, cfg.worker_id, claim.lease_id, status, delivered)
        if landing is None
        else unlanded_handoff(snapshot, cfg.worker_id, claim.lease_id, status, landing)
    )
    return _finish(
        cfg,
        claim,
        attempts,
        clock,
        "failed",
        handoff,
        classes,
        None,
        delivered=delivered,
        landing=landing,
    )


def _finish_failed(
    cfg: WorkerConfig,
    claim: Claim,
    attempts: Sequence[Attempt],
    clock: Clock,
    now: datetime,
    classes: tuple[str, ...],
    delivered: Delivered | None = None,
    landing: Landing | None = None,
) -> StepReport:
    """Hand off by the lease state found now; escalate while this worker still holds it."""
    last, memory = (attempts[-1] if attempts else None), cfg.authority.memory
    snapshot = memory.snapshot(claim.issue_id, clock.now())
    if snapshot.lease_state == "active" and snapshot.lease_owner != cfg.worker_id:
        # Self-consistent for its new holder, contended from this worker's side: lost.
        snapshot = replace(snapshot, lease_state="contended")
    handoff = classify_failed_handoff(snapshot, cfg.worker_id, claim.lease_id)
    escalation = None
    if (
        last is not None
        and snapshot.lease_state in ("active", "stale")
        and _still_held(cfg, claim, snapshot)
    ):
        escalation = _escalate(cfg, claim, last, _step_witness_path(cfg.where.paths, claim), now)
        if escalation is not None and escalation.outcome == "applied":
            handoff = escalated_handoff(snapshot, cfg.worker_id, claim.lease_id, escalation.action)
    transport_refs: tuple[str, ...] = ()
    if cfg.authority.host_action_transport == "mcp" and not _applied(escalation):
        recovery = recover_through_transport(
            handoff,
            snapshot,
            worker_id=cfg.worker_id,
            claimed_lease_id=claim.lease_id,
            lease_ttl_s=cfg.limits.lease_ttl_s,
            dispatch=lambda action, payload: memory.dispatch(action, payload, now=clock.now()),
        )
        if recovery is not None:
            handoff, transport_refs = recovery.handoff, recovery.refs
    return _finish(
        cfg,
        claim,
        attempts,
        clock,
        "failed",
        handoff,
        classes,
        escalation,
        transport_refs,
        delivered=delivered,
        landing=landing,
    )


def _step_witness_path(paths: LoopPaths, claim: Claim) -> str:
    """The step witness as artifacts name it: relative to the repository root (D16-7)."""
    return paths.relative(os.path.join(step_dir(paths, claim), "step.json"))


def _finish(
    cfg: WorkerConfig,
    claim: Claim,
    attempts: Sequence[Attempt],
    clock: Clock,
    outcome: StepOutcome,
    handoff: Handoff,
    classes: tuple[str, ...],
    escalation: EscalationResult | None,
    transport_refs: tuple[str, ...] = (),
    *,
    delivered: Delivered | None = None,
    landing: Landing | None = None,
) -> StepReport:
    """The step's report; a failed step also writes its witness; then the record."""
    last = attempts[-1] if attempts else None
    failed = outcome == "failed"
    report = StepReport(
        worker_id=cfg.worker_id,
        claim=claim,
        outcome=outcome,
        result_class=handoff.result_class,
        handoff=handoff,
        failure_classes=classes,
        attempts=list(attempts),
        escalation=escalation,
        next_step=_failure_next_step(handoff, escalation, last) if failed else handoff.next_step,
        step_witness_ref=_step_witness_path(cfg.where.paths, claim) if failed else None,
        transport_refs=transport_refs,
        delivered=delivered,
        landing=landing,
    )
    if {COMMAND_NOT_FOUND, COMMAND_NOT_EXECUTABLE} & set(classes):
        report.next_step = "; ".join(step_advice(cfg.commands, cfg.where.worktree, claim)) or (
            "a command's program is not installed or not executable: see the step witness"
        )
    elif failed and (unrecognised := unrecognised_verification(cfg.commands, claim)) is not None:
        report.next_step = f"{unrecognised}; {report.next_step}"
    if report.step_witness_ref is not None:
        _write_step_witness(
            report, os.path.join(cfg.where.paths.repo_root, report.step_witness_ref)
        )
    _record(cfg, report, clock.now())
    return report


def _applied(escalation: EscalationResult | None) -> bool:
    return escalation is not None and escalation.outcome == "applied"


def _still_held(cfg: WorkerConfig, claim: Claim, snapshot: LeaseSnapshot) -> bool:
    """The snapshot shows this worker's lease, and not one taken again since the claim."""
    return snapshot.lease_owner == cfg.worker_id and (
        claim.lease_id is None or snapshot.lease_id == claim.lease_id
    )


def _write_step_witness(report: StepReport, path: str) -> None:
    document = {
        "schema": 1,
        "witnessKind": STEP_WITNESS_KIND,
        **report.to_document(),
        "policyRef": report.claim.policy_ref,
        "attempts": [attempt.to_document() for attempt in report.attempts],
    }
    write_atomic(path, stdout_bytes(document))


def host_effect_refs(attempts: Sequence[Attempt]) -> list[str]:
    """Every `host-effect://` ref of the step's work programs, all attempts: the step's row and
    session join each host call the step made (specs/harness-loop.md "Work program")."""
    return [
        ref
        for attempt in attempts
        for run in attempt.runs
        if isinstance(run, ProgramRun)
        for ref in run.host_effect_refs()
    ]


def _record(cfg: WorkerConfig, report: StepReport, now: datetime) -> None:
    claim, handoff, paths = report.claim, report.handoff, cfg.where.paths
    completed = report.outcome == "completed"
    outcome_ref = witness_ref(
        cfg.commands.witness_prefix,
        cfg.worker_id,
        claim.issue_id,
        "completed" if completed else "failed",
    )
    last = report.attempts[-1] if report.attempts else None
    evidence = [
        ref for ref in (last.join_witness_ref if last else None, report.step_witness_ref) if ref
    ]
    failure_refs = [f"failure://{klass}" for klass in report.failure_classes]
    escalation_refs = [report.escalation.ref()] if report.escalation else []
    step_refs = (
        claim.policy_ref,
        handoff.lease_ref,
        *report.transport_refs,
        *report.delivery_refs,
        *report.queue_refs,
        *evidence,
        *failure_refs,
        *escalation_refs,
        *host_effect_refs(report.attempts),
    )
    report.trajectory_row = record_step(
        cfg,
        lease_id=claim.lease_id,
        step_folder=paths.relative(step_dir(paths, claim)),
        step_id=claim.step_id,
        issue_id=claim.issue_id,
        action=STEP_ACTION,
        result_class=report.result_class,
        witness_refs=[outcome_ref, *step_refs],
        lineage_refs=claim.lineage_refs,
        started_at=claim.started_at,
        finished_at=format_seconds_z(now),
        now=now,
    )
    state_tail = f"lease_state={handoff.lease_state}; action={handoff.lease_action}"
    if completed:
        feature_status = "completed"
        feature_summary = (
            f"worker={cfg.worker_id} verified and closed issue={claim.issue_id}; {state_tail}"
        )
        session_summary = f"worker={cfg.worker_id} closed issue={claim.issue_id}; {state_tail}"
    else:
        classes = ",".join(report.failure_classes) or "none"
        feature_status = "blocked"
        session_summary = (
            f"worker={cfg.worker_id} failed issue={claim.issue_id}; {state_tail}; "
            f"failureClasses={classes}"
        )
        feature_summary = f"{session_summary}; {handoff.summary}"
    write_feature(
        paths.ledger,
        feature_id=claim.issue_id,
        status=feature_status,
        issue_id=claim.issue_id,
        summary=feature_summary,
        session_ref=paths.relative(paths.session),
        verification_refs=(
            outcome_ref,
            handoff.lease_ref,
            *report.transport_refs,
            *report.delivery_refs,
        ),
        now=now,
        lock_timeout_s=cfg.limits.lock_timeout_s,
    )
    issues_path, recorded_issues_path = cfg.authority.memory.recorded_issues(paths)
    write_session(
        paths.session,
        now=now,
        lock_timeout_s=cfg.limits.lock_timeout_s,
        state="stopped",
        issue_id=claim.issue_id,
        summary=session_summary,
        next_step=report.next_step,
        witness_refs=step_refs,
        lineage_refs=claim.lineage_refs,
        issues_path=issues_path,
        recorded_issues_path=recorded_issues_path,
    )


def run_step(
    cfg: WorkerConfig,
    step_index: int,
    clock: Clock,
    *,
    sleep: Callable[[float], None] = time.sleep,
    report: Report = lambda _line: None,
) -> StepReport | None:
    """Claim, work, verify, gate and record one issue; None when nothing is ready."""
    claim = claim_next_issue(cfg, step_index, clock)
    if claim is None:
        return None
    report(f"[worker:{cfg.worker_id}] claimed {claim.issue_id} (lease {claim.lease_id})")
    return execute_claim(cfg, claim, clock, sleep=sleep, report=report)


def execute_claim(
    cfg: WorkerConfig,
    claim: Claim,
    clock: Clock,
    *,
    sleep: Callable[[float], None] = time.sleep,
    report: Report = lambda _line: None,
) -> StepReport:
    """Everything after the claim; a runtime error gives the lease back before it propagates."""
    with _lease_given_back_on_error(cfg, claim, clock):
        if cfg.authority.delivery is not None:
            cfg.authority.delivery.reset()
        begin_step(cfg, claim, clock.now())
        attempts = run_attempts(cfg, claim, clock, sleep=sleep, report=report)
    return finish_step(cfg, claim, attempts, clock, report)


@contextmanager
def _lease_given_back_on_error(cfg: WorkerConfig, claim: Claim, clock: Clock) -> Iterator[None]:
    """A runtime error in the block (a corrupt session or ledger, an interrupt mid-push)
    releases the lease we cannot work under before it propagates: never leave it held. A release
    that fails in turn is dropped, so the first error is the one reported."""
    try:
        yield
    except PremathError:
        with suppress(PremathError):
            _release(cfg, claim, clock.now())
        raise


def complete_claim(
    cfg: WorkerConfig,
    issue_id: str | None,
    step_index: int,
    clock: Clock,
    *,
    sleep: Callable[[float], None] = time.sleep,
    report: Report = lambda _line: None,
) -> StepReport:
    """Verify, gate and record the issue this worker claimed and worked on itself."""
    session = cfg.where.paths.session
    if issue_id is None and os.path.exists(session):
        issue_id = load_session(session).get("issueId")
    if not issue_id:
        raise NotFound(f"no issue to complete: pass --issue-id or claim first (session {session})")
    claim = held_claim(cfg, issue_id, step_index, clock.now())
    attempts = run_attempts(cfg, claim, clock, sleep=sleep, report=report)
    return finish_step(cfg, claim, attempts, clock, report)
