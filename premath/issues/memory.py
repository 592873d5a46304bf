"""Issue memory operations on a store path: what each `issue` / `dep` command does.

Every function takes the issues path and `now` (writers also the lock timeout), runs the pure
logic of `graph`, `leases`, `dependencies`, `lifecycle` and `check` on the loaded store, and
returns typed values: rows, lease changes, reports. `premath.issues.documents` renders them as
the commands' JSON documents. Readers load without the lock; writers go through `mutate_store`
(lock, load, change, atomic rewrite, unlock).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping

from premath.errors import InputInvalid, IoFailure, NotFound
from premath.issues import dependencies, graph, leases, lifecycle
from premath.issues.graph import BlockedIssue, Integrity
from premath.issues.leases import LeaseChange, LeaseProjection
from premath.lean import NamedTuple, datetime
from premath.store.issues_file import (
    Changes,
    IssueMap,
    WarmStores,
    edit_chosen_row,
    load_issues,
    load_slim,
    mutate_store,
    require_store_file,
)
from premath.text import rust_trim
from premath.timefmt import epoch_nanos, format_autosi_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NotRequired, TypedDict, Unpack

    from premath.issues.check import CheckReport
    from premath.models.issue_row import DependencyRow, IssueRow
    from premath.models.vocabulary import GraphScope, LeaseState

    class StoreWrite(TypedDict):
        """What every writer takes besides its own arguments (`ops.WriteTerms.store_terms`)."""

        now: datetime
        timeout_s: float
        on_row: NotRequired[RowHook | None]
        warm: NotRequired[WarmStores | None]


def _now(now: datetime) -> tuple[int, str]:
    now_ns = epoch_nanos(now)
    return now_ns, format_autosi_z(now_ns)


def read_store(path: str, now: datetime) -> IssueMap:
    """The store for a read-only command (no lock); a missing file is an error."""
    return load_issues(path, now)


# --- readers -----------------------------------------------------------------------------------


def _slim_or_full(
    path: str, now: datetime, slim: Callable[[dict[str, Any]], IssueRow | None]
) -> IssueMap:
    """The store as a reader needs it: slim rows of a big store in our bytes (D26-4), else the
    full load. Whatever the way, the reader's own logic (and order) applies to the result."""
    issues = load_slim(path, slim)
    return read_store(path, now) if issues is None else issues


_LISTED_OPTIONAL = ("assignee", "owner", "lease")
"""What `issue list` shows of a row (`documents.lease_summary`: the MCP tools' item, D25-1) but
for the fields every row has, which `_listed` copies by name."""


def list_issues(
    path: str, *, now: datetime, status: str | None = None, assignee: str | None = None
) -> list[IssueRow]:
    """Issues in claim-next's order (D25-1), only those with exactly `status` / `assignee`."""

    def listed(row: dict[str, Any]) -> IssueRow | None:
        return _listed(row) if _wanted(row, status, assignee) else None

    return filter_issues(_slim_or_full(path, now, listed), status=status, assignee=assignee)


def _listed(row: dict[str, Any]) -> IssueRow:
    """The fields of `row` that `issue list` shows. One dict display for the fields every row
    has: 100k rows are copied in a third of the time a comprehension over all names takes."""
    listed = {
        "id": row["id"],
        "title": row["title"],
        "status": row["status"],
        "priority": row["priority"],
        "issue_type": row["issue_type"],
    }
    for key in _LISTED_OPTIONAL:
        if key in row:
            listed[key] = row[key]
    return listed  # type: ignore[return-value]


def filter_issues(
    issues: IssueMap, *, status: str | None = None, assignee: str | None = None
) -> list[IssueRow]:
    """The rows with exactly `status` / `assignee` when given, in claim-next's order (D25-1)."""
    rows = [row for row in issues.values() if _wanted(row, status, assignee)]
    rows.sort(key=leases.claim_order_once)
    return rows


def _wanted(row: Mapping[str, Any], status: str | None, assignee: str | None) -> bool:
    return (status is None or row["status"] == status) and (
        assignee is None or row.get("assignee", "") == assignee
    )


