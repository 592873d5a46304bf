"""Edge edits with the reference's checks, in its order and with its messages
(specs/issue-memory.md "Commands")."""

from __future__ import annotations

from premath.errors import Conflict, NotFound
from premath.issues.graph import find_path
from premath.issues.lifecycle import put_field
from premath.store.issues_file import IssueMap
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import IssueRow


def _edge_text(issue_id: str, target: str, kind: str) -> str:
    return f"{issue_id} -> {target} ({kind})"


def _require(issues: IssueMap, issue_id: str, prefix: str) -> IssueRow:
    row = issues.get(issue_id)
    if row is None:
        raise NotFound(f"{prefix}issue not found: {issue_id}")
    return row


def _require_pair(issues: IssueMap, issue_id: str, target: str, kind: str, prefix: str) -> IssueRow:
    """Both ends exist and differ (the reference's checks, in its order); the source row."""
    row = _require(issues, issue_id, prefix)
    _require(issues, target, prefix)
    if issue_id == target:
        raise Conflict(f"{prefix}dependency self-loop is not allowed: {issue_id} ({kind})")
    return row


def _touch(row: IssueRow, now_text: str) -> None:
    row["updated_at"] = now_text


def add_dependency(
    issues: IssueMap, issue_id: str, target: str, kind: str, created_by: str, now_text: str
) -> IssueRow:
    """Append `issue_id -> target (kind)` unless it is a self-loop, a duplicate or closes a cycle;
    returns the changed row.

    The cycle search follows every dependency type over the whole store (specs/issue-memory.md
    "Graph rules").
    """
    prefix = "failed to add dependency: "
    row = _require_pair(issues, issue_id, target, kind, prefix)
    edges = row.get("dependencies", [])
    if any(e["depends_on_id"] == target and e["type"] == kind for e in edges):
        raise Conflict(f"{prefix}dependency already exists: {_edge_text(issue_id, target, kind)}")
    back = find_path(issues, target, issue_id, "full")
    if back is not None:
        path = " -> ".join([issue_id, *back])
        raise Conflict(
            f"{prefix}dependency cycle detected: {_edge_text(issue_id, target, kind)}; path: {path}"
        )
    edge: dict[str, Any] = {"issue_id": issue_id, "depends_on_id": target, "type": kind}
    if created_by:
        edge["created_by"] = created_by
    put_field(row, "dependencies", [*edges, edge])
    _touch(row, now_text)
    return row


def remove_dependency(
    issues: IssueMap, issue_id: str, target: str, kind: str, now_text: str
) -> IssueRow:
    """Delete every `issue_id -> target (kind)` edge; none matching is an error."""
    prefix = "failed to remove dependency: "
    row = _require(issues, issue_id, prefix)
    edges = row.get("dependencies", [])
    kept = [e for e in edges if not (e["depends_on_id"] == target and e["type"] == kind)]
    if len(kept) == len(edges):
        raise NotFound(f"{prefix}dependency not found: {_edge_text(issue_id, target, kind)}")
    if kept:
        row["dependencies"] = kept
    else:
        row.pop("dependencies", None)
    _touch(row, now_text)
    return row


def replace_dependency(
    issues: IssueMap,
    issue_id: str,
    target: str,
    from_kind: str,
    to_kind: str,
    created_by: str,
    now_text: str,
) -> IssueRow:
    """Change the type of the first `from_kind` edge in place (no cycle check: the same pair
    stays connected); `created_by` is overwritten only by a non-blank value."""
    prefix = "failed to replace dependency: "
    row = _require_pair(issues, issue_id, target, to_kind, prefix)
    edges = row.get("dependencies", [])
    position = next(
        (i for i, e in enumerate(edges) if e["depends_on_id"] == target and e["type"] == from_kind),
        None,
    )
    if position is None:
        raise NotFound(f"{prefix}dependency not found: {_edge_text(issue_id, target, from_kind)}")
    if any(
        i != position and e["depends_on_id"] == target and e["type"] == to_kind
        for i, e in enumerate(edges)
    ):
        raise Conflict(
            f"{prefix}dependency already exists: {_edge_text(issue_id, target, to_kind)}"
        )
    edge: dict[str, Any] = dict(edges[position])
    edge["type"] = to_kind
    if rust_trim(created_by):
        edge["created_by"] = created_by
    edges[position] = edge  # type: ignore[call-overload]
    _touch(row, now_text)
    return row
