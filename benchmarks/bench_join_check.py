"""`harness-join-check --json`: start-up cost on one turn, and the cost of a wide turn.

The loop runs the gate once per step: its process must start about as fast as the session
read (target <= 4x a bare interpreter), and a turn with many tool calls must stay close to a
one-call turn (target <= 2x at 1,000 calls: normalisation and digests are linear).
"""

import copy
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from benchmarks._measure import PREMATH, Row, measure_interleaved, ms, verdict

STARTUP_TARGET = 4.0
WIDE_TARGET = 2.0

_CALL_SPEC = {
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
}


def turn(calls: int) -> dict[str, Any]:
    """An accepted turn with `calls` tool calls, each with a payload digested by the gate."""
    ids = [f"tc-{n:05d}" for n in range(calls)]
    return {
        "evidence": {
            "callSpec": copy.deepcopy(_CALL_SPEC),
            "toolRequests": [{"toolCallId": i, "toolName": "fs.read"} for i in ids],
            "toolResults": [
                {"toolCallId": i, "payload": {"path": f"src/{i}.py", "lines": [1, 2.5, None]}}
                for i in ids
            ],
            "toolUse": [{"toolCallId": i, "disposition": "consumed"} for i in ids],
            "protocolState": {"stopReason": "tool_use", "continuationAllowed": True},
            "toolRender": [
                {
                    "toolCallId": i,
                    "operatorPayloadDigest": "sha256:op",
                    "reminderRenderDigest": "sha256:rem",
                    "injectionPoint": "tool_response",
                    "policyDigest": "render.pol.v1",
                }
                for i in ids
            ],
            "reminderQueue": [
                {"queueId": "q", "reducedDigest": "sha256:q", "policyDigest": "queue.pol.v1"}
            ],
            "stateViews": [
                {"viewId": "v", "viewDigest": "sha256:v", "policyDigest": "state.pol.v1"}
            ],
        }
    }


def _row(measure: str, size: str, ours: Any, base: Any, base_name: str, target: float) -> Row:
    ratio = ours.median_s / base.median_s
    return Row(
        measure=measure,
        size=size,
        ours=f"{ms(ours.median_s)}; {ms(ours.p90_s)}",
        baseline=f"{base_name} {ms(base.median_s)}",
        ratio=f"{ratio:.2f}x",
        target=f"<= {target:g}x",
        verdict=verdict(ratio <= target),
    )


def rows(quick: bool) -> list[Row]:
    runs = 5 if quick else 21
    wide = 100 if quick else 1000
    folder = Path(tempfile.mkdtemp(prefix="premath-bench-join-"))
    try:
        (folder / "one.json").write_bytes(orjson.dumps(turn(1)))
        (folder / "wide.json").write_bytes(orjson.dumps(turn(wide)))
        one = [*PREMATH, "harness-join-check", "--input", "one.json", "--json"]
        start, bare = measure_interleaved(
            one, [sys.executable, "-I", "-c", "pass"], runs=runs, cwd=folder
        )
        wide_run, one_run = measure_interleaved(
            [*PREMATH, "harness-join-check", "--input", "wide.json", "--json"],
            one,
            runs=runs,
            cwd=folder,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [
        _row(
            "harness-join-check --json (median; p90)",
            "1 tool call",
            start,
            bare,
            "python3 -I -c pass",
            STARTUP_TARGET,
        ),
        _row(
            "harness-join-check --json, wide turn (median; p90)",
            f"{wide:,} tool calls",
            wide_run,
            one_run,
            "1 tool call",
            WIDE_TARGET,
        ),
    ]
