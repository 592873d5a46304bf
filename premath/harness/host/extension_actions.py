"""The host actions premath's contract extension binds (host/extension.py).

Reads: `issue.show`, `observe.*` (through premath.observe, exactly as the MCP `observe_*` tools
answer), `instruction.check`. Mutations: `issue.update`, `issue.discover`, `dep.add|remove|
replace`, `harness.session.write`, `harness.feature.write`, `harness.trajectory.append`,
`instruction.run`. Every mutation is instruction-linked: after the per-call evidence check of
the evaluator (policyDigest, instructionRef, capability claims), the call's instruction witness
goes through the MCP server's own gate (`transport.instruction_link.resolve_instruction_link`,
policy `instruction-linked`, action claim `capabilities.change_morphisms.<action>`), and the
witness's policy digest must be the one the call declared. Issue rows get the MCP write witness.

An issue argument left out (or blank) is the call's `issueId`: a static program run by a worker
step acts on the claimed issue (`harness.feature.write`'s feature is then that issue's). A
mutation that names another issue than the call's `issueId` is refused
(`mutation.issue_binding_mismatch`): evidence is for one issue. `harness.trajectory.append`
names no issue unless asked (its row joins the step by its step id and lineage, and is no gate
outcome of its own), and then only the call's.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from premath.errors import PremathError
from premath.harness.host.args import Arg, HostActionFailed, parse_args
from premath.harness.host.context import HostContext
from premath.harness.host.extension import Effect
from premath.harness.host.paths import confined_path
from premath.issues import documents, leases
from premath.issues import memory as issue_memory
from premath.models.issue_row import DEPENDENCY_TYPES, IssueRow
from premath.text import rust_trim
from premath.timefmt import epoch_nanos

EXECUTION_ERROR = "scheme_eval.host_action_execution_error"
INVALID = "scheme_eval.invalid_program"
GATE_REFUSED = "mutation.instruction_witness_rejected"
Document = dict[str, Any]

_ISSUES = Arg("issuesPath", "issues_path", path=True)
_SURFACE = Arg("surfacePath", path=True)
_REFS = ("instructionRefs", "witnessRefs", "lineageRefs")

ARG_SPECS: dict[str, tuple[Arg, ...]] = {
    "issue.show": (Arg("id"), _ISSUES),
    "observe.latest": (_SURFACE,),
    "observe.needs_attention": (_SURFACE,),
    "observe.instruction": (Arg("instructionId", required=True), _SURFACE),
    "observe.projection": (
        Arg("projectionDigest", required=True),
        Arg("projectionMatch"),
        _SURFACE,
    ),
    "instruction.check": (Arg("instructionPath", required=True, path=True),),
    "instruction.run": (Arg("instructionPath", required=True, path=True),),
    "issue.update": (
        Arg("id"),
        Arg("title", verbatim=True),
        Arg("description", verbatim=True),
        Arg("notes", verbatim=True),
        Arg("status"),
        Arg("priority", kind="i32"),
        Arg("assignee", verbatim=True),
        Arg("owner", verbatim=True),
        _ISSUES,
    ),
    "issue.discover": (
        Arg("parentIssueId", "parent_issue_id"),
        Arg("title", required=True),
        Arg("id"),
        Arg("description", verbatim=True),
        Arg("priority", kind="i32"),
        Arg("issueType", "issue_type"),
        Arg("assignee", verbatim=True),
        Arg("owner", verbatim=True),
        _ISSUES,
    ),
    "dep.add": (
        Arg("issueId", "issue_id"),
        Arg("dependsOnId", "depends_on_id", required=True),
        Arg("depType", "dep_type"),
        Arg("createdBy", "created_by", verbatim=True),
        _ISSUES,
    ),
    "dep.remove": (
        Arg("issueId", "issue_id"),
        Arg("dependsOnId", "depends_on_id", required=True),
        Arg("depType", "dep_type"),
        _ISSUES,
    ),
    "dep.replace": (
        Arg("issueId", "issue_id"),
        Arg("dependsOnId", "depends_on_id", required=True),
        Arg("fromDepType", "from_dep_type"),
        Arg("toDepType", "to_dep_type", required=True),
        Arg("createdBy", "created_by", verbatim=True),
        _ISSUES,
    ),
    "harness.session.write": (
        Arg("path", path=True),
        Arg("sessionId"),
        Arg("state"),
        Arg("issueId"),
        Arg("summary"),
        Arg("nextStep"),
        *(Arg(name, kind="strings") for name in _REFS),
        _ISSUES,
    ),
    "harness.feature.write": (
        Arg("path", path=True),
        Arg("featureId"),
        Arg("status", required=True),
        Arg("issueId"),
        Arg("summary"),
        Arg("sessionRef"),
        Arg("instructionRefs", kind="strings"),
        Arg("verificationRefs", kind="strings"),
    ),
    "harness.trajectory.append": (
        Arg("path", path=True),
        Arg("stepId"),
        Arg("action", required=True),
        Arg("resultClass", required=True),
        Arg("issueId"),
        *(Arg(name, kind="strings") for name in _REFS),
        Arg("startedAt"),
        Arg("finishedAt"),
    ),
}
READS = frozenset(
    {
        "issue.show",
        "observe.latest",
        "observe.needs_attention",
        "observe.instruction",
        "observe.projection",
        "instruction.check",
    }
)
EXTENSION_EFFECTS: dict[str, Effect] = {
    action: "read" if action in READS else "mutation" for action in ARG_SPECS
}

ISSUE_ARG = {
    "issue.show": "id",
    "issue.update": "id",
    "issue.discover": "parentIssueId",
    "dep.add": "issueId",
    "dep.remove": "issueId",
    "dep.replace": "issueId",
    "harness.session.write": "issueId",
    "harness.feature.write": "issueId",
}
"""The argument naming the issue an action reads or changes; it defaults to the call's issue."""
ISSUE_ARG_REQUIRED = frozenset(
    {"issue.show", "issue.update", "issue.discover", "dep.add", "dep.remove", "dep.replace"}
)


