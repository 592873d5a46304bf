"""Stores other tools wrote (Go's RFC3339Nano times: 1 to 9 fraction digits, trailing zeros
trimmed; hand-written ones, trailing zeros kept) take the fast paths, and those give what the
full row check gives: the same rows, the same rewritten bytes."""

import orjson
from hypothesis import given
from hypothesis import strategies as st

from premath.models.issue_row import (
    FIELD_ORDER,
    ISSUE_FIELDS,
    LEASE_FIELD_ORDER,
    TEXT_UNKNOWN,
    check_row,
    store_row_times,
    stored_times_text,
    text_form,
)
from tests.support.times import foreign_times

NOW_TEXT = "2026-03-01T10:00:00.123456Z"
TIME_FIELDS = {field.name for field in ISSUE_FIELDS if field.kind in ("stamp", "optional_stamp")}
TIME_FIELDS |= set(LEASE_FIELD_ORDER[2:])
EDGE_FIELDS = ("issue_id", "depends_on_id", "type", "created_by")
LOOKALIKES = ['_at":"2026-01-01T00:00:00.5Z"', "2026-01-01T00:00:00.5Z", "v1.50Z", '\\"x', "é"]
"""Text that looks like a time, or its key, inside a string value: never rewritten."""


TEXTS = st.sampled_from(LOOKALIKES) | st.text(alphabet='aZ0.":_\\', min_size=1, max_size=6)


@st.composite
def foreign_rows(draw):
    """A row in stored form but for its times, with string values that look like times."""
    row = {
        "id": draw(TEXTS),
        "title": draw(TEXTS),
        "status": draw(st.sampled_from(["open", "closed", "in_progress"])),
        "priority": draw(st.integers(0, 4)),
        "issue_type": "task",
    }
    if draw(st.booleans()):
        row["assignee"] = draw(TEXTS)
    if draw(st.booleans()):
        row["lease"] = {"lease_id": draw(TEXTS), "owner": draw(TEXTS)}
        row["lease"] |= {"acquired_at": draw(foreign_times()), "expires_at": draw(foreign_times())}
        if draw(st.booleans()):
            row["lease"]["renewed_at"] = draw(foreign_times())
    row |= {"created_at": draw(foreign_times()), "updated_at": draw(foreign_times())}
    if draw(st.booleans()):
        row["closed_at"] = draw(foreign_times())
    row["ephemeral"] = draw(st.booleans())
    if draw(st.booleans()):
        row["labels"] = draw(st.lists(TEXTS, min_size=1, max_size=2))
    if draw(st.booleans()):
        edge = {"issue_id": draw(TEXTS), "depends_on_id": draw(TEXTS), "type": "blocks"}
        row["dependencies"] = [edge | ({"created_by": draw(TEXTS)} if draw(st.booleans()) else {})]
    return row


@given(st.lists(foreign_rows(), min_size=1, max_size=6))
def test_foreign_times_are_stored_as_the_row_check_stores_them(rows):
    text = b"".join(orjson.dumps(row) + b"\n" for row in rows)
    expected = [check_row(row, NOW_TEXT) for row in rows]
    assert text_form(text) != TEXT_UNKNOWN
    assert stored_times_text(text) == b"".join(orjson.dumps(row) + b"\n" for row in expected)
    store_row_times(rows)
    assert rows == expected


def test_only_time_fields_have_keys_ending_in_at():
    """`stored_times_text` finds times by the `_at":"` before them."""
    keys = {*FIELD_ORDER, *LEASE_FIELD_ORDER, *EDGE_FIELDS}
    assert {key for key in keys if key.endswith("_at")} == TIME_FIELDS
