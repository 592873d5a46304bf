"""An operation's typed parameters and their one checker: the reference's serde structs as it
reads a tool's `arguments` or a host action's `args`. camelCase names plus a declared
snake_case alias, unknown keys ignored, `null` for any optional field, serde's error texts.

Where the faces differ the difference is a `Reading` (data), not a second checker: host
actions treat blank optional strings as absent and trim the rest (the reference's `non_empty`,
specs/instructions.md "Blank optional strings"); MCP tools keep strings as given; transport
payloads are read as host args are, without the snake_case aliases (the reference's transport
structs have none).

It sits with the wire schemas, below the faces and the transport, since the transport's lease
payloads are the lease operations' own parameters (premath/ops/leases.py).
"""

from __future__ import annotations

from premath.errors import InputInvalid
from premath.lean import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    Kind = Literal[
        "string", "u32", "i32", "i64", "u64", "bool", "scope", "match", "finish", "strings",
        "phase", "object", "objects",
    ]  # fmt: skip

ENUM_VALUES: dict[str, list[str]] = {
    "scope": ["active", "full"],
    "match": ["typed", "compatibility_alias"],
    "finish": ["closed", "blocked", "open"],
    "phase": ["claiming", "working", "verifying", "closing", "idle"],
}
INTEGER_RANGES = {
    "u32": (0, 2**32 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "i64": (-(2**63), 2**63 - 1),
    "u64": (0, 2**64 - 1),
}
_EXPECTED = {"string": "a string", "bool": "a boolean", "strings": "a sequence"}
"""serde's words for a required field's type (else the kind's own name, `i32`, `finish`)."""


class Param(NamedTuple):
    """One input: its camelCase name, the snake_case alias accepted beside it, its type."""

    name: str
    kind: Kind = "string"
    required: bool = False
    alias: str | None = None
    verbatim: bool = False
    """A string kept as given, blanks included, where a face drops blanks (issue texts, where
    a blank value is a real edit)."""
    path: bool = False
    """A file the operation reads or writes: confined to the roots by each face."""
    faces: frozenset[str] | None = None
    """The faces that take it (None: every face), e.g. `instructionId` at MCP only: a host
    action's instruction comes with the call."""
    choices: tuple[str, ...] = ()
    """A closed vocabulary the operation's `check` enforces in its own words (a dependency
    type); the published schema leaves the field open, as the reference's does."""


def snake_case(name: str) -> str:
    """A parameter's snake_case spelling (`issueId`: `issue_id`): its alias, its CLI keyword."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def param(
    name: str,
    kind: Kind = "string",
    *,
    required: bool = False,
    alias: bool = True,
    verbatim: bool = False,
    path: bool = False,
    faces: frozenset[str] | None = None,
    choices: tuple[str, ...] = (),
) -> Param:
    """A parameter whose alias is its snake_case spelling (when that differs)."""
    snake = snake_case(name)
    spelled = snake if alias and snake != name else None
    return Param(name, kind, required, spelled, verbatim, path, faces, choices)


class Reading(NamedTuple):
    """How one face reads its arguments: what serde names the struct in a wrong-type error,
    whether blank optional strings are absent (and the others trimmed), and whether the
    snake_case aliases are read."""

    struct: str
    blanks_absent: bool = False
    aliases: bool = True


class ArgumentRefused(InputInvalid):
    """An argument the operation refuses after parsing (a dependency type it does not know);
    each face reports it as its own input refusal."""


def _checked(param: Param, value: Any) -> Any:
    from premath.models.serde import SchemaViolation, describe

    kind = param.kind
    if kind in INTEGER_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected {kind}")
        low, high = INTEGER_RANGES[kind]
        if not low <= value <= high:
            raise SchemaViolation(f"invalid value: {describe(value)}, expected {kind}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected a boolean")
        return value
    if kind in ("strings", "objects"):
        if not isinstance(value, list):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected a sequence")
        item_type, expected = (str, "a string") if kind == "strings" else (dict, "a map")
        for item in value:
            if not isinstance(item, item_type):
                raise SchemaViolation(f"invalid type: {describe(item)}, expected {expected}")
        return value
    if kind == "object":
        if not isinstance(value, dict):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected a map")
        return value
    if not isinstance(value, str):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected a string")
    if kind in ENUM_VALUES and value not in ENUM_VALUES[kind]:
        variants = " or ".join(f"`{v}`" for v in ENUM_VALUES[kind])
        raise SchemaViolation(f"unknown variant `{value}`, expected {variants}")
    return value


def check_arguments(params: tuple[Param, ...], value: Any, reading: Reading) -> dict[str, Any]:
    """The inputs by camelCase name; absent and `null` optional fields are left out.

    Keys are read in the order given, as serde reads a map (a wrong type is reported before a
    missing field); raises SchemaViolation with serde's text."""
    from premath.models.serde import SchemaViolation, describe
    from premath.text import rust_trim

    if not isinstance(value, dict):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected {reading.struct}")
    by_key = {p.name: p for p in params}
    if reading.aliases:
        by_key.update((p.alias, p) for p in params if p.alias is not None)
    seen: set[str] = set()
    found: dict[str, Any] = {}
    for key, raw in value.items():
        spec = by_key.get(key)
        if spec is None:
            continue
        if spec.name in seen:
            raise SchemaViolation(f"duplicate field `{spec.name}`")
        seen.add(spec.name)
        if raw is None:
            if spec.required:
                expected = _EXPECTED.get(spec.kind, spec.kind)
                raise SchemaViolation(f"invalid type: null, expected {expected}")
            continue
        checked = _checked(spec, raw)
        trims = reading.blanks_absent and not (spec.verbatim or spec.required)
        if spec.kind == "string" and trims:
            checked = rust_trim(checked) or None
        if checked is not None:
            found[spec.name] = checked
    missing = next((p.name for p in params if p.required and p.name not in found), None)
    if missing is not None:
        raise SchemaViolation(f"missing field `{missing}`")
    return found
