"""Host actions that run in-process: the read-only issue queries (agent-surface.md §3.6)."""

from datetime import datetime
from typing import Any

from premath.errors import ArtifactInvalid, IoFailure, NotFound
from premath.issues import documents, memory
from premath.models.serde import SchemaViolation, describe, optional_string, unsigned
from premath.models.vocabulary import GraphScope
from premath.text import rust_trim
from premath.timefmt import epoch_nanos

DEFAULT_ISSUES_PATH = ".premath/issues.jsonl"
DEFAULT_NOTE_WARN_THRESHOLD = 2000
EXECUTION_ERROR = "scheme_eval.host_action_execution_error"
INVALID = "scheme_eval.invalid_program"


class HostActionFailed(Exception):
    """A local action's error: its class and diagnostic become a rejected payload."""

    def __init__(self, failure_class: str, diagnostic: str) -> None:
        super().__init__(diagnostic)
        self.failure_class = failure_class
        self.diagnostic = diagnostic


def _args(action: str, value: Any, fields: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """serde's view of the args struct: camelCase names with snake_case aliases."""
    if not isinstance(value, dict):
        raise HostActionFailed(
            INVALID, f"invalid {action} args: invalid type: {describe(value)}, expected a struct"
        )
    parsed: dict[str, Any] = {}
    try:
        for name, spellings in fields.items():
            present = [spelling for spelling in spellings if spelling in value]
            if len(present) > 1:
                raise SchemaViolation(f"duplicate field `{spellings[0]}`")
            if present:
                check = unsigned if name == "noteWarnThreshold" else optional_string
                raw = value[present[0]]
                parsed[name] = None if raw is None else check(raw)
    except SchemaViolation as exc:
        raise HostActionFailed(INVALID, f"invalid {action} args: {exc}") from None
    return parsed


ISSUES: dict[str, tuple[str, ...]] = {"issuesPath": ("issuesPath", "issues_path")}
ARG_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "issue.ready": ISSUES,
    "issue.blocked": ISSUES,
    "issue.list": {"status": ("status",), "assignee": ("assignee",), **ISSUES},
    "issue.check": {"noteWarnThreshold": ("noteWarnThreshold", "note_warn_threshold"), **ISSUES},
    "dep.diagnostics": {"graphScope": ("graphScope", "graph_scope"), **ISSUES},
}


def _issues_path(args: dict[str, Any]) -> str:
    given = args.get("issuesPath")
    return rust_trim(given) if given is not None and rust_trim(given) else DEFAULT_ISSUES_PATH


def _run(action: str, args: dict[str, Any], now: datetime) -> dict[str, Any]:
    path = _issues_path(args)
    if action == "issue.ready":
        return documents.ready_document(path, memory.ready(path, now=now))
    if action == "issue.blocked":
        return documents.blocked_document(path, memory.blocked(path, now=now))
    if action == "issue.list":
        rows = memory.list_issues(
            path, now=now, status=args.get("status"), assignee=args.get("assignee")
        )
        return documents.list_document(path, rows, epoch_nanos(now))
    if action == "issue.check":
        threshold = args.get("noteWarnThreshold")
        report = memory.check(
            path,
            now=now,
            note_warn_threshold=DEFAULT_NOTE_WARN_THRESHOLD if threshold is None else threshold,
        )
        return documents.check_document(path, report)
    scope = rust_trim(args.get("graphScope") or "active")
    if scope not in ("active", "full"):
        raise HostActionFailed(
            INVALID, f"dep.diagnostics graphScope must be `active` or `full` (got `{scope}`)"
        )
    graph_scope: GraphScope = "active" if scope == "active" else "full"
    integrity = memory.dep_diagnostics(path, now=now, scope=graph_scope)
    return documents.dep_diagnostics_document(path, graph_scope, integrity)


LOCAL_ACTIONS: frozenset[str] = frozenset(ARG_FIELDS)


def run_local_action(action: str, raw_args: Any, now: datetime) -> dict[str, Any]:
    """The action's payload; raises HostActionFailed with the reference's class."""
    args = _args(action, raw_args, ARG_FIELDS[action])
    try:
        return _run(action, args, now)
    except (NotFound, ArtifactInvalid, IoFailure) as exc:
        raise HostActionFailed(EXECUTION_ERROR, exc.message) from None
