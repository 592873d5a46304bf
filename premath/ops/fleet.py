"""The fleet's record as operations (specs/remote-workers.md "The fleet's record", "Workers"):
the worker registry's tools and `harness_trajectory_append`. They live at the authority only:
their service is the server's own registry and fleet record (premath/mcp/worker_tools.py,
`ToolService.harness_trajectory_append`), which the MCP face calls by the tool's name; remote
workers reach them through the client methods named here."""

from __future__ import annotations

from premath.models.params import param
from premath.ops.operation import Faces, Operation

WORKER_ID = param("workerId", required=True)
IDENTITY_REFUSED = "worker.identity_refused"
STEP_RECORD_INVALID = "trajectory.step_record_invalid"

HARNESS_WORKER_REGISTER = Operation(
    action="harness.worker_register",
    summary="Register a loop worker with the authority when it starts (worker id, host or node, "
    "pid, premath version, start time, heartbeat interval); again after a restart",
    params=(
        WORKER_ID,
        param("host"),
        param("node"),
        param("pid", "i64"),
        param("premathVersion"),
        param("startedAt"),
        param("heartbeatSeconds", "i64"),
    ),
    faces=Faces(mcp="harness_worker_register", remote="premath.mcp.presence:McpPresence.start"),
    mutates=True,
    failure_classes=(IDENTITY_REFUSED,),
    read_only=False,
)
HARNESS_WORKER_HEARTBEAT = Operation(
    action="harness.worker_heartbeat",
    summary="Report a registered worker alive and what it does: phase (claiming|working|"
    "verifying|closing|idle), issue, attempt n of m; beats over the rate are answered, not "
    "stored",
    params=(
        WORKER_ID,
        param("phase", "phase", required=True),
        param("issueId"),
        param("attempt", "i64"),
        param("maxAttempts", "i64"),
    ),
    faces=Faces(mcp="harness_worker_heartbeat", remote="premath.mcp.presence:McpPresence._beat"),
    mutates=True,
    failure_classes=(IDENTITY_REFUSED,),
    read_only=False,
)
HARNESS_WORKER_DEREGISTER = Operation(
    action="harness.worker_deregister",
    summary="Deregister a worker that exits, with its reason (it shows as gone)",
    params=(WORKER_ID, param("reason")),
    faces=Faces(mcp="harness_worker_deregister", remote="premath.mcp.presence:McpPresence.stop"),
    mutates=True,
    failure_classes=(IDENTITY_REFUSED,),
    read_only=False,
)
HARNESS_WORKERS = Operation(
    action="harness.workers",
    summary="List the fleet's workers: node, phase, issue, attempt, time since the last "
    "heartbeat, running/silent/gone, steps, closes and pass rate in the KPI window, attention "
    "reasons",
    params=(),
    faces=Faces(mcp="harness_workers"),
)
HARNESS_TRAJECTORY_APPEND = Operation(
    action="harness.trajectory_append",
    summary="Append a remote worker's harness step row (the row harness-trajectory append "
    "writes) and its step record (step document, output tails) to the authority's trajectory; "
    "idempotent by step id",
    params=(
        WORKER_ID,
        param("leaseId"),
        param("row", "object", required=True),
        param("stepFiles", "objects"),
        param("instructionId"),
        param("issuesPath", path=True),
    ),
    faces=Faces(
        mcp="harness_trajectory_append", remote="premath.mcp.remote:McpAuthority.ship_step"
    ),
    mutates=True,
    gate="harness.trajectory_append",
    failure_classes=(IDENTITY_REFUSED, STEP_RECORD_INVALID),
    read_only=False,
    idempotent=True,
)
WORKER_OPERATIONS = (
    HARNESS_WORKER_REGISTER,
    HARNESS_WORKER_HEARTBEAT,
    HARNESS_WORKER_DEREGISTER,
    HARNESS_WORKERS,
)
FLEET_OPERATIONS = (*WORKER_OPERATIONS, HARNESS_TRAJECTORY_APPEND)
