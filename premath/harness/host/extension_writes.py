"""The instruction-linked mutations of premath's contract extension (host/extension_actions.py
runs the evidence check and the MCP gate first): issue and dependency writes with the MCP tools'
documents and write witness, the harness artifacts with the CLI's documents, `instruction.run`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from premath.harness.host.action_run import ActionRun, Document, arg_path
from premath.harness.host.args import HostActionFailed
from premath.issues import documents, leases
from premath.issues import memory as issue_memory
from premath.models.issue_row import DEPENDENCY_TYPES
from premath.timefmt import epoch_nanos

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import IssueRow

INVALID = "scheme_eval.invalid_program"


# --- issue mutations: the MCP tools' documents, write witness attached under the lock ---------


Describe = Callable[["IssueRow", int], Document]
"""The action's own result fields (`issue`, `dependency`) from the written row."""


def _issue_fields(row: IssueRow, now_ns: int) -> Document:
    """`issueSummary` as the MCP tools give it: the CLI summary plus the lease with its state."""
    lease = documents.lease_view(row, leases.LeaseChange(row, now_ns))
    return {"issue": {**documents.issue_summary(row), "lease": lease}}


def _issue_write(run: ActionRun, write: Callable[..., IssueRow], describe: Describe) -> Document:
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


def issue_update(run: ActionRun) -> Document:
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


def issue_discover(run: ActionRun) -> Document:
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


def dep(run: ActionRun) -> Document:
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


def session_write(run: ActionRun) -> Document:
    from premath.harness.session import write_session
    from premath.models.vocabulary import SESSION_STATES

    args = run.args
    state = args.get("state", "stopped")
    if state not in SESSION_STATES:
        raise HostActionFailed(
            INVALID,
            f"invalid harness.session.write args: state must be active or stopped (got `{state}`)",
        )
    path = arg_path(args, "path", run.context.session_path)
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


def feature_write(run: ActionRun) -> Document:
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
    path = arg_path(args, "path", run.context.ledger_path)
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


def trajectory_append(run: ActionRun) -> Document:
    from premath.record.trajectory import append_trajectory_row

    args = run.args
    path = arg_path(args, "path", run.context.trajectory_path)
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


def instruction_run(run: ActionRun) -> Document:
    """The instruction pipeline in-process (`premath instruction-run`'s document); a rejected
    witness rejects the call with the witness's failure classes. As the MCP tool, it never
    replaces an accepted witness of another run (D22-4) and signs with the gate's key file."""
    from pathlib import Path

    from premath.errors import RuleRefused
    from premath.harness.instruction.pipeline import RunTerms, run_instruction
    from premath.harness.instruction.witness import refuse_accepted_overwrite
    from premath.transport.instruction_link import witness_path

    path = run.args["instructionPath"]
    rules = run.context.witness_rules
    stem = os.path.splitext(os.path.basename(path))[0]
    try:
        refuse_accepted_overwrite(Path(witness_path(run.context.repo_root, stem)))
    except RuleRefused as refused:
        raise HostActionFailed.from_rule(refused) from None
    terms = RunTerms(keep_accepted=True, key_file=rules.key_file if rules else None)
    result = run_instruction(path, run.context.repo_root, now=run.now, terms=terms)
    if result.invalid is not None:
        raise HostActionFailed(result.invalid.failure_class, result.invalid.detail)
    document = result.to_document()
    return {**document, "instructionPath": os.path.relpath(path, run.context.repo_root)}
