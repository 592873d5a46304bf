"""Lease recovery through the transport after a failed step (`--host-action-transport mcp`):
renew an active lease or release a contended one with the same dispatch code as
`transport-dispatch` and the MCP lease tools, recording `transport://dispatch/<action>/<digest>`
(issue-memory-and-loops.md §B4 "Transport recovery")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from premath.harness.handoff import Handoff, LeaseSnapshot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RECOVERY_ACTIONS = {
    "issue_lease_renew": "issue.lease_renew",
    "issue_lease_release": "issue.lease_release",
}


@dataclass(frozen=True)
class TransportRecovery:
    """The handoff with its result class suffixed and summary extended, and the transport refs."""

    handoff: Handoff
    refs: tuple[str, ...]


def transport_ref(action: str, digest: str) -> str:
    return f"transport://dispatch/{action.replace('/', '_')}/{digest}"


def recover_through_transport(
    handoff: Handoff,
    snapshot: LeaseSnapshot,
    *,
    worker_id: str,
    claimed_lease_id: str | None,
    lease_ttl_s: int,
    dispatch: Callable[[str, dict[str, Any]], dict[str, Any]],
) -> TransportRecovery | None:
    """None when the handoff's lease action is not a transport action (renew or release).
    `dispatch(action, payload)` runs it where the loop's authority is: the transport's own
    dispatch on the issues file, or the MCP lease tools of a remote authority."""
    action = RECOVERY_ACTIONS.get(handoff.lease_action)
    if action is None:
        return None
    lease_id = snapshot.lease_id or claimed_lease_id
    owner = snapshot.lease_owner or worker_id
    payload: dict[str, Any] = {"id": snapshot.issue_id}
    if action == "issue.lease_renew":
        if not lease_id:
            return TransportRecovery(
                _suffixed(handoff, "_transport_input_missing", "no lease id to renew"), ()
            )
        payload |= {"assignee": owner, "leaseId": lease_id, "leaseTtlSeconds": lease_ttl_s}
    else:
        payload["assignee"] = owner
        if lease_id:
            payload["leaseId"] = lease_id
    envelope = dispatch(action, payload)
    refs = (transport_ref(action, envelope["semanticDigest"]),)
    if envelope["result"] == "accepted":
        tail = f"transport dispatched {action}"
        return TransportRecovery(_suffixed(handoff, "_transport_dispatched", tail), refs)
    classes = ",".join(envelope.get("failureClasses") or []) or "unknown"
    tail = f"transport rejected {action} (failureClasses={classes})"
    return TransportRecovery(_suffixed(handoff, "_transport_rejected", tail), refs)


def _suffixed(handoff: Handoff, suffix: str, tail: str) -> Handoff:
    from dataclasses import replace

    return replace(
        handoff,
        result_class=handoff.result_class + suffix,
        summary=f"{handoff.summary}; {tail}",
    )