def _status_and_edges() -> Callable[[dict[str, Any]], IssueRow]:
    """A row as graph rules read it: its status and edges (one shared dict per status for a
    row without edges)."""
    shared: dict[str, IssueRow] = {}

    def slim(row: dict[str, Any]) -> IssueRow:
        status = row["status"]
        dependencies = row.get("dependencies")
        if dependencies:
            return {"status": status, "dependencies": dependencies}  # type: ignore[typeddict-item]
        found = shared.get(status)
        if found is None:
            found = shared[status] = {"status": status}  # type: ignore[typeddict-item]
        return found

    return slim


def ready(path: str, *, now: datetime) -> list[IssueRow]:
    """Open issues whose blocking dependencies are all closed, in the order claim-next takes
    them (D25-1; the reference lists them by id)."""
    status_only = _status_and_edges()

    def slim(row: dict[str, Any]) -> IssueRow:
        dependencies = row.get("dependencies")
        if row["status"] != "open":
            # Another row's edges stored here still count (`graph.foreign_edges`); own ones
            # of an issue that is not open never do.
            issue_id = row["id"]
            if dependencies and any(edge["issue_id"] != issue_id for edge in dependencies):
                return {"status": row["status"], "dependencies": dependencies}  # type: ignore[typeddict-item]
            return status_only({"status": row["status"]})
        kept: dict[str, Any] = {key: row[key] for key in ("id", "title", "status", "priority")}
        if dependencies is not None:
            kept["dependencies"] = dependencies
        return kept  # type: ignore[return-value]

    return graph.ready_issues(_slim_or_full(path, now, slim), order=leases.claim_order)


def blocked(path: str, *, now: datetime) -> list[BlockedIssue]:
    return graph.blocked_issues(read_store(path, now))


def check(path: str, *, now: datetime, note_warn_threshold: int) -> CheckReport:
    from premath.issues.check import check_issues  # its patterns: only `issue check` needs them

    return check_issues(read_store(path, now), note_warn_threshold)


def lease_projection(path: str, *, now: datetime) -> LeaseProjection:
    now_ns, _ = _now(now)
    return leases.lease_projection(read_store(path, now), now_ns)


def lease_state(path: str, issue_id: str, *, now: datetime) -> tuple[IssueRow | None, LeaseState]:
    """The issue's row (None: not in the store) and its lease state for the loop's handoff."""
    require_store_file(path)
    row = read_store(path, now).get(issue_id)
    now_ns, _ = _now(now)
    return row, leases.loop_lease_state(row, now_ns)


class EdgeProjection(NamedTuple):
    """Every edge in `dep project` order, and the cycle check over all issues."""

    edges: list[DependencyRow]
    integrity: Integrity


def dep_project(path: str, *, now: datetime) -> EdgeProjection:
    issues = read_store(path, now)
    return EdgeProjection(graph.sorted_edges(issues), graph.integrity(issues, "full"))


def dep_diagnostics(path: str, *, now: datetime, scope: GraphScope) -> Integrity:
    graph_row = _status_and_edges()

    def slim(row: dict[str, Any]) -> IssueRow | None:
        # An issue out of scope counts as missing in every graph rule: it is left out, and the
        # rest is all in scope.
        return graph_row(row) if graph.in_scope(row, scope) else None  # type: ignore[arg-type]

    @functools.cache
    def edgeless(status: str) -> IssueRow | None:  # a store holds a handful of statuses
        return slim({"status": status})

    issues = load_slim(path, slim, edgeless)
    if issues is not None:
        return graph.integrity(issues, "full")
    return graph.integrity(read_store(path, now), scope)


# --- issue writers -----------------------------------------------------------------------------
# Each writer is its own arguments, the `StoreWrite` terms and one change under the lock, run by
# `_write_row`, which reports the row's id to `mutate_store` so that only that row is encoded.


RowHook = Callable[["IssueRow"], None]
"""Runs under the store lock on the row a writer changed, before the save (the MCP write
witness is attached this way)."""


def _write_row(
    path: str, change: Callable[[IssueMap], IssueRow], store: StoreWrite, *, must_exist: bool = True
) -> IssueRow:
    """The one wrapper around every writer: under the store lock `change` adds a row or edits
    one existing row in place and returns it (or raises, leaving the file as it was); `on_row`
    sees it there before the save, and only that row is encoded again. `must_exist`: a
    missing file is refused before the lock is taken (D25-4)."""
    if must_exist:
        require_store_file(path)
    on_row = store.get("on_row")

    def mutate(issues: IssueMap) -> tuple[IssueRow, Changes]:
        row = change(issues)
        if on_row is not None:
            on_row(row)
        return row, (row["id"],)

    return mutate_store(
        path, mutate, now=store["now"], timeout_s=store["timeout_s"], warm=store.get("warm")
    )