@dataclass(frozen=True)
class ExtensionCall:
    """One call of an extension action, its bindings resolved (host/program.py)."""

    action: str
    args: Any
    issue_id: str | None
    policy_digest: str | None
    instruction_ref: str | None
    step_id: str
    """`<prefix>.<callId>`: the default `stepId` of a row the call appends."""


def instruction_id_of(instruction_ref: str) -> str:
    """The instruction a ref names: the file stem of an envelope or witness path
    (`instructions/<ts>-<id>.json` -> `<ts>-<id>`), else the ref itself."""
    name = instruction_ref.replace("\\", "/").rsplit("/", 1)[-1]
    return name[: -len(".json")] if name.endswith(".json") and len(name) > 5 else instruction_ref


def _gate(call: ExtensionCall, context: HostContext) -> Document:
    """The MCP gate on the call's instruction witness; its policy must be the declared one."""
    from premath.transport.instruction_link import (
        GateRefused,
        Mutation,
        resolve_instruction_link,
    )

    assert call.instruction_ref is not None  # the evidence check ran first
    instruction_id = instruction_id_of(call.instruction_ref)
    try:
        link = resolve_instruction_link(
            "instruction-linked", instruction_id, context.repo_root, Mutation(call.action)
        )
    except GateRefused as refused:
        message = refused.message
        tagged = message.startswith("[failureClass=") and "] " in message
        failure_class = message[len("[failureClass=") : message.index("] ")] if tagged else None
        raise HostActionFailed(failure_class or GATE_REFUSED, message) from None
    assert link is not None  # instruction-linked always links or refuses
    if link["policyDigest"] != call.policy_digest:
        raise HostActionFailed(
            "mutation.policy_digest_mismatch",
            f"mutation action `{call.action}` declares policyDigest `{call.policy_digest}` but "
            f"instruction `{instruction_id}` was run under `{link['policyDigest']}`",
        )
    return link


def _bind_issue(call: ExtensionCall, args: Document, effect: Effect) -> None:
    """Default the issue argument to the call's issue; a mutation of another issue is refused."""
    if call.action == "harness.trajectory.append":
        given = args.get("issueId")
        if given is not None and call.issue_id is not None and given != call.issue_id:
            raise _binding_mismatch(call, given)
        return
    name = ISSUE_ARG.get(call.action)
    if name is None:
        return
    given = args.get(name)
    if given is None and call.issue_id is not None:
        args[name] = call.issue_id
    elif given is None and call.action in ISSUE_ARG_REQUIRED:
        raise HostActionFailed(INVALID, f"invalid {call.action} args: missing field `{name}`")
    elif (
        effect == "mutation"
        and call.issue_id is not None
        and rust_trim(given or "") != call.issue_id
    ):
        raise _binding_mismatch(call, given)


