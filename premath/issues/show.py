"""`issue show`: one issue whole, as an agent needs it to do the work it claimed (ours)."""

from datetime import datetime
from typing import Any

from premath.errors import NotFound
from premath.issues.leases import lease_view
from premath.issues.lifecycle import issue_summary
from premath.store.issues_file import IssueMap, load_issues
from premath.timefmt import epoch_nanos

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
    return {
        **issue_summary(row),
        "description": row.get("description", ""),
        "acceptanceCriteria": row.get("acceptance_criteria", ""),
        "notes": row.get("notes", ""),
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
        "closedAt": row.get("closed_at"),
        "dependencies": dependencies,
        "lease": lease_view(row, epoch_nanos(now)),
    }


def show_issue(path: str, issue_id: str, *, now: datetime) -> dict[str, Any]:
    issue = issue_detail(load_issues(path, now), issue_id, now)
    return {"action": SHOW_ACTION, "issuesPath": path, "issue": issue}
