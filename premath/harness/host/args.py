"""A host action's `args` read by the catalogue's one checker (premath/models/params.py) as the
host face reads them: blank optional strings are absent and the others trimmed, as the
reference's `non_empty` treats them (specs/instructions.md "Blank optional strings"), except
the parameters an action keeps verbatim (issue texts, where a blank value is a real edit);
a refusal is `scheme_eval.invalid_program`, `invalid <action> args: <serde's text>`.
"""

from __future__ import annotations

from premath.errors import RuleRefused
from premath.models.params import Param, Reading, check_arguments
from premath.models.serde import SchemaViolation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INVALID = "scheme_eval.invalid_program"
HOST_READING = Reading("a struct", blanks_absent=True)


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


def parse_args(action: str, value: Any, spec: tuple[Param, ...]) -> dict[str, Any]:
    """The args by camelCase name; absent, `null` and blank optional strings are left out.
    Raises HostActionFailed (`scheme_eval.invalid_program`, `invalid <action> args: ...`)."""
    try:
        return check_arguments(spec, value, HOST_READING)
    except SchemaViolation as exc:
        raise HostActionFailed(INVALID, f"invalid {action} args: {exc}") from None
