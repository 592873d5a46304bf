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

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from premath.errors import PremathError
from premath.harness.host import extension_writes as writes
from premath.harness.host.action_run import ActionCall, ActionRun, Document, arg_path
from premath.harness.host.args import HostActionFailed, parse_args
from premath.harness.host.context import HostContext
from premath.harness.host.extension import Effect
from premath.harness.host.paths import confined_path
from premath.models.params import Param, param
from premath.ops.catalogue import by_face
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.params import Kind

EXECUTION_ERROR = "scheme_eval.host_action_execution_error"
INVALID = "scheme_eval.invalid_program"
GATE_REFUSED = "mutation.instruction_witness_rejected"


def _plain(
    name: str,
    kind: Kind = "string",
    *,
    required: bool = False,
    verbatim: bool = False,
    path: bool = False,
) -> Param:
    """An argument without a snake_case alias."""
    return param(name, kind, required=required, alias=False, verbatim=verbatim, path=path)


CATALOGUED = by_face("host")
"""The actions the operation catalogue declares (premath/ops/): their args, issue and run."""
_ISSUES = param("issuesPath", path=True)
_SURFACE = _plain("surfacePath", path=True)
_REFS = ("instructionRefs", "witnessRefs", "lineageRefs")

ARG_SPECS: dict[str, tuple[Param, ...]] = {
    "issue.show": (_plain("id"), _ISSUES),
    "observe.latest": (_SURFACE,),
    "observe.needs_attention": (_SURFACE,),
    "observe.instruction": (_plain("instructionId", required=True), _SURFACE),
    "observe.projection": (
        _plain("projectionDigest", required=True),
        _plain("projectionMatch"),
        _SURFACE,
    ),
    "instruction.check": (_plain("instructionPath", required=True, path=True),),
    "instruction.run": (_plain("instructionPath", required=True, path=True),),
    "harness.session.write": (
        _plain("path", path=True),
        _plain("sessionId"),
        _plain("state"),
        _plain("issueId"),
        _plain("summary"),
        _plain("nextStep"),
        *(_plain(name, kind="strings") for name in _REFS),
        _ISSUES,
    ),
    "harness.feature.write": (
        _plain("path", path=True),
        _plain("featureId"),
        _plain("status", required=True),
        _plain("issueId"),
        _plain("summary"),
        _plain("sessionRef"),
        _plain("instructionRefs", kind="strings"),
        _plain("verificationRefs", kind="strings"),
    ),
    "harness.trajectory.append": (
        _plain("path", path=True),
        _plain("stepId"),
        _plain("action", required=True),
        _plain("resultClass", required=True),
        _plain("issueId"),
        *(_plain(name, kind="strings") for name in _REFS),
        _plain("startedAt"),
        _plain("finishedAt"),
    ),
    **{action: operation.params_at("host") for action, operation in CATALOGUED.items()},
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
    "harness.session.write": "issueId",
    "harness.feature.write": "issueId",
    **{
        action: operation.issue_param
        for action, operation in CATALOGUED.items()
        if operation.issue_param is not None
    },
}
"""The argument naming the issue an action reads or changes; it defaults to the call's issue."""
ISSUE_ARG_REQUIRED = frozenset(
    {"issue.show"}
    | {action for action, operation in CATALOGUED.items() if operation.issue_param is not None}
)


def instruction_id_of(instruction_ref: str) -> str:
    """The instruction a ref names: the file stem of an envelope or witness path
    (`instructions/<ts>-<id>.json` -> `<ts>-<id>`), else the ref itself."""
    name = instruction_ref.replace("\\", "/").rsplit("/", 1)[-1]
    return name[: -len(".json")] if name.endswith(".json") and len(name) > 5 else instruction_ref


def _gate(call: ActionCall, args: Document, context: HostContext, now: datetime) -> Document:
    """The MCP gate on the call's instruction witness (its MAC, age and issue scope included,
    D22-2 to D22-6); its policy must be the declared one."""
    from premath.timefmt import epoch_nanos
    from premath.transport.instruction_link import (
        GateRefused,
        Mutation,
        resolve_instruction_link,
    )

    assert call.instruction_ref is not None  # the evidence check ran first
    instruction_id = instruction_id_of(call.instruction_ref)
    target = args.get(ISSUE_ARG.get(call.action, ""))
    mutation = Mutation(call.action, (target,) if isinstance(target, str) else ())
    try:
        link = resolve_instruction_link(
            "instruction-linked",
            instruction_id,
            context.repo_root,
            mutation,
            now_ns=epoch_nanos(now),
            rules=context.witness_rules,
        ).document
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


def _bind_issue(call: ActionCall, args: Document, effect: Effect) -> None:
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


def _binding_mismatch(call: ActionCall, given: Any) -> HostActionFailed:
    return HostActionFailed(
        "mutation.issue_binding_mismatch",
        f"mutation action `{call.action}` names issue `{given}` but its evidence is bound to "
        f"issue `{call.issue_id}` (the call's issueId)",
    )


def _paths(call: ActionCall, args: Document, context: HostContext) -> None:
    """Resolve and confine every path argument before anything opens it."""
    for arg in ARG_SPECS[call.action]:
        if arg.path and arg.name in args:
            resolved = context.resolve(args[arg.name])
            args[arg.name] = confined_path(call.action, arg.name, resolved, context.repo_root)


def run_extension_action(
    call: ActionCall,
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
    link = _gate(call, args, context, now()) if effect == "mutation" else None
    try:
        return _ACTIONS[call.action](ActionRun(call, args, link, now, context, lock_timeout))
    except PremathError as exc:
        raise HostActionFailed(EXECUTION_ERROR, exc.message) from None


# --- reads ------------------------------------------------------------------------------------


def _issue_show(run: ActionRun) -> Document:
    from premath.issues.show import show_document

    path = run.issues_path()
    now = run.now()
    return show_document(path, run.context.read_store(path, now), run.args["id"], now)


def _observe(run: ActionRun) -> Document:
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
    path = arg_path(args, "surfacePath", run.context.surface_path)
    try:
        return observe_result(path, query)
    except SurfaceUnavailable as exc:
        raise HostActionFailed(EXECUTION_ERROR, exc.message) from None
    except ObservationNotFound as exc:
        raise HostActionFailed(EXECUTION_ERROR, exc.query_failure) from None


def _instruction_check(run: ActionRun) -> Document:
    """`instruction-check`'s envelope as the payload; an invalid envelope rejects the call with
    the instruction's own failure class."""
    from premath.harness.instruction.envelope import check_envelope
    from premath.harness.instruction.errors import InstructionError

    try:
        path, envelope = check_envelope(run.args["instructionPath"], run.context.repo_root)
    except InstructionError as exc:
        raise HostActionFailed(exc.failure_class, exc.detail) from None
    return {"action": "instruction.check", "instructionPath": path, "envelope": envelope}


_ACTIONS: dict[str, Callable[[ActionRun], Document]] = {
    "issue.show": _issue_show,
    "observe.latest": _observe,
    "observe.needs_attention": _observe,
    "observe.instruction": _observe,
    "observe.projection": _observe,
    "instruction.check": _instruction_check,
    "instruction.run": writes.instruction_run,
    "harness.session.write": writes.session_write,
    "harness.feature.write": writes.feature_write,
    "harness.trajectory.append": writes.trajectory_append,
    **{action: writes.catalogued(operation) for action, operation in CATALOGUED.items()},
}
EXTENSION_ACTIONS = frozenset(_ACTIONS)
