"""Issue memory operations on a store path: what each `issue` / `dep` command does.

Every function takes the issues path and `now` (writers also the lock timeout), runs the pure
logic of `graph`, `leases`, `dependencies`, `lifecycle` and `check` on the loaded store, and
returns the command's JSON document (the reference's payload). Readers load without the lock;
writers go through `mutate_store` (lock, load, change, atomic rewrite, unlock).
"""

import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from premath.errors import InputInvalid, IoFailure, NotFound
from premath.issues import dependencies, graph, leases, lifecycle
from premath.issues.check import check_issues
from premath.models.issue_row import IssueRow
from premath.store.issues_file import (
    Changes,
    IssueMap,
    load_issues,
    mutate_store,
    require_store_file,
)
from premath.text import rust_trim
from premath.timefmt import epoch_nanos, format_autosi_z

RowHook = Callable[[IssueRow], None]
"""Runs under the store lock on the row a writer changed, before the save (the MCP write
witness is attached this way)."""


def _now(now: datetime) -> tuple[int, str]:
    now_ns = epoch_nanos(now)
    return now_ns, format_autosi_z(now_ns)


def read_store(path: str, now: datetime) -> IssueMap:
    """The store for a read-only command (no lock); a missing file is an error."""
    return load_issues(path, now)


# --- readers -----------------------------------------------------------------------------------


def list_issues(
    path: str, *, now: datetime, status: str | None = None, assignee: str | None = None
) -> dict[str, Any]:
    issues = read_store(path, now)
    items = [
        lifecycle.issue_listing(row)
        for row in (issues[issue_id] for issue_id in sorted(issues))
        if (status is None or row["status"] == status)
        and (assignee is None or row.get("assignee", "") == assignee)
    ]
    return {"action": "issue.list", "issuesPath": path, "count": len(items), "items": items}


def ready(path: str, *, now: datetime) -> dict[str, Any]:
    items = list(map(lifecycle.issue_brief, graph.ready_issues(read_store(path, now))))
    return {"action": "issue.ready", "issuesPath": path, "count": len(items), "items": items}


def blocked(path: str, *, now: datetime) -> dict[str, Any]:
    items = graph.blocked_issues(read_store(path, now))
    return {"action": "issue.blocked", "issuesPath": path, "count": len(items), "items": items}


def check(path: str, *, now: datetime, note_warn_threshold: int) -> dict[str, Any]:
    report = check_issues(read_store(path, now), note_warn_threshold)
    return {"action": "issue.check", "issuesPath": path, **report}


def lease_projection(path: str, *, now: datetime) -> dict[str, Any]:
    now_ns, _ = _now(now)
    issues = read_store(path, now)
    projection = leases.lease_projection(issues, now_ns)
    items = leases.lease_items(issues, now_ns)
    return {
        "action": "issue.lease_projection",
        "issuesPath": path,
        **projection,
        "count": len(items),
        "items": items,
    }


def dep_project(path: str, *, now: datetime, view: graph.EdgeView) -> dict[str, Any]:
    issues = read_store(path, now)
    items = graph.project_edges(issues, view)
    return {
        "action": "dep.project",
        "issuesPath": path,
        "view": view,
        "count": len(items),
        "items": items,
        "integrity": graph.integrity(issues, "full"),
    }


def dep_diagnostics(path: str, *, now: datetime, scope: graph.GraphScope) -> dict[str, Any]:
    issues = read_store(path, now)
    return {
        "action": "dep.diagnostics",
        "issuesPath": path,
        "graphScope": scope,
        "integrity": graph.integrity(issues, scope),
    }


# --- issue writers -----------------------------------------------------------------------------
# A writer that edits one existing row reports its id to `mutate_store`, which then re-encodes that
# row only; adding a row reports `True` (the whole store is encoded).


def _edit_row(
    path: str,
    edit: Callable[[IssueMap], IssueRow | None],
    *,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
) -> IssueRow | None:
    """Run `edit` under the store lock: it changes at most one existing row in place and
    returns it (None: nothing changed)."""

    def mutate(issues: IssueMap) -> tuple[IssueRow | None, Changes]:
        row = edit(issues)
        if row is not None and on_row is not None:
            on_row(row)
        return row, () if row is None else (row["id"],)

    return mutate_store(path, mutate, now=now, timeout_s=timeout_s)


def _edit_existing_row(
    path: str,
    edit: Callable[[IssueMap], IssueRow],
    *,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
) -> IssueRow:
    """`_edit_row` on a store that must exist (checked before taking the lock)."""
    require_store_file(path)
    row = _edit_row(path, edit, now=now, timeout_s=timeout_s, on_row=on_row)
    assert row is not None  # `edit` returns the row or raises
    return row


