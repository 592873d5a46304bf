"""`premath scheme-eval`: the REPL host API v0 (agent-surface.md §3).

A rejected program prints its document and exits 1; a program that cannot start prints
nothing on stdout and exits 1 (2 for a usage error).
"""

from __future__ import annotations

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
@click.option(
    "--repo-root",
    default=".",
    show_default=True,
    help="Repository root: instruction witnesses are read under it, path arguments must stay in it",
)
@click.option(
    "--contract-extension",
    help="premath's host-action extension [default: policies/control/"
    "host-action-extension-v1.json under --repo-root, else the copy shipped with premath when "
    "the shipped contract is used, else none]",
)
@click.option(
    "--replay",
    "replay_effects",
    help="Effects recorded from an earlier run (its --json document): run the program again "
    "and report every call whose argsDigest, resultClass or payload differs (exit 1)",
)
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
    repo_root: str,
    contract_extension: str | None,
    replay_effects: str | None,
) -> Reply:
    """Run a program of host-action calls, allowlisted. Only calls the control-plane contract
    allows are made (specs/instructions.md).

    With --replay, run it again and check its effects against a recorded run (exit 1 on any
    difference).

    \b
    premath scheme-eval --program program.json --json > run.json
    premath scheme-eval --program program.json --replay run.json --json
    """
    from premath.harness.host.context import HostContext
    from premath.harness.host.contract import BUILTIN_CONTRACT_PATH, resolve_contract_path
    from premath.harness.host.evaluate import (
        EvalOptions,
        evaluate_program,
        replay_program,
        result_text,
    )
    from premath.harness.host.extension import resolve_extension_path
    from premath.harness.host.program import Bindings

    contract_path = resolve_contract_path(control_plane_contract, repo_root)
    options = EvalOptions(
        program_path=program,
        contract_path=contract_path,
        step_prefix=step_prefix,
        max_calls=max_calls,
        bindings=Bindings(issue_id, policy_digest, instruction_ref, capability_claims),
        extension_path=resolve_extension_path(
            contract_extension,
            repo_root=repo_root,
            builtin_contract=contract_path == str(BUILTIN_CONTRACT_PATH),
        ),
        context=HostContext(repo_root=repo_root, trajectory_path=trajectory_path),
    )
    timeout = app.lock_timeout()
    if replay_effects is not None:
        document = replay_program(options, replay_effects, now=app.clock.now, lock_timeout=timeout)
        parity = document["replay"]["result"] == "parity"
        return Reply(document, text=result_text, exit_code=0 if parity else 1)
    document = evaluate_program(options, now=app.clock.now, lock_timeout=timeout)
    return Reply(document, text=result_text, exit_code=0 if document["result"] == "accepted" else 1)
