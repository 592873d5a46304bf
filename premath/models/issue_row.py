"""The issue row as the reference stores it, checked with plain code (specs/issue-memory.md).

Hot commands (`issue ready`, `issue claim-next`) read 100k rows per call, so rows stay the dicts
orjson gives and are checked here without pydantic; `premath.models.issue` holds the pydantic
twin, and a hypothesis test proves both accept and reject the same rows. A checked row is a new
dict in the reference's field order, with every value in its stored form: timestamps re-emitted
in serde's AutoSi `Z` form, `issue_type` trimmed and lowercased, `dep_type` written as `type`,
empty optional fields dropped, `metadata` keys sorted at every level, unknown fields dropped.
"""

from __future__ import annotations

import functools
import operator

from premath.lean import NamedTuple
from premath.models.serde import describe
from premath.timefmt import (
    PADDED_ENDS,
    SIMPLE_STAMP,
    STORED_STAMP,
    autosi_fraction,
    normalize_relaxed,
    stamp_is_stored,
    stamps_are_stored,
    store_simple_stamps,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any, Literal, NotRequired, TypedDict

    FieldKind = Literal[
        "string", "text", "i32", "issue_type", "lease", "stamp", "optional_stamp", "bool", "labels",
        "dependencies", "metadata",
    ]  # fmt: skip

    IssueType = Literal["epic", "task"]

    DependencyType = Literal[
        "blocks",
        "parent-child",
        "conditional-blocks",
        "waits-for",
        "related",
        "relates-to",
        "discovered-from",
        "replies-to",
        "duplicates",
        "supersedes",
    ]

    class LeaseRow(TypedDict):
        lease_id: str
        owner: str
        acquired_at: str
        expires_at: str
        renewed_at: NotRequired[str]

    class DependencyRow(TypedDict):
        issue_id: str
        depends_on_id: str
        type: str
        created_by: NotRequired[str]

    class IssueRow(TypedDict):
        """One stored issue; keys absent when the reference omits them (empty or unset)."""

        id: str
        title: str
        description: NotRequired[str]
        design: NotRequired[str]
        acceptance_criteria: NotRequired[str]
        notes: NotRequired[str]
        status: str
        priority: int
        issue_type: str
        assignee: NotRequired[str]
        owner: NotRequired[str]
        lease: NotRequired[LeaseRow]
        created_at: str
        updated_at: str
        closed_at: NotRequired[str]
        ephemeral: bool
        mol_type: NotRequired[str]
        labels: NotRequired[list[str]]
        dependencies: NotRequired[list[DependencyRow]]
        metadata: NotRequired[Any]


class Field(NamedTuple):
    """One field of the stored row. `string`, `i32`, `issue_type`, `stamp` and `bool` fields are
    in every stored row; `text`, `optional_stamp`, `lease`, `labels`, `dependencies` and
    `metadata` are omitted when empty or unset."""

    name: str
    kind: FieldKind


ISSUE_FIELDS = (
    Field("id", "string"),
    Field("title", "string"),
    Field("description", "text"),
    Field("design", "text"),
    Field("acceptance_criteria", "text"),
    Field("notes", "text"),
    Field("status", "string"),
    Field("priority", "i32"),
    Field("issue_type", "issue_type"),
    Field("assignee", "text"),
    Field("owner", "text"),
    Field("lease", "lease"),
    Field("created_at", "stamp"),
    Field("updated_at", "stamp"),
    Field("closed_at", "optional_stamp"),
    Field("ephemeral", "bool"),
    Field("mol_type", "text"),
    Field("labels", "labels"),
    Field("dependencies", "dependencies"),
    Field("metadata", "metadata"),
)
"""The issue row's one field table (reference §A1), in stored order. The fast paths (the key
tuple check, the line grammar) are derived from it; `check_row` and `IssueModel` state the same
contract with serde's messages and field descriptions, and tests prove all of them agree."""
FIELD_ORDER = tuple(field.name for field in ISSUE_FIELDS)
LEASE_FIELD_ORDER = ("lease_id", "owner", "acquired_at", "expires_at", "renewed_at")

ISSUE_TYPES: tuple[IssueType, ...] = ("epic", "task")

DEPENDENCY_TYPES: tuple[DependencyType, ...] = (
    "blocks",
    "parent-child",
    "conditional-blocks",
    "related",
    "discovered-from",
    "relates-to",
    "duplicates",
    "supersedes",
    "waits-for",
    "replies-to",
)
BLOCKING_TYPES = frozenset(("blocks", "parent-child", "conditional-blocks", "waits-for"))

DEFAULT_STATUS = "open"
DEFAULT_PRIORITY = 2
DEFAULT_ISSUE_TYPE: IssueType = "task"
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


class RowInvalid(ValueError):
    """A row serde would refuse; the message follows serde's wording (no line/column)."""


_MISSING: Any = object()


def _string(value: Any, field: str) -> str:
    if type(value) is not str:
        raise RowInvalid(f"invalid type: {describe(value)}, expected a string (field `{field}`)")
    return value


def stored_timestamp(value: Any, field: str) -> str:
    """The stored form of a row timestamp (chrono relaxed RFC3339 in, AutoSi `Z` out)."""
    if type(value) is str and stamp_is_stored(value):
        return value
    if type(value) is not str:
        raise RowInvalid(
            f"invalid type: {describe(value)}, expected an RFC 3339 formatted date and time "
            f"string (field `{field}`)"
        )
    normalized = normalize_relaxed(value)
    if normalized is None:
        raise RowInvalid(f'invalid RFC 3339 date and time "{value}" (field `{field}`)')
    return normalized


def normalize_issue_type(value: str) -> IssueType:
    """`issue_type` as the reference reads it: trimmed, lowercased, epic or task."""
    lowered = value.strip().lower()
    if lowered == "epic" or lowered == "task":
        return lowered  # type: ignore[return-value]
    raise RowInvalid(f"invalid issue_type `{value}` (expected one of: epic, task)")


def check_lease(value: Any) -> LeaseRow:
    if type(value) is not dict:
        raise RowInvalid(f"invalid type: {describe(value)}, expected struct IssueLease")
    lease: dict[str, Any] = {}
    for field in ("lease_id", "owner"):
        if field not in value:
            raise RowInvalid(f"missing field `{field}` (in `lease`)")
        lease[field] = _string(value[field], field)
    for field in ("acquired_at", "expires_at"):
        if field not in value:
            raise RowInvalid(f"missing field `{field}` (in `lease`)")
        lease[field] = stored_timestamp(value[field], field)
    renewed = value.get("renewed_at")
    if renewed is not None:
        lease["renewed_at"] = stored_timestamp(renewed, "renewed_at")
    return lease  # type: ignore[return-value]


def check_dependency_type(value: dict[str, Any], where: str = "") -> str:
    """The edge type of a dependency or an add_dependency event: `type`, or its alias
    `dep_type` (both present: serde's duplicate-field error)."""
    if "type" in value and "dep_type" in value:
        raise RowInvalid("duplicate field `type`")
    kind = value.get("type", value.get("dep_type", _MISSING))
    if kind is _MISSING:
        raise RowInvalid(f"missing field `type`{where}")
    if type(kind) is not str:
        raise RowInvalid(f"invalid type: {describe(kind)}, expected a dependency type")
    if kind not in BLOCKING_TYPES and kind not in DEPENDENCY_TYPES:
        expected = ", ".join(f"`{name}`" for name in DEPENDENCY_TYPES)
        raise RowInvalid(f"unknown variant `{kind}`, expected one of {expected}")
    return kind


def check_dependency(value: Any) -> DependencyRow:
    if type(value) is not dict:
        raise RowInvalid(f"invalid type: {describe(value)}, expected struct Dependency")
    if "type" in value and "dep_type" in value:
        raise RowInvalid("duplicate field `type`")
    for field in ("issue_id", "depends_on_id"):
        if field not in value:
            raise RowInvalid(f"missing field `{field}` (in a dependency)")
    kind = check_dependency_type(value, " (in a dependency)")
    dependency: dict[str, Any] = {
        "issue_id": _string(value["issue_id"], "issue_id"),
        "depends_on_id": _string(value["depends_on_id"], "depends_on_id"),
        "type": kind,
    }
    created_by = value.get("created_by", "")
    if _string(created_by, "created_by"):
        dependency["created_by"] = created_by
    return dependency  # type: ignore[return-value]


def sort_metadata(value: Any) -> Any:
    """serde_json's `Value` without `preserve_order`: object keys sorted at every level."""
    if type(value) is dict:
        return {key: sort_metadata(value[key]) for key in sorted(value)}
    if type(value) is list:
        return [sort_metadata(item) for item in value]
    return value


def check_row(value: Any, now_text: str) -> IssueRow:
    """The stored form of one decoded row; `now_text` fills missing created/updated times.

    Raises RowInvalid with serde's wording when the reference would refuse the row.
    """
    if type(value) is not dict:
        raise RowInvalid(f"invalid type: {describe(value)}, expected struct Issue")
    get = value.get
    row: dict[str, Any] = {}
    for field in ("id", "title"):
        item = get(field, _MISSING)
        if item is _MISSING:
            raise RowInvalid(f"missing field `{field}`")
        row[field] = _string(item, field)
    for field in ("description", "design", "acceptance_criteria", "notes"):
        item = get(field)
        if (item is not None or field in value) and _string(item, field):
            row[field] = item
    status = get("status", DEFAULT_STATUS)
    row["status"] = _string(status, "status")
    priority = get("priority", DEFAULT_PRIORITY)
    if type(priority) is not int:
        raise RowInvalid(f"invalid type: {describe(priority)}, expected i32 (field `priority`)")
    if not I32_MIN <= priority <= I32_MAX:
        raise RowInvalid(f"invalid value: {describe(priority)}, expected i32 (field `priority`)")
    row["priority"] = priority
    issue_type = get("issue_type", DEFAULT_ISSUE_TYPE)
    if issue_type != "task" and issue_type != "epic":
        issue_type = normalize_issue_type(_string(issue_type, "issue_type"))
    row["issue_type"] = issue_type
    for field in ("assignee", "owner"):
        item = get(field)
        if (item is not None or field in value) and _string(item, field):
            row[field] = item
    lease = get("lease")
    if lease is not None:
        row["lease"] = check_lease(lease)
    created = get("created_at", _MISSING)
    row["created_at"] = now_text if created is _MISSING else stored_timestamp(created, "created_at")
    updated = get("updated_at", _MISSING)
    row["updated_at"] = now_text if updated is _MISSING else stored_timestamp(updated, "updated_at")
    closed = get("closed_at")
    if closed is not None:
        row["closed_at"] = stored_timestamp(closed, "closed_at")
    ephemeral = get("ephemeral", False)
    if type(ephemeral) is not bool:
        raise RowInvalid(
            f"invalid type: {describe(ephemeral)}, expected a boolean (field `ephemeral`)"
        )
    row["ephemeral"] = ephemeral
    mol_type = get("mol_type")
    if (mol_type is not None or "mol_type" in value) and _string(mol_type, "mol_type"):
        row["mol_type"] = mol_type
    labels = get("labels", _MISSING)
    if labels is not _MISSING:
        if type(labels) is not list:
            raise RowInvalid(
                f"invalid type: {describe(labels)}, expected a sequence (field `labels`)"
            )
        if labels:
            row["labels"] = [_string(label, "labels") for label in labels]
    dependencies = get("dependencies", _MISSING)
    if dependencies is not _MISSING:
        if type(dependencies) is not list:
            raise RowInvalid(
                f"invalid type: {describe(dependencies)}, expected a sequence "
                "(field `dependencies`)"
            )
        if dependencies:
            row["dependencies"] = [check_dependency(item) for item in dependencies]
    metadata = get("metadata")
    if metadata is not None:
        row["metadata"] = sort_metadata(metadata)
    return row  # type: ignore[return-value]


def dependency_sort_key(dependency: DependencyRow) -> tuple[str, str, str, str]:
    """The reference's canonical edge order: (depends_on_id, type, created_by, issue_id)."""
    return (
        dependency["depends_on_id"],
        dependency["type"],
        dependency.get("created_by", ""),
        dependency["issue_id"],
    )


# --- fast path ----------------------------------------------------------------------------------
# A row our writers (or the reference's) produced is already in stored form: keys in field order,
# no empty optional field, canonical timestamps. `stored_row_or_none` recognises such a row with a
# few C-level operations (its key tuple names its expected value types) and returns it unchanged;
# anything else goes through `check_row`. Timestamps are not checked here but queued, and
# `stamps_are_stored` checks a whole queue in one regex call. The contract, pinned by a hypothesis
# test: whenever the fast path accepts a row, `check_row` returns an equal row.

_REQUIRED_KINDS = frozenset(("string", "i32", "issue_type", "stamp", "bool"))
_ALWAYS = frozenset(field.name for field in ISSUE_FIELDS if field.kind in _REQUIRED_KINDS)
_KIND_TYPES: dict[FieldKind, type] = {"i32": int, "bool": bool, "lease": dict, "labels": list}
_KIND_TYPES["dependencies"] = list
_KIND_TYPES["metadata"] = dict  # sorted, float-free metadata takes the fast path too
_FIELD_TYPES = {field.name: _KIND_TYPES.get(field.kind, str) for field in ISSUE_FIELDS}
_STAMP_FIELDS = tuple(f.name for f in ISSUE_FIELDS if f.kind in ("stamp", "optional_stamp"))
_LEASE_SHAPES = {
    ("lease_id", "owner", "acquired_at", "expires_at"): (str, str, str, str),
    ("lease_id", "owner", "acquired_at", "expires_at", "renewed_at"): (str, str, str, str, str),
}
_DEPENDENCY_KEYS = frozenset(
    (("issue_id", "depends_on_id", "type"), ("issue_id", "depends_on_id", "type", "created_by"))
)
_DEPENDENCY_TYPE_SET = frozenset(DEPENDENCY_TYPES)
_EDGE_TYPES = {3: (str, str, str), 4: (str, str, str, str)}
_FIELD_POSITION = {name: index for index, name in enumerate(FIELD_ORDER)}
_FIELD_KINDS = {field.name: field.kind for field in ISSUE_FIELDS}


class _Shape:
    """What a key tuple in stored order implies: the value types, and which parts to inspect."""

    __slots__ = ("dependencies", "labels", "lease", "metadata", "stamps", "types")

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.types = tuple(_FIELD_TYPES[key] for key in keys)
        stamp_keys = [key for key in keys if key in _STAMP_FIELDS]
        self.stamps = operator.itemgetter(*stamp_keys)
        self.lease = "lease" in keys
        self.dependencies = "dependencies" in keys
        self.labels = "labels" in keys
        self.metadata = "metadata" in keys


_SHAPES: dict[tuple[str, ...], _Shape | None] = {}


def _shape(keys: tuple[str, ...]) -> _Shape | None:
    positions = [_FIELD_POSITION.get(key, -1) for key in keys]
    if -1 in positions or positions != sorted(set(positions)) or not set(keys) >= _ALWAYS:
        return None
    return _Shape(keys)


def _metadata_is_stored(value: Any) -> bool:
    """Keys sorted at every level and no float (floats take the general path, which writes
    them as serde does): what `sort_metadata` leaves as it is (the MCP write witness)."""
    if type(value) is dict:
        keys = list(value)
        return keys == sorted(keys) and all(map(_metadata_is_stored, value.values()))
    if type(value) is list:
        return all(map(_metadata_is_stored, value))
    return type(value) is not float


class NotStored(ValueError):
    """A row that is not in stored form: it needs `check_row`."""


def stored_item(value: Any, stamps: list[str]) -> tuple[str, IssueRow]:
    """`(id, value)` when `value` is a row in stored form, its timestamps appended to `stamps`
    for `stamps_are_stored`; else raises NotStored.

    Shaped for `dict(map(stored_item, map(orjson.loads, lines), ...))`: each row is checked
    right after it is decoded, while it is still in the CPU cache, and no per-row list is built.
    """
    if type(value) is not dict:
        raise NotStored
    keys = tuple(value)
    shape = _SHAPES.get(keys, _MISSING)
    if shape is _MISSING:
        shape = _SHAPES[keys] = _shape(keys)
    if shape is None:
        raise NotStored
    values = value.values()
    if tuple(map(type, values)) != shape.types or "" in values:
        raise NotStored
    if not I32_MIN <= value["priority"] <= I32_MAX:
        raise NotStored
    issue_type = value["issue_type"]
    if issue_type != "task" and issue_type != "epic":
        raise NotStored
    stamps.extend(shape.stamps(value))
    if shape.lease:
        lease = value["lease"]
        lease_types = _LEASE_SHAPES.get(tuple(lease))
        if lease_types is None or tuple(map(type, lease.values())) != lease_types:
            raise NotStored
        stamps.extend(tuple(lease.values())[2:])
    if shape.dependencies:
        dependencies = value["dependencies"]
        if not dependencies:
            raise NotStored
        for edge in dependencies:
            if type(edge) is not dict or tuple(edge) not in _DEPENDENCY_KEYS:
                raise NotStored
            if tuple(map(type, edge.values())) != _EDGE_TYPES[len(edge)]:
                raise NotStored
            if edge["type"] not in _DEPENDENCY_TYPE_SET or edge.get("created_by") == "":
                raise NotStored
    if shape.metadata and not _metadata_is_stored(value["metadata"]):
        raise NotStored
    if shape.labels:
        labels = value["labels"]
        if not labels or any(type(label) is not str for label in labels):
            raise NotStored
    return value["id"], value  # type: ignore[return-value]


def stored_row_or_none(value: Any, stamps: list[str]) -> IssueRow | None:
    """`stored_item`'s row, or None: the caller then runs `check_row`."""
    try:
        return stored_item(value, stamps)[1]
    except NotStored:
        return None


_LEASE_STAMP_FIELDS = LEASE_FIELD_ORDER[2:]


def store_row_times(rows: list[IssueRow]) -> None:
    """Every time of `rows` (`SIMPLE_STAMP`s, as `text_form` proves them) in stored form, in
    place: rows in stored form but for their times become rows in stored form.

    The row's own times are `store_simple_stamps` unrolled (a 100k-issue store holds 250k of
    them; the loop over keys costs a third more)."""
    ends, stored = PADDED_ENDS, autosi_fraction
    for row in rows:
        stamp = row["created_at"]
        row["created_at"] = stamp[:-1] + ends[len(stamp)] if stamp[-2] != "0" else stored(stamp)
        stamp = row["updated_at"]
        row["updated_at"] = stamp[:-1] + ends[len(stamp)] if stamp[-2] != "0" else stored(stamp)
        if "closed_at" in row:
            stamp = row["closed_at"]
            row["closed_at"] = stamp[:-1] + ends[len(stamp)] if stamp[-2] != "0" else stored(stamp)
        if "lease" in row:
            store_simple_stamps((row["lease"],), _LEASE_STAMP_FIELDS)  # type: ignore[arg-type]


def row_stamps_are_stored(row: IssueRow) -> bool:
    """The per-row form of `stamps_are_stored`, to find the rows a failed batch is about."""
    stamps = [row[field] for field in _STAMP_FIELDS if field in row]  # type: ignore[literal-required]
    lease = row.get("lease")
    if lease is not None:
        stamps.extend(value for key, value in lease.items() if key != "lease_id" and key != "owner")
    return stamps_are_stored(stamps)


# --- stored lines -------------------------------------------------------------------------------
# The grammar of a row line exactly as our writers (and the reference's) emit it: compact, fields
# in stored order, every optional string non-empty, orjson's escapes only, `priority` in 9 digits,
# timestamps in stored form. One C-level pass over a store's text then proves that no row needs
# a check and that the file is in our bytes. The contract, pinned by a hypothesis test:
# a line it accepts decodes to a row `stored_item` accepts, and `orjson.dumps` gives the line back.

_LINE_STRING = (
    rb'"(?!")[^"\\\x00-\x1f]*+'
    rb'(?:\\(?:["\\bfnrt]|u00(?:0[0-7]|0b|0e|0f|1[0-9a-f]))[^"\\\x00-\x1f]*+)*+"'
)
_LINE_STAMP = b'"' + STORED_STAMP.encode() + b'"'
_LINE_SIMPLE_STAMP = b'"' + SIMPLE_STAMP.encode() + b'"'
_LINE_EDGE = (
    rb'\{"issue_id":'
    + _LINE_STRING
    + rb',"depends_on_id":'
    + _LINE_STRING
    + rb',"type":"(?:'
    + "|".join(DEPENDENCY_TYPES).encode()
    + rb')"'
    + rb'(?:,"created_by":'
    + _LINE_STRING
    + rb")?\}"
)


def _line_lease(stamp: bytes) -> bytes:
    return (
        rb'\{"lease_id":'
        + _LINE_STRING
        + rb',"owner":'
        + _LINE_STRING
        + rb',"acquired_at":'
        + stamp
        + rb',"expires_at":'
        + stamp
        + rb'(?:,"renewed_at":'
        + stamp
        + rb")?\}"
    )


def _line_piece(field: Field, stamp: bytes) -> bytes:
    """The grammar of one field in a stored line (with its leading comma)."""
    key = b',"' + field.name.encode() + b'":'
    edges = _LINE_EDGE + rb"(?:," + _LINE_EDGE + rb")*+"
    piece = {
        "string": key + _LINE_STRING,
        "text": b"(?:" + key + _LINE_STRING + b")?",
        "i32": key + rb"(?:0|-?[1-9][0-9]{0,8})",
        "issue_type": key + b'"(?:' + b"task|epic" + b')"',
        "lease": b"(?:" + key + _line_lease(stamp) + b")?",
        "stamp": key + stamp,
        "optional_stamp": b"(?:" + key + stamp + b")?",
        "bool": key + b"(?:true|false)",
        "labels": b"(?:" + key + rb"\[" + _LINE_STRING + rb"(?:," + _LINE_STRING + rb")*+\])?",
        "dependencies": b"(?:" + key + rb"\[" + edges + rb"\])?",
        "metadata": b"",  # rows with metadata take the checked path
    }[field.kind]
    return piece


def _line_pattern(stamp: bytes) -> bytes:
    """One stored row line, every field from the table, times matching `stamp`."""
    body = b"".join(_line_piece(field, stamp) for field in ISSUE_FIELDS)
    return rb"\{" + body.removeprefix(b",") + rb"\}"


@functools.cache
def _line_texts() -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    # Compiling takes ~6 ms each: only stores big enough to gain from it pay (`text_form`).
    # One match over the whole text, not one per line: no match object per line.
    import re

    return (
        re.compile(b"(?:" + _line_pattern(_LINE_STAMP) + b"\n)*+"),
        re.compile(b"(?:" + _line_pattern(_LINE_SIMPLE_STAMP) + b"\n)*+"),
    )


TEXT_UNKNOWN, TEXT_STORED, TEXT_STORED_BUT_TIMES = 0, 1, 2
"""What `text_form` proves about a whole issues file."""


def text_is_stored(text: bytes) -> bool:
    """True when every line of `text` (a whole issues file) is a row line in stored form, byte
    for byte as our writers write it: no blank lines, a `\\n` after the last."""
    return _line_texts()[0].fullmatch(text) is not None


# The same rewrite on the text: in a line of the `TEXT_STORED_BUT_TIMES` grammar, `_at":"` is
# always a time field's key and the value after it (no JSON string holds an unescaped `"`), so
# times can be found by their key, and most put in stored form by inserting zeros before `Z`.
_TIME_HEAD = rb'_at":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.'


def _time_ending(digits: int, last: bytes) -> bytes:
    """After `Z"`: it ends a time with `digits` fraction digits, the last one `last`."""
    return rb"(?<=" + _TIME_HEAD + rb"[0-9]{%d}" % (digits - 1) + last + rb'Z")'


def _times_ending(lengths: range | tuple[int, ...], last: bytes) -> re.Pattern[bytes]:
    """`Z"` (or `0Z"`) ending a time with a fraction of one of `lengths`, the last digit `last`
    (the literal first: the engine skips to its next occurrence)."""
    import re

    start = b'0Z"' if last == b"0" else b'Z"'
    return re.compile(start + b"(?:" + b"|".join(_time_ending(n, last) for n in lengths) + b")")


@functools.cache
def _time_texts() -> tuple[re.Pattern[bytes], re.Pattern[bytes], re.Pattern[bytes]]:
    return (
        _times_ending(range(1, 10), b"0"),
        _times_ending((1, 4, 7), b"[1-9]"),
        _times_ending((2, 5, 8), b"[1-9]"),
    )


def _zero_ended_stored(text: bytes, zero_ended: re.Pattern[bytes]) -> bytes:
    """`text` with each time whose fraction ends in 0 (rare) in stored form (`autosi_fraction`)."""
    pieces: list[bytes] = []
    done = 0
    for match in zero_ended.finditer(text):
        start = text.rindex(b".", 0, match.start()) - 19
        end = match.end() - 1
        pieces += (text[done:start], autosi_fraction(text[start:end].decode()).encode())
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return b"".join(pieces)


def stored_times_text(text: bytes) -> bytes:
    """Whole lines of `TEXT_STORED_BUT_TIMES` text with every time in stored form: the lines
    `orjson.dumps` gives for their rows after `store_row_times`, without decoding them. A time
    whose last digit is not 0 only needs zeros before its `Z` (two splits and joins)."""
    zero_ended, short_by_two, short_by_one = _time_texts()
    text = _zero_ended_stored(text, zero_ended)
    text = b'00Z"'.join(short_by_two.split(text))
    return b'0Z"'.join(short_by_one.split(text))


def text_form(text: bytes) -> int:
    """`TEXT_STORED` (`text_is_stored`), else `TEXT_STORED_BUT_TIMES` when the lines are rows
    in stored form but for the fraction digits of their times (`timefmt.SIMPLE_STAMP`: every
    row is valid and `store_row_times` gives its times), else `TEXT_UNKNOWN`."""
    if text_is_stored(text):
        return TEXT_STORED
    return TEXT_STORED_BUT_TIMES if _line_texts()[1].fullmatch(text) is not None else TEXT_UNKNOWN
