"""Creating issues and changing their fields the way the reference's `Issue` methods do
(specs/issue-memory.md "Leases")."""

from __future__ import annotations

from premath.errors import Conflict, InputInvalid
from premath.lean import NamedTuple
from premath.models.issue_row import DEFAULT_STATUS, FIELD_ORDER, RowInvalid, normalize_issue_type
from premath.models.vocabulary import KNOWN_STATUSES
from premath.store.issues_file import IssueMap
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import IssueRow

AUTO_ID_PREFIX = "bd-"


def is_in_progress(status: str) -> bool:
    """The one status that may hold a lease; compared trimmed and case-insensitively
    (specs/issue-memory.md "Graph rules")."""
    return rust_trim(status).lower() == "in_progress"


_FIELD_INDEX = {name: index for index, name in enumerate(FIELD_ORDER)}


def put_field(row: IssueRow, field: str, value: Any) -> None:
    """Set a field in place, keeping the keys in stored field order (rows are encoded as is)."""
    fields: dict[str, Any] = row  # type: ignore[assignment]
    if field in fields:
        fields[field] = value
        return
    fields[field] = value
    ordered = sorted(fields.items(), key=lambda item: _FIELD_INDEX[item[0]])
    fields.clear()
    fields.update(ordered)


def set_text(row: IssueRow, field: str, value: str) -> None:
    """Set an optional text field; the empty string removes it, as serde omits it on write."""
    if value:
        put_field(row, field, value)
    else:
        row.pop(field, None)  # type: ignore[misc]


def input_warnings(*, title: str | None = None, status: str | None = None) -> list[str]:
    """What is stored as given but probably wrong: an unknown status, a blank title."""
    warnings = []
    if status is not None and status not in KNOWN_STATUSES:
        warnings.append(
            f"status {status!r} is not one of {', '.join(KNOWN_STATUSES)}: stored as given, but "
            "premath treats it as none of them (not ready, not closed)"
        )
    if title is not None and not title.strip():
        warnings.append("the title is blank: stored as given; give the issue a title")
    return warnings


def set_status(row: IssueRow, status: str, now_text: str) -> None:
    """`Issue::set_status`: bump `updated_at`; leaving in_progress drops the lease; `closed`
    (exact) sets `closed_at` once, any other status clears it."""
    row["status"] = status
    row["updated_at"] = now_text
    if not is_in_progress(status):
        row.pop("lease", None)
    if status == "closed":
        if "closed_at" not in row:
            put_field(row, "closed_at", now_text)
    else:
        row.pop("closed_at", None)


def checked_issue_type(value: str) -> str:
    try:
        return normalize_issue_type(value)
    except RowInvalid as exc:
        raise InputInvalid(str(exc)) from None


def next_auto_id(issues: IssueMap) -> str:
    """The smallest unused `bd-N` (N >= 1): auto ids fill gaps, as the reference's do
    (specs/issue-memory.md "Graph rules")."""
    number = 1
    while f"{AUTO_ID_PREFIX}{number}" in issues:
        number += 1
    return f"{AUTO_ID_PREFIX}{number}"


class NewIssue(NamedTuple):
    """What `issue add` and `issue discover` take for a new issue."""

    title: str
    issue_id: str | None = None
    """None: the smallest unused `bd-N`."""
    description: str = ""
    status: str = DEFAULT_STATUS
    priority: int = 2
    issue_type: str = "task"
    assignee: str = ""
    owner: str = ""


def new_issue(issues: IssueMap, new: NewIssue, now_text: str) -> IssueRow:
    """Insert a new issue (not yet saved); its status goes through set_status."""
    kind = checked_issue_type(new.issue_type)
    chosen = next_auto_id(issues) if new.issue_id is None else new.issue_id
    if chosen in issues:
        raise Conflict(f"issue already exists: {chosen}")
    row: IssueRow = {
        "id": chosen,
        "title": new.title,
        "status": new.status,
        "priority": new.priority,
        "issue_type": kind,
        "created_at": now_text,
        "updated_at": now_text,
        "ephemeral": False,
    }
    set_text(row, "description", new.description)
    set_text(row, "assignee", new.assignee)
    set_text(row, "owner", new.owner)
    set_status(row, new.status, now_text)
    issues[chosen] = row
    return row
