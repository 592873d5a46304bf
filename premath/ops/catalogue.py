"""Every operation the catalogue declares, and each face's lookup by its own name.

Migrated so far: the dependency edges, `issue update`, `issue discover` and `issue add` (MCP
tools and host actions; the CLI builds the `dep` commands from here), the lease family (MCP
tools, transport actions, the remote client), and the fleet record's tools (MCP). The other
operations are still declared at their faces (mcp/catalogue.py,
harness/host/extension_actions.py) until their family moves here.
"""

from __future__ import annotations

from premath.ops.fleet import FLEET_OPERATIONS, HARNESS_TRAJECTORY_APPEND, WORKER_OPERATIONS
from premath.ops.issue_writes import (
    DEP_ADD,
    DEP_REMOVE,
    DEP_REPLACE,
    ISSUE_ADD,
    ISSUE_DISCOVER,
    ISSUE_UPDATE,
)
from premath.ops.leases import (
    ISSUE_CLAIM,
    ISSUE_CLAIM_NEXT,
    ISSUE_LEASE_FINISH,
    ISSUE_LEASE_RELEASE,
    ISSUE_LEASE_RENEW,
    LEASE_OPERATIONS,
)
from premath.ops.operation import Operation

__all__ = [
    "DEP_ADD",
    "DEP_REMOVE",
    "DEP_REPLACE",
    "HARNESS_TRAJECTORY_APPEND",
    "ISSUE_ADD",
    "ISSUE_CLAIM",
    "ISSUE_CLAIM_NEXT",
    "ISSUE_DISCOVER",
    "ISSUE_LEASE_FINISH",
    "ISSUE_LEASE_RELEASE",
    "ISSUE_LEASE_RENEW",
    "ISSUE_UPDATE",
    "LEASE_OPERATIONS",
    "OPERATIONS",
    "WORKER_OPERATIONS",
    "by_face",
]

OPERATIONS: tuple[Operation, ...] = (
    DEP_ADD,
    DEP_REMOVE,
    DEP_REPLACE,
    ISSUE_UPDATE,
    ISSUE_DISCOVER,
    ISSUE_ADD,
    *LEASE_OPERATIONS,
    *FLEET_OPERATIONS,
)


def by_face(face: str) -> dict[str, Operation]:
    """The operations a face offers, by the name it gives them."""
    found: dict[str, Operation] = {}
    for operation in OPERATIONS:
        name = getattr(operation.faces, face)
        if name is not None:
            found[name if isinstance(name, str) else " ".join(name.path)] = operation
    return found
