"""`transport-dispatch`: one action with its payload, answered by an envelope (agent-surface.md
§2.4). A rejection is a document, never an exception: the command exits 0 either way."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from premath.issues import leases
from premath.issues.documents import issue_summary, projection_fields
from premath.models.serde import SchemaViolation
from premath.store.issues_file import WarmStores
from premath.text import id_token, rust_trim
from premath.timefmt import format_offset
from premath.transport import lease_actions
from premath.transport.lease_actions import LeaseCall, LeaseOutcome, OnChange, Rejected
from premath.transport.payloads import (
    ClaimNextRequest,
    ClaimRequest,
    FiberCancelRequest,
    FiberJoinRequest,
    FiberSpawnRequest,
    ReleaseRequest,
    RenewRequest,
    blank_to_none,
    parse_payload,
    parse_world_binding,
)
from premath.transport.registry import (
    DISPATCH_KIND,
    PROFILE_ID,
    ROUTES_BY_ACTION,
    UNKNOWN_ACTION_ID,
    ActionRoute,
    dispatch_digest,
    resolver_witness,
    resolver_witness_ref,
    ts1,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.models.issue_row import IssueRow

Document = dict[str, Any]


def lease_issue_view(row: IssueRow, now_ns: int) -> Document:
    """The transport's `IssueSummary`: `lease` and `renewedAt` omitted when absent, `state` set."""
    view = issue_summary(row)
    lease = row.get("lease")
    if lease is not None:
        lease_view: Document = {
            "leaseId": lease["lease_id"],
            "owner": lease["owner"],
            "acquiredAt": format_offset(leases.stored_nanos(lease["acquired_at"])),
            "expiresAt": format_offset(leases.stored_nanos(lease["expires_at"])),
            "state": leases.lease_state(row, now_ns),
        }
        renewed = lease.get("renewed_at")
        if renewed is not None:
            lease_view["renewedAt"] = format_offset(leases.stored_nanos(renewed))
        view["lease"] = lease_view
    return view


def _head(route: ActionRoute) -> Document:
    witness = resolver_witness(route)
    return {
        "schema": 1,
        "action": route.action,
        "actionId": route.action_id,
        "dispatchKind": DISPATCH_KIND,
        "profileId": PROFILE_ID,
        "semanticDigest": dispatch_digest(route.action, route.action_id),
        "resolverWitness": witness,
        "resolverWitnessRef": resolver_witness_ref(route, witness),
    }


def _shape_rejection(route: ActionRoute, failure_class: str, diagnostic: str) -> Document:
    """A payload that did not deserialise: no `worldBinding`, no `issuesPath`."""
    return {
        **_head(route),
        "result": "rejected",
        "failureClasses": [failure_class],
        "diagnostic": diagnostic,
    }


def _bound(route: ActionRoute, result: str, failure_classes: list[str]) -> Document:
    return {
        **_head(route),
        "result": result,
        "failureClasses": failure_classes,
        "worldBinding": route.world_binding(),
    }


_LEASE_PAYLOADS: dict[str, tuple[type, str, Callable[..., LeaseOutcome]]] = {
    "issue.claim": (ClaimRequest, "claim", lease_actions.claim),
    "issue.claim_next": (ClaimNextRequest, "claim-next", lease_actions.claim_next),
    "issue.lease_renew": (RenewRequest, "renew", lease_actions.renew),
    "issue.lease_release": (ReleaseRequest, "release", lease_actions.release),
}


def _lease_action(
    route: ActionRoute,
    payload: Any,
    *,
    now: datetime,
    timeout_s: float,
    on_change: OnChange | None,
    warm: WarmStores | None,
    issue_scope: frozenset[str] | None,
) -> Document:
    kind, noun, run = _LEASE_PAYLOADS[route.action]
    try:
        request: Any = parse_payload(kind, payload)
    except SchemaViolation as exc:
        return _shape_rejection(route, "lease_invalid_payload", f"invalid {noun} payload: {exc}")
    path = lease_actions.issues_path_of(request.issues_path)
    try:
        outcome = run(request, LeaseCall(now, timeout_s, on_change, warm, issue_scope))
    except Rejected as rejection:
        return {
            **_bound(route, "rejected", [rejection.failure_class]),
            "issuesPath": path,
            "diagnostic": rejection.diagnostic,
        }
    document = {
        **_bound(route, "accepted", []),
        "issuesPath": path,
        "changed": outcome.changed,
        "leaseProjection": projection_fields(outcome.projection),
    }
    if outcome.row is not None:
        document["issue"] = lease_issue_view(outcome.row, outcome.now_ns)
    return document


def fiber_witness_ref(action: str, fiber_id: str) -> str:
    token = id_token(fiber_id, "fiber")
    return f"fiber://dispatch/{action}/{token}/{ts1([PROFILE_ID, action, fiber_id])}"