def _binding_mismatch(call: ExtensionCall, given: Any) -> HostActionFailed:
    return HostActionFailed(
        "mutation.issue_binding_mismatch",
        f"mutation action `{call.action}` names issue `{given}` but its evidence is bound to "
        f"issue `{call.issue_id}` (the call's issueId)",
    )


def _paths(call: ExtensionCall, args: Document, context: HostContext) -> None:
    """Resolve and confine every path argument before anything opens it."""
    for arg in ARG_SPECS[call.action]:
        if arg.path and arg.name in args:
            resolved = context.resolve(args[arg.name])
            args[arg.name] = confined_path(call.action, arg.name, resolved, context.repo_root)


def _path(args: Document, name: str, default: str) -> str:
    """The (confined) path argument, else the context's default (the caller's own choice)."""
    path: str = args.get(name, default)
    return path


def run_extension_action(
    call: ExtensionCall,
    effect: Effect,
    *,
    now: Callable[[], datetime],
    context: HostContext,
    lock_timeout: float,
) -> Document:
    """The action's payload; raises HostActionFailed with its class (nothing changed then)."""
    args = parse_args(call.action, call.args, ARG_SPECS[call.action])
    _bind_issue(call, args, effect)
    _paths(call, args, context)
    link = _gate(call, context) if effect == "mutation" else None
    try:
        return _ACTIONS[call.action](_Run(call, args, link, now, context, lock_timeout))
    except PremathError as exc:
        raise HostActionFailed(EXECUTION_ERROR, exc.message) from None


@dataclass(frozen=True)
class _Run:
    call: ExtensionCall
    args: Document
    link: Document | None
    now: Callable[[], datetime]
    context: HostContext
    lock_timeout: float

    def issues_path(self) -> str:
        return _path(self.args, "issuesPath", self.context.issues_path)

    def instruction_refs(self, given: tuple[str, ...] = ()) -> tuple[str, ...]:
        """A record written under an instruction cites it."""
        ref = self.call.instruction_ref
        return (*given, ref) if ref is not None else given


# --- reads ------------------------------------------------------------------------------------


def _issue_show(run: _Run) -> Document:
    from premath.issues.show import show_document

    path = run.issues_path()
    now = run.now()
    return show_document(path, run.context.read_store(path, now), run.args["id"], now)


def _observe(run: _Run) -> Document:
    from premath.observe.surface import SurfaceUnavailable
    from premath.observe.views import ObservationNotFound, ObserveQuery, observe_result

    mode = run.call.action.split(".", 1)[1]
    args = run.args
    if mode == "instruction":
        query = ObserveQuery("instruction", args["instructionId"])
    elif mode == "projection":
        match = args.get("projectionMatch", "typed")
        if match not in ("typed", "compatibility_alias"):
            raise HostActionFailed(
                INVALID,
                f"invalid observe.projection args: unknown variant `{match}`, expected `typed` "
                "or `compatibility_alias`",
            )
        alias = match == "compatibility_alias"
        query = ObserveQuery(
            "projection", args["projectionDigest"], "compatibility_alias" if alias else "typed"
        )
    else:
        query = ObserveQuery("needs_attention" if mode == "needs_attention" else "latest")
    path = _path(args, "surfacePath", run.context.surface_path)
    try:
        return observe_result(path, query)
    except SurfaceUnavailable as exc:
        raise HostActionFailed(EXECUTION_ERROR, exc.message) from None
    except ObservationNotFound as exc:
        raise HostActionFailed(EXECUTION_ERROR, exc.query_failure) from None


def _instruction_check(run: _Run) -> Document:
    """`instruction-check`'s envelope as the payload; an invalid envelope rejects the call with
    the instruction's own failure class."""
    from premath.harness.instruction.envelope import check_envelope
    from premath.harness.instruction.errors import InstructionError

    try:
        path, envelope = check_envelope(run.args["instructionPath"], run.context.repo_root)
    except InstructionError as exc:
        raise HostActionFailed(exc.failure_class, exc.detail) from None
    return {"action": "instruction.check", "instructionPath": path, "envelope": envelope}