def add_issue(
    path: str,
    title: str,
    *,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
    warm: WarmStores | None = None,
    **fields: Any,
) -> IssueRow:
    """`issue add`: creates the file (and its folders) when missing. `fields`: `NewIssue`'s."""
    new = lifecycle.NewIssue(title=title, **fields)
    _, now_text = _now(now)
    lifecycle.checked_issue_type(new.issue_type)
    store: StoreWrite = {"now": now, "timeout_s": timeout_s, "on_row": on_row, "warm": warm}
    return _write_row(
        path, lambda issues: lifecycle.new_issue(issues, new, now_text), store, must_exist=False
    )


def update_issue(
    path: str,
    issue_id: str,
    *,
    title: str | None = None,
    description: str | None = None,
    notes: str | None = None,
    status: str | None = None,
    priority: int | None = None,
    assignee: str | None = None,
    owner: str | None = None,
    before: RowHook | None = None,
    **store: Unpack[StoreWrite],
) -> IssueRow:
    """`issue update`: given fields only; a status change goes through set_status, so closing
    releases the lease (the assignee stays). `before` sees the row under the lock before any
    change (it is then changed in place: read what you need)."""
    texts = {"description": description, "notes": notes, "assignee": assignee, "owner": owner}
    nothing = title is None and status is None and priority is None
    nothing = nothing and all(value is None for value in texts.values())
    _, now_text = _now(store["now"])

    def edit(issues: IssueMap) -> IssueRow:
        row = issues.get(issue_id)
        if row is None:
            raise NotFound(f"issue not found: {issue_id}")
        if nothing:
            raise InputInvalid("no update fields provided")
        if before is not None:
            before(row)
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

    return _write_row(path, edit, store)


def discover_issue(
    path: str,
    parent_id: str,
    title: str,
    *,
    now: datetime,
    timeout_s: float,
    on_row: RowHook | None = None,
    warm: WarmStores | None = None,
    **fields: Any,
) -> IssueRow:
    """`issue discover`: a new open issue with a `discovered-from` edge to its parent.
    `fields`: `NewIssue`'s but `status`."""
    new = lifecycle.NewIssue(title=title, **fields)
    require_store_file(path)  # before the type check
    _, now_text = _now(now)
    lifecycle.checked_issue_type(new.issue_type)

    def add(issues: IssueMap) -> IssueRow:
        if parent_id not in issues:
            raise NotFound(f"parent issue not found: {parent_id}")
        row = lifecycle.new_issue(issues, new, now_text)
        edge = {"issue_id": row["id"], "depends_on_id": parent_id, "type": "discovered-from"}
        lifecycle.put_field(row, "dependencies", [edge])
        return row

    store: StoreWrite = {"now": now, "timeout_s": timeout_s, "on_row": on_row, "warm": warm}
    return _write_row(path, add, store, must_exist=False)


# --- leases ------------------------------------------------------------------------------------


def _required_owner(assignee: str) -> str:
    """The trimmed assignee; blank is refused without a failure class (the CLI's own check,
    made before the transport's)."""
    owner = rust_trim(assignee)
    if not owner:
        raise InputInvalid("assignee is required")
    return owner


def claim(path: str, issue_id: str, assignee: str, **store: Unpack[StoreWrite]) -> IssueRow:
    """`issue claim`: default lease (TTL 3600 s); a missing file is refused before the lock
    (D25-4: the reference reported `issue not found` and left the lock's folder behind)."""
    owner = _required_owner(assignee)
    now_ns, _ = _now(store["now"])
    expiry_ns = leases.lease_expiry(now_ns, None, None)

    def edit(issues: IssueMap) -> IssueRow:
        return leases.claim_issue(issues, issue_id, owner, now_ns=now_ns, expiry_ns=expiry_ns)

    return _write_row(path, edit, store)


