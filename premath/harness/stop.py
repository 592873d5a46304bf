"""Stop: persist the compact handoff so the next agent can resume from files alone.

By the lease state read from issue memory: a lease this worker holds is renewed (it will come
back) or, with `release`, given back; a stale lease is left for reclaim; anything else is not
ours to touch. The session is written `stopped` with the next step. A trajectory row is appended
when the session was still `active` (the step was interrupted: its outcome is the handoff
class); after a step that already recorded its row, stop adds none, so the KPI counts each step
once. specs/harness-loop.md "Stop".
"""

from __future__ import annotations

import os
from datetime import datetime

from premath.errors import InvalidUsage, LeaseRefused, NotFound
from premath.harness.handoff import classify_failed_handoff
from premath.harness.loop_paths import LoopPaths
from premath.harness.refs import step_id as make_step_id
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.harness.authority import IssueAuthority

STOP_ACTION = "harness.stop"


def _session(paths: LoopPaths) -> dict[str, Any] | None:
    from premath.harness.session import load_session

    return load_session(paths.session) if os.path.exists(paths.session) else None


def stop_worker(
    paths: LoopPaths,
    *,
    worker_id: str,
    now: datetime,
    lock_timeout_s: float,
    issue_id: str | None = None,
    release: bool = False,
    lease_ttl_s: int = 3600,
    summary: str | None = None,
    next_step: str | None = None,
    step_index: int = 1,
    memory: IssueAuthority | None = None,
) -> dict[str, Any]:
    """`memory`: issue memory's authority (default: the issues file of `paths`)."""
    from premath.harness.authority import LocalAuthority
    from premath.harness.session import write_session
    from premath.record.trajectory import append_step

    memory = memory or LocalAuthority(paths.issues, lock_timeout_s)

    if not worker_id.strip():
        raise InvalidUsage("--worker-id is required")
    session = _session(paths)
    target = issue_id or (session or {}).get("issueId")
    if not target:
        raise NotFound(
            f"nothing to stop: no --issue-id and no issue in the session {paths.session}"
        )
    snapshot = memory.snapshot(target, now)
    if snapshot.lease_state in ("active", "contended") and snapshot.lease_owner != worker_id:
        raise LeaseRefused(
            f"worker {worker_id} does not hold {target} (lease owner {snapshot.lease_owner}); "
            "stop with the worker id that claimed it"
        )
    handoff = classify_failed_handoff(snapshot, worker_id, snapshot.lease_id)
    lease_outcome = "unchanged"
    if snapshot.lease_state == "active" and snapshot.lease_id:
        if release:
            memory.release(target, worker_id, snapshot.lease_id, now=now)
            lease_outcome = "released"
        else:
            memory.renew(target, worker_id, snapshot.lease_id, ttl_s=lease_ttl_s, now=now)
            lease_outcome = "renewed"
    resume = (
        f"resume {target}: finish the work, then premath harness complete "
        f"--worker-id {worker_id} --issue-id {target}"
    )
    chosen_next = next_step or {
        "released": "claim next ready issue",
        "renewed": resume,
    }.get(lease_outcome, handoff.next_step)
    interrupted = session is not None and session.get("state") == "active"
    recorded = memory.recorded_issues(paths)
    row = None
    if interrupted:
        row = append_step(
            paths.trajectory,
            step_id=make_step_id(worker_id, target, step_index),
            issue_id=target,
            action=STOP_ACTION,
            result_class=handoff.result_class,
            witness_refs=[handoff.lease_ref],
            lineage_refs=(session or {}).get("lineageRefs", []),
            finished_at=format_seconds_z(now),
            now=now,
            lock_timeout=lock_timeout_s,
        )
    written = write_session(
        paths.session,
        now=now,
        lock_timeout_s=lock_timeout_s,
        state="stopped",
        issue_id=target,
        summary=summary
        or f"worker={worker_id} stopped on issue={target}; lease_state={snapshot.lease_state}; "
        f"lease={lease_outcome}",
        next_step=chosen_next,
        witness_refs=(handoff.lease_ref,),
        issues_path=recorded[0],
        recorded_issues_path=recorded[1],
    )
    return {
        "action": "harness.stop",
        "workerId": worker_id,
        "issueId": target,
        "leaseState": snapshot.lease_state,
        "leaseAction": handoff.lease_action,
        "leaseOutcome": lease_outcome,
        "leaseRef": handoff.lease_ref,
        "nextStep": chosen_next,
        "sessionPath": paths.session,
        "session": written,
        "trajectoryRow": row,
    }
