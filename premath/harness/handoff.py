"""Lease snapshot of one issue and the handoff a worker records when it stops on it.

The snapshot is the issue's row as issue memory reads it now and its lease state
(`premath.issues.leases.loop_lease_state`, specs/harness-loop.md "Lease states"). The handoff
table maps the lease state to the recovery action and the trajectory result class.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from premath.harness.refs import lease_ref
from premath.issues.memory import lease_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.harness.delivery import Delivered
    from premath.harness.merge_queue import Landing
    from premath.models.vocabulary import LeaseState


@dataclass(frozen=True, slots=True)
class LeaseSnapshot:
    issue_id: str
    lease_state: LeaseState
    status: str
    assignee: str
    lease_id: str | None
    lease_owner: str | None
    expires_at: str | None


@dataclass(frozen=True, slots=True)
class Handoff:
    lease_state: str
    lease_action: str
    result_class: str
    summary: str
    next_step: str
    lease_ref: str


def read_lease_snapshot(issues_path: str, issue_id: str, now: datetime) -> LeaseSnapshot:
    """The lease facts of `issue_id` as the issues file holds them now."""
    row, state = lease_state(issues_path, issue_id, now=now)
    if row is None:
        return LeaseSnapshot(issue_id, state, "", "", None, None, None)
    lease = row.get("lease")
    return LeaseSnapshot(
        issue_id=issue_id,
        lease_state=state,
        status=row["status"],
        assignee=row.get("assignee", ""),
        lease_id=None if lease is None else lease["lease_id"] or None,
        lease_owner=None if lease is None else lease["owner"] or None,
        expires_at=None if lease is None else lease["expires_at"],
    )


# lease_state -> (lease_action, result_class, summary, next_step): specs/harness-loop.md "Step".
_FAILED_HANDOFF: dict[str, tuple[str, str, str, str]] = {
    "active": (
        "issue_lease_renew",
        "retry_needed_lease_active",
        "lease still active after failed work/verify",
        "recover via transport-dispatch issue.lease_renew (id={issue}, assignee={owner}, "
        "lease_id={lease_id})",
    ),
    "stale": (
        "issue_claim_next_reclaim",
        "retry_needed_lease_stale",
        "lease went stale before the step finished",
        "reclaim via issue claim-next or release reconciliation",
    ),
    "contended": (
        "issue_lease_release",
        "retry_needed_lease_contended",
        "lease is contended (owner and assignee or status disagree)",
        "release via transport-dispatch issue.lease_release, then reclaim or renew",
    ),
    "released": (
        "claim_next",
        "failed_issue_closed",
        "issue closed during recovery",
        "claim next ready issue",
    ),
    "unleased": (
        "reconcile",
        "failed_lease_missing",
        "issue has no lease binding",
        "reconcile the lease binding via release or re-claim",
    ),
    "missing_issue": (
        "stop",
        "failed_issue_missing",
        "issue is missing from issue memory",
        "run issue list/check to inspect issue memory",
    ),
}
_INVARIANT = (
    "stop",
    "failed_lease_invariant",
    "lease invariant violated ({state})",
    "inspect issue_lease_projection and repair the issue row",
)


def _snapshot_lease_ref(
    snapshot: LeaseSnapshot, worker_id: str, lease_id: str | None, lease_action: str
) -> str:
    return lease_ref(
        issue_id=snapshot.issue_id,
        worker_id=worker_id,
        lease_id=lease_id,
        lease_owner=snapshot.lease_owner,
        lease_state=snapshot.lease_state,
        lease_action=lease_action,
        status=snapshot.status,
        assignee=snapshot.assignee,
    )


def classify_failed_handoff(
    snapshot: LeaseSnapshot, worker_id: str, claimed_lease_id: str | None
) -> Handoff:
    """What a worker records after a failed step, by the lease state it finds."""
    action, result_class, summary, next_step = _FAILED_HANDOFF.get(snapshot.lease_state, _INVARIANT)
    lease_id = snapshot.lease_id or claimed_lease_id
    return Handoff(
        lease_state=snapshot.lease_state,
        lease_action=action,
        result_class=result_class,
        summary=summary.format(state=snapshot.lease_state),
        next_step=next_step.format(
            issue=snapshot.issue_id,
            owner=snapshot.lease_owner or worker_id,
            lease_id=lease_id or "MISSING",
        ),
        lease_ref=_snapshot_lease_ref(snapshot, worker_id, lease_id, action),
    )


def success_handoff(
    snapshot: LeaseSnapshot, worker_id: str, claimed_lease_id: str | None
) -> Handoff | None:
    """The `completed` handoff, or None when the issue is not closed with its lease released."""
    if snapshot.status != "closed" or snapshot.lease_state != "released":
        return None
    return Handoff(
        lease_state="released",
        lease_action="release_closed",
        result_class="completed",
        summary="closed transition released lease",
        next_step="claim next ready issue",
        lease_ref=lease_ref(
            issue_id=snapshot.issue_id,
            worker_id=worker_id,
            lease_id=claimed_lease_id,
            lease_owner=worker_id,
            lease_state="released",
            lease_action="release_closed",
            status=snapshot.status,
            assignee=snapshot.assignee,
        ),
    )


# escalation action -> (lease_action, summary); D5-10: the reference renewed an active lease
# after any failure and left the issue in_progress; ours applies the retry policy's escalation.
_ESCALATED = {
    "stop": ("issue_lease_release", "terminal failure: lease released, issue open again"),
    "mark_blocked": ("mark_blocked", "retries exhausted: issue marked blocked with a note"),
    "issue_discover": (
        "issue_discover",
        "retries exhausted: follow-up issue discovered, issue marked blocked",
    ),
}


def escalated_handoff(
    snapshot: LeaseSnapshot, worker_id: str, claimed_lease_id: str | None, action: str
) -> Handoff:
    """The handoff after an applied escalation: class `escalated_<action>`."""
    lease_action, summary = _ESCALATED[action]
    lease_id = snapshot.lease_id or claimed_lease_id
    return Handoff(
        lease_state=snapshot.lease_state,
        lease_action=lease_action,
        result_class=f"escalated_{action}",
        summary=summary,
        next_step="",
        lease_ref=_snapshot_lease_ref(snapshot, worker_id, lease_id, lease_action),
    )


def undelivered_handoff(
    snapshot: LeaseSnapshot,
    worker_id: str,
    claimed_lease_id: str | None,
    status: str,
    delivered: Delivered,
) -> Handoff:
    """The handoff after a delivery failure (specs/remote-workers.md): class `failed_delivery`,
    the issue given back (`open`) or blocked, never closed."""
    return _not_closed_handoff(
        snapshot,
        worker_id,
        claimed_lease_id,
        status,
        result_class="failed_delivery",
        summary=f"delivery failed ({delivered.failure})",
        cause=f"delivery of {delivered.branch} failed ({delivered.failure}: {delivered.message})",
        next_if_open="claim next ready issue",
        next_if_blocked="review the existing branch, then reopen the issue",
    )


def unlanded_handoff(
    snapshot: LeaseSnapshot,
    worker_id: str,
    claimed_lease_id: str | None,
    status: str,
    landing: Landing,
) -> Handoff:
    """The handoff after the merge queue refused a delivered branch (specs/remote-workers.md
    "Merge queue"): class `failed_integration`, the issue given back (`open`) or blocked."""
    return _not_closed_handoff(
        snapshot,
        worker_id,
        claimed_lease_id,
        status,
        result_class="failed_integration",
        summary=f"merge queue refused {landing.branch} ({landing.failure})",
        cause=(
            f"{landing.branch} did not land on {landing.integration_branch} ({landing.failure}: "
            f"{landing.message})"
        ),
        next_if_open="the next claim redoes the work on the new integration head",
        next_if_blocked="read the issue's merge-queue note, fix the cause, then reopen",
    )


def _not_closed_handoff(
    snapshot: LeaseSnapshot,
    worker_id: str,
    claimed_lease_id: str | None,
    status: str,
    *,
    result_class: str,
    summary: str,
    cause: str,
    next_if_open: str,
    next_if_blocked: str,
) -> Handoff:
    """A finished step whose work did not reach the issue: given back (`open`, the lease
    released) or blocked, never closed; the summary and next step say which."""
    given_back = status == "open"
    lease_action = "issue_lease_release" if given_back else "mark_blocked"
    left = "lease released, issue open again" if given_back else "issue blocked"
    return Handoff(
        lease_state=snapshot.lease_state,
        lease_action=lease_action,
        result_class=result_class,
        summary=f"{summary}: {left}",
        next_step=f"{cause}; {next_if_open if given_back else next_if_blocked}",
        lease_ref=_snapshot_lease_ref(snapshot, worker_id, claimed_lease_id, lease_action),
    )
