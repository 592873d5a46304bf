"""`issue_ready`'s result rendered once per store version and lease epoch.

Between writes to the file, the document only changes when some lease's expiry passes (a lease
turns stale, which can move an issue between the stale and contended lists) and in its
`checkedAt` time. So the rendered text is kept with the window of times it holds for, and a
call inside the window splices in its own `checkedAt`: at 10k issues the answer costs a copy
instead of a walk over every lease and a render of half a megabyte.
"""

from __future__ import annotations

from dataclasses import dataclass

from premath.issues import documents, graph, leases
from premath.issues.leases import stored_nanos
from premath.store.canonical import stdout_bytes
from premath.store.issues_file import FileIdentity, IssueMap
from premath.timefmt import format_offset

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_CHECKED_AT_KEY = '"checkedAt": "'


@dataclass(frozen=True, slots=True)
class ReadyView:
    """The rendered document of one store at times in `[since_ns, until_ns)`, around its
    `leaseProjection.checkedAt` value."""

    head: dict[str, Any]
    identity: FileIdentity | None
    issues: IssueMap
    since_ns: int
    until_ns: int
    before_checked_at: str
    after_checked_at: str

    def holds(
        self, head: dict[str, Any], identity: FileIdentity | None, issues: IssueMap, now_ns: int
    ) -> bool:
        """Whether the view is the document for this call: the same file, store object (a
        mutation changes the store in place, and then the file) and head, inside the window."""
        return (
            identity is not None
            and identity == self.identity
            and issues is self.issues
            and head == self.head
            and self.since_ns <= now_ns < self.until_ns
        )

    def text(self, now_ns: int) -> str:
        return f"{self.before_checked_at}{format_offset(now_ns)}{self.after_checked_at}"


def ready_document(head: dict[str, Any], issues: IssueMap, now_ns: int) -> dict[str, Any]:
    """`issue_ready`'s result: the ready issues with their leases' states, and the projection."""
    items = [
        {
            **documents.issue_summary(row),
            "lease": documents.lease_view(row, leases.LeaseChange(row, now_ns))
            if "lease" in row
            else None,
            **documents.escalation_mark(row),
        }
        for row in graph.ready_issues(issues, order=leases.claim_order)
    ]
    return {
        **head,
        "count": len(items),
        "items": items,
        "leaseProjection": documents.projection_fields(leases.lease_projection(issues, now_ns)),
    }


def next_lease_change(issues: IssueMap, now_ns: int) -> int | None:
    """The first expiry after `now_ns`: when some lease state next changes (None: never)."""
    future = [
        expiry
        for row in issues.values()
        if "lease" in row and (expiry := stored_nanos(row["lease"]["expires_at"])) > now_ns
    ]
    return min(future, default=None)


def render_ready(
    head: dict[str, Any], identity: FileIdentity | None, issues: IssueMap, now_ns: int
) -> ReadyView:
    """Render the document at `now_ns` and cut it around its `checkedAt` value (the last one:
    `leaseProjection` sorts after `items`, and a title's quotes are escaped)."""
    text = stdout_bytes(ready_document(head, issues, now_ns)).decode("utf-8").removesuffix("\n")
    checked_at = format_offset(now_ns)
    start = text.rindex(_CHECKED_AT_KEY + checked_at + '"') + len(_CHECKED_AT_KEY)
    until = next_lease_change(issues, now_ns)
    return ReadyView(
        head=head,
        identity=identity,
        issues=issues,
        since_ns=now_ns,
        until_ns=until if until is not None else 2**63,
        before_checked_at=text[:start],
        after_checked_at=text[start + len(checked_at) :],
    )
