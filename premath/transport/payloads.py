"""Action payloads as serde reads them (agent-surface.md §2.5): camelCase keys, unknown keys
ignored, serde's error texts. A payload that is not a JSON object is refused (divergence D12-1:
the reference also reads a positional array).

Optional strings are trimmed and a blank one is absent, as the reference's `non_empty` reads
every optional payload string (`leaseExpiresAt: "  "` beside `leaseTtlSeconds` is a TTL claim,
not an ambiguous binding); specs/instructions.md "Blank optional strings".

The lease actions' payloads are the lease operations' parameters (premath/ops/leases.py adds
what the MCP tools take besides), read by the one checker (premath/models/params.py) with the
transport's `Reading`: the reference's struct names, no snake_case aliases."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from premath.models.params import Param, Reading, check_arguments, param
from premath.models.serde import (
    SchemaViolation,
    optional_string,
    string,
    string_list,
    typed_fields,
)
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.serde import FieldCheck

T = TypeVar("T")


def blank_to_none(value: str | None) -> str | None:
    """Optional strings are trimmed; blank means absent."""
    if value is None:
        return None
    return rust_trim(value) or None


@dataclass(frozen=True)
class ClaimRequest:
    id: str
    assignee: str
    lease_id: str | None = None
    lease_ttl_seconds: int | None = None
    lease_expires_at: str | None = None
    issues_path: str | None = None


@dataclass(frozen=True)
class ClaimNextRequest:
    assignee: str
    lease_id: str | None = None
    lease_ttl_seconds: int | None = None
    issues_path: str | None = None
    include_escalations: bool = False
    """Also take escalation issues, left to people by default (D30a-1)."""


@dataclass(frozen=True)
class RenewRequest:
    id: str
    assignee: str
    lease_id: str
    lease_ttl_seconds: int | None = None
    lease_expires_at: str | None = None
    issues_path: str | None = None


@dataclass(frozen=True)
class ReleaseRequest:
    id: str
    assignee: str | None = None
    lease_id: str | None = None
    issues_path: str | None = None


@dataclass(frozen=True)
class WorldBindingRequest:
    operation_action: str


@dataclass(frozen=True)
class FiberSpawnRequest:
    task_ref: str
    fiber_id: str | None = None
    parent_fiber_id: str | None = None
    scope_ref: str | None = None


@dataclass(frozen=True)
class FiberJoinRequest:
    fiber_id: str
    join_set: tuple[str, ...]
    result_ref: str | None = None


@dataclass(frozen=True)
class FiberCancelRequest:
    fiber_id: str
    reason: str | None = None


def optional_text(value: Any) -> str | None:
    """An optional string: type-checked, trimmed, blank = absent."""
    return blank_to_none(optional_string(value))


_STRING: FieldCheck = string
_OPTIONAL: FieldCheck = optional_text

ISSUES_PATH = param("issuesPath", path=True)
_ISSUE = param("id", required=True)
_ASSIGNEE = param("assignee", required=True)
_LEASE_TIME = (param("leaseTtlSeconds", "i64"), param("leaseExpiresAt"))
CLAIM_FIELDS = (_ISSUE, _ASSIGNEE, param("leaseId"), *_LEASE_TIME)
CLAIM_NEXT_FIELDS = (
    _ASSIGNEE,
    param("leaseId"),
    param("leaseTtlSeconds", "i64"),
    param("includeEscalations", "bool"),
)
RENEW_FIELDS = (_ISSUE, _ASSIGNEE, param("leaseId", required=True), *_LEASE_TIME)
RELEASE_FIELDS = (_ISSUE, param("assignee"), param("leaseId"))
"""Each lease action's fields but `issuesPath`, which every one takes last."""

LEASE_STRUCTS: dict[type, tuple[str, tuple[Param, ...]]] = {
    ClaimRequest: ("IssueClaimRequest", (*CLAIM_FIELDS, ISSUES_PATH)),
    ClaimNextRequest: ("IssueClaimNextRequest", (*CLAIM_NEXT_FIELDS, ISSUES_PATH)),
    RenewRequest: ("IssueLeaseRenewRequest", (*RENEW_FIELDS, ISSUES_PATH)),
    ReleaseRequest: ("IssueLeaseReleaseRequest", (*RELEASE_FIELDS, ISSUES_PATH)),
}
"""serde's struct name and the parameters of each lease action's payload."""

Struct = tuple[str, Mapping[str, tuple[str, "FieldCheck"]], tuple[str, ...]]
"""serde's struct name, wire key -> (attribute, check) in declaration order, required keys."""

_STRUCTS: dict[type, Struct] = {
    FiberSpawnRequest: (
        "FiberSpawnRequest",
        {
            "fiberId": ("fiber_id", _OPTIONAL),
            "taskRef": ("task_ref", _STRING),
            "parentFiberId": ("parent_fiber_id", _OPTIONAL),
            "scopeRef": ("scope_ref", _OPTIONAL),
        },
        ("taskRef",),
    ),
    FiberJoinRequest: (
        "FiberJoinRequest",
        {
            "fiberId": ("fiber_id", _STRING),
            "joinSet": ("join_set", lambda value: tuple(string_list(value))),
            "resultRef": ("result_ref", _OPTIONAL),
        },
        ("fiberId", "joinSet"),
    ),
    FiberCancelRequest: (
        "FiberCancelRequest",
        {"fiberId": ("fiber_id", _STRING), "reason": ("reason", _OPTIONAL)},
        ("fiberId",),
    ),
}


def parse_payload(kind: type[T], payload: Any) -> T:
    """The request `kind` from a decoded payload, or SchemaViolation with serde's text."""
    if kind in LEASE_STRUCTS:
        name, params = LEASE_STRUCTS[kind]
        reading = Reading(f"struct {name}", blanks_absent=True, aliases=False)
        found = check_arguments(params, payload, reading)
        spelled = {p.name: p.alias or p.name for p in params}
        return kind(**{spelled[key]: value for key, value in found.items()})
    struct, fields, required = _STRUCTS[kind]
    checks = {key: check for key, (_, check) in fields.items()}
    found = typed_fields(payload, f"struct {struct}", checks, required)
    return kind(**{fields[key][0]: value for key, value in found.items()})


def parse_world_binding(payload: Any) -> WorldBindingRequest:
    """`operationAction`, also accepted as `action` (the reference's serde alias); both given
    is serde's duplicate-field error."""
    checks: Mapping[str, Callable[[Any], Any]] = {"operationAction": string, "action": string}
    found = typed_fields(payload, "struct TransportWorldBindingRequest", checks, ())
    if "operationAction" in found and "action" in found:
        raise SchemaViolation("duplicate field `operationAction`")
    value = found.get("operationAction", found.get("action"))
    if value is None:
        raise SchemaViolation("missing field `operationAction`")
    return WorldBindingRequest(value)