def _add_row(
    path: str,
    add: Callable[[IssueMap], IssueRow],
    *,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
) -> IssueRow:
    def mutate(issues: IssueMap) -> tuple[IssueRow, Changes]:
        row = add(issues)
        if on_row is not None:
            on_row(row)
        return row, True

    return mutate_store(path, mutate, now=now, timeout_s=timeout_s)


def _issue_document(
    action: str, path: str, issue: dict[str, Any] | None, **extra: Any
) -> dict[str, Any]:
    return {"action": action, "issuesPath": path, **extra, "issue": issue}


def add_issue(
    path: str,
    title: str,
    *,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """`issue add`: creates the file (and its folders) when missing. `fields`: `NewIssue`'s."""
    new = lifecycle.NewIssue(title=title, **fields)
    _, now_text = _now(now)
    lifecycle.checked_issue_type(new.issue_type)
    row = _add_row(
        path,
        lambda issues: lifecycle.new_issue(issues, new, now_text),
        now=now,
        timeout_s=timeout_s,
        on_row=on_row,
    )
    return _issue_document("issue.add", path, lifecycle.issue_summary(row))


def update_issue(
    path: str,
    issue_id: str,
    *,
    now: datetime,
    timeout_s: float,
    title: str | None = None,
    description: str | None = None,
    notes: str | None = None,
    status: str | None = None,
    priority: int | None = None,
    assignee: str | None = None,
    owner: str | None = None,
    on_row: RowHook | None = None,
) -> dict[str, Any]:
    """`issue update`: given fields only; a status change goes through set_status, so closing
    releases the lease (the assignee stays)."""
    texts = {"description": description, "notes": notes, "assignee": assignee, "owner": owner}
    nothing = title is None and status is None and priority is None
    nothing = nothing and all(value is None for value in texts.values())
    _, now_text = _now(now)

    def edit(issues: IssueMap) -> IssueRow:
        row = issues.get(issue_id)
        if row is None:
            raise NotFound(f"issue not found: {issue_id}")
        if nothing:
            raise InputInvalid("no update fields provided")
        if title is not None:
            row["title"] = title
        for field, value in texts.items():
            if value is not None:
                lifecycle.set_text(row, field, value)
        if priority is not None:
            row["priority"] = priority
        if status is not None:
            lifecycle.set_status(row, status, now_text)
        row["updated_at"] = now_text
        return row

    row = _edit_existing_row(path, edit, now=now, timeout_s=timeout_s, on_row=on_row)
    return _issue_document("issue.update", path, lifecycle.issue_summary(row))


def discover_issue(
    path: str,
    parent_id: str,
    title: str,
    *,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """`issue discover`: a new open issue with a `discovered-from` edge to its parent.
    `fields`: `NewIssue`'s but `status`."""
    new = lifecycle.NewIssue(title=title, **fields)
    require_store_file(path)
    _, now_text = _now(now)
    lifecycle.checked_issue_type(new.issue_type)

    def add(issues: IssueMap) -> IssueRow:
        if parent_id not in issues:
            raise NotFound(f"parent issue not found: {parent_id}")
        row = lifecycle.new_issue(issues, new, now_text)
        edge = {"issue_id": row["id"], "depends_on_id": parent_id, "type": "discovered-from"}
        lifecycle.put_field(row, "dependencies", [edge])
        return row

    row = _add_row(path, add, now=now, timeout_s=timeout_s, on_row=on_row)
    edge = {"issueId": row["id"], "dependsOnId": parent_id, "type": "discovered-from"}
    return _issue_document("issue.discover", path, lifecycle.issue_summary(row), dependency=edge)


# --- leases ------------------------------------------------------------------------------------


def _required_owner(assignee: str) -> str:
    """The trimmed assignee; blank is refused without a failure class (the CLI's own check,
    made before the transport's)."""
    owner = rust_trim(assignee)
    if not owner:
        raise InputInvalid("assignee is required")
    return owner


def claim(
    path: str, issue_id: str, assignee: str, *, now: datetime, timeout_s: float
) -> dict[str, Any]:
    """`issue claim`: default lease (TTL 3600 s); a missing file is an empty store."""
    owner = _required_owner(assignee)
    now_ns, _ = _now(now)
    expiry_ns = leases.lease_expiry(now_ns, None, None)

    def edit(issues: IssueMap) -> IssueRow:
        return leases.claim_issue(issues, issue_id, owner, now_ns=now_ns, expiry_ns=expiry_ns)

    row = _edit_row(path, edit, now=now, timeout_s=timeout_s)
    assert row is not None  # claim_issue returns the row or raises
    return _issue_document("issue.claim", path, leases.claimed_issue_view(row))


def claim_next(
    path: str,
    assignee: str,
    *,
    now: datetime,
    timeout_s: float,
    lease_id: str | None = None,
    ttl_seconds: int | None = None,
) -> dict[str, Any]:
    """`issue claim-next`: claim the best ready issue, or report `claimed: false`.

    Unlike the reference, also reclaims an in_progress issue whose lease is stale (D3-1) and
    picks by priority, then natural id order (D3-2).
    """
    owner = _required_owner(assignee)
    ttl = leases.DEFAULT_TTL_SECONDS if ttl_seconds is None else ttl_seconds
    if not leases.MIN_TTL_SECONDS <= ttl <= leases.MAX_TTL_SECONDS:
        raise InputInvalid(f"{leases.TTL_RANGE_TEXT} (got {ttl})")
    now_ns, _ = _now(now)
    expiry_ns = leases.lease_expiry(now_ns, ttl, None)

    def edit(issues: IssueMap) -> IssueRow | None:
        return leases.claim_next_issue(
            issues, owner, now_ns=now_ns, expiry_ns=expiry_ns, lease_id=lease_id
        )

    row = _edit_row(path, edit, now=now, timeout_s=timeout_s)
    if row is None and not os.path.exists(path):
        raise IoFailure(f"issues file not found: {path} (lease_mutation_store_io)")
    issue = None if row is None else leases.claimed_issue_view(row)
    return _issue_document("issue.claim_next", path, issue, claimed=row is not None)


def renew_lease(
    path: str,
    issue_id: str,
    assignee: str,
    lease_id: str,
    *,
    now: datetime,
    timeout_s: float,
    ttl_seconds: int | None = None,
    expires_at: str | None = None,
) -> dict[str, Any]:
    """`issue lease-renew`: the holder extends its active lease (the `issue.lease_renew` action)."""
    owner = leases.required_assignee(assignee)
    now_ns, _ = _now(now)
    expiry_ns = leases.lease_expiry(now_ns, ttl_seconds, expires_at)

    def edit(issues: IssueMap) -> IssueRow:
        return leases.renew_lease(
            issues, issue_id, owner, lease_id, now_ns=now_ns, expiry_ns=expiry_ns
        )

    row = _edit_existing_row(path, edit, now=now, timeout_s=timeout_s)
    view = leases.claimed_issue_view(row, now_ns)
    return _issue_document("issue.lease_renew", path, view, changed=True)


def release_lease(
    path: str,
    issue_id: str,
    assignee: str,
    lease_id: str | None = None,
    *,
    now: datetime,
    timeout_s: float,
) -> dict[str, Any]:
    """`issue lease-release`: the holder gives its active lease up; the issue is open again."""
    owner = leases.required_assignee(assignee)
    now_ns, _ = _now(now)

    def edit(issues: IssueMap) -> IssueRow:
        return leases.release_lease(issues, issue_id, owner, lease_id, now_ns=now_ns)

    row = _edit_existing_row(path, edit, now=now, timeout_s=timeout_s)
    view = leases.claimed_issue_view(row, now_ns)
    return _issue_document("issue.lease_release", path, view, changed=True)


# --- dependency writers ------------------------------------------------------------------------


def _edge_document(action: str, path: str, dependency: dict[str, str]) -> dict[str, Any]:
    return {"action": action, "issuesPath": path, "dependency": dependency}


def dep_add(
    path: str,
    issue_id: str,
    target: str,
    *,
    kind: str,
    created_by: str,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
) -> dict[str, Any]:
    _, now_text = _now(now)

    def edit(issues: IssueMap) -> IssueRow:
        return dependencies.add_dependency(issues, issue_id, target, kind, created_by, now_text)

    _edit_existing_row(path, edit, now=now, timeout_s=timeout_s, on_row=on_row)
    edge = {"issueId": issue_id, "dependsOnId": target, "type": kind}
    return _edge_document("dep.add", path, edge)


def dep_remove(
    path: str,
    issue_id: str,
    target: str,
    *,
    kind: str,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
) -> dict[str, Any]:
    _, now_text = _now(now)

    def edit(issues: IssueMap) -> IssueRow:
        return dependencies.remove_dependency(issues, issue_id, target, kind, now_text)

    _edit_existing_row(path, edit, now=now, timeout_s=timeout_s, on_row=on_row)
    edge = {"issueId": issue_id, "dependsOnId": target, "type": kind}
    return _edge_document("dep.remove", path, edge)


def dep_replace(
    path: str,
    issue_id: str,
    target: str,
    *,
    from_kind: str,
    to_kind: str,
    created_by: str,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
) -> dict[str, Any]:
    _, now_text = _now(now)

    def edit(issues: IssueMap) -> IssueRow:
        return dependencies.replace_dependency(
            issues, issue_id, target, from_kind, to_kind, created_by, now_text
        )

    _edit_existing_row(path, edit, now=now, timeout_s=timeout_s, on_row=on_row)
    edge = {
        "issueId": issue_id,
        "dependsOnId": target,
        "fromType": from_kind,
        "toType": to_kind,
        "createdBy": created_by,
    }
    return _edge_document("dep.replace", path, edge)
