"""The four lease actions as the transport runs them (agent-surface.md §2.6-§2.7).

The transport follows the reference's lease rules where the `issue` CLI is stricter
(docs/divergences.md D3-3, D12-2): anyone may release a lease (an assignee or lease id, when
given, must match), and a stale lease can be released, which the runbook's stuck-worker
recovery depends on. Claim-next is the one our CLI runs (D3-1, D3-2). Diagnostics are the
reference's texts; each rejection carries its failure class.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from premath.errors import ArtifactInvalid, IoFailure, LockBusy, NotFound, PremathError
from premath.issues import leases
from premath.issues.holder import holder_mismatch
from premath.issues.lifecycle import set_status
from premath.store.issues_file import Changes, IssueMap, ViewedIssues, WarmStores, mutate_store
from premath.store.root import rebase
from premath.text import rust_trim
from premath.timefmt import NANOS_PER_SECOND, epoch_nanos, format_autosi_z
from premath.transport.payloads import (
    ClaimNextRequest,
    ClaimRequest,
    ReleaseRequest,
    RenewRequest,
    blank_to_none,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.models.issue_row import IssueRow, LeaseRow

DEFAULT_ISSUES_PATH = ".premath/issues.jsonl"

OnChange = Callable[["IssueRow"], None]
"""Runs under the store lock on the changed row before it is saved (the MCP write witness)."""


@dataclass(frozen=True)
class LeaseCall:
    """How one lease action runs: its time, the lock timeout, the hook on the changed row, the
    warm stores of a long-running caller, and the issues claim-next may choose (None: any)."""

    now: datetime
    timeout_s: float
    on_change: OnChange | None = None
    warm: WarmStores | None = None
    issue_scope: frozenset[str] | None = None


class Rejected(Exception):
    """A lease action refused with the reference's failure class and diagnostic."""

    def __init__(self, failure_class: str, diagnostic: str) -> None:
        super().__init__(diagnostic)
        self.failure_class = failure_class
        self.diagnostic = diagnostic


@dataclass(frozen=True)
class LeaseOutcome:
    """An accepted lease action: the row after it (None: claim-next found nothing), whether the
    store changed, and the lease projection of the store it was decided on (taken inside the
    mutation: the store may free its rows once the file is written)."""

    row: IssueRow | None
    changed: bool
    projection: leases.LeaseProjection
    now_ns: int


def issues_path_of(requested: str | None) -> str:
    """The payload's `issuesPath`, else the project's issues file (premath.store.root)."""
    return blank_to_none(requested) or rebase(DEFAULT_ISSUES_PATH)


_LEASE_ERRORS = (leases.LeaseInputRejected, leases.LeaseIssueMissing, leases.LeaseDenied)
_LeaseError = leases.LeaseInputRejected | leases.LeaseIssueMissing | leases.LeaseDenied


def _bare(error: _LeaseError) -> str:
    """The diagnostic of a lease error, without the ` (<class>)` the CLI appends."""
    message = str(error)
    suffix = f" ({error.failure_class})"
    return message[: -len(suffix)] if message.endswith(suffix) else message


def _assignee(value: str) -> str:
    try:
        return leases.required_assignee(value)
    except leases.LeaseInputRejected as exc:
        raise Rejected(exc.failure_class, _bare(exc)) from None


def _expiry(now_ns: int, ttl_seconds: int | None, expires_at: str | None) -> int:
    """The new expiry (the rules and texts of `leases.lease_expiry`) or the rejection."""
    try:
        return leases.lease_expiry(now_ns, ttl_seconds, expires_at)
    except leases.LeaseInputRejected as exc:
        raise Rejected(exc.failure_class, _bare(exc)) from None


def _run(
    path: str,
    edit: Callable[[IssueMap], IssueRow | None],
    target: str | None,
    call: LeaseCall,
) -> LeaseOutcome:
    """`edit` under the store lock; it returns the row it acted on (changed or not), which is
    `target` (compared with its copy from before) or, without a target, a row changed or None.
    Store and lock failures become the reference's `lease_mutation_*` rejections."""

    def mutate(issues: IssueMap) -> tuple[LeaseOutcome, Changes]:
        before = copy.deepcopy(issues.get(target)) if target is not None else None
        try:
            row = edit(issues)
        except _LEASE_ERRORS as exc:
            raise Rejected(exc.failure_class, _bare(exc)) from None
        changed = row is not None and (target is None or before != row)
        if changed and row is not None:
            if call.on_change is not None:
                call.on_change(row)
            if isinstance(issues, ViewedIssues):
                issues.touched(row["id"])  # the projection below reads the views
        now_ns = epoch_nanos(call.now)
        if row is not None and not changed:
            row = copy.deepcopy(row)  # the store's row may change under a later writer
        outcome = LeaseOutcome(row, changed, leases.lease_projection(issues, now_ns), now_ns)
        return outcome, (row["id"],) if changed and row is not None else ()

    try:
        return mutate_store(path, mutate, now=call.now, timeout_s=call.timeout_s, warm=call.warm)
    except LockBusy as exc:
        raise Rejected("lease_mutation_lock_busy", exc.message) from None
    except IoFailure as exc:
        failure = "lock_io" if exc.message.startswith("failed to acquire") else "store_io"
        raise Rejected(f"lease_mutation_{failure}", exc.message) from None
    except (ArtifactInvalid, NotFound) as exc:
        raise Rejected("lease_mutation_store_io", _store_error_text(exc, path)) from None


