"""The MCP tool catalogue: the reference's 23 tools (agent-surface.md §1.3), our
`issue_claim_next` (D12-5), `issue_show` and `issue_lease_finish` (D23-2: what a remote worker
needs), `harness_trajectory_append` (the fleet's record, specs/remote-workers.md),
`issue_lease_renew`'s `mergeQueue` (D34-5), their inputs, and the input schemas we publish
(D12-4). `instruction_run` also takes `instructionId`: it is gated like a mutation (D22-4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Kind = Literal[
    "string", "i32", "i64", "u64", "bool", "scope", "match", "finish", "strings", "phase",
    "object", "objects",
]  # fmt: skip

ENUM_VALUES: dict[str, list[str]] = {
    "scope": ["active", "full"],
    "match": ["typed", "compatibility_alias"],
    "finish": ["closed", "blocked", "open"],
    "phase": ["claiming", "working", "verifying", "closing", "idle"],
}
_SCHEMA_TYPES = {
    "string": "string",
    "i32": "integer",
    "i64": "integer",
    "u64": "integer",
    "bool": "boolean",
    "scope": "string",
    "match": "string",
    "finish": "string",
    "strings": "array",
    "phase": "string",
    "object": "object",
    "objects": "array",
}


@dataclass(frozen=True)
class Field:
    """One input: its camelCase name, the snake_case alias accepted beside it, its type."""

    name: str
    kind: Kind = "string"
    required: bool = False
    alias: str | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    read_only: bool
    fields: tuple[Field, ...]
    idempotent: bool = False

    def input_schema(self) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        for field in self.fields:
            spec: dict[str, Any] = {"type": [_SCHEMA_TYPES[field.kind], "null"]}
            if field.required:
                spec["type"] = _SCHEMA_TYPES[field.kind]
            if field.kind in ENUM_VALUES:
                spec["enum"] = ENUM_VALUES[field.kind]
            if field.kind == "strings":
                spec["items"] = {"type": "string"}
            if field.kind == "objects":
                spec["items"] = {"type": "object"}
            properties[field.name] = spec
            if field.alias is not None:
                properties[field.alias] = {**spec, "description": f"alias of {field.name}"}
        return {
            "type": "object",
            "properties": properties,
            "required": [field.name for field in self.fields if field.required],
        }


def _f(name: str, kind: Kind = "string", *, required: bool = False, alias: bool = True) -> Field:
    """A field whose alias is its snake_case spelling (when that differs)."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    return Field(name, kind, required, snake if alias and snake != name else None)


ISSUES = _f("issuesPath")
INSTRUCTION = _f("instructionId")
SURFACE = _f("surfacePath", alias=False)
_NEW_ISSUE = (
    _f("title", required=True),
    _f("id"),
    _f("description"),
)
_ISSUE_DETAILS = (
    _f("priority", "i32"),
    _f("issueType"),
    _f("assignee"),
    _f("owner"),
    INSTRUCTION,
    ISSUES,
)
_LEASE_TIME = (_f("leaseTtlSeconds", "i64"), _f("leaseExpiresAt"))

