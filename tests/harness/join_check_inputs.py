"""Join-check inputs for tests: the reference's baseline vector (typestate.md §8), built in code.

Tests that must run without ../shared start from `baseline()` and change one thing, as the
reference's vectors do.
"""

import copy
from typing import Any

_BASELINE: dict[str, Any] = {
    "evidence": {
        "callSpec": {
            "callId": "call-1",
            "modelRef": "gpt-5",
            "actionMode": "code",
            "executionPattern": "parallel",
            "normalizerId": "nf.v1",
            "mutationPolicyDigest": "mut.pol.v1",
            "governancePolicyDigest": "gov.pol.v1",
            "toolRenderProtocolDigest": "render.pol.v1",
            "reminderQueuePolicyDigest": "queue.pol.v1",
            "stateViewPolicyDigest": "state.pol.v1",
            "decompositionPolicyDigest": "decomp.pol.v1",
        },
        "toolRequests": [{"toolCallId": "tc-1", "toolName": "fs.read"}],
        "toolResults": [{"toolCallId": "tc-1", "status": "ok", "resultDigest": "sha256:result-a"}],
        "toolUse": [
            {"toolCallId": "tc-1", "disposition": "consumed", "resultDigest": "sha256:result-a"}
        ],
        "protocolState": {"stopReason": "tool_use", "continuationAllowed": True},
        "handoff": {
            "target": "worker.frontend",
            "requiredArtifactRefs": ["artifact://design/spec"],
            "returnPathRef": "handoff://return/main",
        },
        "toolRender": [
            {
                "toolCallId": "tc-1",
                "operatorPayloadDigest": "sha256:operator-a",
                "reminderRenderDigest": "sha256:reminder-a",
                "injectionPoint": "tool_response",
                "policyDigest": "render.pol.v1",
            }
        ],
        "reminderQueue": [
            {
                "queueId": "queue/default",
                "reducedDigest": "sha256:queue-a",
                "policyDigest": "queue.pol.v1",
            }
        ],
        "stateViews": [
            {
                "viewId": "state/latest",
                "viewDigest": "sha256:view-a",
                "policyDigest": "state.pol.v1",
                "sourceRefs": ["handoff://return/main"],
            }
        ],
    }
}


def baseline() -> dict[str, Any]:
    """A fresh copy of `golden/join_closed_accept`'s input: accepted, every surface present."""
    return copy.deepcopy(_BASELINE)


def evidence(document: dict[str, Any]) -> dict[str, Any]:
    evidence_block: dict[str, Any] = document["evidence"]
    return evidence_block
