"""`issue.event.v1` rows: the issue memory's event log, checked with plain code (reference §A9).

An event is `schema, event_id, issue_id, occurred_at, actor?` plus its action, flattened:
`{"action":"upsert_issue","issue":{<issue row>}}` or
`{"action":"add_dependency","depends_on_id":...,"type":...,"created_by"?}`. A checked event is a
new dict in that field order with every value in its stored form (the issue payload through
`check_row`), so `orjson.dumps` of it is the line the reference writes and hashes.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from premath.models.issue_row import (
    RowInvalid,
    check_dependency_type,
    check_row,
    stored_row_or_none,
    stored_timestamp,
)
from premath.models.serde import describe
from premath.timefmt import stamps_are_stored

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NotRequired

    from premath.models.issue_row import IssueRow

EVENT_SCHEMA = "issue.event.v1"
EventAction = Literal["upsert_issue", "add_dependency"]
UPSERT: EventAction = "upsert_issue"
ADD_DEPENDENCY: EventAction = "add_dependency"
_MISSING: Any = object()


class IssueEvent(TypedDict):
    schema: str
    event_id: str
    issue_id: str
    occurred_at: str
    actor: NotRequired[str]
    action: EventAction
    issue: NotRequired[IssueRow]
    depends_on_id: NotRequired[str]
    type: NotRequired[str]
    created_by: NotRequired[str]


def _required_string(value: dict[str, Any], field: str) -> str:
    item = value.get(field, _MISSING)
    if item is _MISSING:
        raise RowInvalid(f"missing field `{field}`")
    if type(item) is not str:
        raise RowInvalid(f"invalid type: {describe(item)}, expected a string (field `{field}`)")
    return item


def _optional_string(value: dict[str, Any], field: str) -> str:
    item = value.get(field, "")
    if type(item) is not str:
        raise RowInvalid(f"invalid type: {describe(item)}, expected a string (field `{field}`)")
    return item


def check_event(value: Any, now_text: str) -> IssueEvent:
    """The stored form of one decoded event; raises RowInvalid with serde's wording.

    `schema` defaults to `issue.event.v1` and is checked only by replay (the reference reads any
    schema string); `dep_type` is read as `type`; unknown fields are dropped.
    """
    if type(value) is not dict:
        raise RowInvalid(f"invalid type: {describe(value)}, expected struct IssueEvent")
    schema = value.get("schema", EVENT_SCHEMA)
    if type(schema) is not str:
        raise RowInvalid(f"invalid type: {describe(schema)}, expected a string (field `schema`)")
    event: dict[str, Any] = {
        "schema": schema,
        "event_id": _required_string(value, "event_id"),
        "issue_id": _required_string(value, "issue_id"),
    }
    occurred = value.get("occurred_at", _MISSING)
    if occurred is _MISSING:
        raise RowInvalid("missing field `occurred_at`")
    event["occurred_at"] = stored_timestamp(occurred, "occurred_at")
    actor = _optional_string(value, "actor")
    if actor:
        event["actor"] = actor
    action = value.get("action", _MISSING)
    if action is _MISSING:
        raise RowInvalid("missing field `action`")
    if action == UPSERT:
        event["action"] = UPSERT
        issue = value.get("issue", _MISSING)
        if issue is _MISSING:
            raise RowInvalid("missing field `issue`")
        stamps: list[str] = []
        row = stored_row_or_none(issue, stamps)
        fast = row is not None and stamps_are_stored(stamps)
        event["issue"] = row if fast else check_row(issue, now_text)
    elif action == ADD_DEPENDENCY:
        event["action"] = ADD_DEPENDENCY
        event["depends_on_id"] = _required_string(value, "depends_on_id")
        event["type"] = check_dependency_type(value)
        created_by = _optional_string(value, "created_by")
        if created_by:
            event["created_by"] = created_by
    elif type(action) is str:
        raise RowInvalid(f"unknown variant `{action}`, expected `upsert_issue` or `add_dependency`")
    else:
        raise RowInvalid(f"invalid type: {describe(action)}, expected variant identifier")
    return event  # type: ignore[return-value]


def upsert_event(row: IssueRow) -> IssueEvent:
    """Migration's upsert of one issue: its row without dependencies, at its `updated_at`."""
    issue = {key: value for key, value in row.items() if key != "dependencies"}
    return {
        "schema": EVENT_SCHEMA,
        "event_id": f"issue.upsert:{row['id']}",
        "issue_id": row["id"],
        "occurred_at": row["updated_at"],
        "action": UPSERT,
        "issue": issue,  # type: ignore[typeddict-item]
    }


def dependency_event(row: IssueRow, target: str, kind: str, created_by: str) -> IssueEvent:
    """Migration's add_dependency of one edge of `row`, at the row's `updated_at`."""
    event: IssueEvent = {
        "schema": EVENT_SCHEMA,
        "event_id": f"issue.add_dependency:{row['id']}:{target}:{kind}",
        "issue_id": row["id"],
        "occurred_at": row["updated_at"],
        "action": ADD_DEPENDENCY,
        "depends_on_id": target,
        "type": kind,
    }
    if created_by:
        event["created_by"] = created_by
    return event
