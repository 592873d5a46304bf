"""The `issue` and `dep` commands' JSON documents: the reference's camelCase payloads.

Pure renderers of what `premath.issues.memory` returns; the CLI prints them. Another face (the
MCP transport) renders the same values its own way and needs nothing from here.
"""

from __future__ import annotations

from premath.issues.graph import BlockedIssue, Integrity, edge_role
from premath.issues.leases import LeaseChange, LeaseProjection, is_contended, stored_nanos
from premath.models.issue_row import BLOCKING_TYPES
from premath.models.vocabulary import is_escalation_title
from premath.timefmt import format_offset

TYPE_CHECKING = False
if TYPE_CHECKING:  # only `issue check` loads issues.check: claim-next and list start leaner
    from typing import Any

    from premath.issues.check import CheckReport, Finding
    from premath.models.issue_row import DependencyRow, IssueRow
    from premath.models.vocabulary import EdgeView, GraphScope


def issue_brief(row: IssueRow) -> dict[str, Any]:
    """`{id,title,status,priority}`: an item of `issue ready` (and the head of the others)."""
    return {
        "id": row["id"],
        "title": row["title"],
        "status": row["status"],
        "priority": row["priority"],
    }


def issue_listing(row: IssueRow) -> dict[str, Any]:
    """`{id,title,status,priority,issueType,assignee}`: an item of `issue list`."""
    return {**issue_brief(row), "issueType": row["issue_type"], "assignee": row.get("assignee", "")}


def issue_summary(row: IssueRow) -> dict[str, Any]:
    """`issue{...,owner}` of add/update/discover output (`issue_listing` and the owner)."""
    return {**issue_listing(row), "owner": row.get("owner", "")}


def lease_view(row: IssueRow, change: LeaseChange | None = None) -> dict[str, Any] | None:
    """The lease in CLI output: camelCase, `+00:00` times, `renewedAt` null when absent;
    after a renewal or release, also its `state`."""
    lease = row.get("lease")
    if lease is None:
        return None
    renewed = lease.get("renewed_at")
    view: dict[str, Any] = {
        "leaseId": lease["lease_id"],
        "owner": lease["owner"],
        "acquiredAt": format_offset(stored_nanos(lease["acquired_at"])),
        "expiresAt": format_offset(stored_nanos(lease["expires_at"])),
        "renewedAt": None if renewed is None else format_offset(stored_nanos(renewed)),
    }
    if change is not None:
        view["state"] = change.state
    return view


def lease_summary(row: IssueRow, now_ns: int) -> dict[str, Any]:
    """`issueSummary` of the MCP tools and the item of `issue list`: the summary plus the lease
    with its state (D25-1: the reference's CLI list showed no lease). One dict built at once
    (`issue_summary`'s keys, in its order): `issue list` makes 100k of them."""
    get = row.get
    return {
        "id": row["id"],
        "title": row["title"],
        "status": row["status"],
        "priority": row["priority"],
        "issueType": row["issue_type"],
        "assignee": get("assignee", ""),
        "owner": get("owner", ""),
        "lease": None if "lease" not in row else lease_view(row, LeaseChange(row, now_ns)),
    }


def claimed_issue_view(row: IssueRow, change: LeaseChange | None = None) -> dict[str, Any]:
    """`issue{id,title,status,priority,issueType,assignee,owner,lease}` of claim output."""
    return {**issue_summary(row), "lease": lease_view(row, change)}


def _listing(action: str, path: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"action": action, "issuesPath": path, "count": len(items), "items": items}


def list_document(path: str, rows: list[IssueRow], now_ns: int) -> dict[str, Any]:
    return _listing("issue.list", path, [lease_summary(row, now_ns) for row in rows])


def escalation_mark(row: IssueRow) -> dict[str, bool]:
    """`{"escalation": true}` on an escalation issue, which claim-next leaves to people; nothing
    on any other, so a store without escalations lists the reference's bytes (D30a-1)."""
    return {"escalation": True} if is_escalation_title(row.get("title")) else {}


def ready_document(path: str, rows: list[IssueRow]) -> dict[str, Any]:
    return _listing(
        "issue.ready", path, [{**issue_brief(row), **escalation_mark(row)} for row in rows]
    )


def _blocked_item(item: BlockedIssue) -> dict[str, Any]:
    blockers = [
        {
            "issueId": edge["issue_id"],
            "dependsOnId": edge["depends_on_id"],
            "type": edge["type"],
            "createdBy": edge.get("created_by", ""),
            "blockerStatus": None if target is None else target["status"],
            "blockerMissing": target is None,
        }
        for edge, target in item.blockers
    ]
    return {**issue_brief(item.row), "manualBlocked": item.manual, "blockers": blockers}


def blocked_document(path: str, items: list[BlockedIssue]) -> dict[str, Any]:
    return _listing("issue.blocked", path, list(map(_blocked_item, items)))


def _finding(finding: Finding) -> dict[str, str]:
    return {"issueId": finding.issue_id, "class": finding.finding_class, "message": finding.message}


