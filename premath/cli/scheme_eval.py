"""`premath scheme-eval`: the REPL host API v0 (agent-surface.md §3).

A rejected program prints its document and exits 1; a program that cannot start prints
nothing on stdout and exits 1 (2 for a usage error).
"""

import click

from premath.cli._options import IntRange, json_option, project_path_option
from premath.cli._root import CONTEXT_SETTINGS, AppContext, Reply, StrictCommand, pass_app


@click.command("scheme-eval", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option("--program", required=True, help="Evaluator request program JSON path")
@click.option(
    "--control-plane-contract",
    help="Control-plane contract [default: specs/premath/draft/CONTROL-PLANE-CONTRACT.json, "
    "else the copy shipped with premath]",
)
@project_path_option(
    "--trajectory-path",
    default=".premath/harness_trajectory.jsonl",
    help_text="Trajectory the calls are recorded in",
)
@click.option(
    "--step-prefix",
    default="scheme_eval",
    show_default=True,
    help="Prefix of the recorded step ids",
)
@click.option(
    "--max-calls",
    type=IntRange(min=0),
    default=32,
    show_default=True,
    help="Most host-action calls the program may make",
)
@click.option("--issue-id", help="Issue id bound to every call (overrides the program's)")
@click.option("--policy-digest", help="Policy digest bound to every call")
@click.option("--instruction-ref", help="Instruction ref bound to every call")
@click.option("--capability-claim", "capability_claims", multiple=True, help="Repeatable")
@json_option
@pass_app
def scheme_eval(
    app: AppContext,
    program: str,
    control_plane_contract: str | None,
    trajectory_path: str,
    step_prefix: str,
    max_calls: int,
    issue_id: str | None,
    policy_digest: str | None,
    instruction_ref: str | None,
    capability_claims: tuple[str, ...],
) -> Reply:
    """Run a program of host-action calls, allowlisted. Only calls the control-plane contract
    allows are made (specs/instructions.md).

    \b
    premath scheme-eval --program program.json --json
    """
    from premath.harness.host.contract import resolve_contract_path
    from premath.harness.host.evaluate import EvalOptions, evaluate_program, result_text
    from premath.harness.host.program import Bindings

    options = EvalOptions(
        program_path=program,
        contract_path=resolve_contract_path(control_plane_contract),
        trajectory_path=trajectory_path,
        step_prefix=step_prefix,
        max_calls=max_calls,
        bindings=Bindings(issue_id, policy_digest, instruction_ref, capability_claims),
    )
    document = evaluate_program(options, now=app.clock.now, lock_timeout=app.lock_timeout())
    return Reply(document, text=result_text, exit_code=0 if document["result"] == "accepted" else 1)
