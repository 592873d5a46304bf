"""The join-check input of one loop step: its work and verify commands as tool calls.

Each command is a requested tool call; a command that ran has a result row (`ok` when it has no
failure class, else `error` with a typed envelope: the first class, whether the policy would
retry it, a message); the loop observed every result. A work program's host calls are tool calls
of their own (`host.<action>`), one per executed call, an error where it was not accepted. A
command whose output overflowed its cap is reported through the truncation constraint: evidence
we could not keep whole must not authorise a mutation.
specs/harness-loop.md "Gate".
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from premath.harness.commands import CommandRun, error_message
from premath.harness.work import ProgramRun, StepRun
from premath.store.canonical import digest_input

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NORMALIZER_ID = "premath.harness.loop.v1"
NO_POLICY = "none"


def result_digest(run: CommandRun) -> str:
    outcome = run.outcome
    facts = {
        "name": run.name,
        "status": outcome.status,
        "exitCode": outcome.exit_code,
        "signal": outcome.signal,
        "stdoutBytes": outcome.stdout_bytes,
        "stderrBytes": outcome.stderr_bytes,
    }
    return "sha256:" + hashlib.sha256(digest_input(facts)).hexdigest()


def _result_row(
    run: CommandRun, call_id: str, classes: Sequence[str], retryable: bool
) -> dict[str, Any]:
    row: dict[str, Any] = {"toolCallId": call_id, "resultDigest": result_digest(run)}
    if not classes:
        row["status"] = "ok"
    else:
        message = error_message(run) if not run.ok else f"{run.name} witness: {', '.join(classes)}"
        row.update(status="error", errorCode=classes[0], retryable=retryable, errorMessage=message)
    return row


def _program_calls(
    run: ProgramRun, step_id: str, retryable: bool
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(request, result) of each host call of a work program."""
    calls = []
    for index, effect in enumerate(run.effects, start=1):
        call_id = f"{step_id}.{run.name}.{index}"
        facts = {k: effect[k] for k in ("callId", "action", "argsDigest", "resultClass")}
        result: dict[str, Any] = {
            "toolCallId": call_id,
            "resultDigest": "sha256:" + hashlib.sha256(digest_input(facts)).hexdigest(),
        }
        if effect["resultClass"] == "accepted":
            result["status"] = "ok"
        else:
            payload = effect["payload"] if isinstance(effect["payload"], dict) else {}
            result.update(
                status="error",
                errorCode=effect["resultClass"],
                retryable=retryable,
                errorMessage=str(payload.get("diagnostic", effect["resultClass"])),
            )
        calls.append(({"toolCallId": call_id, "toolName": f"host.{effect['action']}"}, result))
    return calls


def join_check_input(
    *,
    step_id: str,
    worker_id: str,
    runs: Sequence[tuple[StepRun, Sequence[str], bool]],
    mutation_policy_digest: str,
    governance_policy_digest: str,
    session_refs: Sequence[str],
    trajectory_refs: Sequence[str],
) -> dict[str, Any]:
    """The `harness-join-check` input for one attempt; `runs` is (run, classes, retryable)."""
    requests, results, uses = [], [], []
    for run, classes, retryable in runs:
        if isinstance(run, ProgramRun):
            calls = _program_calls(run, step_id, retryable)
        else:
            call_id = f"{step_id}.{run.name}"
            request = {"toolCallId": call_id, "toolName": f"harness.{run.name}"}
            calls = [(request, _result_row(run, call_id, classes, retryable))]
        for request, result in calls:
            requests.append(request)
            results.append(result)
            uses.append({"toolCallId": request["toolCallId"], "disposition": "observed"})
    return {
        "evidence": {
            "callSpec": {
                "callId": step_id,
                "modelRef": f"worker:{worker_id}",
                "actionMode": "code",
                "executionPattern": "chain",
                "normalizerId": NORMALIZER_ID,
                "mutationPolicyDigest": mutation_policy_digest,
                "governancePolicyDigest": governance_policy_digest,
                "toolRenderProtocolDigest": NO_POLICY,
                "reminderQueuePolicyDigest": NO_POLICY,
                "stateViewPolicyDigest": NO_POLICY,
                "decompositionPolicyDigest": NO_POLICY,
            },
            "toolRequests": requests,
            "toolResults": results,
            "toolUse": uses,
            "protocolState": {"stopReason": "end_turn", "continuationAllowed": False},
            "sessionRefs": list(session_refs),
            "trajectoryRefs": list(trajectory_refs),
        },
        "truncationConstraints": {
            "required": True,
            "valid": not any(run.truncated for run, _, _ in runs),
        },
    }