def default_fiber_id(task_ref: str, parent_fiber_id: str | None) -> str:
    """`fib1_` + 16 hex digits of the spawn's digest: the same task under the same parent
    gets the same fiber id."""
    return "fib1_" + ts1([PROFILE_ID, "fiber.spawn", task_ref, parent_fiber_id or ""])[4:20]


def _fiber_action(route: ActionRoute, payload: Any) -> Document:
    verb = route.action.split(".", 1)[1]
    kind = {"spawn": FiberSpawnRequest, "join": FiberJoinRequest, "cancel": FiberCancelRequest}
    try:
        request: Any = parse_payload(kind[verb], payload)
    except SchemaViolation as exc:
        message = f"invalid {route.action} payload: {exc}"
        return _shape_rejection(route, "fiber_invalid_payload", message)
    try:
        fields = _fiber_fields(request)
    except Rejected as rejection:
        return _shape_rejection(route, rejection.failure_class, rejection.diagnostic)
    fiber_id = fields["fiberId"]
    return {
        **_bound(route, "accepted", []),
        **fields,
        "fiberWitnessRef": fiber_witness_ref(route.action, fiber_id),
    }


def _fiber_fields(
    request: FiberSpawnRequest | FiberJoinRequest | FiberCancelRequest,
) -> Document:
    if isinstance(request, FiberSpawnRequest):
        task_ref = rust_trim(request.task_ref)
        if not task_ref:
            raise Rejected("fiber_missing_field", "fiber.spawn requires taskRef")
        parent = blank_to_none(request.parent_fiber_id)
        fiber_id = blank_to_none(request.fiber_id) or default_fiber_id(task_ref, parent)
        scope = blank_to_none(request.scope_ref)
        return {
            "fiberId": fiber_id,
            "taskRef": task_ref,
            "parentFiberId": parent,
            "scopeRef": scope,
        }
    fiber_id = rust_trim(request.fiber_id)
    if isinstance(request, FiberJoinRequest):
        if not fiber_id:
            raise Rejected("fiber_missing_field", "fiber.join requires fiberId")
        join_set = [item for item in map(rust_trim, request.join_set) if item]
        if not join_set:
            raise Rejected("fiber_missing_field", "fiber.join requires non-empty joinSet")
        result_ref = blank_to_none(request.result_ref)
        return {"fiberId": fiber_id, "joinSet": join_set, "resultRef": result_ref}
    if not fiber_id:
        raise Rejected("fiber_missing_field", "fiber.cancel requires fiberId")
    return {"fiberId": fiber_id, "reason": blank_to_none(request.reason)}


def _world_route_binding(route: ActionRoute, payload: Any) -> Document:
    try:
        request = parse_world_binding(payload)
    except SchemaViolation as exc:
        message = f"invalid world binding payload: {exc}"
        return _shape_rejection(route, "lease_invalid_payload", message)
    found = ROUTES_BY_ACTION.get(rust_trim(request.operation_action))
    head = {**_head(route), "operationAction": request.operation_action}
    if found is None:
        # The reference gives no diagnostic for a lookup miss (agent-surface.md §6 quirk 11).
        return {**head, "result": "rejected", "failureClasses": ["lease_unknown_action"]}
    return {**head, "result": "accepted", "binding": found.world_binding()}


def dispatch(
    action: str,
    payload: Any,
    *,
    now: datetime,
    timeout_s: float,
    on_change: OnChange | None = None,
    warm: WarmStores | None = None,
    issue_scope: frozenset[str] | None = None,
) -> Document:
    """Run one transport action; the envelope says whether it was accepted.

    `on_change` runs under the store lock on a lease action's changed row before the save;
    `warm` keeps the parsed store between calls of a long-running caller; `issue_scope` (the
    MCP gate's witness scope, D22-5) limits the issues claim-next may choose.
    """
    name = rust_trim(action)
    route = ROUTES_BY_ACTION.get(name)
    if route is None:
        return {
            "schema": 1,
            "action": name,
            "actionId": UNKNOWN_ACTION_ID,
            "result": "rejected",
            "failureClasses": ["transport_unknown_action"],
            "diagnostic": f"unsupported transport action: {name}",
            "dispatchKind": DISPATCH_KIND,
            "profileId": PROFILE_ID,
            "semanticDigest": dispatch_digest(name, UNKNOWN_ACTION_ID),
        }
    if route.action in _LEASE_PAYLOADS:
        return _lease_action(
            route,
            payload,
            now=now,
            timeout_s=timeout_s,
            on_change=on_change,
            warm=warm,
            issue_scope=issue_scope,
        )
    if route.action == "world.route_binding":
        return _world_route_binding(route, payload)
    return _fiber_action(route, payload)
