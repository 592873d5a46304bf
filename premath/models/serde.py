"""Field checks with serde_json's strictness and wording, for reference artifacts.

The reference deserialises with serde: a float or bool is not an integer, `null` is not a list,
unknown keys are ignored. Hot commands validate with these plain checks instead of pydantic
(whose import alone costs more than our start-up budget); messages follow serde's text without
its line/column suffix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    FieldCheck = Callable[[Any], Any]
    """Type-checks one field's decoded value and returns it, or raises SchemaViolation."""

U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1


class SchemaViolation(ValueError):
    """A field of the wrong type or a missing field; the message is serde's."""


def describe(value: Any) -> str:
    """serde's `Unexpected` wording for a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value!r}`"
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, list):
        return "sequence"
    return "map"


def expect_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected {what}")
    return value


def require(document: dict[str, Any], field: str) -> Any:
    if field not in document:
        raise SchemaViolation(f"missing field `{field}`")
    return document[field]


def unsigned(value: Any, maximum: int = U32_MAX, name: str = "u32") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected {name}")
    if not 0 <= value <= maximum:
        raise SchemaViolation(f"invalid value: {describe(value)}, expected {name}")
    return value


def string(value: Any) -> str:
    if not isinstance(value, str):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected a string")
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected a boolean")
    return value


def optional_string(value: Any) -> str | None:
    return None if value is None else string(value)


def sequence(value: Any) -> list[Any]:
    """A `Vec<_>` with `#[serde(default)]`: absent means empty, `null` is an error."""
    if not isinstance(value, list):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected a sequence")
    return value


def string_list(value: Any) -> list[str]:
    return [string(item) for item in sequence(value)]


def checks_for(fields: Iterable[str], check: FieldCheck) -> dict[str, FieldCheck]:
    return dict.fromkeys(fields, check)


def typed_fields(
    value: Any, struct: str, checks: Mapping[str, FieldCheck], required: Iterable[str]
) -> dict[str, Any]:
    """serde's view of a struct: known fields type-checked in document order, unknown keys
    ignored, then the first missing required field (in declaration order) reported."""
    document = expect_object(value, struct)
    fields = {name: checks[name](item) for name, item in document.items() if name in checks}
    for name in required:
        require(fields, name)
    return fields


def in_wire_order(
    fields: Mapping[str, Any], order: Iterable[str], omit_if_empty: Iterable[str] = ()
) -> dict[str, Any]:
    """A struct as serde writes it: declaration order, absent (None) options left out, and the
    lists marked `skip_serializing_if = "Vec::is_empty"` left out when empty."""
    empty_omitted = frozenset(omit_if_empty)
    return {
        name: fields[name]
        for name in order
        if fields.get(name) is not None and not (name in empty_omitted and not fields[name])
    }
