"""`scheme-eval`: run a program of host-action calls under the contract's allowlist (§3.5-§3.9).

Each call goes through the branch order of agent-surface.md §3.5; the first branch that decides
gives its payload. Every executed call gets one `premath.host_effect.v0` envelope and one
trajectory row, appended before the next call runs; the program stops after the first call
that is not accepted. Denied actions never reach a store.

The actions premath's contract extension binds (host/extension.py) go through the same
pipeline: allowlist, then for mutations the evidence check with the action's capability claim,
then (host/extension_actions.py) the MCP mutation gate on the cited instruction witness. A
worker's work step runs programs through `load_program` and `run_program` with its own
`HostContext` (the claimed issue, the loop's paths, a deadline).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

from premath.errors import InputInvalid, IoFailure, LockBusy
from premath.harness.host import routes
from premath.harness.host.action_run import ActionCall
from premath.harness.host.args import HostActionFailed
from premath.harness.host.context import HostContext
from premath.harness.host.contract import HostContract, host_contract, load_contract
from premath.harness.host.effects import (
    EFFECT_SCHEMA,
    args_digest,
    host_effect_ref,
    payload_failure_classes,
    rejection,
    sanitize,
    step_id,
)
from premath.harness.host.extension import HostExtension, load_extension
from premath.harness.host.extension_actions import EXTENSION_EFFECTS, run_extension_action
from premath.harness.host.local_actions import LOCAL_ACTIONS, run_local_action
from premath.harness.host.program import Bindings, Call, Program, check_program, parse_program
from premath.harness.host.startup import read_json
from premath.record.trajectory import append_step
from premath.text import rust_trim
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RESULT_KIND = "premath.scheme_eval.result.v0"
PROFILE = "steel.default.v0"
DEFAULT_STEP_PREFIX = "scheme_eval"
DEADLINE_EXCEEDED = "scheme_eval.deadline_exceeded"
PREMATH_POLICY_CLASSES = ("mutation.", "path.")
"""premath's own refusal classes of the extension's gate and path rules (text stage only)."""
DENIED_PREFIXES = ("shell.", "network.", "http.", "exec.")
MUTATION_CLAIM = "capabilities.change_morphisms"
ALL_MUTATIONS_CLAIM = "capabilities.change_morphisms.all"
ACTION_CLAIMS = {
    "issue.claim": "capabilities.change_morphisms.issue_claim",
    "issue.claim_next": "capabilities.change_morphisms.issue_claim",
    "issue.lease_renew": "capabilities.change_morphisms.issue_lease_renew",
    "issue.lease_release": "capabilities.change_morphisms.issue_lease_release",
}
SUPPORTED_ACTIONS = LOCAL_ACTIONS | routes.ROUTED_ACTIONS | frozenset(routes.WRAPPERS)


@dataclass(frozen=True)
class EvalOptions:
    program_path: str
    contract_path: str
    step_prefix: str = DEFAULT_STEP_PREFIX
    max_calls: int = 32
    bindings: Bindings = field(default_factory=Bindings)
    extension_path: str | None = None
    """premath's contract extension in force (host/extension.py), or None: the reference's."""
    context: HostContext = field(default_factory=HostContext)


@dataclass(frozen=True)
class LoadedProgram:
    """A program past every start-up check: nothing was run or appended yet."""

    document: Any
    contract: HostContract
    extension: HostExtension | None
    allowlist: tuple[str, ...]

    def parsed(self, bindings: Bindings) -> Program:
        return parse_program(self.document, bindings)


def allowlisted_actions(
    contract: HostContract, extension: HostExtension | None = None
) -> list[str]:
    bound = {action for action, op in contract.operation_ids.items() if op is not None}
    added = frozenset(extension.actions) if extension is not None else frozenset()
    return sorted((SUPPORTED_ACTIONS & bound) | frozenset(routes.WRAPPERS) | added)


def load_program(options: EvalOptions) -> LoadedProgram:
    """Read and check the program, the contract and the extension in the reference's order
    (agent-surface.md §3.3); raises StartupError, before any call runs."""
    document = read_json(options.program_path, "scheme-eval program", struct=True)
    program = parse_program(document, options.bindings)
    contract_document = load_contract(options.contract_path)
    check_program(program, options.max_calls)
    contract = host_contract(contract_document)
    extension = None
    if options.extension_path is not None:
        extension = load_extension(options.extension_path, EXTENSION_EFFECTS)
    allowlist = tuple(allowlisted_actions(contract, extension))
    return LoadedProgram(document, contract, extension, allowlist)


def static_refusals(loaded: LoadedProgram, bindings: Bindings) -> list[tuple[Call, str, str]]:
    """(call, class, diagnostic) of every call refused before it would touch anything: the
    pipeline's policy steps (blank, denied, unbound, unallowlisted, MCP-only, mutation
    evidence) and the args of the in-process actions. A work program must have none, so it is
    refused before a worker claims (harness/work.py)."""
    from premath.harness.host.args import parse_args
    from premath.harness.host.extension_actions import ARG_SPECS
    from premath.harness.host.local_actions import ARG_FIELDS

    refused = []
    for call in loaded.parsed(bindings).calls:
        payload = _policy_rejection(call, loaded)
        if payload is not None:
            refused.append((call, payload["failureClasses"][0], payload["diagnostic"]))
            continue
        spec = ARG_FIELDS.get(call.action) or ARG_SPECS.get(call.action)
        try:
            if spec is not None:
                parse_args(call.action, call.args, spec)
        except HostActionFailed as exc:
            refused.append((call, exc.failure_class, exc.diagnostic))
    return refused


def _mutation_claim(action: str, extension: HostExtension | None) -> str | None:
    """The capability claim a mutation needs; None for an action that mutates nothing."""
    if action in ACTION_CLAIMS:
        return ACTION_CLAIMS[action]
    if extension is not None and extension.actions.get(action) == "mutation":
        from premath.transport.instruction_link import Mutation

        return Mutation(action).claim
    return None


def _policy_rejection(call: Call, loaded: LoadedProgram) -> Any:
    """Steps 1-6: the payload of a call refused before it runs, or None."""
    action, contract, extension = call.action, loaded.contract, loaded.extension
    bound_by_extension = extension is not None and action in extension.actions
    if not action:
        return rejection("scheme_eval.invalid_program", "action is required")
    if action.lower().startswith(DENIED_PREFIXES):
        return rejection(
            "scheme_eval.effect_denied", f"direct effect denied in evaluator profile: {action}"
        )
    if (
        not bound_by_extension
        and action in contract.operation_ids
        and contract.operation_ids[action] is None
    ):
        return rejection(
            contract.contract_unbound_class,
            f"host action row is present but operationId is unbound: {action}",
        )
    if action not in loaded.allowlist:
        return rejection(
            "scheme_eval.host_action_unallowlisted",
            f"host action is not allowlisted for scheme_eval: {action}",
        )
    if action in contract.mcp_only:
        return rejection(
            "control_plane_host_action_mcp_transport_required",
            f"host action requires MCP transport profile: {action}",
        )
    claim = _mutation_claim(action, extension)
    if claim is not None:
        return _evidence_rejection(call, claim)
    return None


def _evidence_rejection(call: Call, claim: str) -> Any:
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
    call: Call,
    loaded: LoadedProgram,
    options: EvalOptions,
    now: Callable[[], datetime],
    lock_timeout: float,
) -> CallOutcome:
    context = options.context
    if context.deadline is not None and time.monotonic() > context.deadline:
        return CallOutcome(
            rejection(DEADLINE_EXCEEDED, f"program deadline passed before call {call.index}"), []
        )
    refused = _policy_rejection(call, loaded)
    if refused is not None:
        return CallOutcome(refused, [])
    try:
        if call.action in routes.ROUTED_ACTIONS:
            args = routes.payload_with_issues_path(call.action, call.args, context)
            return _routed(call, args, loaded.contract, now(), lock_timeout)
        if call.action in routes.WRAPPERS:
            return CallOutcome(routes.run_wrapper(call.action, call.args), [])
        if call.action in LOCAL_ACTIONS:
            return CallOutcome(run_local_action(call.action, call.args, now(), context), [])
        assert loaded.extension is not None  # allowlisted, so bound by the extension
        extension_call = ActionCall(
            action=call.action,
            args=call.args,
            issue_id=call.issue_id,
            policy_digest=call.policy_digest,
            instruction_ref=call.instruction_ref,
            step_id=f"{_prefix(options)}.{sanitize(call.call_id)}",
        )
        effect = loaded.extension.actions[call.action]
        payload = run_extension_action(
            extension_call, effect, now=now, context=context, lock_timeout=lock_timeout
        )
        return CallOutcome(payload, [])
    except HostActionFailed as exc:
        return CallOutcome(rejection(exc.failure_class, exc.diagnostic), [])


def _prefix(options: EvalOptions) -> str:
    return rust_trim(options.step_prefix) or DEFAULT_STEP_PREFIX


def _routed(
    call: Call, args: Any, contract: HostContract, now: datetime, lock_timeout: float
) -> CallOutcome:
    """Steps 7-9: route preflight, transport dispatch, parity of the two resolver witnesses."""
    preflight = routes.preflight(call.action, contract, call.policy_digest)
    if preflight.failure_class is not None:
        return CallOutcome(rejection(preflight.failure_class, preflight.diagnostic), [])
    refs = [preflight.witness_ref]
    payload = routes.dispatch(call.action, args, now=now, lock_timeout=lock_timeout)
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
    loaded = load_program(options)
    return run_program(loaded, options, now=now, lock_timeout=lock_timeout, started_at=started_at)


def replay_program(
    options: EvalOptions,
    effects_path: str,
    *,
    now: Callable[[], datetime],
    lock_timeout: float,
) -> dict[str, Any]:
    """Run the program again and compare with the effects recorded at `effects_path`
    (host/replay.py): the result document with its `replay` block."""
    from premath.harness.host.replay import (
        check_same_program,
        load_recorded_effects,
        replay_report,
    )

    started_at = format_seconds_z(now())
    loaded = load_program(options)
    recorded = load_recorded_effects(effects_path)
    check_same_program(effects_path, recorded, loaded.parsed(options.bindings))
    document = run_program(
        loaded, options, now=now, lock_timeout=lock_timeout, started_at=started_at
    )
    document["replay"] = replay_report(effects_path, recorded, document)
    return document


def run_program(
    loaded: LoadedProgram,
    options: EvalOptions,
    *,
    now: Callable[[], datetime],
    lock_timeout: float,
    started_at: str | None = None,
) -> dict[str, Any]:
    """Run a loaded program's calls with `options.bindings`; the result document."""
    started_at = started_at or format_seconds_z(now())
    program = loaded.parsed(options.bindings)
    if options.context.stores is None:
        from premath.store.issues_file import WarmStores

        options = replace(options, context=replace(options.context, stores=WarmStores()))
    effects: list[dict[str, Any]] = []
    classes: set[str] = set()
    _run_calls(loaded, options, program, now, lock_timeout, effects, classes)
    if effects:
        _sync_rows(options.context.trajectory_path)
    rejected = any(effect["resultClass"] != "accepted" for effect in effects)
    document: dict[str, Any] = {
        "schema": 1,
        "kind": RESULT_KIND,
        "profile": PROFILE,
        "programPath": options.program_path,
        "controlPlaneContract": options.contract_path,
        "trajectoryPath": options.context.trajectory_path,
        "allowlistedActions": list(loaded.allowlist),
        "executedCallCount": len(effects),
        "result": "rejected" if rejected else "accepted",
        "failureClasses": sorted(classes),
        "startedAt": started_at,
        "finishedAt": format_seconds_z(now()),
        "effects": effects,
    }
    if loaded.extension is not None:
        document["contractExtension"] = loaded.extension.summary()
    return document


