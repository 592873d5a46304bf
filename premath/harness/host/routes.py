"""Host actions that leave the process: transport dispatch with its route preflight, and the
conformance vector wrappers (agent-surface.md §3.5 steps 7-9, §3.6)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from datetime import datetime

from premath.harness.host.args import HostActionFailed
from premath.harness.host.context import HostContext
from premath.harness.host.contract import HostContract
from premath.harness.host.local_actions import EXECUTION_ERROR
from premath.harness.host.paths import confined_path, refuse_effects
from premath.harness.instruction.errors import rust_debug_list
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LEASE_FAMILY = "route.issue_claim_lease"
FIBER_FAMILY = "route.fiber.lifecycle"
ROUTE_FAMILIES = {
    "issue.claim": LEASE_FAMILY,
    "issue.claim_next": LEASE_FAMILY,
    "issue.lease_renew": LEASE_FAMILY,
    "issue.lease_release": LEASE_FAMILY,
    "fiber.spawn": FIBER_FAMILY,
    "fiber.join": FIBER_FAMILY,
    "fiber.cancel": FIBER_FAMILY,
}
ROUTED_ACTIONS = frozenset(ROUTE_FAMILIES)
WRAPPERS = {
    "conformance.runtime_orchestration_vectors.run": "runtime-orchestration",
    "conformance.frontend_parity_vectors.run": "frontend-parity",
    "conformance.world_core_vectors.run": "world-core",
}
"""Vector wrapper -> the suite it runs (`python -m premath.harness.vectors <suite>`)."""
WRAPPER_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Preflight:
    witness: dict[str, Any] | None
    witness_ref: str
    failure_class: str | None = None
    diagnostic: str = ""


def preflight(action: str, contract: HostContract, policy_digest: str | None) -> Preflight:
    """Resolve the contract's operation for `action` on its route family (site-resolve).

    Rejected when the preflight profile is not one the contract allows, when a policy digest
    lacks the contract's required prefix, or when no transport route of the family carries
    the operation.
    """
    from premath.transport.registry import ROUTES, resolver_witness, resolver_witness_ref

    family = ROUTE_FAMILIES[action]
    operation = contract.operation_ids.get(action) or ""
    digest = policy_digest or f"{contract.policy_prefix or 'pol1_'}scheme_eval_route_preflight"
    failures: list[str] = []
    if contract.allowed_profiles and contract.preflight_profile not in contract.allowed_profiles:
        failures.append("site_resolve_policy_denied")
    if contract.policy_prefix and not digest.startswith(contract.policy_prefix):
        failures.append("site_resolve_policy_denied")
    route = next(
        (r for r in ROUTES if r.operation_id == operation and r.route_family_id == family), None
    )
    if route is None:
        failures.append("site_resolve_unbound")
    if failures or route is None:
        listed = ", ".join(f'"{failure}"' for failure in dict.fromkeys(failures))
        return Preflight(
            None,
            "",
            failures[0],
            f"kernel route preflight rejected host action `{action}` operation={operation} "
            f"route={family} failures=[{listed}]",
        )
    witness = resolver_witness(route)
    return Preflight(witness, resolver_witness_ref(route, witness))


def payload_with_issues_path(action: str, args: Any, context: HostContext) -> Any:
    """A lease action's payload with its `issuesPath` confined (host/paths.py) and, where the
    call leaves it out and the context has its own store (a worker step), that store."""
    if ROUTE_FAMILIES[action] != LEASE_FAMILY or not isinstance(args, dict):
        return args
    given = args.get("issuesPath")
    if not isinstance(given, str) and given is not None:
        return args  # the transport reports the wrong type, as the reference does
    path = rust_trim(given or "")
    if not path and context.base_dir is None:
        return args
    resolved = context.resolve(path) if path else context.issues_path
    confined_path(action, "issuesPath", resolved, context.repo_root)
    return {**args, "issuesPath": resolved} if context.base_dir is not None else args


def dispatch(action: str, args: Any, *, now: datetime, lock_timeout: float) -> Any:
    from premath.transport.dispatch import dispatch as transport_dispatch

    return transport_dispatch(action, args, now=now, timeout_s=lock_timeout)


def transport_refs(payload: Any) -> list[str]:
    if not isinstance(payload, dict):
        return []
    keys = ("fiberWitnessRef", "witnessRef", "resolverWitnessRef")
    return [rust_trim(payload[key]) for key in keys if isinstance(payload.get(key), str)]


def _binding(witness: Any) -> tuple[Any, ...]:
    if not isinstance(witness, dict):
        return (None, None, None, None)
    return tuple(
        witness.get(key) for key in ("operationId", "routeFamilyId", "worldId", "morphismRowId")
    )


def _shown(binding: tuple[Any, ...]) -> str:
    def some(value: Any) -> str:
        return "None" if value is None else f'Some("{value}")'

    return f"({binding[0]}, {some(binding[1])}, {some(binding[2])}, {some(binding[3])})"


def parity_drift(preflight_witness: Any, payload: Any) -> str | None:
    """The drift diagnostic when an accepted dispatch resolved another route than the preflight."""
    if preflight_witness is None or not isinstance(payload, dict):
        return None
    if payload.get("result") != "accepted":
        return None
    expected, actual = _binding(preflight_witness), _binding(payload.get("resolverWitness"))
    if expected == actual:
        return None
    return (
        f"transport resolver witness drift detected: preflight={_shown(expected)} "
        f"dispatch={_shown(actual)}"
    )


def _tail(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()][-8:]


def run_wrapper(action: str, args: Any) -> dict[str, Any]:
    """Run one of our conformance vector suites in a child process; accepted when it exits 0."""
    from premath.runner.process import allowlisted_env, run_bounded

    fixtures = args.get("fixtures", args.get("fixtures_path")) if isinstance(args, dict) else None
    command = [sys.executable, "-m", "premath.harness.vectors", WRAPPERS[action]]
    if isinstance(fixtures, str) and rust_trim(fixtures):
        refuse_effects(action, "fixtures", rust_trim(fixtures))
        command += ["--fixtures", rust_trim(fixtures)]
    outcome = run_bounded(
        command,
        cwd=os.getcwd(),
        env=allowlisted_env({"PYTHONPATH": os.pathsep.join(sys.path)}),
        timeout_s=WRAPPER_TIMEOUT_S,
        stdout_path=None,
        stderr_path=None,
        output_cap=1 << 20,
    )
    stdout_tail = _tail(outcome.stdout_tail)
    if outcome.exit_code != 0:
        exit_text = outcome.exit_code if outcome.exit_code is not None else outcome.status
        raise HostActionFailed(
            EXECUTION_ERROR,
            f"{action} failed (exit={exit_text}); stdout_tail={rust_debug_list(stdout_tail)}; "
            f"stderr_tail={rust_debug_list(_tail(outcome.stderr_tail))}",
        )
    return {
        "schema": 1,
        "action": action,
        "result": "accepted",
        "command": command,
        "stdoutTail": stdout_tail,
    }
