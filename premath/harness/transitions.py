"""Issue transitions a worker makes on the issue it holds, checked under the store lock.

Closing or blocking an issue is only right while this worker still holds the lease it claimed:
another worker may have reclaimed it after the lease went stale. `issue update` does not check
that, so the loop makes these transitions itself, with the issue-memory primitives, inside one
`mutate_store` call: the holder check and the change happen under the same lock. A lease that
went stale but that nobody reclaimed is still ours (nobody else can hold it).
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from premath.issues.lifecycle import set_status, set_text
from premath.models.issue_row import IssueRow
from premath.store.issues_file import IssueMap, mutate_store
from premath.timefmt import epoch_nanos, format_autosi_z


@dataclass(frozen=True, slots=True)
class Transition:
    applied: bool
    reason: str
    """Why it was not applied (empty when it was)."""


def holder_problem(row: IssueRow | None, worker_id: str, lease_id: str | None) -> str:
    """Empty when `worker_id` holds the issue under `lease_id`; else what is wrong."""
    if row is None:
        return "issue is missing from issue memory"
    if row["status"] == "closed":
        return "issue is already closed"
    lease = row.get("lease")
    if lease is None:
        return "issue has no lease (released or never claimed)"
    if lease["owner"] != worker_id:
        return f"lease is held by {lease['owner']}"
    if lease_id is not None and lease["lease_id"] != lease_id:
        return f"lease id changed to {lease['lease_id']} (reclaimed)"
    return ""


def merge_notes(existing: str, note: str) -> str:
    """The reference's mark_blocked merge: idempotent, blank-line separated."""
    old, new = existing.strip(), note.strip()
    if not old:
        return new
    if new in old:
        return old
    return f"{old}\n\n{new}"


def transition_held(
    path: str,
    issue_id: str,
    worker_id: str,
    lease_id: str | None,
    *,
    status: Literal["closed", "blocked"],
    note: str | None = None,
    now: datetime,
    timeout_s: float,
) -> Transition:
    """Move the issue to `status` (its lease goes with in_progress), `note` merged into its
    notes, only while this worker still holds it under `lease_id`."""
    now_text = format_autosi_z(epoch_nanos(now))

    def mutate(issues: IssueMap) -> tuple[Transition, bool]:
        row = issues.get(issue_id)
        problem = holder_problem(row, worker_id, lease_id)
        if problem or row is None:
            return Transition(False, problem), False
        if note is not None:
            set_text(row, "notes", merge_notes(row.get("notes", ""), note))
        set_status(row, status, now_text)
        row["updated_at"] = now_text
        return Transition(True, ""), True

    return mutate_store(path, mutate, now=now, timeout_s=timeout_s)