def _run_calls(
    loaded: LoadedProgram,
    options: EvalOptions,
    program: Program,
    now: Callable[[], datetime],
    lock_timeout: float,
    effects: list[dict[str, Any]],
    classes: set[str],
) -> None:
    """Run the calls in order, each recorded before the next; stop at the first not accepted.

    A call's row is written at once (readers see it) but fsynced with the next mutation's row
    or when the program ends (`_sync_rows`): a read's record needs no fsync of its own, and one
    per call would be most of a read call's cost."""
    from premath.runner.interrupts import raise_if_stopped

    lineage = options.context.lineage_refs
    for call in program.calls:
        raise_if_stopped()
        if lineage:
            call = replace(call, lineage_refs=(*lineage, *call.lineage_refs))
        call_started = now()
        outcome = _run_call(call, loaded, options, now, lock_timeout)
        digest = args_digest(call.args)
        effect_classes = payload_failure_classes(outcome.payload)
        result_class = effect_classes[0] if effect_classes else "accepted"
        own_ref = host_effect_ref(call.action, digest, call.index)
        refs = _sorted_refs([*call.witness_refs, own_ref, *outcome.witness_refs])
        mutates = _mutation_claim(call.action, loaded.extension) is not None
        row = _append_row(
            options, call, digest, result_class, refs, (call_started, now()), lock_timeout, mutates
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
                    "path": options.context.trajectory_path,
                    "stepId": row["stepId"],
                    "resultClass": row["resultClass"],
                    "finishedAt": row["finishedAt"],
                },
            }
        )
        classes.update(effect_classes)
        if result_class != "accepted":
            break


