"""The instruction-linked mutations of premath's contract extension (host/extension_actions.py
runs the evidence check and the MCP gate first): issue and dependency writes with the MCP tools'
documents and write witness, the harness artifacts with the CLI's documents, `instruction.run`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from premath.harness.host.action_run import ActionRun, Document, arg_path
from premath.harness.host.args import HostActionFailed
from premath.models.params import ArgumentRefused
from premath.ops.operation import Operation
from premath.ops.witnessed import Witnessing, witnessed_write

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

INVALID = "scheme_eval.invalid_program"


# --- issue mutations: the MCP tools' documents, write witness attached under the lock ---------


def _witnessing(run: ActionRun) -> Witnessing:
    return Witnessing(
        repo_root=run.context.repo_root,
        mutation_policy="instruction-linked",
        query_backend="jsonl",
        instruction=run.link,
        clock=run.now,
        timeout_s=lambda: run.lock_timeout,
    )


def catalogued(operation: Operation) -> Callable[[ActionRun], Document]:
    """The host action of a catalogue operation (premath/ops/): check, then run witnessed; the
    gate ran before (extension_actions.run_extension_action)."""
    assert operation.run is not None
    write = operation.run

    def act(run: ActionRun) -> Document:
        try:
            checked = operation.check(run.args)
        except ArgumentRefused as refused:
            raise HostActionFailed(INVALID, refused.message) from None
        return witnessed_write(
            run.call.action,
            run.issues_path(),
            lambda terms: write(checked, terms),
            _witnessing(run),
        )

    return act


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
