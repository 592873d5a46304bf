"""The MCP tool catalogue: the reference's 23 tools (agent-surface.md §1.3), our
`issue_claim_next` (D12-5), `issue_show` and `issue_lease_finish` (D23-2: what a remote worker
needs), `harness_trajectory_append` (the fleet's record, specs/remote-workers.md),
`issue_lease_renew`'s `mergeQueue` (D34-5), their inputs, and the input schemas we publish
(D12-4). `instruction_run` also takes `instructionId`: it is gated like a mutation (D22-4)."""

from __future__ import annotations

from dataclasses import dataclass

from premath.models.params import ENUM_VALUES, Param
from premath.models.params import param as _f
from premath.ops import catalogue as ops
from premath.ops.operation import Operation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SCHEMA_TYPES = {
    "string": "string",
    "u32": "integer",
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
class Tool:
    name: str
    description: str
    read_only: bool
    fields: tuple[Param, ...]
    idempotent: bool = False

    @classmethod
    def of(cls, operation: Operation) -> Tool:
        """The tool an operation of the catalogue offers at MCP (premath/ops/)."""
        assert operation.faces.mcp is not None
        return cls(
            operation.faces.mcp,
            operation.summary,
            operation.read_only,
            operation.params_at("mcp"),
            operation.idempotent,
        )

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
    Tool.of(ops.ISSUE_ADD),
    Tool.of(ops.ISSUE_CLAIM),
    Tool.of(ops.ISSUE_LEASE_RENEW),
    Tool.of(ops.ISSUE_LEASE_RELEASE),
    Tool.of(ops.ISSUE_DISCOVER),
    Tool.of(ops.ISSUE_UPDATE),
    Tool.of(ops.DEP_ADD),
    Tool.of(ops.DEP_REMOVE),
    Tool.of(ops.DEP_REPLACE),
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
    Tool.of(ops.ISSUE_CLAIM_NEXT),
    Tool(
        "issue_show",
        "Show one issue whole: texts, dependencies with their states, lease with its state",
        True,
        (_f("id", required=True), ISSUES),
    ),
    Tool.of(ops.ISSUE_LEASE_FINISH),
)
WORKER_TOOLS = tuple(Tool.of(operation) for operation in ops.WORKER_OPERATIONS)
"""The fleet's worker registry (specs/remote-workers.md "Workers"), after the catalogue."""
TOOLS = (*TOOLS, *WORKER_TOOLS, Tool.of(ops.HARNESS_TRAJECTORY_APPEND))
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