def _sync_rows(path: str) -> None:
    from premath.store.jsonl import sync_file

    try:
        sync_file(path)
    except OSError as exc:
        raise IoFailure(
            f"failed to append harness trajectory row at {path}: {exc.strerror or exc} "
            "(scheme_eval.host_action_execution_error)"
        ) from None


def _append_row(
    options: EvalOptions,
    call: Call,
    digest: str,
    result_class: str,
    refs: list[str],
    times: tuple[datetime, datetime],
    lock_timeout: float,
    sync: bool,
) -> dict[str, Any]:
    started, finished = times
    try:
        return append_step(
            options.context.trajectory_path,
            step_id=step_id(_prefix(options), call.index, call.call_id, call.action, digest),
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
            sync=sync,
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
    ) or failure_class.startswith(PREMATH_POLICY_CLASSES):
        return "policy/capability"
    if failure_class in ("scheme_eval.invalid_program", "scheme_eval.call_budget_exceeded"):
        return "input validation"
    return "unknown"


def _replay_lines(replay: dict[str, Any]) -> list[str]:
    count = len(replay["differences"])
    lines = [f"  Replay: {replay['result']} ({count} difference{'s' if count != 1 else ''})"]
    for item in replay["differences"]:
        change = (
            item.get("detail") or f"recorded {item['recorded']!r}, replayed {item['replayed']!r}"
        )
        lines.append(
            f"  - call {item['index']} {item['callId']} ({item['action']}) {item['field']}: "
            f"{change}"
        )
    return lines


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
    if "replay" in document:
        lines += _replay_lines(document["replay"])
    return "\n".join(lines)