# --- issue mutations: the MCP tools' documents, write witness attached under the lock ---------


Describe = Callable[[IssueRow, int], Document]
"""The action's own result fields (`issue`, `dependency`) from the written row."""


def _issue_fields(row: IssueRow, now_ns: int) -> Document:
    """`issueSummary` as the MCP tools give it: the CLI summary plus the lease with its state."""
    lease = documents.lease_view(row, leases.LeaseChange(row, now_ns))
    return {"issue": {**documents.issue_summary(row), "lease": lease}}


def _issue_write(run: _Run, write: Callable[..., IssueRow], describe: Describe) -> Document:
    from premath.transport.write_witness import attach, jj_snapshot, write_witness

    action = run.call.action
    path = run.issues_path()
    jj = jj_snapshot(run.context.repo_root)
    written: list[Document] = []
    now = run.now()

    def on_row(row: IssueRow) -> None:
        witness = write_witness(
            action=action,
            issue_id=row["id"],
            issues_path=path,
            repo_root=run.context.repo_root,
            mutation_policy="instruction-linked",
            query_backend="jsonl",
            instruction=run.link,
            now_ns=epoch_nanos(run.now()),
            jj=jj,
        )
        attach(row, witness)
        written.append(witness)

    row = write(path, now=now, timeout_s=run.lock_timeout, on_row=on_row)
    head = {"action": action, "issuesPath": path, "queryBackend": "jsonl"}
    fields = describe(row, epoch_nanos(now))
    return {**head, **fields, "instruction": run.link, "writeWitness": written[-1]}


def _dep_type(args: Document, name: str) -> str:
    value: str = args.get(name, "blocks")
    if value not in DEPENDENCY_TYPES:
        raise HostActionFailed(
            INVALID,
            f"invalid dep_type `{value}` (expected one of: {', '.join(DEPENDENCY_TYPES)})",
        )
    return value


def _issue_update(run: _Run) -> Document:
    args = run.args
    fields: dict[str, Any] = {
        name: args.get(name)
        for name in ("title", "description", "notes", "status", "priority", "assignee", "owner")
    }
    return _issue_write(
        run,
        lambda path, **kw: issue_memory.update_issue(path, args["id"], **fields, **kw),
        _issue_fields,
    )


def _issue_discover(run: _Run) -> Document:
    args = run.args
    parent = args["parentIssueId"]
    fields = {
        "issue_id": args.get("id"),
        "description": args.get("description", ""),
        "priority": args.get("priority", 2),
        "issue_type": args.get("issueType", "task"),
        "assignee": args.get("assignee", ""),
        "owner": args.get("owner", ""),
    }

    def describe(row: IssueRow, now_ns: int) -> Document:
        edge = {"issueId": row["id"], "dependsOnId": parent, "type": "discovered-from"}
        return {**_issue_fields(row, now_ns), "dependency": edge}

    return _issue_write(
        run,
        lambda path, **kw: issue_memory.discover_issue(path, parent, args["title"], **fields, **kw),
        describe,
    )


def _dep(run: _Run) -> Document:
    args = run.args
    verb = run.call.action.split(".", 1)[1]
    issue_id, target = args["issueId"], args["dependsOnId"]
    created_by = args.get("createdBy", "")
    edge: Document = {"issueId": issue_id, "dependsOnId": target}
    if verb == "replace":
        from_kind, to_kind = _dep_type(args, "fromDepType"), _dep_type(args, "toDepType")
        edge.update(fromType=from_kind, toType=to_kind, createdBy=created_by)

        def write(path: str, **kw: Any) -> IssueRow:
            return issue_memory.dep_replace(
                path,
                issue_id,
                target,
                from_kind=from_kind,
                to_kind=to_kind,
                created_by=created_by,
                **kw,
            )

    else:
        kind = _dep_type(args, "depType")
        edge["type"] = kind
        if verb == "add":
            edge["createdBy"] = created_by

            def write(path: str, **kw: Any) -> IssueRow:
                return issue_memory.dep_add(
                    path, issue_id, target, kind=kind, created_by=created_by, **kw
                )

        else:

            def write(path: str, **kw: Any) -> IssueRow:
                return issue_memory.dep_remove(path, issue_id, target, kind=kind, **kw)

    return _issue_write(run, write, lambda _row, _now_ns: {"dependency": edge})


