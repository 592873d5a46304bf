"""`premath instruction-check` and `premath instruction-witness` (agent-surface.md §4).

Input errors exit 2 with `<failureClass>: <message>`; a reject decision or a rejected witness
is data (exit 0).
"""

from __future__ import annotations

import click

from premath.cli._options import PROJECT_ROOT, json_option
from premath.cli._root import CONTEXT_SETTINGS, AppContext, Reply, StrictCommand, pass_app

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@click.command("instruction-check", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option("--instruction", required=True, help="Instruction envelope JSON path")
@click.option("--repo-root", default=".", show_default=True, help="Repository root")
@json_option
def instruction_check(instruction: str, repo_root: str) -> Reply:
    """Validate an instruction envelope and its policy. Schema, policy binding, classification
    and proposal (specs/instructions.md).

    \b
    premath instruction-check --instruction instructions/change.json --json
    """
    from functools import partial

    from premath.harness.instruction.envelope import check_envelope, check_text

    path, document = check_envelope(instruction, repo_root)
    return Reply(document, text=partial(check_text, path), sorted_keys=False)


@click.command("instruction-witness", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option("--instruction", required=True, help="Instruction envelope JSON path")
@click.option("--runtime", required=True, help="Runtime result JSON path")
@click.option("--pre-execution-failure-class", help="Record a reject before any check ran")
@click.option("--pre-execution-reason", help="Why the instruction was rejected before running")
@click.option("--repo-root", default=".", show_default=True, help="Repository root")
@json_option
def instruction_witness(
    instruction: str,
    runtime: str,
    pre_execution_failure_class: str | None,
    pre_execution_reason: str | None,
    repo_root: str,
) -> Reply:
    """Build the witness of an instruction run. Its kind is `ci.instruction.v1`.

    \b
    premath instruction-witness --instruction instructions/change.json \\
        --runtime runtime.json --json
    """
    from premath.harness.instruction.witness import instruction_witness as build
    from premath.harness.instruction.witness import witness_text

    witness = build(
        instruction, runtime, repo_root, pre_execution_failure_class, pre_execution_reason
    )
    return Reply(witness.to_document(), text=witness_text, sorted_keys=False)


@click.command("instruction-run", cls=StrictCommand, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--instruction",
    required=True,
    help="Instruction envelope JSON path (a relative path is under --repo-root)",
)
@click.option(
    "--repo-root",
    help="Repository root: witnesses go to its artifacts/ciwitness/, check logs to its "
    f".premath/ [default: {PROJECT_ROOT}]",
)
@click.option(
    "--check-command",
    default="mise run {check}",
    show_default=True,
    help="Shell command that runs one requested check; {check} is replaced by its id",
)
@click.option("--allow-failure", is_flag=True, help="Exit 0 even when the verdict is rejected")
@json_option
@pass_app
def instruction_run(
    app: AppContext,
    instruction: str,
    repo_root: str | None,
    check_command: str,
    allow_failure: bool,
) -> Reply:
    """Run an instruction's checks and write its witness. The envelope is checked first; the
    witness goes to artifacts/ciwitness/<id>.json.

    Exit 0 when accepted (or --allow-failure), 1 when rejected, 2 when the envelope is invalid
    (a pre-execution reject witness is still written).

    \b
    premath instruction-run --instruction instructions/change.json --json
    """
    import os

    from premath.harness.instruction.pipeline import run_instruction
    from premath.store.root import discover_root

    result = run_instruction(
        instruction,
        discover_root() if repo_root is None else repo_root,
        now=app.clock.now,
        check_command=check_command,
        site_profile=os.environ.get("PREMATH_SQUEAK_SITE_PROFILE", "local"),
        report=lambda line: click.echo(line, err=True),
    )
    if result.invalid is not None:
        from premath.harness.instruction.errors import InstructionError

        raise InstructionError(
            result.invalid.failure_class,
            f"{result.invalid.detail} (reject witness written: {result.witness_path})",
        )
    accepted = result.witness.accepted or allow_failure
    return Reply(result.to_document(), text=run_text, exit_code=0 if accepted else 1)


def run_text(document: dict[str, Any]) -> str:
    from premath.harness.instruction.witness import verdict_text

    return verdict_text("instruction-run", document, f"  Witness: {document['witnessPath']}")
