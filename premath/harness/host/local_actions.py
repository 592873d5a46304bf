"""Host actions that run in-process: the read-only issue queries (agent-surface.md §3.6)."""

from __future__ import annotations

from datetime import datetime

from premath.errors import ArtifactInvalid, InputInvalid, IoFailure, NotFound
from premath.harness.host.args import HostActionFailed, parse_args
from premath.harness.host.context import HostContext
from premath.harness.host.paths import confined_path
from premath.issues import documents, graph, leases, memory
from premath.issues.check import check_issues
from premath.models.params import Param, param
from premath.timefmt import epoch_nanos

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.vocabulary import GraphScope

DEFAULT_NOTE_WARN_THRESHOLD = 2000
EXECUTION_ERROR = "scheme_eval.host_action_execution_error"
INVALID = "scheme_eval.invalid_program"

ISSUES = param("issuesPath", path=True)
ARG_FIELDS: dict[str, tuple[Param, ...]] = {
    "issue.ready": (ISSUES,),
    "issue.blocked": (ISSUES,),
    "issue.list": (param("status"), param("assignee"), ISSUES),
    "issue.check": (param("noteWarnThreshold", "u32"), ISSUES),
    "dep.diagnostics": (param("graphScope"), ISSUES),
}


def issues_path(action: str, args: dict[str, Any], context: HostContext) -> str:
    """The call's `issuesPath` (trimmed; blank or absent: the context's), confined."""
    given = args.get("issuesPath")
    path = context.issues_path if given is None else context.resolve(given)
    return confined_path(action, "issuesPath", path, context.repo_root)


def _run(action: str, args: dict[str, Any], now: datetime, context: HostContext) -> dict[str, Any]:
    path = issues_path(action, args, context)
    scope = args.get("graphScope", "active")
    if action == "dep.diagnostics" and scope not in ("active", "full"):
        raise HostActionFailed(
            INVALID, f"dep.diagnostics graphScope must be `active` or `full` (got `{scope}`)"
        )
    issues = context.read_store(path, now)
    if action == "issue.ready":
        return documents.ready_document(path, graph.ready_issues(issues, leases.claim_order))
    if action == "issue.blocked":
        return documents.blocked_document(path, graph.blocked_issues(issues))
    if action == "issue.list":
        rows = memory.filter_issues(
            issues, status=args.get("status"), assignee=args.get("assignee")
        )
        return documents.list_document(path, rows, epoch_nanos(now))
    if action == "issue.check":
        threshold = args.get("noteWarnThreshold", DEFAULT_NOTE_WARN_THRESHOLD)
        return documents.check_document(path, check_issues(issues, threshold))
    graph_scope: GraphScope = "active" if scope == "active" else "full"
    integrity = graph.integrity(issues, graph_scope)
    return documents.dep_diagnostics_document(path, graph_scope, integrity)


LOCAL_ACTIONS: frozenset[str] = frozenset(ARG_FIELDS)


def run_local_action(
    action: str, raw_args: Any, now: datetime, context: HostContext
) -> dict[str, Any]:
    """The action's payload; raises HostActionFailed with the reference's class."""
    args = parse_args(action, raw_args, ARG_FIELDS[action])
    try:
        return _run(action, args, now, context)
    except (NotFound, ArtifactInvalid, IoFailure, InputInvalid) as exc:
        raise HostActionFailed(EXECUTION_ERROR, exc.message) from None
