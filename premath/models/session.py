"""`premath.harness.session.v1`: the session handoff (specs/harness-session.md).

A document is a plain dict in the reference's field order with absent fields left out, so the
canonical encoders can write it as it stands.
"""

from __future__ import annotations

from premath.models.serde import (
    checks_for,
    in_wire_order,
    optional_string,
    string,
    string_list,
    typed_fields,
    unsigned,
)
from premath.models.vocabulary import SESSION_STATES
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SESSION_SCHEMA = 1
SESSION_KIND = "premath.harness.session.v1"
BOOTSTRAP_KIND = "premath.harness.bootstrap.v1"

REQUIRED_STRINGS = ("sessionKind", "sessionId", "state", "startedAt", "updatedAt")
OPTIONAL_STRINGS = (
    "issueId",
    "summary",
    "nextStep",
    "stoppedAt",
    "issuesPath",
    "issuesSnapshotRef",
)
REF_LISTS = ("instructionRefs", "witnessRefs", "lineageRefs")
FIELD_ORDER = (
    "schema",
    "sessionKind",
    "sessionId",
    "state",
    "issueId",
    "summary",
    "nextStep",
    "instructionRefs",
    "witnessRefs",
    "lineageRefs",
    "startedAt",
    "updatedAt",
    "stoppedAt",
    "issuesPath",
    "issuesSnapshotRef",
)


_FIELD_CHECKS = {
    "schema": unsigned,
    **checks_for(REQUIRED_STRINGS, string),
    **checks_for(OPTIONAL_STRINGS, optional_string),
    **checks_for(REF_LISTS, string_list),
}


class SessionInvalid(ValueError):
    """A session that parses but breaks a rule; the message is the reference's."""


def in_field_order(fields: dict[str, Any]) -> dict[str, Any]:
    """The session as written: field order, absent options and empty ref lists left out."""
    return in_wire_order(fields, FIELD_ORDER, REF_LISTS)


def parse_session(value: Any) -> dict[str, Any]:
    """Type-check a decoded session as serde does, then apply the reference's four checks.

    Raises SchemaViolation (a parse error in the reference) or SessionInvalid (a check).
    """
    fields = typed_fields(
        value, "struct HarnessSession", _FIELD_CHECKS, ("schema", *REQUIRED_STRINGS)
    )
    if fields["schema"] != SESSION_SCHEMA:
        raise SessionInvalid(f"invalid harness session schema {fields['schema']} (expected 1)")
    if fields["sessionKind"] != SESSION_KIND:
        raise SessionInvalid(
            f"invalid harness session kind {fields['sessionKind']} (expected {SESSION_KIND})"
        )
    if fields["state"] not in SESSION_STATES:
        raise SessionInvalid(
            f"invalid harness session state {fields['state']} (expected active|stopped)"
        )
    if not rust_trim(fields["sessionId"]):
        raise SessionInvalid("invalid harness session id (empty)")
    return in_field_order(fields)
