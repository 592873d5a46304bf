"""A host action's `args` as the reference's serde structs read them: camelCase names with the
declared snake_case aliases, unknown keys ignored, `null` for any optional field, serde's texts.

Blank optional strings (empty or white space only) are absent, as the reference's `non_empty`
treats them (specs/instructions.md "Blank optional strings"), except the fields an action keeps
verbatim (issue texts, where a blank value is a real edit): `verbatim=True`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from premath.errors import RuleRefused
from premath.models.serde import SchemaViolation, describe
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INVALID = "scheme_eval.invalid_program"
ArgKind = Literal["string", "u32", "i32", "bool", "strings"]
_RANGES = {"u32": (0, 2**32 - 1), "i32": (-(2**31), 2**31 - 1)}
_EXPECTED = {
    "string": "a string",
    "u32": "u32",
    "i32": "i32",
    "bool": "a boolean",
    "strings": "a sequence",
}


class HostActionFailed(Exception):
    """A host action's error: its class and diagnostic become a rejected payload."""

    def __init__(self, failure_class: str, diagnostic: str) -> None:
        super().__init__(diagnostic)
        self.failure_class = failure_class
        self.diagnostic = diagnostic

    @classmethod
    def from_rule(cls, refused: RuleRefused) -> HostActionFailed:
        """A boundary rule's refusal (store/confine.py, the witness rules) as a host failure."""
        return cls(refused.rule, refused.message.removeprefix(f"[failureClass={refused.rule}] "))


@dataclass(frozen=True)
class Arg:
    name: str
    alias: str | None = None
    kind: ArgKind = "string"
    required: bool = False
    verbatim: bool = False
    """A string kept as given, blanks included (the reference's verbatim MCP fields)."""
    path: bool = False
    """A file the action reads or writes: refused outside the roots (host/paths.py)."""


def _checked(arg: Arg, value: Any) -> Any:
    if arg.kind in _RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected {arg.kind}")
        low, high = _RANGES[arg.kind]
        if not low <= value <= high:
            raise SchemaViolation(f"invalid value: {describe(value)}, expected {arg.kind}")
        return value
    if arg.kind == "bool":
        if not isinstance(value, bool):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected a boolean")
        return value
    if arg.kind == "strings":
        if not isinstance(value, list):
            raise SchemaViolation(f"invalid type: {describe(value)}, expected a sequence")
        return tuple(_checked(Arg(arg.name), item) for item in value)
    if not isinstance(value, str):
        raise SchemaViolation(f"invalid type: {describe(value)}, expected a string")
    return value


def parse_args(action: str, value: Any, spec: tuple[Arg, ...]) -> dict[str, Any]:
    """The args by camelCase name; absent, `null` and blank optional strings are left out.

    Keys are read in the order given, as serde reads a map (a wrong type is reported before a
    missing field); raises HostActionFailed (`scheme_eval.invalid_program`,
    `invalid <action> args: ...`)."""
    if not isinstance(value, dict):
        raise HostActionFailed(
            INVALID, f"invalid {action} args: invalid type: {describe(value)}, expected a struct"
        )
    by_key = {key: arg for arg in spec for key in (arg.name, arg.alias) if key is not None}
    seen: set[str] = set()
    found: dict[str, Any] = {}
    try:
        for key, raw in value.items():
            arg = by_key.get(key)
            if arg is None:
                continue
            if arg.name in seen:
                raise SchemaViolation(f"duplicate field `{arg.name}`")
            seen.add(arg.name)
            if raw is None:
                if arg.required:
                    raise SchemaViolation(f"invalid type: null, expected {_EXPECTED[arg.kind]}")
                continue
            checked = _checked(arg, raw)
            if arg.kind == "string" and not (arg.verbatim or arg.required):
                checked = rust_trim(checked) or None
            if checked is not None:
                found[arg.name] = checked
        missing = next((arg.name for arg in spec if arg.required and arg.name not in found), None)
        if missing is not None:
            raise SchemaViolation(f"missing field `{missing}`")
    except SchemaViolation as exc:
        raise HostActionFailed(INVALID, f"invalid {action} args: {exc}") from None
    return found
