"""`issue show` (ours, divergence D16-3): one issue whole, as an agent needs it to do the work it
claimed. The store gives the row; this renders it with its blockers' and its lease's states."""

from __future__ import annotations

from premath.errors import NotFound
from premath.issues.documents import issue_summary, lease_view
from premath.issues.held import merged_refs
from premath.issues.leases import lease_state
from premath.lean import datetime
from premath.store.issues_file import IssueMap
from premath.timefmt import epoch_nanos

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SHOW_ACTION = "issue.show"


def issue_detail(issues: IssueMap, issue_id: str, now: datetime) -> dict[str, Any]:
    """Every field a worker reads: texts, times, lease with its state, blockers with theirs."""
    row = issues.get(issue_id)
    if row is None:
        raise NotFound(f"issue not found: {issue_id}")
    dependencies = []
    for edge in row.get("dependencies", []):
        target = issues.get(edge["depends_on_id"])
        dependencies.append(
            {
                "dependsOnId": edge["depends_on_id"],
                "type": edge["type"],
                "status": None if target is None else target["status"],
                "title": None if target is None else target["title"],
            }
        )
    lease = lease_view(row)
    if lease is not None:
        lease["state"] = lease_state(row, epoch_nanos(now))
    refs = merged_refs(row, ())
    return {
        **issue_summary(row),
        "description": row.get("description", ""),
        "acceptanceCriteria": row.get("acceptance_criteria", ""),
        "notes": row.get("notes", ""),
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
        "closedAt": row.get("closed_at"),
        "dependencies": dependencies,
        "lease": lease,
        **({"witnessRefs": refs} if refs else {}),
    }


def show_document(path: str, issues: IssueMap, issue_id: str, now: datetime) -> dict[str, Any]:
    return {"action": SHOW_ACTION, "issuesPath": path, "issue": issue_detail(issues, issue_id, now)}