def _store_error_text(error: PremathError, path: str) -> str:
    """The store's own message without our `failed to load <path>: ` lead (the reference's
    transport reports the bare store error)."""
    lead = f"failed to load {path}: "
    return error.message[len(lead) :] if error.message.startswith(lead) else error.message


def claim(request: ClaimRequest, call: LeaseCall) -> LeaseOutcome:
    """`issue.claim`: take, take over (stale) or renew (own) the lease on one issue."""
    now_ns = epoch_nanos(call.now)
    owner = _assignee(request.assignee)
    expiry_ns = _expiry(now_ns, request.lease_ttl_seconds, request.lease_expires_at)

    def edit(issues: IssueMap) -> IssueRow:
        if leases.existing_issue(issues, request.id)["status"] == "closed":
            raise Rejected("lease_issue_closed", f"cannot claim closed issue: {request.id}")
        return leases.claim_issue(
            issues,
            request.id,
            owner,
            now_ns=now_ns,
            expiry_ns=expiry_ns,
            lease_id=request.lease_id,
        )

    path = issues_path_of(request.issues_path)
    return _run(path, edit, request.id, call)


def claim_next(request: ClaimNextRequest, call: LeaseCall) -> LeaseOutcome:
    """`issue.claim_next`: the best ready issue for the caller, or none (D3-1, D3-2)."""
    now_ns = epoch_nanos(call.now)
    owner = _assignee(request.assignee)
    ttl = leases.DEFAULT_TTL_SECONDS
    if request.lease_ttl_seconds is not None:
        ttl = request.lease_ttl_seconds
    if not leases.MIN_TTL_SECONDS <= ttl <= leases.MAX_TTL_SECONDS:
        raise Rejected("lease_invalid_ttl", f"{leases.TTL_RANGE_TEXT} (got {ttl})")
    expiry_ns = now_ns + ttl * NANOS_PER_SECOND

    def edit(issues: IssueMap) -> IssueRow | None:
        return leases.claim_next_issue(
            issues,
            owner,
            now_ns=now_ns,
            expiry_ns=expiry_ns,
            lease_id=request.lease_id,
            eligible=call.issue_scope,
            include_escalations=request.include_escalations,
        )

    path = issues_path_of(request.issues_path)
    outcome = _run(path, edit, None, call)
    if not outcome.changed and not os.path.exists(path):
        # The reference reloads the store for the projection, and a missing file fails there.
        raise Rejected(
            "lease_mutation_store_io",
            f"line 0: I/O error: {path}: No such file or directory (os error 2)",
        )
    return outcome


def renew(request: RenewRequest, call: LeaseCall) -> LeaseOutcome:
    """`issue.lease_renew`: the holder of an active lease extends it."""
    now_ns = epoch_nanos(call.now)
    owner = _assignee(request.assignee)
    lease_id = rust_trim(request.lease_id)
    if not lease_id:
        raise Rejected("lease_id_mismatch", "lease_id is required")
    expiry_ns = _expiry(now_ns, request.lease_ttl_seconds, request.lease_expires_at)

    def edit(issues: IssueMap) -> IssueRow:
        row = leases.existing_issue(issues, request.id)
        if row["status"] == "closed":
            raise Rejected(
                "lease_issue_closed", f"cannot renew lease on closed issue: {request.id}"
            )
        lease = row.get("lease")
        if lease is None:
            raise Rejected("lease_missing", f"issue has no lease: {request.id}")
        if leases.lease_state(row, now_ns) == "stale":
            raise Rejected("lease_stale", f"lease is stale and must be reclaimed: {request.id}")
        _expect_holder(row, lease, owner, lease_id)
        return leases.renew_lease(
            issues, request.id, owner, lease_id, now_ns=now_ns, expiry_ns=expiry_ns
        )

    path = issues_path_of(request.issues_path)
    return _run(path, edit, request.id, call)


def _expect_holder(row: IssueRow, lease: LeaseRow, owner: str | None, lease_id: str | None) -> None:
    mismatch = holder_mismatch(row["id"], lease, owner, lease_id, "transport")
    if mismatch is not None:
        raise Rejected(*mismatch)


def release(request: ReleaseRequest, call: LeaseCall) -> LeaseOutcome:
    """`issue.lease_release`: anyone may release, stale leases too; a given assignee or lease
    id must match the lease. Lease and assignee go; in_progress reopens."""
    now_ns = epoch_nanos(call.now)
    owner = blank_to_none(request.assignee)
    lease_id = blank_to_none(request.lease_id)

    def edit(issues: IssueMap) -> IssueRow:
        row = leases.existing_issue(issues, request.id)
        lease = row.get("lease")
        if lease is None:
            if owner is not None or lease_id is not None:
                raise Rejected("lease_missing", f"issue has no lease: {request.id}")
            return row
        _expect_holder(row, lease, owner, lease_id)
        now_text = format_autosi_z(now_ns)
        del row["lease"]
        row.pop("assignee", None)
        if row["status"] == "in_progress":
            set_status(row, "open", now_text)
        row["updated_at"] = now_text
        return row

    path = issues_path_of(request.issues_path)
    return _run(path, edit, request.id, call)
