"""Tool arguments as the reference's serde structs read them: camelCase names plus the declared
snake_case aliases, unknown keys ignored, serde's error texts, `null` for any optional field."""

from __future__ import annotations

from premath.mcp.catalogue import ENUM_VALUES, Field, Tool
from premath.models.serde import SchemaViolation, describe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_RANGES = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1), "u64": (0, 2**64 - 1)}


def _checked(field: Field, value: Any) -> Any:
    if value is None:
        if field.required:
            expected = {"bool": "a boolean", "string": "a string"}.get(field.kind, field.kind)
            raise SchemaViolation(f"invalid type: null, expected {expected}")
        return None
    kind = field.kind
    if kind in _RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected {kind}")
        low, high = _RANGES[kind]
        if not low <= value <= high:
            raise SchemaViolation(f"invalid value: {describe(value)}, expected {kind}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected a boolean")
        return value
    if kind == "strings":
        if not isinstance(value, list):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected a sequence")
        for item in value:
            if not isinstance(item, str):
                raise SchemaViolation(f"invalid type: {describe(item)}, expected a string")
        return value
    if kind == "object":
        if not isinstance(value, dict):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected a map")
        return value
    if kind == "objects":
        if not isinstance(value, list):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected a sequence")
        for item in value:
            if not isinstance(item, dict):
                raise SchemaViolation(f"invalid type: {describe(item)}, expected a map")
        return value
    if not isinstance(value, str):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected a string")
    if kind in ENUM_VALUES and value not in ENUM_VALUES[kind]:
        variants = " or ".join(f"`{v}`" for v in ENUM_VALUES[kind])
        raise SchemaViolation(f"unknown variant `{value}`, expected {variants}")
    return value


def parse_arguments(tool: Tool, arguments: Any) -> dict[str, Any]:
    """The tool's inputs by camelCase name (absent optional fields left out)."""
    if not isinstance(arguments, dict):
        raise SchemaViolation(f"invalid type: {describe(arguments)}, expected struct {tool.name}")
    by_key = {field.name: field for field in tool.fields}
    by_key.update({field.alias: field for field in tool.fields if field.alias is not None})
    found: dict[str, Any] = {}
    for key, value in arguments.items():
        field = by_key.get(key)
        if field is None:
            continue
        if field.name in found:
            raise SchemaViolation(f"duplicate field `{field.name}`")
        found[field.name] = _checked(field, value)
    for field in tool.fields:
        if field.required and field.name not in found:
            raise SchemaViolation(f"missing field `{field.name}`")
    return {name: value for name, value in found.items() if value is not None}
