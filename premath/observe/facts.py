"""An issue row reduced to what the surface and the board read (observation.md §2.3).

Each field is read once, as the reference reads it: `status`, `assignee`, `id` with `text`
(trimmed, blank is absent); dependencies with the target from `depends_on_id` or `dependsOnId`
and the type from `type` or `dep_type` (lower-cased, `_` as `-`); the lease's expiry from
`expires_at` or `expiresAt` and the update time from `updated_at` or `updatedAt`, each parsed as
strict RFC 3339 (the second spelling only when the first does not parse). A live reader keeps
the facts of each stored line, so a rewrite of one issue re-reads one row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from premath.models.merge_queue import current_queue_record
from premath.models.vocabulary import waits_for_person
from premath.text import rust_trim
from premath.timefmt import parse_strict_rfc3339

Document = dict[str, Any]
Instant = tuple[int, int]
"""UTC epoch seconds and nanoseconds, compared as a pair."""


def text(value: Any) -> str | None:
    """A JSON string, trimmed; anything else, or a blank string, is absent."""
    if not isinstance(value, str):
        return None
    trimmed = rust_trim(value)
    return trimmed or None


def instant(value: str | None) -> Instant | None:
    return None if value is None else parse_strict_rfc3339(value)


def _either(value: Document, first: str, second: str) -> Instant | None:
    return instant(text(value.get(first))) or instant(text(value.get(second)))


@dataclass(frozen=True, slots=True)
class Dependency:
    target: str | None
    kind: str | None
    """The type, lower-cased with `_` as `-`; None when absent."""


@dataclass(frozen=True, slots=True)
class Lease:
    owner: str | None
    lease_id: str | None
    expires_text: str | None
    expiry: Instant | None


@dataclass(frozen=True, slots=True)
class IssueFacts:
    id: str
    status: str | None
    assignee: str | None
    title: str
    priority: int | None
    lease: Lease | None
    """Present when the row's `lease` is a JSON object."""
    updated: Instant | None
    updated_text: str | None
    dependencies: tuple[Dependency, ...]
    waits_for_person: bool = False
    """An escalation not closed, or an issue an escalation blocked (D30a-1)."""
    merge_queue: Document | None = None
    """What the merge queue is doing with the issue (queued, merging, verifying, reported by its
    holder) or its last verdict from the notes (specs/remote-workers.md "Merge queue")."""


def _dependency(value: Document) -> Dependency:
    kind = text(value.get("type")) or text(value.get("dep_type"))
    return Dependency(
        text(value.get("depends_on_id")) or text(value.get("dependsOnId")),
        None if kind is None else kind.lower().replace("_", "-"),
    )


def issue_facts(issue_id: str, row: Document) -> IssueFacts:
    lease = row.get("lease")
    dependencies = row.get("dependencies")
    title = row.get("title")
    priority = row.get("priority")
    return IssueFacts(
        id=issue_id,
        status=text(row.get("status")),
        assignee=text(row.get("assignee")),
        title=title if isinstance(title, str) else "",
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
        lease=None
        if not isinstance(lease, dict)
        else Lease(
            text(lease.get("owner")),
            text(lease.get("lease_id")) or text(lease.get("leaseId")),
            text(lease.get("expires_at")) or text(lease.get("expiresAt")),
            _either(lease, "expires_at", "expiresAt"),
        ),
        updated=_either(row, "updated_at", "updatedAt"),
        updated_text=text(row.get("updated_at")) or text(row.get("updatedAt")),
        dependencies=tuple(_dependency(item) for item in dependencies if isinstance(item, dict))
        if isinstance(dependencies, list)
        else (),
        waits_for_person=waits_for_person(text(row.get("status")), title, row.get("notes")),
        merge_queue=current_queue_record(row),
    )
