"""`premath.harness.step.v1`: one trajectory row, and the projection `query` prints.

specs/harness-trajectory.md states the rules (the reference's, in its order).
A row is a plain dict in the reference's field order with absent fields left out, so
`row_bytes` writes it as it stands. Two validators share every rule: `parse_step` builds the
normalised row (append, and the rows `query` returns), `step_order_fields` only checks a row and
returns what the projection sorts and counts by, for the hot loop over every row of a file.
A hypothesis test proves both accept and reject the same rows with the same messages.
"""

from __future__ import annotations

from premath.models.serde import (
    U64_MAX,
    checks_for,
    optional_string,
    string,
    string_list,
    typed_fields,
    unsigned,
)
from premath.models.vocabulary import STEP_KIND
from premath.text import RUST_WHITE_SPACE, clean_optional, normalize_refs, rust_trim
from premath.timefmt import NANOS_PER_SECOND, compiled, parse_strict_rfc3339

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, Literal

    QueryMode = Literal["latest", "failed", "retry-needed"]


STEP_SCHEMA: Final = 1
PROJECTION_KIND: Final = "premath.harness.trajectory.projection.v1"
ROW_STRUCT: Final = "struct HarnessTrajectoryRow"

# The CLI value is `retry-needed`; the projection says `retry_needed` (specs/harness-trajectory.md).
PROJECTION_MODE: dict[QueryMode, str] = {
    "latest": "latest",
    "failed": "failed",
    "retry-needed": "retry_needed",
}

REQUIRED_STRINGS = ("stepKind", "stepId", "action", "resultClass", "finishedAt")
OPTIONAL_STRINGS = ("issueId", "startedAt")
REF_LISTS = ("instructionRefs", "witnessRefs", "lineageRefs")
FIELD_ORDER = (  # the wire order (struct order in the reference); row dicts keep it
    "schema",
    "stepKind",
    "stepId",
    "issueId",
    "action",
    "resultClass",
    "instructionRefs",
    "witnessRefs",
    "lineageRefs",
    "startedAt",
    "finishedAt",
)
_REQUIRED = ("schema", *REQUIRED_STRINGS)

SUCCESS_CLASSES = frozenset({"accepted", "verified_accept", "completed", "success", "ok", "passed"})
RETRY_MARKERS = ("retry", "transient", "timeout", "network", "rate_limit")


class StepInvalid(ValueError):
    """A row that parses but breaks a rule of `normalize_row`; the message is the reference's."""


# ---- result classes -------------------------------------------------------------------------


def _class_key(result_class: str) -> str:
    return result_class.strip(RUST_WHITE_SPACE).lower().replace("-", "_")


def is_failed(result_class: str) -> bool:
    """Every class but the six success names counts as failed, unknown ones included."""
    return _class_key(result_class) not in SUCCESS_CLASSES


def is_retry_needed(result_class: str) -> bool:
    key = _class_key(result_class)
    return any(marker in key for marker in RETRY_MARKERS)


RESULT_FLAGS_CACHE: dict[str, tuple[bool, bool]] = {}
_CACHE_LIMIT = 4096


def result_flags(result_class: str) -> tuple[bool, bool]:
    """(failed, retry_needed), cached: a trajectory repeats a few dozen classes a million times."""
    flags = RESULT_FLAGS_CACHE.get(result_class)
    if flags is None:
        if len(RESULT_FLAGS_CACHE) >= _CACHE_LIMIT:
            RESULT_FLAGS_CACHE.clear()
        flags = RESULT_FLAGS_CACHE[result_class] = (
            is_failed(result_class),
            is_retry_needed(result_class),
        )
    return flags


# ---- instants -------------------------------------------------------------------------------

