"""The transport action registry: eight actions, routes and digests (agent-surface.md §2.2-2.3).

Every digest here is constant per action; they are computed, not pasted, and golden tests pin
them to the reference's values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROFILE_ID = "transport.issue_lease.v1"
DISPATCH_KIND = "premath.transport_dispatch.v1"
CHECK_KIND = "premath.transport_check.v1"
REGISTRY_KIND = "premath.transport_action_registry.v1"
SITE_ID = "premath.doctrine_operation_site.v0"
RESOLVER_WITNESS_KIND = "premath.site_resolve.witness.v1"
UNKNOWN_ACTION_ID = "transport.action.unknown"

_LEASE_MORPHISMS = ("dm.identity", "dm.profile.execution", "dm.commitment.attest")
_WORLD_MORPHISMS = ("dm.identity", "dm.transport.world")
_FIBER_MORPHISMS = ("dm.identity", "dm.profile.execution", "dm.transport.world")


class ActionRoute(NamedTuple):
    """One registry row: where an action is routed and which morphisms it requires."""

    action: str
    action_id: str
    operation_id: str
    route_family_id: str
    world_id: str
    morphism_row_id: str
    required_morphisms: tuple[str, ...]

    def world_binding(self) -> dict[str, str]:
        return {
            "operationId": self.operation_id,
            "routeFamilyId": self.route_family_id,
            "worldId": self.world_id,
            "morphismRowId": self.morphism_row_id,
        }


def _lease(action: str, operation: str) -> ActionRoute:
    suffix = action.split(".", 1)[1]
    return ActionRoute(
        action,
        f"transport.action.issue_{suffix}",
        operation,
        "route.issue_claim_lease",
        "world.lease.v1",
        "wm.control.lease.mutation",
        _LEASE_MORPHISMS,
    )


def _fiber(verb: str) -> ActionRoute:
    return ActionRoute(
        f"fiber.{verb}",
        f"transport.action.fiber_{verb}",
        f"op/transport.fiber_{verb}",
        "route.fiber.lifecycle",
        "world.fiber.v1",
        "wm.control.fiber.lifecycle",
        _FIBER_MORPHISMS,
    )


ROUTES: tuple[ActionRoute, ...] = (
    _lease("issue.claim", "op/mcp.issue_claim"),
    _lease("issue.claim_next", "op/transport.issue_claim_next"),
    _lease("issue.lease_renew", "op/mcp.issue_lease_renew"),
    _lease("issue.lease_release", "op/mcp.issue_lease_release"),
    ActionRoute(
        "world.route_binding",
        "transport.action.world_route_binding",
        "op/transport.world_route_binding",
        "route.transport.dispatch",
        "world.transport.v1",
        "wm.control.transport.dispatch",
        _WORLD_MORPHISMS,
    ),
    _fiber("spawn"),
    _fiber("join"),
    _fiber("cancel"),
)
ROUTES_BY_ACTION = {route.action: route for route in ROUTES}


def ts1(parts: Sequence[str]) -> str:
    """`ts1_` + sha256 of the parts, each followed by one NUL (a terminator)."""
    data = b"".join(part.encode() + b"\0" for part in parts)
    return "ts1_" + hashlib.sha256(data).hexdigest()


def sr1(parts: Sequence[str]) -> str:
    """`sr1_` + sha256 of the parts joined by NUL (a separator: no trailing NUL)."""
    return "sr1_" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


def dispatch_digest(action: str, action_id: str) -> str:
    """The envelope's `semanticDigest`: constant per action."""
    return ts1([PROFILE_ID, DISPATCH_KIND, action, action_id])


def row_digest(route: ActionRoute) -> str:
    return ts1(
        [
            PROFILE_ID,
            route.action_id,
            route.action,
            route.operation_id,
            route.route_family_id,
            route.world_id,
            route.morphism_row_id,
            *route.required_morphisms,
        ]
    )


def resolver_witness(route: ActionRoute) -> dict[str, Any]:
    """The site-resolve witness of an action's route (the kernel check always accepts)."""
    digest = sr1(
        [
            SITE_ID,
            route.operation_id,
            route.route_family_id,
            route.world_id,
            route.morphism_row_id,
            "accepted",
        ]
    )
    return {
        "schema": 1,
        "witnessKind": RESOLVER_WITNESS_KIND,
        "siteId": SITE_ID,
        "operationId": route.operation_id,
        "routeFamilyId": route.route_family_id,
        "worldId": route.world_id,
        "morphismRowId": route.morphism_row_id,
        "semanticDigest": digest,
        "failureClasses": [],
    }


def resolver_witness_ref(route: ActionRoute, witness: dict[str, Any]) -> str:
    operation = route.operation_id.replace("/", "_")
    return f"resolver://site-resolve/{operation}/{witness['semanticDigest']}"


def check_report() -> dict[str, Any]:
    """`transport-check`: the registry report in struct order (the table is constant, so it is
    always accepted)."""
    result = "accepted"
    failure_classes: list[str] = []
    rows = [(route, row_digest(route)) for route in ROUTES]
    digest_parts = [CHECK_KIND, PROFILE_ID, result, *failure_classes]
    for route, digest in rows:
        digest_parts += [route.action, route.action_id, digest]
    return {
        "schema": 1,
        "checkKind": CHECK_KIND,
        "registryKind": REGISTRY_KIND,
        "profileId": PROFILE_ID,
        "result": result,
        "failureClasses": failure_classes,
        "issues": [],
        "actionCount": len(rows),
        "actions": [
            {
                "action": route.action,
                "actionId": route.action_id,
                "operationId": route.operation_id,
                "routeFamilyId": route.route_family_id,
                "worldId": route.world_id,
                "morphismRowId": route.morphism_row_id,
                "semanticDigest": digest,
            }
            for route, digest in rows
        ],
        "semanticDigest": ts1(digest_parts),
    }