TOOLS: tuple[Tool, ...] = (
    Tool(
        "issue_ready",
        "List open issues that have no unresolved blocking dependencies",
        True,
        (ISSUES,),
    ),
    Tool(
        "issue_list",
        "List issues with optional status/assignee filtering",
        True,
        (_f("status"), _f("assignee"), ISSUES),
    ),
    Tool(
        "issue_check",
        "Run deterministic issue-graph contract checks",
        True,
        (ISSUES, _f("noteWarnThreshold", "u64")),
    ),
    Tool(
        "issue_backend_status",
        "Report issue backend integration state (jsonl authority, surreal projection, jj)",
        True,
        (ISSUES,),
    ),
    Tool(
        "issue_blocked",
        "List non-closed issues that are explicitly blocked or have unresolved blocking "
        "dependencies",
        True,
        (ISSUES,),
    ),
    Tool(
        "issue_add",
        "Add an issue to the JSONL substrate",
        False,
        (*_NEW_ISSUE, _f("status"), *_ISSUE_DETAILS),
    ),
    Tool(
        "issue_claim",
        "Atomically claim an issue for work (sets assignee + in_progress)",
        False,
        (
            _f("id", required=True),
            _f("assignee", required=True),
            _f("leaseId"),
            *_LEASE_TIME,
            INSTRUCTION,
            ISSUES,
        ),
    ),
    Tool(
        "issue_lease_renew",
        "Renew an active issue lease by id/assignee/lease_id",
        False,
        (
            _f("id", required=True),
            _f("assignee", required=True),
            _f("leaseId", required=True),
            *_LEASE_TIME,
            INSTRUCTION,
            ISSUES,
            _f("mergeQueue", "strings"),
        ),
    ),
    Tool(
        "issue_lease_release",
        "Release an issue lease by id (optionally validating assignee/lease_id)",
        False,
        (_f("id", required=True), _f("assignee"), _f("leaseId"), INSTRUCTION, ISSUES),
    ),
    Tool(
        "issue_discover",
        "Create a follow-up issue and link it with discovered-from dependency",
        False,
        (_f("parentIssueId", required=True), *_NEW_ISSUE, *_ISSUE_DETAILS),
    ),
    Tool(
        "issue_update",
        "Update mutable issue fields by id",
        False,
        (
            _f("id", required=True),
            _f("title"),
            _f("description"),
            _f("notes"),
            _f("status"),
            _f("priority", "i32"),
            _f("assignee"),
            _f("owner"),
            INSTRUCTION,
            ISSUES,
        ),
    ),
    Tool(
        "dep_add",
        "Add a dependency edge between issues",
        False,
        (
            _f("issueId", required=True),
            _f("dependsOnId", required=True),
            _f("depType"),
            _f("createdBy"),
            INSTRUCTION,
            ISSUES,
        ),
    ),
    Tool(
        "dep_remove",
        "Remove a dependency edge between issues",
        False,
        (
            _f("issueId", required=True),
            _f("dependsOnId", required=True),
            _f("depType"),
            INSTRUCTION,
            ISSUES,
        ),
    ),
    Tool(
        "dep_replace",
        "Replace one dependency edge type with another",
        False,
        (
            _f("issueId", required=True),
            _f("dependsOnId", required=True),
            _f("fromDepType"),
            _f("toDepType", required=True),
            _f("createdBy"),
            INSTRUCTION,
            ISSUES,
        ),
    ),
    Tool(
        "dep_diagnostics",
        "Report dependency graph cycle diagnostics for active or full graph scope",
        True,
        (ISSUES, _f("graphScope", "scope")),
    ),
    Tool(
        "init_tool",
        "Initialize premath local substrate (.premath/issues.jsonl), migrating legacy .beads "
        "store when present",
        False,
        (_f("rootPath"),),
        idempotent=True,
    ),
    Tool(
        "issue_lease_projection",
        "Return deterministic lease projection for stale/contended claims",
        True,
        (ISSUES,),
    ),
    Tool("observe_latest", "Return the latest projected observation view", True, (SURFACE,)),
    Tool("observe_needs_attention", "Return observation attention summary", True, (SURFACE,)),
    Tool(
        "observe_instruction",
        "Return one instruction row from observation surface",
        True,
        (_f("instructionId", required=True, alias=False), SURFACE),
    ),
    Tool(
        "observe_projection",
        "Return one projection view from observation surface",
        True,
        (
            _f("projectionDigest", required=True, alias=False),
            _f("projectionMatch", "match", alias=False),
            SURFACE,
        ),
    ),
    Tool(
        "instruction_check",
        "Validate one instruction envelope against doctrine shape checks",
        True,
        (_f("instructionPath", required=True, alias=False),),
    ),
    Tool(
        "instruction_run",
        "Run instruction pipeline and emit CI instruction witness",
        False,
        (
            _f("instructionPath", required=True, alias=False),
            _f("allowFailure", "bool", alias=False),
            INSTRUCTION,  # gated like a mutation (D22-4)
        ),
    ),
    Tool(
        "issue_claim_next",
        "Claim the best ready issue for an assignee with a lease (priority, then id order); "
        "escalation issues are left to people unless includeEscalations",
        False,
        (
            _f("assignee", required=True),
            _f("leaseId"),
            _f("leaseTtlSeconds", "i64"),
            _f("includeEscalations", "bool"),
            INSTRUCTION,
            ISSUES,
        ),
    ),
    Tool(
        "issue_show",
        "Show one issue whole: texts, dependencies with their states, lease with its state",
        True,
        (_f("id", required=True), ISSUES),
    ),
    Tool(
        "issue_lease_finish",
        "Close, block or give back (status closed|blocked|open) an issue the caller holds under "
        "its lease, with a note, witness refs and, when blocking, a discovered follow-up issue",
        False,
        (
            _f("id", required=True),
            _f("assignee", required=True),
            _f("leaseId", required=True),
            _f("status", "finish", required=True),
            _f("notes"),
            _f("witnessRefs", "strings"),
            _f("discoverTitle"),
            _f("discoverDescription"),
            INSTRUCTION,
            ISSUES,
        ),
    ),
)
WORKER_ID = _f("workerId", required=True)
WORKER_TOOLS: tuple[Tool, ...] = (
    Tool(
        "harness_worker_register",
        "Register a loop worker with the authority when it starts (worker id, host or node, "
        "pid, premath version, start time, heartbeat interval); again after a restart",
        False,
        (
            WORKER_ID,
            _f("host"),
            _f("node"),
            _f("pid", "i64"),
            _f("premathVersion"),
            _f("startedAt"),
            _f("heartbeatSeconds", "i64"),
        ),
    ),
    Tool(
        "harness_worker_heartbeat",
        "Report a registered worker alive and what it does: phase (claiming|working|verifying|"
        "closing|idle), issue, attempt n of m; beats over the rate are answered, not stored",
        False,
        (
            WORKER_ID,
            _f("phase", "phase", required=True),
            _f("issueId"),
            _f("attempt", "i64"),
            _f("maxAttempts", "i64"),
        ),
    ),
    Tool(
        "harness_worker_deregister",
        "Deregister a worker that exits, with its reason (it shows as gone)",
        False,
        (WORKER_ID, _f("reason")),
    ),
    Tool(
        "harness_workers",
        "List the fleet's workers: node, phase, issue, attempt, time since the last heartbeat, "
        "running/silent/gone, steps, closes and pass rate in the KPI window, attention reasons",
        True,
        (),
    ),
)
"""The fleet's worker registry (specs/remote-workers.md "Workers"), after the catalogue."""
TOOLS = (*TOOLS, *WORKER_TOOLS)
TOOLS += (
    Tool(
        "harness_trajectory_append",
        "Append a remote worker's harness step row (the row harness-trajectory append writes) "
        "and its step record (step document, output tails) to the authority's trajectory; "
        "idempotent by step id",
        False,
        (
            WORKER_ID,
            _f("leaseId"),
            _f("row", "object", required=True),
            _f("stepFiles", "objects"),
            INSTRUCTION,
            ISSUES,
        ),
        idempotent=True,
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
