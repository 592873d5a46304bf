"""The dashboard's board: every issue with its column, lease and place in the dependency graph.

Rows are the raw issue objects the surface is built from (inputs.InputReader), so the board and
the surface's partition never disagree. Columns: `closed`, `needs_person` (an escalation the loop
filed, not closed, or an issue an escalation blocked: work for a person, D30a-1), `in_progress`,
`ready` (open, every blocker closed), `blocked` (open with an open blocker, status `blocked`, or
any other status).
Leases are judged against the clock here (the surface judges them against its reference time,
quirk 21). The bottleneck is the open issue that blocks the most open work, directly or through
other issues.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from premath.issues.leases import natural_key
from premath.models.vocabulary import is_escalation_title
from premath.observe.coherence import BLOCKING_TYPES
from premath.observe.facts import Document, Instant, IssueFacts, Lease

Column = Literal["needs_person", "blocked", "ready", "in_progress", "closed"]
COLUMNS: tuple[Column, ...] = ("needs_person", "blocked", "ready", "in_progress", "closed")


def by_id(issue_id: str) -> tuple[object, ...]:
    """Natural order, then byte order: `bd-5, bd-9, bd-11`."""
    return (natural_key(issue_id), issue_id)


def _blockers(row: IssueFacts) -> list[str]:
    return [d.target or "(no target)" for d in row.dependencies if d.kind in BLOCKING_TYPES]


def _lease(lease: Lease | None, now: Instant) -> Document | None:
    if lease is None:
        return None
    expiry = lease.expiry
    return {
        "owner": lease.owner,
        "leaseId": lease.lease_id,
        "expiresAt": lease.expires_text,
        "expiresAtMs": None if expiry is None else expiry[0] * 1000 + expiry[1] // 1_000_000,
        "state": "unknown" if expiry is None else ("stale" if expiry <= now else "active"),
    }


def _downstream(open_ids: set[str], dependents: dict[str, list[str]]) -> dict[str, int]:
    """For each open issue, how many open issues wait on it, directly or transitively.

    Sets of dependents are unioned bottom-up as Python ints used as bit sets, one bit per open
    issue, so a 10,000-issue graph costs a few milliseconds; an issue on a cycle gets the
    dependents found before the cycle closed (cycles are reported by the surface)."""
    bit = {issue_id: 1 << index for index, issue_id in enumerate(sorted(open_ids))}
    reach: dict[str, int] = {}
    for start in sorted(open_ids):
        if start in reach:
            continue
        stack = [(start, iter(dependents.get(start, ())))]
        on_path = {start}
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(node)
                total = 0
                for dependent in dependents.get(node, ()):
                    total |= bit[dependent] | reach.get(dependent, 0)
                reach[node] = total
            elif child not in reach and child not in on_path:
                on_path.add(child)
                stack.append((child, iter(dependents.get(child, ()))))
    return {issue_id: (reach[issue_id] & ~bit[issue_id]).bit_count() for issue_id in reach}


@dataclass(frozen=True)
class Board:
    issues: dict[str, Document]
    """Compact issue records by id, as the page shows them."""
    bottleneck: str | None
    """The open issue with the most open work downstream (ties: smallest id), if any waits."""


def issue_board(rows: Iterable[IssueFacts], now: Instant) -> Board:
    rows = list(rows)
    statuses = {row.id: row.status for row in rows}
    open_ids = {issue_id for issue_id, status in statuses.items() if status != "closed"}
    dependents: dict[str, list[str]] = {}
    for row in rows:
        if row.id in open_ids:
            for target in _blockers(row):
                if target in open_ids and target != row.id:
                    dependents.setdefault(target, []).append(row.id)
    downstream = _downstream(open_ids, dependents)
    issues: dict[str, Document] = {}
    for row in rows:
        status = row.status or ""
        # natural order, as issue listings use (bd-5 before bd-11; D25-1)
        blockers = sorted({t for t in _blockers(row) if statuses.get(t) != "closed"}, key=by_id)
        column: Column
        escalation = is_escalation_title(row.title)
        if status == "closed":
            column = "closed"
        elif row.waits_for_person:
            column = "needs_person"  # an escalation, or blocked by one (D30a-1)
        elif status == "in_progress":
            column = "in_progress"
        elif status == "open" and not blockers:
            column = "ready"
        else:
            column = "blocked"
        issues[row.id] = {
            "id": row.id,
            "title": row.title,
            "status": status,
            "column": column,
            "priority": row.priority,
            "assignee": row.assignee,
            "blockers": blockers,
            "dependsOn": sorted(
                {d.target for d in row.dependencies if d.target is not None}, key=by_id
            ),
            "downstream": downstream.get(row.id, 0),
            "lease": _lease(row.lease, now),
            "updatedAt": row.updated_text,
            "escalation": escalation,
            "mergeQueue": row.merge_queue,
        }
    ranked = sorted((-count, issue_id) for issue_id, count in downstream.items() if count > 0)
    return Board(issues, ranked[0][1] if ranked else None)