# A leap second is :59 plus up to 2e9-1 nanos (chrono's representation), so one integer orders
# instants exactly as chrono's (seconds, nanos) pairs when a second spans 2e9 steps.
_KEY_SCALE = 2 * NANOS_PER_SECOND
_MINUTE_CACHE_LIMIT = 65536
# `YYYY-MM-DDTHH:MM:` -> that minute's key (None if invalid), filled as rows are read.
_MINUTES: dict[str, int | None] = {}
# `SSZ` -> that second's share of the key: the tail of the `...:SSZ` shape we write.
_SECONDS_Z = {f"{second:02d}Z": second * _KEY_SCALE for second in range(60)}
# What follows `YYYY-MM-DDTHH:MM:` in a strict RFC3339 time: seconds, fraction, offset.
_TAIL = r"([0-5][0-9]|60)(?:\.([0-9]+))?(?:[Zz]|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))"


def _minute_of(prefix: str) -> int | None:
    """The key of a `YYYY-MM-DDTHH:MM:` prefix (None if invalid), parsed once, then cached."""
    if len(_MINUTES) >= _MINUTE_CACHE_LIMIT:
        _MINUTES.clear()
    parsed = None
    if len(prefix) == 17 and prefix[16] == ":":
        parsed = parse_strict_rfc3339(prefix + "00Z")
    minute = _MINUTES[prefix] = None if parsed is None else parsed[0] * _KEY_SCALE
    return minute


def instant_key(value: str) -> int | None:
    """The true instant of a strict RFC3339 string as one sortable integer, or None if invalid.

    Equal to `parse_strict_rfc3339` (seconds * 2e9 + nanos; a property test checks it), but fast
    on a trajectory: the date-and-minute prefix is parsed once per minute and cached, our own
    `...:SSZ` shape is two dictionary lookups, and other shapes only match their tail.
    """
    prefix = value[:17]
    minute = _MINUTES[prefix] if prefix in _MINUTES else _minute_of(prefix)
    if minute is None:
        return None
    second_key = _SECONDS_Z.get(value[17:])
    if second_key is not None:
        return minute + second_key
    tail = compiled(_TAIL).fullmatch(value, 17)
    if tail is None:
        return None
    second_text, fraction, sign, offset_hours, offset_minutes = tail.groups()
    second = int(second_text)
    nanos = int(fraction[:9].ljust(9, "0")) if fraction else 0
    if second == 60:
        second, nanos = 59, nanos + NANOS_PER_SECOND
    if sign is not None:
        offset = (int(offset_hours) * 60 + int(offset_minutes)) * 60
        second -= offset if sign == "+" else -offset
    return minute + second * _KEY_SCALE + nanos


# ---- rows -----------------------------------------------------------------------------------


_FIELD_CHECKS = {
    "schema": lambda value: unsigned(value, U64_MAX, "u64"),
    **checks_for(REQUIRED_STRINGS, string),
    **checks_for(OPTIONAL_STRINGS, optional_string),
    **checks_for(REF_LISTS, string_list),
}


def normalize_step(fields: dict[str, Any]) -> dict[str, Any]:
    """`normalize_row`: the checks in the reference's order, first wins (harness-trajectory.md).

    `fields` holds typed values (str, lists of str, None for absent options). Returns the row as
    written: field order, blank options and empty ref lists left out, times trimmed but verbatim.
    """
    schema = fields["schema"]
    if schema != STEP_SCHEMA:
        raise StepInvalid(f"schema mismatch (expected={STEP_SCHEMA}, actual={schema})")
    if rust_trim(fields["stepKind"]) != STEP_KIND:
        raise StepInvalid(f"stepKind mismatch (expected={STEP_KIND}, actual={fields['stepKind']})")
    step_id = rust_trim(fields["stepId"])
    if not step_id:
        raise StepInvalid("stepId must be non-empty")
    issue_id = clean_optional(fields.get("issueId"))
    action = rust_trim(fields["action"])
    if not action:
        raise StepInvalid("action must be non-empty")
    result_class = rust_trim(fields["resultClass"])
    if not result_class:
        raise StepInvalid("resultClass must be non-empty")
    refs = {name: normalize_refs(fields.get(name) or ()) for name in REF_LISTS}
    started_at = clean_optional(fields.get("startedAt"))
    finished_at = rust_trim(fields["finishedAt"])
    if not finished_at:
        raise StepInvalid("finishedAt must be non-empty")
    if instant_key(finished_at) is None:
        raise StepInvalid(f"finishedAt must be RFC3339: {finished_at}")
    if started_at is not None and instant_key(started_at) is None:
        raise StepInvalid(f"startedAt must be RFC3339: {started_at}")
    row: dict[str, Any] = {"schema": STEP_SCHEMA, "stepKind": STEP_KIND, "stepId": step_id}
    if issue_id is not None:
        row["issueId"] = issue_id
    row["action"] = action
    row["resultClass"] = result_class
    row.update((name, values) for name, values in refs.items() if values)
    if started_at is not None:
        row["startedAt"] = started_at
    row["finishedAt"] = finished_at
    return row


