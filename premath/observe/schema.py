"""The surface's records (observation.md §3): field order, omission rules and typed decoding.

One table per record is the only place that says which keys a record has, in which order, which
are omitted when absent, and what type each must hold. The builder lays its documents out with
`lay_out`; the loader decodes a stored file with `decode`, as serde's typed decoding does:
unknown keys are dropped, a missing optional is `null`, a missing list or count is an error,
free-form values (`coherence`, `scope`, ...) are kept with their keys sorted. Unlike serde, a
record written as a JSON array of its fields is refused (divergence D21-13).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from premath.models.serde import describe

Document = dict[str, Any]
Kind = Literal["text", "optional", "count", "flag", "texts", "value", "record", "records"]

_U64_MAX = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    kind: Kind
    omit_absent: bool = False
    """Left out of the document when absent (serde `skip_serializing_if = "Option::is_none"`)."""
    record: Record | None = None


@dataclass(frozen=True, slots=True)
class Record:
    name: str
    """The reference's struct name, used in decoding messages."""
    fields: tuple[Field, ...]


def _text(name: str) -> Field:
    return Field(name, "text")


def _opt(name: str, omit: bool = False) -> Field:
    return Field(name, "optional", omit)


def _texts(name: str) -> Field:
    return Field(name, "texts")


_DIGESTS = (
    _opt("typedCoreProjectionDigest", True),
    _opt("authorityPayloadDigest", True),
    _opt("normalizerId", True),
    _opt("policyDigest", True),
)

SUMMARY = Record(
    "ObservationSummary",
    (
        _text("state"),
        Field("needsAttention", "flag"),
        _opt("topFailureClass"),
        _opt("latestProjectionDigest"),
        _opt("latestInstructionId"),
        Field("requiredCheckCount", "count"),
        Field("executedCheckCount", "count"),
        Field("changedPathCount", "count"),
        Field("coherence", "value", True),
        Field("live", "value", True),  # ours, only in a live build (attention.py, D30a-2)
    ),
)
DELTA = Record(
    "DeltaSummary",
    (
        _text("ref"),
        _opt("projectionPolicy"),
        _opt("projectionDigest"),
        *_DIGESTS,
        _opt("deltaSource"),
        _opt("fromRef"),
        _opt("toRef"),
        _texts("changedPaths"),
        Field("changedPathCount", "count"),
    ),
)
REQUIRED = Record(
    "RequiredSummary",
    (
        _text("ref"),
        _opt("witnessKind"),
        _opt("projectionPolicy"),
        _opt("projectionDigest"),
        *_DIGESTS,
        _opt("verdictClass"),
        _texts("requiredChecks"),
        _texts("executedChecks"),
        _texts("failureClasses"),
    ),
)
DECISION = Record(
    "DecisionSummary",
    (
        _text("ref"),
        _opt("decisionKind"),
        _opt("projectionDigest"),
        *_DIGESTS,
        _opt("decision"),
        _opt("reasonClass"),
        _opt("witnessPath"),
        _opt("deltaSnapshotPath"),
        _texts("requiredChecks"),
    ),
)
INSTRUCTION = Record(
    "InstructionSummary",
    (
        _text("ref"),
        _opt("witnessKind"),
        _text("instructionId"),
        _opt("instructionDigest"),
        _opt("typedCoreProjectionDigest", True),
        _opt("authorityPayloadDigest", True),
        Field("instructionClassification", "value"),
        _opt("intent"),
        Field("scope", "value"),
        _opt("policyDigest"),
        _opt("verdictClass"),
        _texts("requiredChecks"),
        _texts("executedChecks"),
        _texts("failureClasses"),
        _opt("runStartedAt", True),
        _opt("runFinishedAt", True),
        Field("proposalIngest", "value", True),
    ),
)
LATEST = Record(
    "LatestObservation",
    (
        Field("delta", "record", record=DELTA),
        Field("required", "record", record=REQUIRED),
        Field("decision", "record", record=DECISION),
    ),
)
SURFACE = Record(
    "ObservationSurface",
    (
        Field("schema", "count"),
        _text("surfaceKind"),
        Field("summary", "record", record=SUMMARY),
        Field("latest", "record", record=LATEST),
        Field("instructions", "records", record=INSTRUCTION),
    ),
)
LATEST_KEYS = tuple(field.name for field in LATEST.fields)


def lay_out(record: Record, values: Document) -> Document:
    """`values` as the record's document: declaration order, absent optionals `null` or left out.

    Values must already have their record's types; nothing is checked here."""
    document: Document = {}
    for field in record.fields:
        value = values.get(field.name)
        if value is None and field.omit_absent:
            continue
        document[field.name] = value
    return document


class DecodeError(ValueError):
    """A stored value does not fit its record; the message reads like serde's."""


def sorted_value(value: Any) -> Any:
    """A free-form JSON value with object keys sorted at every depth (serde_json's `Value`)."""
    if isinstance(value, dict):
        return {key: sorted_value(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_value(item) for item in value]
    return value


def _invalid(value: Any, expected: str, where: str) -> DecodeError:
    return DecodeError(f"invalid type: {describe(value)}, expected {expected} at {where}")


def _decode_field(field: Field, value: Any, where: str) -> Any:
    kind = field.kind
    if kind == "value":
        return None if value is None else sorted_value(value)
    if kind in ("optional", "record") and value is None:
        return None
    if kind in ("text", "optional"):
        if not isinstance(value, str):
            raise _invalid(value, "a string", where)
        return value
    if kind == "count":
        if not isinstance(value, int) or isinstance(value, bool):
            raise _invalid(value, "u64", where)
        if not 0 <= value <= _U64_MAX:
            raise DecodeError(f"invalid value: integer `{value}`, expected u64 at {where}")
        return value
    if kind == "flag":
        if not isinstance(value, bool):
            raise _invalid(value, "a boolean", where)
        return value
    if kind == "texts":
        if not isinstance(value, list):
            raise _invalid(value, "a sequence", where)
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise _invalid(item, "a string", f"{where}[{index}]")
        return list(value)
    assert field.record is not None
    if kind == "record":
        return decode(field.record, value, where)
    if not isinstance(value, list):
        raise _invalid(value, "a sequence", where)
    return [decode(field.record, item, f"{where}[{index}]") for index, item in enumerate(value)]


_REQUIRED_KINDS = ("text", "count", "flag", "texts", "records")


def decode(record: Record, value: Any, where: str = "$") -> Document:
    """Decode `value` as `record`; DecodeError names the first field at fault and where."""
    if not isinstance(value, dict):
        raise _invalid(value, f"struct {record.name}", where)
    document: Document = {}
    for field in record.fields:
        inner = f"{where}.{field.name}"
        if field.name not in value:
            if field.kind in _REQUIRED_KINDS:
                raise DecodeError(f"missing field `{field.name}` at {where}")
            decoded = None
        else:
            decoded = _decode_field(field, value[field.name], inner)
        if decoded is None and field.omit_absent:
            continue
        document[field.name] = decoded
    return document