# --- harness artifacts: the CLI commands' documents, plus the instruction link ---------------


def _session_write(run: _Run) -> Document:
    from premath.harness.session import write_session
    from premath.models.vocabulary import SESSION_STATES

    args = run.args
    state = args.get("state", "stopped")
    if state not in SESSION_STATES:
        raise HostActionFailed(
            INVALID,
            f"invalid harness.session.write args: state must be active or stopped (got `{state}`)",
        )
    path = _path(args, "path", run.context.session_path)
    session = write_session(
        path,
        now=run.now(),
        lock_timeout_s=run.lock_timeout,
        state=state,
        session_id=args.get("sessionId"),
        issue_id=args.get("issueId"),
        summary=args.get("summary"),
        next_step=args.get("nextStep"),
        instruction_refs=run.instruction_refs(args.get("instructionRefs", ())),
        witness_refs=args.get("witnessRefs", ()),
        lineage_refs=args.get("lineageRefs", ()),
        issues_path=run.issues_path(),
    )
    document = {"action": "harness-session.write", "path": path, "session": session}
    return {**document, "instruction": run.link}


def _feature_write(run: _Run) -> Document:
    from premath.harness.feature_ledger import write_feature
    from premath.models.feature_ledger import FEATURE_STATUSES

    args = run.args
    if args["status"] not in FEATURE_STATUSES:
        raise HostActionFailed(
            INVALID,
            f"invalid harness.feature.write args: status must be one of "
            f"{', '.join(FEATURE_STATUSES)} (got `{args['status']}`)",
        )
    feature_id = args.get("featureId", args.get("issueId"))
    if feature_id is None:
        raise HostActionFailed(
            INVALID, "invalid harness.feature.write args: missing field `featureId`"
        )
    path = _path(args, "path", run.context.ledger_path)
    document = write_feature(
        path,
        feature_id=feature_id,
        status=args["status"],
        now=run.now(),
        lock_timeout_s=run.lock_timeout,
        issue_id=args.get("issueId"),
        summary=args.get("summary"),
        session_ref=args.get("sessionRef"),
        instruction_refs=run.instruction_refs(args.get("instructionRefs", ())),
        verification_refs=args.get("verificationRefs", ()),
    )
    return {**document, "instruction": run.link}


def _trajectory_append(run: _Run) -> Document:
    from premath.harness.trajectory import append_trajectory_row

    args = run.args
    path = _path(args, "path", run.context.trajectory_path)
    document = append_trajectory_row(
        path,
        now=run.now(),
        lock_timeout=run.lock_timeout,
        step_id=args.get("stepId", run.call.step_id),
        issue_id=args.get("issueId"),
        action=args["action"],
        result_class=args["resultClass"],
        instruction_refs=run.instruction_refs(args.get("instructionRefs", ())),
        witness_refs=args.get("witnessRefs", ()),
        lineage_refs=(*run.context.lineage_refs, *args.get("lineageRefs", ())),
        started_at=args.get("startedAt"),
        finished_at=args.get("finishedAt"),
    )
    return {**document, "instruction": run.link}


def _instruction_run(run: _Run) -> Document:
    """The instruction pipeline in-process (`premath instruction-run`'s document); a rejected
    witness rejects the call with the witness's failure classes."""
    from premath.harness.instruction.pipeline import run_instruction

    path = run.args["instructionPath"]
    result = run_instruction(path, run.context.repo_root, now=run.now)
    if result.invalid is not None:
        raise HostActionFailed(result.invalid.failure_class, result.invalid.detail)
    document = result.to_document()
    return {**document, "instructionPath": os.path.relpath(path, run.context.repo_root)}


_ACTIONS: dict[str, Callable[[_Run], Document]] = {
    "issue.show": _issue_show,
    "observe.latest": _observe,
    "observe.needs_attention": _observe,
    "observe.instruction": _observe,
    "observe.projection": _observe,
    "instruction.check": _instruction_check,
    "instruction.run": _instruction_run,
    "issue.update": _issue_update,
    "issue.discover": _issue_discover,
    "dep.add": _dep,
    "dep.remove": _dep,
    "dep.replace": _dep,
    "harness.session.write": _session_write,
    "harness.feature.write": _feature_write,
    "harness.trajectory.append": _trajectory_append,
}
EXTENSION_ACTIONS = frozenset(_ACTIONS)
