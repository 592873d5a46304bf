"""`scheme-eval`: run a program of host-action calls under the contract's allowlist (§3.5-§3.9).

Each call goes through the branch order of agent-surface.md §3.5; the first branch that decides
gives its payload. Every executed call gets one `premath.host_effect.v0` envelope and one
trajectory row, appended before the next call runs; the program stops after the first call
that is not accepted. Denied actions never reach a store.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from premath.errors import InputInvalid, IoFailure, LockBusy
from premath.harness.host import routes
from premath.harness.host.contract import HostContract, host_contract, load_contract
from premath.harness.host.effects import (
    EFFECT_SCHEMA,
    args_digest,
    host_effect_ref,
    payload_failure_classes,
    rejection,
    step_id,
)
from premath.harness.host.local_actions import LOCAL_ACTIONS, HostActionFailed, run_local_action
from premath.harness.host.program import Bindings, Call, check_program, parse_program
from premath.harness.host.startup import read_json
from premath.harness.trajectory import append_step
from premath.text import rust_trim
from premath.timefmt import format_seconds_z

RESULT_KIND = "premath.scheme_eval.result.v0"
PROFILE = "steel.default.v0"
DEFAULT_TRAJECTORY_PATH = ".premath/harness_trajectory.jsonl"
DEFAULT_STEP_PREFIX = "scheme_eval"
DENIED_PREFIXES = ("shell.", "network.", "http.", "exec.")
MUTATION_CLAIM = "capabilities.change_morphisms"
ALL_MUTATIONS_CLAIM = "capabilities.change_morphisms.all"
ACTION_CLAIMS = {
    "issue.claim": "capabilities.change_morphisms.issue_claim",
    "issue.claim_next": "capabilities.change_morphisms.issue_claim",
    "issue.lease_renew": "capabilities.change_morphisms.issue_lease_renew",
    "issue.lease_release": "capabilities.change_morphisms.issue_lease_release",
}
MUTATION_ACTIONS = frozenset(ACTION_CLAIMS)
SUPPORTED_ACTIONS = LOCAL_ACTIONS | routes.ROUTED_ACTIONS | frozenset(routes.WRAPPERS)


@dataclass(frozen=True)
class EvalOptions:
    program_path: str
    contract_path: str
    trajectory_path: str = DEFAULT_TRAJECTORY_PATH
    step_prefix: str = DEFAULT_STEP_PREFIX
    max_calls: int = 32
    bindings: Bindings = field(default_factory=Bindings)


def allowlisted_actions(contract: HostContract) -> list[str]:
    bound = {action for action, op in contract.operation_ids.items() if op is not None}
    return sorted((SUPPORTED_ACTIONS & bound) | frozenset(routes.WRAPPERS))


def _policy_rejection(call: Call, contract: HostContract, allowlist: set[str]) -> Any:
    """Steps 1-6: the payload of a call refused before it runs, or None."""
    action = call.action
    if not action:
        return rejection("scheme_eval.invalid_program", "action is required")
    if action.lower().startswith(DENIED_PREFIXES):
        return rejection(
            "scheme_eval.effect_denied", f"direct effect denied in evaluator profile: {action}"
        )
    if action in contract.operation_ids and contract.operation_ids[action] is None:
        return rejection(
            contract.contract_unbound_class,
            f"host action row is present but operationId is unbound: {action}",
        )
    if action not in allowlist:
        return rejection(
            "scheme_eval.host_action_unallowlisted",
            f"host action is not allowlisted for scheme_eval: {action}",
        )
    if action in contract.mcp_only:
        return rejection(
            "control_plane_host_action_mcp_transport_required",
            f"host action requires MCP transport profile: {action}",
        )
    if action in MUTATION_ACTIONS:
        return _evidence_rejection(call)
    return None


def _evidence_rejection(call: Call) -> Any:
    action = call.action
    if call.policy_digest is None or call.instruction_ref is None:
        return rejection(
            "mutation.use_evidence_missing",
            f"mutation action `{action}` requires non-empty policyDigest and instructionRef",
        )
    claims = set(call.capability_claims)
    if MUTATION_CLAIM not in claims:
        return rejection(
            "mutation.capability_claim_missing",
            f"mutation action `{action}` requires capability claim `{MUTATION_CLAIM}`",
        )
    claim = ACTION_CLAIMS[action]
    if claim not in claims and ALL_MUTATIONS_CLAIM not in claims:
        return rejection(
            "mutation.capability_claim_missing",
            f"mutation action `{action}` requires capability claim `{claim}` or "
            f"`{ALL_MUTATIONS_CLAIM}`",
        )
    return None


@dataclass
class CallOutcome:
    payload: Any
    witness_refs: list[str]


def _run_call(
    call: Call, contract: HostContract, allowlist: set[str], now: datetime, lock_timeout: float
) -> CallOutcome:
    refused = _policy_rejection(call, contract, allowlist)
    if refused is not None:
        return CallOutcome(refused, [])
    if call.action in routes.ROUTED_ACTIONS:
        return _routed(call, contract, now, lock_timeout)
    try:
        if call.action in routes.WRAPPERS:
            return CallOutcome(routes.run_wrapper(call.action, call.args), [])
        return CallOutcome(run_local_action(call.action, call.args, now), [])
    except HostActionFailed as exc:
        return CallOutcome(rejection(exc.failure_class, exc.diagnostic), [])


def _routed(call: Call, contract: HostContract, now: datetime, lock_timeout: float) -> CallOutcome:
    """Steps 7-9: route preflight, transport dispatch, parity of the two resolver witnesses."""
    preflight = routes.preflight(call.action, contract, call.policy_digest)
    if preflight.failure_class is not None:
        return CallOutcome(rejection(preflight.failure_class, preflight.diagnostic), [])
    refs = [preflight.witness_ref]
    payload = routes.dispatch(call.action, call.args, now=now, lock_timeout=lock_timeout)
    refs += routes.transport_refs(payload)
    drift = routes.parity_drift(preflight.witness, payload)
    if drift is not None:
        payload = rejection(contract.binding_mismatch_class, drift)
    return CallOutcome(payload, refs)


def _sorted_refs(values: list[str]) -> list[str]:
    return sorted({value for value in map(rust_trim, values) if value})


def evaluate_program(
    options: EvalOptions, *, now: Callable[[], datetime], lock_timeout: float
) -> dict[str, Any]:
    """The result document; raises StartupError before any call, IoFailure on a failed append."""
    started_at = format_seconds_z(now())
    program = parse_program(
        read_json(options.program_path, "scheme-eval program", struct=True), options.bindings
    )
    contract_document = load_contract(options.contract_path)
    check_program(program, options.max_calls)
    contract = host_contract(contract_document)
    allowlist = allowlisted_actions(contract)
    prefix = rust_trim(options.step_prefix) or DEFAULT_STEP_PREFIX
    effects: list[dict[str, Any]] = []
    classes: set[str] = set()
    for call in program.calls:
        call_started = now()
        outcome = _run_call(call, contract, set(allowlist), call_started, lock_timeout)
        digest = args_digest(call.args)
        effect_classes = payload_failure_classes(outcome.payload)
        result_class = effect_classes[0] if effect_classes else "accepted"
        own_ref = host_effect_ref(call.action, digest, call.index)
        refs = _sorted_refs([*call.witness_refs, own_ref, *outcome.witness_refs])
        row = _append_row(
            options, call, prefix, digest, result_class, refs, (call_started, now()), lock_timeout
        )
        effects.append(
            {
                "schema": EFFECT_SCHEMA,
                "callId": call.call_id,
                "action": call.action,
                "argsDigest": digest,
                "resultClass": result_class,
                "payload": outcome.payload,
                "failureClasses": effect_classes,
                "witnessRefs": refs,
                "policyDigest": call.policy_digest,
                "instructionRef": call.instruction_ref,
                "trajectoryRow": {
                    "path": options.trajectory_path,
                    "stepId": row["stepId"],
                    "resultClass": row["resultClass"],
                    "finishedAt": row["finishedAt"],
                },
            }
        )
        classes.update(effect_classes)
        if result_class != "accepted":
            break
    rejected = any(effect["resultClass"] != "accepted" for effect in effects)
    return {
        "schema": 1,
        "kind": RESULT_KIND,
        "profile": PROFILE,
        "programPath": options.program_path,
        "controlPlaneContract": options.contract_path,
        "trajectoryPath": options.trajectory_path,
        "allowlistedActions": allowlist,
        "executedCallCount": len(effects),
        "result": "rejected" if rejected else "accepted",
        "failureClasses": sorted(classes),
        "startedAt": started_at,
        "finishedAt": format_seconds_z(now()),
        "effects": effects,
    }


def _append_row(
    options: EvalOptions,
    call: Call,
    prefix: str,
    digest: str,
    result_class: str,
    refs: list[str],
    times: tuple[datetime, datetime],
    lock_timeout: float,
) -> dict[str, Any]:
    started, finished = times
    try:
        return append_step(
            options.trajectory_path,
            step_id=step_id(prefix, call.index, call.call_id, call.action, digest),
            action=f"scheme_eval.{call.action}",
            result_class=result_class,
            issue_id=call.issue_id,
            instruction_refs=[call.instruction_ref] if call.instruction_ref else [],
            witness_refs=refs,
            lineage_refs=call.lineage_refs,
            started_at=format_seconds_z(started),
            finished_at=format_seconds_z(finished),
            now=finished,
            lock_timeout=lock_timeout,
        )
    except (InputInvalid, IoFailure, LockBusy) as exc:
        raise IoFailure(f"{exc.message} (scheme_eval.host_action_execution_error)") from None


def stage(failure_class: str, diagnostic: str) -> str:
    """The text mode's failure stage (§3.9)."""
    if (
        failure_class.startswith("site_resolve_")
        or failure_class == "control_plane_host_action_contract_unbound"
        or "kernel route preflight rejected host action" in diagnostic
    ):
        return "route preflight"
    transport_markers = (
        "transport resolver witness",
        "transport dispatch",
        "failed to serialize transport request",
        "failed to parse transport response",
    )
    if (
        failure_class.startswith("transport.")
        or failure_class == "control_plane_host_action_binding_mismatch"
        or any(marker in diagnostic for marker in transport_markers)
    ):
        return "transport dispatch"
    if failure_class in (
        "mutation.use_evidence_missing",
        "mutation.capability_claim_missing",
        "scheme_eval.effect_denied",
        "scheme_eval.host_action_unallowlisted",
        "control_plane_host_action_mcp_transport_required",
    ):
        return "policy/capability"
    if failure_class in ("scheme_eval.invalid_program", "scheme_eval.call_budget_exceeded"):
        return "input validation"
    return "unknown"


def result_text(document: dict[str, Any]) -> str:
    lines = [
        "premath scheme-eval",
        f"  Program: {document['programPath']}",
        f"  Result: {document['result']}",
        f"  Executed calls: {document['executedCallCount']}",
        f"  Trajectory path: {document['trajectoryPath']}",
    ]
    failed = next(
        (effect for effect in document["effects"] if effect["resultClass"] != "accepted"), None
    )
    if document["result"] == "rejected":
        failure_class = failed["resultClass"] if failed else "unknown"
        payload = failed["payload"] if failed else {}
        diagnostic = payload.get("diagnostic") if isinstance(payload, dict) else None
        diagnostic = diagnostic if isinstance(diagnostic, str) else "no diagnostic provided"
        lines += [
            f"  Failure class: {failure_class}",
            f"  Failure stage: {stage(failure_class, diagnostic)}",
            f"  Failed action: {failed['action'] if failed else 'unknown'}",
            f"  Diagnostic: {diagnostic}",
            "  Hint: rerun with --json for full failure envelope",
        ]
    return "\n".join(lines)