def parse_step(value: Any) -> dict[str, Any]:
    """A decoded JSON row, type-checked as serde does and normalised.

    Raises SchemaViolation (a parse error in the reference) or StepInvalid (a rule).
    """
    return normalize_step(typed_fields(value, ROW_STRUCT, _FIELD_CHECKS, _REQUIRED))


OrderFields = tuple[int, str, str, str]
"""(instant key, stepId, action, resultClass), all normalised."""


def step_order_fields(value: Any) -> OrderFields:
    """Check a decoded row exactly as `parse_step` does, returning only what `query` orders by.

    The happy path is a handful of lookups and type tests; anything unusual (a missing or
    mistyped field, a blank value, a bad time) falls back to `parse_step` for the exact message.
    """
    try:
        schema = value["schema"]
        kind = value["stepKind"]
        step_id = value["stepId"].strip(RUST_WHITE_SPACE)
        action = value["action"].strip(RUST_WHITE_SPACE)
        result_class = value["resultClass"].strip(RUST_WHITE_SPACE)
        finished_at = value["finishedAt"].strip(RUST_WHITE_SPACE)
    except (KeyError, TypeError, AttributeError):
        pass  # not a dict, a field missing, or not a string: parse_step says which
    else:
        # The four `.strip()` calls succeeded, so those four are strings: of JSON's types only
        # `str` has a `strip` method.
        if (
            schema == STEP_SCHEMA
            and type(schema) is int
            and step_id
            and action
            and result_class
            and (
                kind == STEP_KIND
                or (type(kind) is str and kind.strip(RUST_WHITE_SPACE) == STEP_KIND)
            )
            and (len(value) == 6 or _optional_fields_valid(value))
        ):
            key = instant_key(finished_at)
            if key is not None:
                return key, step_id, action, result_class
    row = parse_step(value)  # raises the exact message, or accepts what the fast path declined
    key = instant_key(row["finishedAt"])
    assert key is not None  # normalize_step checked it
    return key, row["stepId"], row["action"], row["resultClass"]


def _optional_fields_valid(value: dict[str, Any]) -> bool:
    """True if the optional fields a row may carry are well typed and its startedAt is valid."""
    get = value.get
    issue_id = get("issueId")
    if issue_id is not None and type(issue_id) is not str:
        return False
    try:
        for refs in (
            get("instructionRefs", _NO_REFS),
            get("witnessRefs", _NO_REFS),
            get("lineageRefs", _NO_REFS),
        ):
            if type(refs) is not list:
                return False
            "".join(refs)  # C-speed check that every ref is a string: TypeError otherwise
    except TypeError:
        return False
    started_at = get("startedAt")
    if started_at is None:
        return True
    if type(started_at) is not str:
        return False
    started_at = started_at.strip(RUST_WHITE_SPACE)
    return not started_at or instant_key(started_at) is not None


_NO_REFS: Final[list[str]] = []