def claim_next(
    path: str,
    assignee: str,
    *,
    now: datetime,
    timeout_s: float,
    lease_id: str | None = None,
    ttl_seconds: int | None = None,
    include_escalations: bool = False,
) -> IssueRow | None:
    """`issue claim-next`: the claimed issue, or None when nothing is claimable.

    Unlike the reference, also reclaims an in_progress issue whose lease is stale (D3-1), picks
    by priority, then natural id order (D3-2), and leaves escalations to people unless
    `include_escalations` (D30a-1).
    """
    owner = _required_owner(assignee)
    ttl = leases.DEFAULT_TTL_SECONDS if ttl_seconds is None else ttl_seconds
    if not leases.MIN_TTL_SECONDS <= ttl <= leases.MAX_TTL_SECONDS:
        raise InputInvalid(f"{leases.TTL_RANGE_TEXT} (got {ttl})")
    now_ns, _ = _now(now)
    expiry_ns = leases.lease_expiry(now_ns, ttl, None)

    def choose(issues: IssueMap) -> IssueRow | None:
        return leases.claim_choice(issues, owner, now_ns, include_escalations=include_escalations)

    def edit(row: IssueRow) -> None:
        leases.grant_claim(row, owner, now_ns=now_ns, expiry_ns=expiry_ns, lease_id=lease_id)

    missing = IoFailure(f"issues file not found: {path} (lease_mutation_store_io)")
    if not os.path.exists(path):
        raise missing  # before the lock, whose folder would be left behind (D25-4)
    row = edit_chosen_row(path, choose, edit, now=now, timeout_s=timeout_s)
    if row is None and not os.path.exists(path):
        raise missing
    return row


def renew_lease(
    path: str,
    issue_id: str,
    assignee: str,
    lease_id: str,
    *,
    ttl_seconds: int | None = None,
    expires_at: str | None = None,
    **store: Unpack[StoreWrite],
) -> LeaseChange:
    """`issue lease-renew`: the holder extends its active lease (the `issue.lease_renew` action);
    `on_row` edits the renewed row in the same write (the merge queue's transient state)."""
    owner = leases.required_assignee(assignee)
    now_ns, _ = _now(store["now"])
    expiry_ns = leases.lease_expiry(now_ns, ttl_seconds, expires_at)

    def edit(issues: IssueMap) -> IssueRow:
        return leases.renew_lease(
            issues, issue_id, owner, lease_id, now_ns=now_ns, expiry_ns=expiry_ns
        )

    return LeaseChange(_write_row(path, edit, store), now_ns)


def release_lease(
    path: str,
    issue_id: str,
    assignee: str,
    lease_id: str | None = None,
    **store: Unpack[StoreWrite],
) -> LeaseChange:
    """`issue lease-release`: the holder gives its active lease up; the issue is open again."""
    owner = leases.required_assignee(assignee)
    now_ns, _ = _now(store["now"])

    def edit(issues: IssueMap) -> IssueRow:
        return leases.release_lease(issues, issue_id, owner, lease_id, now_ns=now_ns)

    return LeaseChange(_write_row(path, edit, store), now_ns)


# --- dependency writers ------------------------------------------------------------------------


def dep_add(
    path: str,
    issue_id: str,
    target: str,
    *,
    kind: str,
    created_by: str,
    **store: Unpack[StoreWrite],
) -> IssueRow:
    """`dep add`: the edge's issue after the change."""
    _, now_text = _now(store["now"])

    def edit(issues: IssueMap) -> IssueRow:
        return dependencies.add_dependency(issues, issue_id, target, kind, created_by, now_text)

    return _write_row(path, edit, store)


def dep_remove(
    path: str, issue_id: str, target: str, *, kind: str, **store: Unpack[StoreWrite]
) -> IssueRow:
    """`dep remove`: the edge's issue after the change."""
    _, now_text = _now(store["now"])

    def edit(issues: IssueMap) -> IssueRow:
        return dependencies.remove_dependency(issues, issue_id, target, kind, now_text)

    return _write_row(path, edit, store)


def dep_replace(
    path: str,
    issue_id: str,
    target: str,
    *,
    from_kind: str,
    to_kind: str,
    created_by: str,
    **store: Unpack[StoreWrite],
) -> IssueRow:
    """`dep replace`: the edge's issue after the change."""
    _, now_text = _now(store["now"])

    def edit(issues: IssueMap) -> IssueRow:
        return dependencies.replace_dependency(
            issues, issue_id, target, from_kind, to_kind, created_by, now_text
        )

    return _write_row(path, edit, store)