def check_document(path: str, report: CheckReport) -> dict[str, Any]:
    """`premath.issue_graph.check.v1` with the command's action and path in front."""
    from premath.issues.check import CHECK_KIND

    return {
        "action": "issue.check",
        "issuesPath": path,
        "checkKind": CHECK_KIND,
        "result": "accepted" if report.accepted else "rejected",
        "failureClasses": sorted({error.finding_class for error in report.errors}),
        "warningClasses": sorted({warning.finding_class for warning in report.warnings}),
        "errors": list(map(_finding, report.errors)),
        "warnings": list(map(_finding, report.warnings)),
        "summary": {
            "issueCount": report.issue_count,
            "errorCount": len(report.errors),
            "warningCount": len(report.warnings),
            "noteWarnThreshold": report.note_warn_threshold,
        },
    }


def projection_fields(projection: LeaseProjection) -> dict[str, Any]:
    """`{checkedAt, staleCount, staleIssueIds, contendedCount, contendedIssueIds}`."""
    return {
        "checkedAt": format_offset(projection.checked_at_ns),
        "staleCount": len(projection.stale_issue_ids),
        "staleIssueIds": projection.stale_issue_ids,
        "contendedCount": len(projection.contended_issue_ids),
        "contendedIssueIds": projection.contended_issue_ids,
    }


def lease_items(projection: LeaseProjection) -> list[dict[str, Any]]:
    """Every leased issue: `{id, status, assignee, lease (with its state), contended}`."""
    now_ns = projection.checked_at_ns
    return [
        {
            "id": row["id"],
            "status": row["status"],
            "assignee": row.get("assignee", ""),
            "lease": lease_view(row, LeaseChange(row, now_ns)),
            "contended": is_contended(row, now_ns),
        }
        for row in projection.leased
    ]


def lease_projection_document(path: str, projection: LeaseProjection) -> dict[str, Any]:
    items = lease_items(projection)
    return {
        "action": "issue.lease_projection",
        "issuesPath": path,
        **projection_fields(projection),
        "count": len(items),
        "items": items,
    }


def integrity_document(integrity: Integrity) -> dict[str, Any]:
    return {"hasCycle": integrity.has_cycle, "cyclePath": integrity.cycle_path}


def _projected_edge(edge: DependencyRow, view: EdgeView) -> dict[str, Any]:
    return {
        "issueId": edge["issue_id"],
        "dependsOnId": edge["depends_on_id"],
        "type": edge["type"],
        "view": view,
        "role": edge_role(edge["type"], view),
        "blocking": edge["type"] in BLOCKING_TYPES,
        "createdBy": edge.get("created_by", ""),
    }


def dep_project_document(
    path: str, view: EdgeView, edges: list[DependencyRow], integrity: Integrity
) -> dict[str, Any]:
    items = [_projected_edge(edge, view) for edge in edges]
    return {
        "action": "dep.project",
        "issuesPath": path,
        "view": view,
        "count": len(items),
        "items": items,
        "integrity": integrity_document(integrity),
    }


def dep_diagnostics_document(path: str, scope: GraphScope, integrity: Integrity) -> dict[str, Any]:
    return {
        "action": "dep.diagnostics",
        "issuesPath": path,
        "graphScope": scope,
        "integrity": integrity_document(integrity),
    }


def issue_document(action: str, path: str, row: IssueRow) -> dict[str, Any]:
    """`issue add` / `issue update`: the changed issue's summary."""
    return {"action": action, "issuesPath": path, "issue": issue_summary(row)}


def discovered_document(path: str, row: IssueRow, parent_id: str) -> dict[str, Any]:
    edge = {"issueId": row["id"], "dependsOnId": parent_id, "type": "discovered-from"}
    return {
        "action": "issue.discover",
        "issuesPath": path,
        "dependency": edge,
        "issue": issue_summary(row),
    }


def claim_document(path: str, row: IssueRow) -> dict[str, Any]:
    return {"action": "issue.claim", "issuesPath": path, "issue": claimed_issue_view(row)}


def claim_next_document(path: str, row: IssueRow | None) -> dict[str, Any]:
    issue = None if row is None else claimed_issue_view(row)
    return {
        "action": "issue.claim_next",
        "issuesPath": path,
        "claimed": row is not None,
        "issue": issue,
    }


def lease_change_document(action: str, path: str, change: LeaseChange) -> dict[str, Any]:
    """`issue.lease_renew` / `issue.lease_release`: the issue with its lease and its state."""
    return {
        "action": action,
        "issuesPath": path,
        "changed": True,
        "issue": claimed_issue_view(change.row, change),
    }


def edge_document(action: str, path: str, issue_id: str, target: str, kind: str) -> dict[str, Any]:
    """`dep add` / `dep remove`: the edge as given."""
    edge = {"issueId": issue_id, "dependsOnId": target, "type": kind}
    return {"action": action, "issuesPath": path, "dependency": edge}


def edge_replaced_document(
    path: str, issue_id: str, target: str, from_kind: str, to_kind: str, created_by: str
) -> dict[str, Any]:
    edge = {
        "issueId": issue_id,
        "dependsOnId": target,
        "fromType": from_kind,
        "toType": to_kind,
        "createdBy": created_by,
    }
    return {"action": "dep.replace", "issuesPath": path, "dependency": edge}
